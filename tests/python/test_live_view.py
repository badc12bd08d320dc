"""`glint run --live`: a client speaking the Foxglove WebSocket protocol (`foxglove.sdk.v1`)
subscribes to the lidar and `/tf` channels and decodes the same messages the run's MCAP file
holds; the server listens on loopback only and outlives clients that connect, disconnect and
misbehave."""

from __future__ import annotations

import json
import signal
import struct
import subprocess
import time
from pathlib import Path

import numpy as np

from conftest import GLINT_BIN, REPO

SHOWROOM = REPO / "examples" / "showroom" / "showroom.xml"
HANG_GUARD_S = 600.0


def start_run(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """`glint run --live 0` of the showroom's roof lidar for an hour; returns the process and
    the address it prints once its server listens."""
    manifest = tmp_path / "m.toml"
    manifest.write_text(
        f'scene = "{SHOWROOM}"\n[recorder]\nlidar_runner_hz = 50.0\n'
        '[[lidar]]\nname = "roof"\nattach_site = "lidar"\npreset = "ouster-os1-64"\nself_ignore = "whole-robot"\n'
    )
    proc = subprocess.Popen(
        [str(GLINT_BIN), "run", str(manifest), "--seconds", "3600", "--live", "0", "--out", str(tmp_path / "s"), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    return proc, live_address(proc)


def live_address(proc: subprocess.Popen) -> str:
    """The address `glint run` or `glint serve` prints once its live view listens."""
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("live view: "):
            return line.split("live view: ", 1)[1].strip()
        assert line or proc.poll() is None, proc.stderr.read()
    raise AssertionError("the live view never started")


def stop_run(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=HANG_GUARD_S)


def channels_of(ws, *topics: str) -> dict[str, dict]:
    """The channels the server advertises, by topic, once each of `topics` (by default the
    lidar's cloud) has been. The server opens its channels one by one, so a client that
    connects meanwhile sees them in several `advertise` messages."""
    wanted = set(topics or ("/roof/points",))
    found: dict[str, dict] = {}
    deadline = time.monotonic() + HANG_GUARD_S
    while not wanted <= found.keys() and time.monotonic() < deadline:
        msg = ws.recv(timeout=HANG_GUARD_S)
        if isinstance(msg, str):
            op = json.loads(msg)
            if op["op"] == "advertise":
                found.update({c["topic"]: c for c in op["channels"]})
    return found


def receive(ws, subscriptions: dict[int, str], count: dict[str, int]) -> dict[str, list[tuple[int, bytes]]]:
    """Messages per topic until each topic in `count` has that many: (log time, CDR bytes)."""
    got: dict[str, list] = {t: [] for t in subscriptions.values()}
    deadline = time.monotonic() + HANG_GUARD_S
    while any(len(got[t]) < n for t, n in count.items()) and time.monotonic() < deadline:
        msg = ws.recv(timeout=HANG_GUARD_S)
        if isinstance(msg, bytes) and msg[0] == 1:
            sub, log_time = struct.unpack_from("<IQ", msg, 1)
            got[subscriptions[sub]].append((log_time, bytes(msg[13:])))
    return got


def test_a_client_decodes_the_runs_mcap_messages(tmp_path):
    from websockets.sync.client import connect

    from test_mcap import rosbags_messages

    proc, url = start_run(tmp_path, "--mcap")
    try:
        assert url.startswith("ws://127.0.0.1:")
        with connect(url, subprotocols=["foxglove.sdk.v1"], max_size=None) as ws:
            subs = {1: "/roof/points", 2: "/tf", 3: "/roof/points/glint", 4: "/tf_static"}
            channels = channels_of(ws, *subs.values())
            for topic in ("/roof/points", "/tf"):
                c = channels[topic]
                assert c["encoding"] == "cdr" and c["schemaEncoding"] == "ros2msg", c
            assert channels["/roof/points"]["schemaName"] == "sensor_msgs/msg/PointCloud2"
            ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                {"id": i, "channelId": channels[t]["id"]} for i, t in subs.items()]}))
            got = receive(ws, subs, {"/roof/points": 4, "/tf": 10, "/roof/points/glint": 3, "/tf_static": 2})
    finally:
        stop_run(proc)
    session = next((tmp_path / "s").glob("session_*"))
    recorded: dict[str, dict[int, list[bytes]]] = {}
    for topic, _, stamp, raw, _ in rosbags_messages(session / "mcap" / "episode_000000.mcap"):
        recorded.setdefault(topic, {}).setdefault(stamp, []).append(bytes(raw))
    # The first cloud may have begun before the subscription: every later one is whole.
    for stamp, data in got["/roof/points"][1:]:
        assert [data] == recorded["/roof/points"][stamp], stamp
    for stamp, data in got["/tf"]:
        assert data in recorded["/tf"][stamp]
    # The same clouds in glint's layout, with the colour-by fields.
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    # A client that subscribes late still gets the sensors' mounts: the view sends them on.
    [first] = recorded["/tf_static"].values()
    assert all(data == first[0] for _, data in got["/tf_static"])
    mounts = store.deserialize_cdr(first[0], "tf2_msgs/msg/TFMessage").transforms
    assert [(t.header.frame_id, t.child_frame_id) for t in mounts] == [("lidar_mount", "roof")]
    for stamp, data in got["/roof/points/glint"][1:]:
        glint = decode_cloud(store.deserialize_cdr(data, "sensor_msgs/msg/PointCloud2"))
        driver = decode_cloud(store.deserialize_cdr(recorded["/roof/points"][stamp][0], "sensor_msgs/msg/PointCloud2"))
        assert glint.dtype.itemsize == 60
        assert {"azimuth", "height", "order", "incidence", "nir_reflectivity"} <= set(glint.dtype.names)
        for field in ("x", "y", "z", "ring"):
            assert np.array_equal(glint[field], driver[field]), field
        assert np.allclose(glint["azimuth"], np.degrees(np.arctan2(glint["y"], glint["x"])) % 360.0, atol=1e-3)
        assert np.array_equal(glint["order"], glint["bin"].astype(np.int64) * 64 + glint["ring"])
        assert 0.0 <= glint["incidence"].min() and glint["incidence"].max() <= 90.0 + 1e-3
        assert glint["height"].min() > -0.5, "the showroom's floor is at z = 0"


