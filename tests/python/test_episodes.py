"""Episodes end where they end: under every autoreset mode of glint.gym.VectorEnv, each
recorded episode holds exactly its episode's ticks (none of the step a world takes after its
episode ran its length, before it is reset), and the simulation's time is MuJoCo's clock, the
one the step reports and the recordings read."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from gymnasium.vector import AutoresetMode

import glint
import glint.gym

REPO = Path(__file__).resolve().parents[2]
SHOWROOM_XML = REPO / "examples" / "showroom" / "showroom.xml"

BINS = 360
BEAMS = 16 * BINS
TICK_ROWS = BEAMS // 5  # 10 Hz on the 50 Hz runner: a fifth of a revolution a tick
EPISODE_TICKS = 5


def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "env.toml"
    path.write_text(
        f"""scene = "{SHOWROOM_XML}"
[[lidar]]
name = "roof"
attach_site = "lidar"
preset = "velodyne-vlp16"
azimuth_bins = {BINS}
self_ignore = "whole-robot"
[recorder]
lidar_runner_hz = 50.0
[[observation]]
name = "joint_positions"
[task]
body = "robot"
goal = [20.0, 0.0]
episode_seconds = {EPISODE_TICKS * 0.02}
"""
    )
    return path


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_every_recorded_episode_has_exactly_its_ticks(tmp_path, mode):
    envs = glint.gym.VectorEnv(manifest(tmp_path), num_envs=2, autoreset_mode=mode)
    envs.reset(seed=3)
    actions = np.zeros((2, 3))
    actions[:, 0] = 0.5
    with envs.sim.record(str(tmp_path / "rec")) as rec:
        # World 1 starts two steps late, so the worlds' episodes are out of phase.
        envs.step(actions)
        envs.step(actions)
        envs.reset(options={"reset_mask": np.array([False, True])})
        for _ in range(16):
            envs.step(actions)
        session = Path(rec.path)
    lines = [json.loads(line) for line in (session / "meta" / "episodes.jsonl").read_text().splitlines()]
    # World 1's first episode was cut short by the reset; the ones the autoreset ended ran
    # exactly their length, and none has a tick more.
    assert sum(e["ticks"] == EPISODE_TICKS for e in lines) >= 4, lines
    for e in lines:
        (file,) = e["files"]
        rows = pq.read_metadata(session / file).num_rows
        ticks = pq.read_table(session / file, columns=["timestamp"]).column(0).to_numpy()
        assert e["ticks"] <= EPISODE_TICKS, e
        assert rows == e["ticks"] * TICK_ROWS, e
        assert len(np.unique(ticks)) == e["ticks"], e


def test_time_is_mujocos_clock_everywhere(tmp_path):
    sim = glint.Simulation.from_manifest(str(manifest(tmp_path)), nworld=2)
    for _ in range(3):
        report = sim.step()
    assert np.array_equal(np.asarray(sim.time), np.asarray(report.time))
    assert np.allclose(report.time, 3 * sim.dt)
