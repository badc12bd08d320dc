"""Checks a dataset `glint export --format lerobot` wrote, with LeRobot 0.6.1 itself.

Run by tests/python/test_lerobot.py with the interpreter of .deps/lerobot (LeRobot needs
Python 3.12; the other tests run on the project's 3.11 venv):

    python lerobot_check.py DATASET SESSION REFERENCE_DIR

It loads DATASET with `LeRobotDataset(repo_id, root=…)` offline, iterates every frame and
compares it with what SESSION recorded, read here independently with pyarrow, PyAV and PIL:
lidar vectors (the newest range of every beam at the frame's tick), robot state and action,
colour and depth frames, timestamps. It then writes a dataset with the same features through
LeRobot's own writer (`LeRobotDataset.create`, `add_frame`, `save_episode`) into
REFERENCE_DIR and compares the two layouts: info.json's keys and feature descriptions, the
Parquet schemas of data, episodes and tasks, and stats.json's keys and shapes. Prints one
JSON object: the figures and a list of every problem found (empty when all pass).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

import av  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from PIL import Image  # noqa: E402

from lerobot.configs.video import RGBEncoderConfig  # noqa: E402
from lerobot.datasets.lerobot_dataset import LeRobotDataset  # noqa: E402

INDEX = ["timestamp", "frame_index", "episode_index", "index", "task_index"]


def session_episodes(session: Path) -> list[dict]:
    lines = (session / "meta" / "episodes.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def camera_sidecars(session: Path, episode: dict) -> list[tuple[Path, dict]]:
    files = [f for f in episode.get("camera_files", []) if f.startswith("videos/") and f.endswith(".json")]
    return [(session / f, json.loads((session / f).read_text())) for f in files]


def lidar_expected(session: Path, file: str, times: list[float], tick_hz: float) -> tuple[str, np.ndarray]:
    """The dataset key of a lidar file and, per time, every beam's newest recorded range."""
    sidecar = json.loads((session / file).with_suffix(".json").read_text())
    table = pq.read_table(session / file, columns=["timestamp", "bin", "channel", "range"]).to_pydict()
    channels = sidecar["sensor"]["scan"]["channels"]
    beams = sidecar["beam_count"]
    ticks = np.rint(np.asarray(table["timestamp"]) * tick_hz).astype(np.int64)
    beam = np.asarray(table["bin"], np.int64) * channels + np.asarray(table["channel"], np.int64)
    rng = np.asarray(table["range"], np.float32)
    newest = np.full(beams, -1.0, np.float32)
    out, at = [], 0
    for t in times:
        tick = round(t * tick_hz)
        while at < len(ticks) and ticks[at] <= tick:
            newest[beam[at]] = rng[at]
            at += 1
        out.append(newest.copy())
    return "observation.lidar." + sidecar["sensor"]["file_name"], np.stack(out)


def session_frames(video: Path, size: tuple[int, int]) -> list[np.ndarray]:
    with av.open(str(video)) as container:
        return [f.to_ndarray(format="rgb24")[: size[1], : size[0]] for f in container.decode(video=0)]


