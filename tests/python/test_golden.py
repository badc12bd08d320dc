"""Golden outputs from Python and over gRPC: the golden scene (tests/data/golden/golden.toml,
the showroom with two small lidars and a camera) stepped from the `glint` module and through
`glint serve` with LuckyEngine's client, every scan (clean and through the return model, with
second echoes and intensity), frame, observation and step report compared bit for bit with
the arrays an earlier build made (tests/data/golden/python/*.npz). The command line's outputs
are compared by crates/glint-cli/tests/golden.rs.

After a change that is meant to alter an output, bless the new arrays with
`GLINT_BLESS=1 .deps/venv/bin/python -m pytest tests/python/test_golden.py` and commit them
with the reason in the message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

import glint
from conftest import GLINT_BIN, REPO, RPC_TIMEOUT_S, SHOWROOM_XML, server_env

GOLDEN = REPO / "tests" / "data" / "golden"
STEPS = 5


def golden_scene(tmp_path: Path) -> Path:
    """The golden manifest beside a copy of the showroom, baked (MaterialBakes/golden.lvxb)."""
    shutil.copy(GOLDEN / "golden.toml", tmp_path / "golden.toml")
    shutil.copy(SHOWROOM_XML, tmp_path / "showroom.xml")
    manifest = tmp_path / "golden.toml"
    subprocess.run([str(GLINT_BIN), "bake", str(manifest)], check=True, env=server_env(), capture_output=True)
    return manifest


def check_golden(name: str, arrays: dict[str, np.ndarray]) -> None:
    """`arrays` equal, bit for bit and in dtype and shape, to the golden file `name`.npz."""
    path = GOLDEN / "python" / f"{name}.npz"
    if os.environ.get("GLINT_BLESS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, **arrays)
    expected = np.load(path)
    assert sorted(expected.files) == sorted(arrays), f"{name}: the arrays are not the golden file's set"
    differ = [
        k
        for k, v in arrays.items()
        if v.dtype != expected[k].dtype or v.shape != expected[k].shape or v.tobytes() != expected[k].tobytes()
    ]
    assert not differ, f"{name}: these arrays differ from the golden file's: {differ}"


def test_python_scans_renders_and_reports_are_the_golden_ones(tmp_path):
    sim = glint.Simulation.from_manifest(str(golden_scene(tmp_path)), nworld=2, seed=3)
    sim.load_bake("golden")
    sim.lidar_live = True
    arrays: dict[str, list] = {}

    def keep(key: str, value) -> None:
        arrays.setdefault(key, []).append(np.array(value))

    for _ in range(STEPS):
        report = sim.step()
        keep("time", report.time)
        keep("status", report.status)
        keep("observation", sim.observe())
        for i, lidar in enumerate(sim.lidars):
            clean = lidar.scan()
            keep(f"lidar{i}_clean", clean.ranges)
            measured = lidar.scan(material=True, secondary=True, intensity=True)
            for field in ("ranges", "secondary", "intensity", "reflectivity"):
                keep(f"lidar{i}_{field}", getattr(measured, field))
    for name, outputs in sim.render().items():
        for kind, image in outputs.items():
            keep(f"{name}_{kind}", image)
    check_golden("module", {k: np.stack(v) for k, v in arrays.items()})


def test_grpc_scans_and_steps_are_the_golden_ones(tmp_path, serve, connect):
    server = serve(golden_scene(tmp_path))
    c = connect(server)
    L, pb = c.lidar, c.pb.lidar
    ack = L.LoadLidarBake(pb.LoadLidarBakeRequest(name="golden"), timeout=RPC_TIMEOUT_S)
    assert ack.ok, ack.message
    ack = L.SetLidarLive(pb.SetLidarLiveRequest(live=True), timeout=RPC_TIMEOUT_S)
    assert ack.ok, ack.message
    arrays: dict[str, list] = {}
    for k in range(STEPS):
        r = c.agent.Step(
            c.pb.agent.StepRequest(actions=[0.4, -0.2 * k, 0.1]), timeout=RPC_TIMEOUT_S
        )
        assert r.success, r.message
        arrays.setdefault("observations", []).append(np.array(r.observation.observations, np.float32))
        arrays.setdefault("actions", []).append(np.array(r.observation.actions, np.float32))
        for sensor in (0, 1):
            s = L.GetLidarScan(
                pb.GetLidarScanRequest(sensor=sensor, material=True, want_secondary=True, want_intensity=True),
                timeout=RPC_TIMEOUT_S,
            )
            for field in ("ranges", "secondary_ranges", "intensity", "reflectivity_calibrated"):
                arrays.setdefault(f"lidar{sensor}_{field}", []).append(np.array(getattr(s, field), np.float32))
            clean = L.GetLidarScan(pb.GetLidarScanRequest(sensor=sensor), timeout=RPC_TIMEOUT_S)
            arrays.setdefault(f"lidar{sensor}_clean", []).append(np.array(clean.ranges, np.float32))
    check_golden("grpc", {k: np.stack(v) for k, v in arrays.items()})
