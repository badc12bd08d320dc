"""`python -m glint.bench gym` runs and reports finite figures, and its reference environment
(glint._reference, the mujoco package with mj_multiRay) builds the observation glint's
VectorEnv builds: the comparison is between two environments that do the same work."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import glint
import glint.gym
from glint._reference import ReferenceVectorEnv, physics_steps_per_tick, read_manifest

REPO = Path(__file__).resolve().parents[2]
VLP16_TOML = REPO / "examples" / "python" / "showroom_vlp16.toml"


def bench(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    lib = str(REPO / ".deps" / "mujoco" / "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return subprocess.run(
        [sys.executable, "-m", "glint.bench", *args], cwd=REPO, capture_output=True, text=True, env=env, timeout=600
    )


def test_bench_gym_json_reports_finite_positive_figures():
    done = bench("gym", "--steps", "3", "--repeats", "1", "--warmup", "4", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["bench"] == "gym" and report["envs"] == 16 and report["steps"] == 3
    assert Path(report["manifest"]) == VLP16_TOML
    assert report["lidar_beams"] == {"lidar_ranges": 28800}
    assert report["physics_steps_per_env_step"] == 10  # 2 ms steps, 50 Hz lidar runner
    assert report["rays_per_env_step"] == 5760  # a fifth of the 10 Hz revolution per step
    for key in ("glint_env_steps_per_s", "reference_env_steps_per_s", "speedup"):
        assert math.isfinite(report[key]) and report[key] > 0, key
    # One repeat: the median of one ratio is that ratio.
    assert report["speedup"] == report["glint_env_steps_per_s"] / report["reference_env_steps_per_s"]
    if hasattr(glint._glint, "VectorLoop"):
        assert math.isfinite(report["rust_env_steps_per_s"]) and report["rust_env_steps_per_s"] > 0
        assert math.isfinite(report["python_over_rust"]) and report["python_over_rust"] > 0
    else:
        assert report["rust_env_steps_per_s"] is None and "unavailable" in report["rust_loop"]
    agreement = report["agreement"]
    assert agreement["steps"] == 4 and agreement["max_joint_diff"] == 0.0
    assert agreement["lidar_hit_mismatches"] <= 4 * 16 * 5760 // 10000
    assert agreement["max_range_diff_m"] < 1e-3


def test_the_rust_driven_loop_runs_in_turns_and_from_a_reset():
    loop = glint._glint.VectorLoop(VLP16_TOML, 2)
    first = [loop.run(1) for _ in range(3)]
    assert all(math.isfinite(s) and s > 0 for s in first)
    loop.reset()
    assert loop.run(2) > 0
    nu = glint.Simulation.from_manifest(VLP16_TOML).nu
    assert loop.run(3, np.zeros((3, 2, nu))) > 0  # given actions, as the benchmark passes them
    with pytest.raises(ValueError, match=r"actions have shape \[3, 2\]: give \[3, 2, "):
        loop.run(3, np.zeros((3, 2)))
    assert glint._glint.bench_vector_loop(VLP16_TOML, 2, 2) > 0
    with pytest.raises(FileNotFoundError, match="nonexistent.toml"):
        glint._glint.VectorLoop(REPO / "nonexistent.toml", 2)


def test_bench_gym_text_report_and_bad_arguments():
    done = bench("gym", "--steps", "2", "--repeats", "1", "--warmup", "1", "--envs", "2")
    assert done.returncode == 0, done.stderr
    assert "glint.gym.VectorEnv" in done.stdout and "mj_multiRay reference" in done.stdout
    assert "speed-up over the reference" in done.stdout and "same loop driven from Rust" in done.stdout
    done = bench("gym", "--steps", "0")
    assert done.returncode == 2 and "error:" in done.stderr
    done = bench("gym", "--manifest", str(REPO / "nonexistent.toml"), "--steps", "1")
    assert done.returncode == 2 and "cannot read manifest" in done.stderr


def test_reference_environment_matches_glints():
    n = 3
    envs = glint.gym.VectorEnv(VLP16_TOML, num_envs=n)
    ref = ReferenceVectorEnv.from_glint(VLP16_TOML, n)
    table = read_manifest(VLP16_TOML)
    assert ref.nsub == physics_steps_per_tick(0.002, table["lidar_runner_hz"]) == 10
    a, _ = envs.reset(seed=0)
    b = ref.reset()
    assert set(a) == set(b)
    for key in a:
        assert np.array_equal(a[key], b[key])
    rng = np.random.default_rng(4)
    compared = mismatched = 0
    for step in range(12):
        actions = rng.uniform(-2, 2, size=(n, 3))
        a, ra, ta, ua, _ = envs.step(actions)
        b, rb, tb, ub = ref.step(actions)
        assert np.array_equal(a["joint_positions"], b["joint_positions"]), step
        assert np.array_equal(a["joint_velocities"], b["joint_velocities"]), step
        x, y = a["lidar_ranges"], b["lidar_ranges"]
        both = (x != -1) & (y != -1)
        mismatched += int(np.count_nonzero((x != -1) != (y != -1)))
        compared += x.size
        assert np.max(np.abs(x[both] - y[both]), initial=0.0) < 1e-4
        assert np.allclose(ra, rb, atol=1e-9) and np.array_equal(ta, tb) and np.array_equal(ua, ub)
    assert mismatched <= compared // 100000
    assert np.count_nonzero(x != -1) > 0.8 * x.size  # a whole revolution cast, the room closed


def test_bench_distributed_reports_well_formed_figures():
    from conftest import GLINT_BIN

    env_bin = dict(os.environ, GLINT_BIN=str(GLINT_BIN), RAY_NODE_IP_ADDRESS="127.0.0.1")
    lib = str(REPO / ".deps" / "mujoco" / "lib")
    env_bin["LD_LIBRARY_PATH"] = lib + (":" + env_bin["LD_LIBRARY_PATH"] if env_bin.get("LD_LIBRARY_PATH") else "")
    from loopback import loopback_only

    with loopback_only():  # Ray's servers on loopback only
        done = subprocess.run([sys.executable, "-m", "glint.bench", "distributed", "--episodes", "2", "--seconds",
                               "0.2", "--repeats", "2", "--json"], cwd=REPO, capture_output=True, text=True, env=env_bin, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["repeats"] == 2 and len(report["plain_s"]) == len(report["ray_2_workers_s"]) == 2
    assert report["episodes"] == 2 and Path(report["manifest"]) == REPO / "examples" / "showroom" / "showroom.toml"
    for key in ("plain_episodes_per_s", "ray_1_worker_episodes_per_s", "ray_2_workers_episodes_per_s",
                "scaling_2_over_1"):
        assert math.isfinite(report[key]) and report[key] > 0, key
    assert math.isfinite(report["ray_overhead"]) and report["ray_overhead"] > -1.0