def check_frames(ds, session: Path, tick_hz: float, problems: list[str]) -> dict:
    info_json = json.loads((Path(ds.root) / "meta" / "info.json").read_text())
    figures = {"frames": 0, "lidar_values": 0, "state_values": 0, "rgb_mean_abs": 0.0, "depth_max_err_mm": 0.0,
               "depth_pixels": 0}
    start = 0
    for k, episode in enumerate(session_episodes(session)):
        cameras = camera_sidecars(session, episode)
        state = pq.read_table(session / episode["state"]).to_pydict()
        # A row per camera frame, or per tick when no camera was recorded.
        times = [f["time"] for f in cameras[0][1]["frames"]] if cameras else state["timestamp"]
        n = len(times)
        lidars = dict(lidar_expected(session, f, times, tick_hz) for f in episode["files"])
        state_ticks = {round(t * tick_hz): i for i, t in enumerate(state["timestamp"])}
        obs_names = [c for c in state if c.startswith(("qpos/", "qvel/"))]
        act_names = [c for c in state if c.startswith("ctrl/")]
        colour = {s["camera"]: session_frames(p.with_suffix(".mp4"), (s["width"], s["height"]))
                  for p, s in cameras if s["rgb"]}
        for i in range(n):
            item = ds[start + i]
            figures["frames"] += 1
            if int(item["episode_index"]) != k or int(item["frame_index"]) != i:
                problems.append(f"row {start + i} is episode {int(item['episode_index'])} frame "
                                f"{int(item['frame_index'])}, expected {k}/{i}")
            if abs(float(item["timestamp"]) - np.float32(i / ds.fps)) > 1e-6:
                problems.append(f"row {start + i}: timestamp {float(item['timestamp'])}, expected {i / ds.fps}")
            for key, expected in lidars.items():
                got = item[key].numpy()
                if not np.array_equal(got, expected[i]):
                    bad = int(np.sum(got != expected[i]))
                    problems.append(f"episode {k} frame {i}: {key} differs from the session in {bad} beams")
                figures["lidar_values"] += got.size
            tick = round(times[i] * tick_hz)
            row, nxt = state_ticks[tick], state_ticks.get(tick + 1, state_ticks[tick])
            want_obs = np.array([state[c][row] for c in obs_names], np.float32)
            want_act = np.array([state[c][nxt] for c in act_names], np.float32)
            if not np.array_equal(item["observation.state"].numpy(), want_obs):
                problems.append(f"episode {k} frame {i}: observation.state {item['observation.state']} != {want_obs}")
            if not np.array_equal(item["action"].numpy(), want_act):
                problems.append(f"episode {k} frame {i}: action {item['action']} != {want_act}")
            figures["state_values"] += want_obs.size + want_act.size
            for path, sidecar in cameras:
                info = sidecar
                cam = info["camera"]
                if info["rgb"]:
                    got = (item[f"observation.images.{cam}"].numpy().transpose(1, 2, 0) * 255.0)
                    diff = float(np.mean(np.abs(got - colour[cam][i].astype(np.float32))))
                    figures["rgb_mean_abs"] = max(figures["rgb_mean_abs"], diff)
                if info["depth"]:
                    frame = sidecar["frames"][i]["frame"]
                    png = session / "depth" / f"chunk-{episode['index'] // 1000:03d}" / f"observation.depth.{cam}" / \
                        f"episode_{episode['index']:06d}" / f"frame_{frame:06d}.png"
                    want_mm = np.asarray(Image.open(png), np.float64) * info["depth_png_scale"] * 1000.0
                    got_mm = item[f"observation.images.{cam}_depth"].numpy()[0].astype(np.float64)
                    meta = info_json["features"][f"observation.images.{cam}_depth"]["info"]
                    lo, hi, shift = meta["video.depth_min"], meta["video.depth_max"], meta["video.shift"]
                    step = np.log((hi + shift) / (lo + shift)) / 4095.0
                    valid = want_mm > lo * 1000.0
                    # Half a quantization step of the logarithmic code, plus LeRobot's rounding of
                    # its millimetres to whole ones.
                    tol = (want_mm + shift * 1000.0) * step / 2.0 + 0.5
                    err = np.abs(got_mm - want_mm)
                    if np.any(err[valid] > tol[valid]):
                        problems.append(f"episode {k} frame {i}: depth off by up to {err[valid].max():.2f} mm")
                    if np.any(np.abs(got_mm[~valid] - lo * 1000.0) > 0.5):
                        problems.append(f"episode {k} frame {i}: invalid depth pixels do not read as depth_min")
                    figures["depth_max_err_mm"] = max(figures["depth_max_err_mm"], float(err[valid].max(initial=0)))
                    figures["depth_pixels"] += int(valid.sum())
        start += n
    if figures["rgb_mean_abs"] > 3.0:
        problems.append(f"colour frames differ from the session's video by {figures['rgb_mean_abs']:.2f}/255 on average")
    return figures


