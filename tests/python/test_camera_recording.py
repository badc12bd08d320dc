"""Camera streams in a recording (`glint run` with a `[[camera]]` binding): LeRobot's
`videos/` layout with an H.264 `.mp4` per camera and episode, 16-bit depth PNGs in
millimetres, and a sidecar with the intrinsics and each frame's time and camera pose."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np

import glint
from conftest import GLINT_BIN, REPO, decode_png

SCENE = REPO / "examples" / "lights" / "scene.xml"
RUN_TIMEOUT_S = 600.0  # hang guard


def read_png16(path: Path) -> np.ndarray:
    """A 16-bit grey PNG as written by glint."""
    return decode_png(path.read_bytes())


def test_run_records_camera_streams(tmp_path):
    import imageio_ffmpeg

    manifest = tmp_path / "cam.toml"
    manifest.write_text(
        f'scene = "{SCENE}"\n[recorder]\nlidar_runner_hz = 50.0\n'
        '[[lidar]]\nname = "top"\nattach_body = "link0"\nchannels = 4\nazimuth_bins = 90\n'
        '[[camera]]\ncamera = "view"\nwidth = 48\nheight = 32\nrate_hz = 10.0\n'
    )
    env = dict(os.environ, GLINT_FFMPEG=imageio_ffmpeg.get_ffmpeg_exe())
    out = tmp_path / "sessions"
    proc = subprocess.run(
        [str(GLINT_BIN), "run", str(manifest), "--seconds", "1", "--episodes", "2", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    session = next(out.glob("session_*"))
    lines = [json.loads(l) for l in (session / "meta" / "episodes.jsonl").read_text().splitlines()]
    assert [l["index"] for l in lines] == [0, 1]
    for line in lines:
        i = line["index"]
        video = session / f"videos/chunk-000/observation.images.view/episode_{i:06d}.mp4"
        sidecar = session / f"videos/chunk-000/observation.images.view/episode_{i:06d}.json"
        depth_dir = session / f"depth/chunk-000/observation.depth.view/episode_{i:06d}"
        assert sorted(line["camera_files"]) == sorted(str(p.relative_to(session)) for p in [video, sidecar, depth_dir])
        meta = json.loads(sidecar.read_text())
        assert (meta["width"], meta["height"], meta["fps"]) == (48, 32, 10.0)
        fy = 0.5 / np.tan(np.radians(45) / 2) * 32
        assert np.allclose(meta["intrinsics"], [fy, fy, 24.0, 16.0])
        assert [f["frame"] for f in meta["frames"]] == list(range(10))
        assert np.allclose([f["time"] for f in meta["frames"]], 0.02 + 0.1 * np.arange(10))
        assert np.allclose(meta["frames"][0]["pos"], [1.5, -1.5, 1.2])
        reader = imageio_ffmpeg.read_frames(str(video))
        info = next(reader)
        assert tuple(info["size"]) == (48, 32)
        assert sum(1 for _ in reader) == 10
        pngs = sorted(depth_dir.glob("frame_*.png"))
        assert len(pngs) == 10
    # The first depth frame is the camera's depth at the first tick, in millimetres.
    first = read_png16(session / "depth/chunk-000/observation.depth.view/episode_000000/frame_000000.png")
    sim = glint.Simulation.from_manifest(str(manifest))
    sim.set_cameras([{"camera": "view", "width": 48, "height": 32, "outputs": ["depth"]}])
    sim.step()  # one 20 ms tick, as the run's first frame
    expected = sim.render()["view"]["depth"][0]
    assert first.shape == (32, 48)
    assert np.abs(first * 0.001 - expected).max() <= 0.002


def test_camera_rate_must_divide_the_runner(tmp_path):
    manifest = tmp_path / "bad.toml"
    manifest.write_text(
        f'scene = "{SCENE}"\n[recorder]\nlidar_runner_hz = 50.0\n'
        '[[lidar]]\nname = "top"\nattach_body = "link0"\nchannels = 4\nazimuth_bins = 90\n'
        '[[camera]]\ncamera = "view"\nrate_hz = 15.0\n'
    )
    proc = subprocess.run(
        [str(GLINT_BIN), "run", str(manifest), "--seconds", "1", "--out", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )
    assert proc.returncode == 1
    assert "not a whole fraction of the runner's 50 ticks" in proc.stderr and "16.6" in proc.stderr, proc.stderr


def record_depth_camera(tmp_path, camera: str, seconds: float):
    """Records one episode of the arm scene with a small lidar and `camera` (a `[[camera]]`
    table); returns the manifest and the session folder."""
    manifest = tmp_path / "camera.toml"
    lidar = '[[lidar]]\nname = "top"\nattach_body = "link0"\nchannels = 4\nazimuth_bins = 90\n'
    manifest.write_text(f'scene = "{SCENE}"\n[recorder]\nlidar_runner_hz = 50.0\n{lidar}{camera}')
    out = tmp_path / "sessions"
    proc = subprocess.run(
        [str(GLINT_BIN), "run", str(manifest), "--seconds", str(seconds), "--episodes", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    return manifest, next(out.glob("session_*"))


def test_a_depth_sensor_model_is_recorded_at_its_scale_with_its_parameters(tmp_path):
    """A `[[camera]]` with a depth-sensor preset: the recorded 16-bit codes are the measured
    depth at the camera's `depth_scale` (0 invalid), the sidecar names the model and its
    parameters, and the frames equal what the Python module renders for the same episode
    and tick (the noise is keyed by them)."""
    camera = ('[[camera]]\ncamera = "view"\nwidth = 96\nheight = 64\noutputs = ["depth"]\n'
              'preset = "realsense-d435"\ndepth_scale = 0.0001\nrate_hz = 10.0\n')
    manifest, session = record_depth_camera(tmp_path, camera, seconds=0.2)
    meta = json.loads((session / "videos/chunk-000/observation.images.view/episode_000000.json").read_text())
    assert meta["depth_png_scale"] == 0.0001
    model = meta["depth_sensor"]
    assert model["sensor_model"] == "active-stereo" and model["baseline"] == 0.05, model
    first = read_png16(session / "depth/chunk-000/observation.depth.view/episode_000000/frame_000000.png")
    sim = glint.Simulation.from_manifest(str(manifest))
    sim.set_cameras([{"camera": "view", "width": 96, "height": 64, "outputs": ["depth"],
                      "preset": "realsense-d435", "depth_scale": 0.0001}])
    sim.step()  # one 20 ms tick, as the run's first frame
    rendered = sim.render()["view"]
    measured = rendered["depth"][0]
    assert (measured == 0).any() and (measured > 0).any(), "holes and depth both"
    np.testing.assert_array_equal(rendered["valid"][0], measured > 0)
    # Codes saturate at 65 535 (6.5535 m at this scale).
    codes = np.clip(np.round(measured.astype(np.float64) / 0.0001), 0, 65535).astype(np.uint16)
    np.testing.assert_array_equal(first, codes)
    # A bad field is refused with its name, the nearest preset is suggested.
    with np.testing.assert_raises_regex(Exception, "realsense-d435"):
        sim.set_cameras([{"camera": "view", "preset": "realsense-d453"}])
    with np.testing.assert_raises_regex(Exception, "baseline = -0.05"):
        sim.set_cameras([{"camera": "view", "preset": "realsense-d435", "baseline": -0.05}])


def test_a_debug_channel_stream_is_marked_as_not_depth(tmp_path):
    """A `[[camera]]` with a debug channel records the channel's values at `depth_scale`,
    and both the camera sidecar and meta/info.json say the stream is not a depth map."""
    camera = ('[[camera]]\ncamera = "view"\nwidth = 48\nheight = 32\noutputs = ["depth"]\n'
              'preset = "kinect-v1"\ndebug_channel = 8\ndepth_scale = 1.0\nrate_hz = 10.0\n')
    _, session = record_depth_camera(tmp_path, camera, seconds=0.1)
    info = json.loads((session / "meta/info.json").read_text())
    assert info["debug_streams"] == [{"camera": "view", "channel": "continuation-class"}]
    meta = json.loads((session / "videos/chunk-000/observation.images.view/episode_000000.json").read_text())
    assert meta["depth_sensor"]["stream"] == "continuation-class"
    assert meta["depth_sensor"]["sensor_model"] == "structured-light"
    codes = read_png16(session / "depth/chunk-000/observation.depth.view/episode_000000/frame_000000.png")
    # Continuation classes (0 opaque where something is hit) at 1 per code; nothing here is
    # authored as glass or foliage, so every code is 0.
    assert codes.shape == (32, 48) and set(np.unique(codes)) <= {0, 1, 2, 3, 4}
