"""Shared fixtures for the acceptance tests of `glint serve` (the hazel.rpc gRPC server).

Every test starts its own server on a free loopback port (`--addr 127.0.0.1:0`, the port read
from the line the server prints once it listens), talks to it with LuckyEngine's own Python
client (`luckyrobots`), and stops it with SIGINT at teardown, which must end it with exit
status 0.

The binary is `target/release/glint` of the repository holding this folder, or `$GLINT_BIN`.
The waits below are hang guards on observable events (a line printed, a process exiting),
never tuned sleeps.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import grpc
import pytest

REPO = Path(__file__).resolve().parents[2]
GLINT_BIN = Path(os.environ.get("GLINT_BIN", str(REPO / "target" / "release" / "glint")))
MUJOCO_LIB = REPO / ".deps" / "mujoco" / "lib"
SHOWROOM_XML = REPO / "examples" / "showroom" / "showroom.xml"
PRIMITIVES_XML = REPO / "examples" / "primitives.xml"

# Hang guards: generous ceilings on events that normally take milliseconds.
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 120.0
RPC_TIMEOUT_S = 60.0

LISTENING = re.compile(r"glint serve: listening on 127\.0\.0\.1:(\d+)")

# The showroom's actuators (velocity actuators on the planar base, ctrlrange -2 to 2).
SHOWROOM_ACTUATORS = ["vx", "vy", "wz"]
SHOWROOM_NQ = 3

# The small spinning lidar most tests use: 16 x 360 = 5760 beams.
SMALL_CHANNELS = 16
SMALL_BINS = 360
SMALL_BEAMS = SMALL_CHANNELS * SMALL_BINS


# The nine base fields of SetLidarReturnParams, in the seed's order.
BASE_FIELDS = [
    "max_range_at_ref",
    "ref_reflectivity",
    "range_exp",
    "noise_sigma0",
    "grazing_cos_cutoff",
    "intensity_ref_range",
    "detect_floor",
    "near_range_r0",
    "noise_slope_per_m",
]


# A valid SetLidarConfig request for sensor 0 (8 x 100 beams); tests override fields of it.
GOOD_CONFIG = dict(
    sensor=0,
    scan_pattern=0,
    channels=8,
    azimuth_bins=100,
    vfov_min_deg=-10.0,
    vfov_max_deg=10.0,
    min_range=0.5,
    max_range=50.0,
    rotation_hz=10.0,
    geom_group_mask=63,
    self_ignore=1,
)


def server_env() -> dict:
    env = dict(os.environ)
    lib = str(MUJOCO_LIB)
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def lidar_table(
    name: str = "roof",
    preset: str = "velodyne-vlp16",
    channels: Optional[int] = SMALL_CHANNELS,
    azimuth_bins: Optional[int] = SMALL_BINS,
    extra: str = "",
) -> str:
    lines = ["[[lidar]]", f'name = "{name}"', 'attach_site = "lidar"', f'preset = "{preset}"']
    if channels is not None:
        lines.append(f"channels = {channels}")
    if azimuth_bins is not None:
        lines.append(f"azimuth_bins = {azimuth_bins}")
    lines.append('self_ignore = "whole-robot"')
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


def showroom_manifest(
    lidars: Optional[list[str]] = None,
    observations: Optional[list[dict]] = None,
    materials: str = "",
    return_preset: str = "generic",
    bake_name: str = "scenebake",
    cell_size: float = 0.1,
    bake_extra: str = "",
) -> str:
    """A manifest over the showroom scene (by absolute path) with small lidars."""
    if lidars is None:
        lidars = [lidar_table()]
    if materials == "":
        materials = (
            "[materials.storefront_glass]\npreset = \"clear-float-glass\"\n"
            "[materials.mirror_silver]\npreset = \"mirror\"\n"
            "[materials.sign_retro]\npreset = \"retroreflector\"\n"
        )
    text = f'scene = "{SHOWROOM_XML}"\n\n'
    text += "\n".join(lidars) + "\n"
    text += "[recorder]\nlidar_runner_hz = 50.0\n\n"
    text += f'[return_model]\npreset = "{return_preset}"\nseed = 7\n\n'
    text += f'[bake]\nname = "{bake_name}"\ncell_size = {cell_size}\n{bake_extra}\n'
    text += materials + "\n"
    for obs in observations or []:
        text += "[[observation]]\n"
        for k, v in obs.items():
            text += f"{k} = {toml_value(v)}\n"
        text += "\n"
    return text


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


@dataclass
class GlintServer:
    """One running `glint serve`; its output is drained by threads into lists."""

    proc: subprocess.Popen
    port: int
    manifest: Path
    stdout: list = field(default_factory=list)
    stderr: list = field(default_factory=list)
    stopped: bool = False
    returncode: Optional[int] = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGINT) -> int:
        """Signals the server and waits for it to exit; returns its exit status."""
        if self.stopped:
            return self.returncode
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.returncode = self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"glint serve did not stop within {STOP_TIMEOUT_S} s of the signal")
        for t in getattr(self, "_threads", []):
            t.join(timeout=STOP_TIMEOUT_S)
        return self.returncode

    def output(self) -> str:
        return "stdout:\n" + "".join(self.stdout) + "\nstderr:\n" + "".join(self.stderr)


def _drain(stream, sink: list, lines: Optional[queue.Queue]) -> None:
    for line in iter(stream.readline, ""):
        sink.append(line)
        if lines is not None:
            lines.put(line)
    stream.close()
    if lines is not None:
        lines.put(None)


def launch(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [str(GLINT_BIN), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(),
    )


def start_server(manifest: Path, pace: str = "lockstep", extra: Optional[list[str]] = None) -> GlintServer:
    """Starts `glint serve MANIFEST --addr 127.0.0.1:0 --pace PACE ...` and waits for its
    listening line."""
    assert GLINT_BIN.exists(), f"no glint binary at {GLINT_BIN} (build it, or set GLINT_BIN)"
    proc = launch(["serve", str(manifest), "--addr", "127.0.0.1:0", "--pace", pace, *(extra or [])])
    out_lines: queue.Queue = queue.Queue()
    server = GlintServer(proc=proc, port=0, manifest=manifest)
    t_out = threading.Thread(target=_drain, args=(proc.stdout, server.stdout, out_lines), daemon=True)
    t_err = threading.Thread(target=_drain, args=(proc.stderr, server.stderr, None), daemon=True)
    t_out.start()
    t_err.start()
    server._threads = [t_out, t_err]
    while True:
        try:
            line = out_lines.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            proc.kill()
            proc.wait()
            raise AssertionError(f"glint serve printed no listening line within {START_TIMEOUT_S} s")
        if line is None:
            proc.wait(timeout=STOP_TIMEOUT_S)
            t_err.join(timeout=STOP_TIMEOUT_S)
            raise AssertionError(
                f"glint serve exited ({proc.returncode}) before listening:\n{server.output()}"
            )
        m = LISTENING.search(line)
        if m:
            server.port = int(m.group(1))
            assert server.port > 0
            return server


@pytest.fixture
def serve(tmp_path) -> Callable[..., GlintServer]:
    """A factory: serve(manifest_text_or_path, pace="lockstep", extra=[...]) starts a server
    (a text is written to tmp_path/manifest.toml first). Every server it started is stopped
    with SIGINT at teardown, and must exit 0."""
    started: list[GlintServer] = []

    def _serve(manifest, pace: str = "lockstep", extra: Optional[list[str]] = None, name: str = "manifest.toml"):
        if isinstance(manifest, str):
            path = tmp_path / name
            path.write_text(manifest)
        else:
            path = Path(manifest)
        server = start_server(path, pace=pace, extra=extra)
        started.append(server)
        return server

    yield _serve
    failures = []
    for server in started:
        was_stopped = server.stopped
        rc = server.stop()
        if not was_stopped and rc != 0:
            failures.append(f"glint serve on port {server.port} exited {rc} after SIGINT:\n{server.output()}")
    assert not failures, "\n".join(failures)


@pytest.fixture
def connect() -> Callable:
    """A factory: connect(server) gives a connected LuckyEngineClient (closed at teardown)."""
    from luckyrobots import LuckyEngineClient

    clients = []

    def _connect(server: GlintServer, timeout: float = RPC_TIMEOUT_S):
        client = LuckyEngineClient(host="127.0.0.1", port=server.port, timeout=timeout)
        client.connect()
        clients.append(client)
        return client

    yield _connect
    for c in clients:
        c.close()


@pytest.fixture
def showroom(serve, connect):
    """A lockstep server over the showroom with one 16 x 360 lidar, and a client."""
    server = serve(showroom_manifest())
    return server, connect(server)


def tick_of(call) -> int:
    """The `glint-tick` metadata of a finished call (initial or trailing metadata)."""
    for md in (call.initial_metadata() or (), call.trailing_metadata() or ()):
        for item in md:
            if item.key == "glint-tick":
                return int(item.value)
    raise AssertionError("the response carries no glint-tick metadata")


def assert_serving(client, sensor: int = 0, beams: Optional[int] = None) -> None:
    """The server still answers: GetLidarBeamCount works (and gives `beams` when given)."""
    got = client.lidar.GetLidarBeamCount(client.pb.lidar.LidarSensorRequest(sensor=sensor), timeout=RPC_TIMEOUT_S)
    if beams is not None:
        assert got.beams == beams
    else:
        assert got.beams > 0


def step(client, actions=(0.0, 0.0, 0.0), agent_name: str = ""):
    """One lockstep step through the raw stub; asserts it succeeded."""
    r = client.agent.Step(
        client.pb.agent.StepRequest(agent_name=agent_name, actions=list(actions)), timeout=RPC_TIMEOUT_S
    )
    assert r.success, r.message
    return r


def rpc_error(fn, *args, **kwargs) -> grpc.RpcError:
    """The RpcError `fn` raises (fails when it raises none)."""
    with pytest.raises(grpc.RpcError) as info:
        result = fn(*args, **kwargs)
        # Server-streaming calls raise on iteration.
        if hasattr(result, "__iter__") and not isinstance(result, (str, bytes)):
            for _ in result:
                pass
    return info.value


def decode_png(data: bytes) -> "np.ndarray":
    """An 8-bit RGB or 16-bit grey PNG (any filters, one image), as an array."""
    import struct
    import zlib

    import numpy as np

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        idat += body if kind == b"IDAT" else b""
        ihdr = body if kind == b"IHDR" else ihdr
        pos += 12 + length
    w, h, depth, colour = struct.unpack(">IIBB", ihdr[:10])
    bpp = {(8, 2): 3, (16, 0): 2}[(depth, colour)]
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, w * bpp + 1)
    out = np.zeros((h, w * bpp), np.int32)
    prev = np.zeros(w * bpp, np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        cur = np.zeros(w * bpp, np.int32)
        for x in range(w * bpp):
            a = cur[x - bpp] if x >= bpp else 0
            b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + p) & 0xFF
        out[y], prev = cur, cur
    img = out.astype(np.uint8)
    return img.reshape(h, w, 3) if bpp == 3 else img.view(">u2").reshape(h, w).astype(np.uint16)
