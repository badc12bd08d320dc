"""The Python examples under examples/python/ run (as a user would run them) and do what they
print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "python"


def run_example(name: str, *args: str, cwd: Path = REPO) -> str:
    env = dict(os.environ)
    lib = str(REPO / ".deps" / "mujoco" / "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_random_policy(tmp_path):
    out = run_example("random_policy.py", "--steps", "60", cwd=tmp_path)
    assert "'lidar_ranges': Box(-1.0, 100.0, (28800,), float32)" in out
    assert "60 random steps done" in out
    returned, beams = map(int, re.search(r"last scan: (\d+) of (\d+) beams returned", out).groups())
    assert beams == 28800 and 0 < returned <= beams


def test_point_cloud(tmp_path):
    target = tmp_path / "cloud.npy"
    out = run_example("point_cloud.py", "--out", str(target), cwd=tmp_path)
    count = int(re.search(r"(\d+) points saved to", out).group(1))
    cloud = np.load(target)
    assert cloud.shape == (count, 3) and cloud.dtype == np.float32
    assert count > 30000  # most of the OS1-64's 65 536 beams return in the closed showroom
    radius = np.linalg.norm(cloud, axis=1)
    assert radius.min() >= 0.5 and radius.max() < 40.0  # the manifest's min and max range
    # The showroom's walls stand 9 m and 7 m from the middle: the farthest points lie beyond
    # 7 m, and the floor, 1.2 m below the sensor, is the lowest thing seen.
    assert radius.max() > 7.0
    assert abs(cloud[:, 2].min() - (-1.2)) < 1e-3
    out = run_example("point_cloud.py", "--steps", "1", "--out", str(tmp_path / "one.npy"), cwd=tmp_path)
    assert "1 ticks" in out and len(np.load(tmp_path / "one.npy")) < count


def test_vector_env(tmp_path):
    out = run_example("vector_env.py", "--steps", "30", cwd=tmp_path)
    assert "16 worlds, autoreset NEXT_STEP" in out
    assert "obs['lidar_ranges']: (16, 28800) float32" in out
    assert "30 steps x 16 worlds" in out
    rate = float(re.search(r"(\d+) environment steps/s", out).group(1))
    assert rate > 0


def test_own_mujoco_loop(tmp_path):
    out = run_example("own_mujoco_loop.py", "--steps", "40", "--out", str(tmp_path / "loop"), cwd=tmp_path)
    scans, beams, returns = map(int, re.search(r"(\d+) scans of (\d+) beams; last: (\d+) returns", out).groups())
    assert scans == 4 and beams == 65536 and returns > 30000
    assert re.search(r"image 320x240, mean [1-9]", out)
    hits = int(re.search(r"fan: (\d+) of 36 rays hit", out).group(1))
    assert hits == 36  # the closed showroom's walls all around
    cloud = np.load(tmp_path / "loop" / "cloud.npy")
    assert cloud.shape == (returns, 3)
