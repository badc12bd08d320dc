"""`glint export --format lerobot` loaded by LeRobot 0.6.1 itself: `LeRobotDataset(repo_id,
root=…)` opens the dataset offline and every frame it yields equals what the session recorded
(lidar vectors bit for bit, robot state and action, colour within H.264's loss, depth within
half a step of LeRobot's quantizer), and a dataset LeRobot's own writer makes of the same
frames has the same layout (tests/python/lerobot_check.py, run with the Python 3.12 of
.deps/lerobot, `make lerobot`). Also: a session without cameras gives one row per tick, and
the export never writes into a folder that holds files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import GLINT_BIN, REPO

SHOWROOM = REPO / "examples" / "showroom" / "showroom.xml"
CHECK = Path(__file__).with_name("lerobot_check.py")
LEROBOT_PYTHON = Path(os.environ.get("GLINT_LEROBOT_PYTHON", str(REPO / ".deps" / "lerobot" / "bin" / "python")))
RUN_TIMEOUT_S = 900.0  # hang guard
LIDARS = (
    '[[lidar]]\nname = "roof"\nattach_site = "lidar"\npreset = "ouster-os1-64"\nmax_range = 40.0\n'
    'self_ignore = "whole-robot"\n'
    '[[lidar]]\nname = "custom"\nattach_site = "lidar"\nchannels = 8\nazimuth_bins = 200\nrotation_hz = 5.0\n'
    'self_ignore = "whole-robot"\n'
)


def ffmpeg_env() -> dict:
    import imageio_ffmpeg

    return dict(os.environ, GLINT_FFMPEG=imageio_ffmpeg.get_ffmpeg_exe())


def glint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(GLINT_BIN), *args], capture_output=True, text=True, env=ffmpeg_env(),
                          timeout=RUN_TIMEOUT_S)


def record(tmp: Path, extra: str, seconds: str, episodes: str) -> Path:
    manifest = tmp / "m.toml"
    manifest.write_text(f'scene = "{SHOWROOM}"\n[recorder]\nlidar_runner_hz = 50.0\n{LIDARS}{extra}')
    proc = glint("run", str(manifest), "--seconds", seconds, "--episodes", episodes, "--out", str(tmp / "s"))
    assert proc.returncode == 0, proc.stderr
    return next((tmp / "s").glob("session_*"))


def lerobot_check(dataset: Path, session: Path, reference: Path) -> dict:
    assert LEROBOT_PYTHON.exists(), f"{LEROBOT_PYTHON} is missing: run `make lerobot`"
    proc = subprocess.run([str(LEROBOT_PYTHON), str(CHECK), str(dataset), str(session), str(reference)],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Path:
    camera = '[[camera]]\ncamera = "overview"\nwidth = 64\nheight = 48\nrate_hz = 10.0\noutputs = ["rgb", "depth"]\n'
    return record(tmp_path_factory.mktemp("lerobot"), camera, "0.6", "2")


def test_lerobot_loads_the_dataset_and_every_frame_equals_the_session(session, tmp_path):
    proc = glint("export", str(session), "--format", "lerobot", "--task", "drive past the glass")
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr, proc.stderr
    dataset = session / "lerobot"
    info = json.loads((dataset / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["fps"] == 10
    assert info["features"]["observation.lidar.roof"]["shape"] == [64 * 1024]
    assert info["features"]["observation.state"]["names"] == ["qpos/base_x", "qpos/base_y", "qpos/base_yaw",
                                                              "qvel/base_x", "qvel/base_y", "qvel/base_yaw"]
    assert info["features"]["action"]["names"] == ["ctrl/vx", "ctrl/vy", "ctrl/wz"]
    assert info["features"]["observation.images.overview_depth"]["info"]["is_depth_map"] is True
    report = lerobot_check(dataset, session, tmp_path / "reference")
    assert report["problems"] == [], report["problems"][:20]
    figures = report["figures"]
    assert (figures["episodes"], figures["total"], figures["frames"]) == (2, 12, 12)
    assert figures["lidar_values"] == 12 * (64 * 1024 + 8 * 200)
    assert figures["depth_pixels"] > 0 and figures["rgb_mean_abs"] <= 3.0
    tasks = pq.read_table(dataset / "meta" / "tasks.parquet").to_pydict()
    assert tasks == {"task_index": [0], "task": ["drive past the glass"]}


def test_without_cameras_a_row_is_a_tick(tmp_path):
    session = record(tmp_path, "", "0.2", "1")
    out = tmp_path / "dataset"
    proc = glint("export", str(session), "--format", "lerobot", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    info = json.loads((out / "meta" / "info.json").read_text())
    assert info["fps"] == 50 and info["total_frames"] == 10
    assert not any(f["dtype"] == "video" for f in info["features"].values())
    report = lerobot_check(out, session, tmp_path / "reference")
    assert report["problems"] == [], report["problems"][:20]
    assert report["figures"]["total"] == 10


def test_the_export_never_writes_into_a_folder_with_files(session, tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    proc = glint("export", str(session), "--format", "lerobot", "--out", str(out))
    assert proc.returncode != 0
    assert "is not empty" in proc.stderr and str(out) in proc.stderr, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    proc = glint("export", str(session), "--format", "lerobot", "--out", str(tmp_path / "one"), "--episode", "1")
    assert proc.returncode == 0, proc.stderr
    data = pq.read_table(tmp_path / "one" / "data" / "chunk-000" / "file-000.parquet").to_pydict()
    assert set(data["episode_index"]) == {0}, "the one episode exported is the dataset's episode 0"
    proc = glint("export", str(session), "--format", "lerobot", "--bake", "x", "--out", str(tmp_path / "two"))
    assert proc.returncode != 0 and "--bake does not apply" in proc.stderr, proc.stderr