def decode_cloud(msg):
    """A PointCloud2's points as a structured array."""
    from test_mcap import NUMPY

    dtype = np.dtype({"names": [f.name for f in msg.fields], "formats": [NUMPY[f.datatype] for f in msg.fields],
                      "offsets": [f.offset for f in msg.fields], "itemsize": msg.point_step})
    return np.frombuffer(bytes(msg.data), dtype=dtype)


def listening_addresses(port: int) -> list[str]:
    """The local addresses of the TCP sockets listening on `port` (IPv4, from /proc)."""
    out = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        addr, p = local.split(":")
        if int(p, 16) == port and state == "0A":
            out.append(".".join(str(b) for b in bytes.fromhex(addr)[::-1]))
    return out


def test_the_server_listens_on_loopback_and_outlives_bad_clients(tmp_path):
    import socket

    from websockets.sync.client import connect

    proc, url = start_run(tmp_path, "--no-record")
    try:
        port = int(url.rsplit(":", 1)[1])
        assert listening_addresses(port) == ["127.0.0.1"]
        # A client that connects and vanishes; one that sends garbage; one that subscribes to
        # channels that do not exist; a raw socket that is not WebSocket at all.
        with connect(url, subprotocols=["foxglove.sdk.v1"]):
            pass
        with socket.create_connection(("127.0.0.1", port)) as raw:
            raw.sendall(b"GET / HTTP/1.1\r\n\r\n\x00\xff garbage")
        for junk in ("not json", json.dumps({"op": "subscribe", "subscriptions": [{"id": 1, "channelId": 999}]}),
                     json.dumps({"op": "nonsense"})):
            try:
                with connect(url, subprotocols=["foxglove.sdk.v1"]) as ws:
                    ws.send(junk)
                    ws.send(b"\x07\x00")
                    ws.recv(timeout=1)
            except Exception:  # noqa: BLE001 - the server may close on a misbehaving client
                pass
        assert proc.poll() is None
        with connect(url, subprotocols=["foxglove.sdk.v1"], max_size=None) as ws:
            channels = channels_of(ws)
            ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 5, "channelId": channels["/roof/points"]["id"]}]}))
            got = receive(ws, {5: "/roof/points"}, {"/roof/points": 2})
            assert len(got["/roof/points"]) >= 2
    finally:
        stop_run(proc)
    assert proc.returncode == 130, proc.stderr.read()


def test_bench_live_reports_well_formed_figures():
    proc = subprocess.run(
        [str(GLINT_BIN), "bench", "live", str(REPO / "examples" / "showroom" / "showroom.toml"), "--seconds", "0.2",
         "--repeats", "1", "--json"],
        capture_output=True, text=True, timeout=HANG_GUARD_S,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["seconds"] == 0.2 and report["live_s"] > 0 and report["plain_s"] > 0
    assert report["overhead"] == report["live_s"] / report["plain_s"] - 1


def test_a_port_in_use_is_a_clear_error(tmp_path):
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        manifest = tmp_path / "m.toml"
        manifest.write_text(f'scene = "{SHOWROOM}"\n[[lidar]]\nname = "roof"\nattach_site = "lidar"\n')
        proc = subprocess.run([str(GLINT_BIN), "run", str(manifest), "--seconds", "0.1", "--no-record", "--live", str(port)],
                              capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 1 and "cannot start the live view on 127.0.0.1:" in proc.stderr, proc.stderr
    assert "panicked" not in proc.stderr


def test_glint_serve_live_publishes_the_clouds(tmp_path):
    from websockets.sync.client import connect

    manifest = tmp_path / "m.toml"
    manifest.write_text(
        f'scene = "{SHOWROOM}"\n[recorder]\nlidar_runner_hz = 50.0\n'
        '[[lidar]]\nname = "roof"\nattach_site = "lidar"\npreset = "velodyne-vlp16"\nself_ignore = "whole-robot"\n'
    )
    proc = subprocess.Popen(
        [str(GLINT_BIN), "serve", str(manifest), "--addr", "127.0.0.1:0", "--pace", "free", "--live", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = live_address(proc)
        with connect(url, subprotocols=["foxglove.sdk.v1"], max_size=None) as ws:
            channels = channels_of(ws)
            assert channels["/roof/points"]["schemaName"] == "sensor_msgs/msg/PointCloud2"
            ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 3, "channelId": channels["/roof/points"]["id"]}]}))
            got = receive(ws, {3: "/roof/points"}, {"/roof/points": 3})
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=HANG_GUARD_S)
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    msgs = [store.deserialize_cdr(d, "sensor_msgs/msg/PointCloud2") for _, d in got["/roof/points"]]
    # Whole revolutions after the first: a VLP-16 sees most of the showroom's 28 800 beams.
    assert all(m.point_step == 22 and m.header.frame_id == "roof" for m in msgs)
    assert all(m.width > 1000 for m in msgs[1:]), [m.width for m in msgs]