def reference_dataset(ds, root: Path) -> None:
    """The same frames written by LeRobot's own writer."""
    features = {}
    for key, f in ds.meta.features.items():
        if key in INDEX:
            continue
        entry = {"dtype": f["dtype"], "shape": tuple(f["shape"]), "names": f["names"]}
        if f["dtype"] == "video" and f["info"].get("is_depth_map"):
            entry["info"] = {"is_depth_map": True}
        features[key] = entry
    ref = LeRobotDataset.create("glint/reference", fps=ds.fps, root=root, features=features, use_videos=True,
                                rgb_encoder=RGBEncoderConfig(vcodec="h264"))
    episode = 0
    for i in range(len(ds)):
        item = ds[i]
        if int(item["episode_index"]) != episode:
            ref.save_episode()
            episode = int(item["episode_index"])
        frame = {"task": item["task"]}
        for key, f in features.items():
            value = item[key].numpy()
            if f["dtype"] == "video":
                value = value.transpose(1, 2, 0)
                value = value / 1000.0 if f.get("info", {}).get("is_depth_map") else (value * 255).round().astype(np.uint8)
            frame[key] = value
        ref.add_frame(frame)
    ref.save_episode()
    ref.finalize()


def schema_of(path: Path) -> dict:
    return {f.name: str(f.type) for f in pq.read_schema(path)}


def compare_layouts(ours: Path, theirs: Path, problems: list[str]) -> None:
    a, b = (json.loads((d / "meta" / "info.json").read_text()) for d in (ours, theirs))
    if set(a) != set(b):
        problems.append(f"info.json keys {sorted(a)} != LeRobot's {sorted(b)}")
    for key in ("codebase_version", "fps", "total_episodes", "total_frames", "total_tasks", "chunks_size",
                "data_path", "video_path", "splits"):
        if a.get(key) != b.get(key):
            problems.append(f"info.json {key}: {a.get(key)!r} != LeRobot's {b.get(key)!r}")
    if set(a["features"]) != set(b["features"]):
        problems.append(f"features {sorted(a['features'])} != LeRobot's {sorted(b['features'])}")
    for key, fb in b["features"].items():
        fa = a["features"].get(key, {})
        for field in ("dtype", "shape", "names"):
            if fa.get(field) != fb.get(field):
                problems.append(f"feature {key} {field}: {fa.get(field)!r} != LeRobot's {fb.get(field)!r}")
        if "info" in fb and set(fa.get("info", {})) != set(fb["info"]):
            problems.append(f"feature {key} info keys {sorted(fa.get('info', {}))} != LeRobot's {sorted(fb['info'])}")
        for field in ("video.codec", "video.pix_fmt", "video.fps", "video.channels", "is_depth_map", "depth_unit"):
            if "info" in fb and fa.get("info", {}).get(field) != fb["info"].get(field):
                problems.append(f"feature {key} info {field}: {fa.get('info', {}).get(field)!r} != "
                                f"{fb['info'].get(field)!r}")
    data_a = schema_of(next((ours / "data").glob("*/*.parquet")))
    data_b = schema_of(next((theirs / "data").glob("*/*.parquet")))
    if data_a != data_b:
        problems.append(f"data schema {data_a} != LeRobot's {data_b}")
    ep_a = schema_of(ours / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    ep_b = schema_of(theirs / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    if ep_a != ep_b:
        extra = {k: v for k, v in ep_a.items() if ep_b.get(k) != v}
        missing = {k: v for k, v in ep_b.items() if ep_a.get(k) != v}
        problems.append(f"episodes schema differs: ours {extra}, LeRobot's {missing}")
    if schema_of(ours / "meta" / "tasks.parquet") != schema_of(theirs / "meta" / "tasks.parquet"):
        problems.append("tasks.parquet schema differs from LeRobot's")
    sa, sb = (json.loads((d / "meta" / "stats.json").read_text()) for d in (ours, theirs))
    for key, stats in sb.items():
        for name, value in stats.items():
            got = sa.get(key, {}).get(name)
            if got is None or np.shape(got) != np.shape(value):
                problems.append(f"stats.json {key}/{name}: shape {np.shape(got)} != LeRobot's {np.shape(value)}")


def main() -> None:
    dataset, session, reference = (Path(p) for p in sys.argv[1:4])
    tick_hz = json.loads((session / "meta" / "info.json").read_text())["lidar_runner_hz"]
    ds = LeRobotDataset("glint/check", root=dataset, video_backend="pyav")
    problems: list[str] = []
    figures = check_frames(ds, session, tick_hz, problems)
    figures.update(episodes=ds.num_episodes, fps=ds.fps, total=len(ds))
    reference_dataset(ds, reference)
    compare_layouts(dataset, reference, problems)
    print(json.dumps({"figures": figures, "problems": problems}))


if __name__ == "__main__":
    main()
