"""Scans from Python equal the Rust `Simulation`'s: the `glint` command (Rust end to end) and
the Python module step the same manifest with the same seed and the same (still) controls, and
every beam's range agrees exactly."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
from plyfile import PlyData

import glint

REPO = Path(__file__).resolve().parents[2]
GLINT_BIN = Path(os.environ.get("GLINT_BIN", str(REPO / "target" / "release" / "glint")))
SHOWROOM = REPO / "examples" / "showroom" / "showroom.toml"


def test_python_scans_equal_the_command_lines(tmp_path):
    ticks = 7
    done = subprocess.run(
        [str(GLINT_BIN), "scan", str(SHOWROOM), "--ticks", str(ticks), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    ply = PlyData.read(str(tmp_path / "roof.ply"))["vertex"]

    sim = glint.Simulation.from_manifest(SHOWROOM)
    sim.lidar_live = True
    still = np.zeros(sim.nu)  # `glint scan` holds the robot still
    for _ in range(ticks):
        sim.step(still)
    lidar = sim.lidars[0]
    ranges = lidar.scan().ranges[0]
    channels = lidar.config["channels"]

    beams = np.asarray(ply["bin"], dtype=np.int64) * channels + np.asarray(ply["channel"], dtype=np.int64)
    assert len(beams) > 10_000, "the command's scan has returns"
    np.testing.assert_array_equal(ranges[beams], np.asarray(ply["range"], dtype=np.float32))
    # Beams the PLY has no point for had no return.
    missing = np.setdiff1d(np.arange(lidar.beam_count), beams)
    assert np.all(ranges[missing] == -1.0)


def test_python_material_scans_equal_the_command_lines_for_the_same_seed(tmp_path):
    """The return model's noise is keyed by the episode seed: the same seed, the same noisy ranges."""
    for name in ("showroom.toml", "showroom.xml"):
        (tmp_path / name).write_bytes((SHOWROOM.parent / name).read_bytes())
    manifest = tmp_path / "showroom.toml"
    run = lambda *args: subprocess.run(  # noqa: E731
        [str(GLINT_BIN), *args], capture_output=True, text=True, timeout=600
    )
    baked = run("bake", str(manifest))
    assert baked.returncode == 0, baked.stderr
    ticks = 5
    done = run("scan", str(manifest), "--ticks", str(ticks), "--material", "--out", str(tmp_path / "scan"))
    assert done.returncode == 0, done.stderr
    ply = PlyData.read(str(tmp_path / "scan" / "roof.ply"))["vertex"]
    first = np.asarray(ply["echo"]) == 0

    sim = glint.Simulation.from_manifest(manifest)
    sim.load_bake()
    sim.lidar_live = True
    still = np.zeros(sim.nu)
    for _ in range(ticks):
        sim.step(still)
    lidar = sim.lidars[0]
    ranges = lidar.scan(material=True).ranges[0]
    channels = lidar.config["channels"]
    beams = np.asarray(ply["bin"], dtype=np.int64)[first] * channels + np.asarray(ply["channel"], dtype=np.int64)[first]
    measured = np.asarray(ply["range"], dtype=np.float32)[first]
    assert len(beams) > 10_000
    np.testing.assert_array_equal(ranges[beams], measured)
    clean = lidar.scan().ranges[0]
    assert np.any(ranges[beams] != clean[beams]), "the material ranges carry the model's noise"
