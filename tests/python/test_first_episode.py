"""`glint run --first-episode N`: a range of episodes recorded on its own equals, file by file,
the same episodes of one run of them all (seeds and file numbers follow the global episode
index), the ground a dataset split across processes stands on."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import GLINT_BIN, REPO

SHOWROOM = REPO / "examples" / "showroom" / "showroom.xml"
RUN_TIMEOUT_S = 900.0  # hang guard


def run(tmp: Path, name: str, *args: str) -> Path:
    manifest = tmp / "m.toml"
    manifest.write_text(
        f'scene = "{SHOWROOM}"\n[recorder]\nlidar_runner_hz = 50.0\n'
        '[[lidar]]\nname = "roof"\nattach_site = "lidar"\npreset = "ouster-os1-64"\nself_ignore = "whole-robot"\n'
        '[randomize.geom_pos]\nwall_east = { uniform = [[8.5, 0.0, 1.5], [9.1, 0.0, 1.5]] }\n'
    )
    proc = subprocess.run([str(GLINT_BIN), "run", str(manifest), "--seconds", "0.1", "--seed", "5", "--out",
                           str(tmp / name), *args], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    return next((tmp / name).glob("session_*"))


def test_a_range_of_episodes_equals_one_runs_file_by_file(tmp_path):
    whole = run(tmp_path, "whole", "--episodes", "3")
    tail = run(tmp_path, "tail", "--episodes", "1", "--first-episode", "2")
    files = sorted(p.name for p in (tail / "data" / "chunk-000").iterdir())
    assert files and all("-002." in f for f in files), files
    assert any(f.startswith("lidar-roof-002.parquet") for f in files) and "state-002.parquet" in files
    for name in files:
        assert (whole / "data" / "chunk-000" / name).read_bytes() == (tail / "data" / "chunk-000" / name).read_bytes(), name
