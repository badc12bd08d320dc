"""A lidar turning faster than the runner ticks, through the seed's API: gRPC's
SetLidarConfig and Python's `config` and lidar dicts accept a `rotation_hz` inside the seed's
range (0 to 1000) above the runner's rate, as the seed describes: the sensor scans one
revolution per tick, the ack and a warning give the effective rate, and a recording's
sidecar records both rates. A manifest keeps refusing it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import glint
from conftest import GOOD_CONFIG, RPC_TIMEOUT_S, SHOWROOM_XML, showroom_manifest

T = RPC_TIMEOUT_S


def test_grpc_accepts_a_rotation_above_the_runner_with_its_effective_rate(serve, connect):
    server = serve(showroom_manifest())  # a 50 Hz runner
    c = connect(server)
    L, pb = c.lidar, c.pb.lidar
    ack = L.SetLidarConfig(pb.SetLidarConfigRequest(**{**GOOD_CONFIG, "rotation_hz": 200.0}), timeout=T)
    assert ack.ok, ack.message
    assert "rotation_hz = 200" in ack.message and "effective 50 Hz" in ack.message, ack.message
    assert L.GetLidarConfig(pb.LidarSensorRequest(sensor=0), timeout=T).rotation_hz == pytest.approx(200.0)
    # Each step casts one revolution: every beam is fresh after the first.
    assert L.SetLidarLive(pb.SetLidarLiveRequest(live=True), timeout=T).ok
    c.agent.Step(c.pb.agent.StepRequest(actions=[0.0, 0.0, 0.0]), timeout=T)
    ranges = np.asarray(L.GetLidarScan(pb.GetLidarScanRequest(sensor=0), timeout=T).ranges)
    assert ranges.size == GOOD_CONFIG["channels"] * GOOD_CONFIG["azimuth_bins"]
    assert np.count_nonzero(ranges != -1.0) > 0.5 * ranges.size
    assert "effective 50 Hz" in server.output()
    # Above the seed's range it is refused, as before.
    ack = L.SetLidarConfig(pb.SetLidarConfigRequest(**{**GOOD_CONFIG, "rotation_hz": 1001.0}), timeout=T)
    assert not ack.ok and "rotation_hz" in ack.message


def test_python_accepts_it_warns_and_a_recording_records_both_rates(tmp_path):
    lidar = {"name": "fast", "attach_site": "lidar", "channels": 4, "azimuth_bins": 90, "rotation_hz": 250.0}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = glint.Simulation.from_xml(str(SHOWROOM_XML), lidars=[lidar])  # a 100 Hz runner
    text = " ".join(str(w.message) for w in caught)
    assert "rotation_hz = 250" in text and "effective 100 Hz" in text, text
    with sim.record(str(tmp_path / "rec")) as rec:
        for _ in range(3):
            sim.step()
        session = Path(rec.path)
    (sidecar,) = sorted(session.glob("data/chunk-000/lidar-fast-*.json"))
    meta = json.loads(sidecar.read_text())
    assert meta["sensor"]["scan"]["rotation_hz"] == 250.0
    assert meta["effective_rotation_hz"] == 100.0 and meta["tick_hz"] == 100.0
    assert meta["rows"] == 3 * 4 * 90, "one revolution a tick"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim.lidars[0].config = {"rotation_hz": 500.0}
        sim.step()
    assert any("effective 100 Hz" in str(w.message) for w in caught)
    assert sim.lidars[0].config["rotation_hz"] == 500.0


def test_a_manifest_keeps_refusing_it(tmp_path):
    path = tmp_path / "fast.toml"
    path.write_text(
        f'scene = "{SHOWROOM_XML}"\n[[lidar]]\nattach_site = "lidar"\nrotation_hz = 200.0\n'
        "[recorder]\nlidar_runner_hz = 50.0\n"
    )
    with pytest.raises(glint.GlintError, match="rotation_hz = 200 is above the lidar runner's 50"):
        glint.Simulation.from_manifest(str(path))
