"""`glint export --format mcap` read by independent readers: rosbags (its own ROS 2 Jazzy type
store) decodes every message and encodes it back to glint's bytes exactly; `mcap` with
`mcap-ros2-support` reads the files; the points decoded from the clouds equal `glint points`
in the sensor and the world frame; `ring` and the per-point times follow the recording's
channels and tick times; each layout's fields are those of its driver."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import GLINT_BIN, REPO, decode_png

SHOWROOM = REPO / "examples" / "showroom" / "showroom.xml"
RUN_TIMEOUT_S = 900.0  # hang guard

# The layouts of the drivers (name → (offset, PointField datatype)), as their sources define
# them; glint's is documented in docs/interop.md.
OUSTER = {"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (16, 7), "t": (20, 6), "reflectivity": (24, 4),
          "ring": (26, 4), "ambient": (28, 4), "range": (32, 6)}
VELODYNE = {"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7), "ring": (16, 4), "time": (18, 7)}
LIVOX = {"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7), "tag": (16, 2), "line": (17, 2),
         "timestamp": (18, 8)}
STEPS = {"roof": 48, "vlp": 22, "mid": 26, "custom": 60}
NUMPY = {2: "u1", 4: "<u2", 5: "<i4", 6: "<u4", 7: "<f4", 8: "<f8"}


def ffmpeg_env() -> dict:
    import imageio_ffmpeg

    return dict(os.environ, GLINT_FFMPEG=imageio_ffmpeg.get_ffmpeg_exe())


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("mcap")
    manifest = tmp / "m.toml"
    manifest.write_text(
        f'scene = "{SHOWROOM}"\n[recorder]\nlidar_runner_hz = 50.0\n'
        '[[lidar]]\nname = "roof"\nattach_site = "lidar"\npreset = "ouster-os1-64"\nmax_range = 40.0\n'
        'self_ignore = "whole-robot"\n'
        '[[lidar]]\nname = "vlp"\nattach_site = "lidar"\npreset = "velodyne-vlp16"\nself_ignore = "whole-robot"\n'
        '[[lidar]]\nname = "mid"\nattach_site = "lidar"\npreset = "livox-mid360"\nself_ignore = "whole-robot"\n'
        '[[lidar]]\nname = "custom"\nattach_site = "lidar"\nchannels = 8\nazimuth_bins = 200\nrotation_hz = 5.0\n'
        'self_ignore = "whole-robot"\n'
        '[[camera]]\ncamera = "overview"\nwidth = 64\nheight = 48\nrate_hz = 10.0\n'
    )
    out = tmp / "sessions"
    proc = subprocess.run(
        [str(GLINT_BIN), "run", str(manifest), "--seconds", "0.4", "--episodes", "1", "--out", str(out)],
        capture_output=True, text=True, env=ffmpeg_env(), timeout=RUN_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    s = next(out.glob("session_*"))
    proc = subprocess.run(
        [str(GLINT_BIN), "export", str(s), "--format", "mcap"],
        capture_output=True, text=True, env=ffmpeg_env(), timeout=RUN_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr, proc.stderr
    assert (s / "mcap" / "episode_000000.mcap").is_file()
    return s


def rosbags_messages(path: Path):
    """(topic, msgtype, timestamp, raw, decoded) of every message, through rosbags."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    with AnyReader([path], default_typestore=store) as reader:
        for conn, timestamp, raw in reader.messages():
            yield conn.topic, conn.msgtype, timestamp, raw, store.deserialize_cdr(raw, conn.msgtype)


def test_rosbags_decodes_every_message_and_encodes_glints_bytes(session):
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    counts: dict[str, int] = {}
    for topic, msgtype, _, raw, msg in rosbags_messages(session / "mcap" / "episode_000000.mcap"):
        assert bytes(store.serialize_cdr(msg, msgtype)) == bytes(raw), (topic, msgtype)
        counts[msgtype] = counts.get(msgtype, 0) + 1
    assert set(counts) == {
        "sensor_msgs/msg/PointCloud2", "tf2_msgs/msg/TFMessage", "sensor_msgs/msg/Image",
        "sensor_msgs/msg/CompressedImage", "sensor_msgs/msg/CameraInfo",
    }, counts
    # 0.4 s at 50 ticks a second: four revolutions of the 10 Hz units, two of the 5 Hz one; 4 frames.
    assert counts["sensor_msgs/msg/PointCloud2"] == 4 + 4 + 4 + 2
    # Per tick the body tree on /tf; the sensors fixed in their bodies once on /tf_static.
    assert counts["tf2_msgs/msg/TFMessage"] == 20 + 1
    assert counts["sensor_msgs/msg/Image"] == counts["sensor_msgs/msg/CompressedImage"] == 4


def test_mcap_reader_with_ros2_support_reads_the_file(session):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open(session / "mcap" / "episode_000000.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        header = reader.get_header()
        assert header.profile == "ros2"
        topics = {}
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            assert schema.encoding == "ros2msg" and channel.message_encoding == "cdr"
            topics[channel.topic] = topics.get(channel.topic, 0) + 1
            if channel.topic == "/overview/camera_info":
                assert (decoded.width, decoded.height) == (64, 48)
                assert decoded.k[2] == 32.0 and decoded.k[5] == 24.0
    # Per tick the body tree; the sensors hang from their bodies on /tf_static, written once.
    assert topics["/roof/points"] == 4 and topics["/tf"] == 20 and topics["/tf_static"] == 1, topics


def clouds(session: Path, topic: str):
    """(stamp seconds, structured points) of every cloud on `topic`."""
    out = []
    for t, msgtype, _, _, msg in rosbags_messages(session / "mcap" / "episode_000000.mcap"):
        if t != topic:
            continue
        dtype = np.dtype({
            "names": [f.name for f in msg.fields],
            "formats": [NUMPY[f.datatype] for f in msg.fields],
            "offsets": [f.offset for f in msg.fields],
            "itemsize": msg.point_step,
        })
        assert msg.height == 1 and msg.row_step == msg.width * msg.point_step and not msg.is_bigendian
        pts = np.frombuffer(bytes(msg.data), dtype=dtype)
        out.append((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9, msg.header.frame_id, pts))
    return out


def glint_points(session: Path, sensor: str, frame: str, tmp: Path):
    from plyfile import PlyData

    path = tmp / f"{sensor}-{frame}.ply"
    proc = subprocess.run(
        [str(GLINT_BIN), "points", str(session), "--sensor", sensor, "--frame", frame, "--out", str(path), "--force"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    return PlyData.read(str(path))["vertex"].data


@pytest.mark.parametrize("sensor,layout", [("roof", OUSTER), ("vlp", VELODYNE), ("mid", LIVOX), ("custom", None)])
def test_points_equal_glint_points_in_the_drivers_layouts(session, tmp_path, sensor, layout):
    got = clouds(session, f"/{sensor}/points")
    assert got and all(frame == sensor for _, frame, _ in got)
    fields = got[0][2].dtype.fields
    assert got[0][2].dtype.itemsize == STEPS[sensor]
    if layout is not None:
        assert {n: (off, [k for k, v in NUMPY.items() if np.dtype(v) == dt][0]) for n, (dt, off) in fields.items()} == layout
    ref = glint_points(session, sensor, "sensor", tmp_path)
    pts = np.concatenate([p for _, _, p in got])
    assert len(pts) == len(ref) > 0
    for axis in "xyz":
        assert np.array_equal(pts[axis], ref[axis].astype(np.float32)), axis
    # Per-point time: the tick's time, as an offset from the cloud's stamp (or absolute).
    stamps = np.concatenate([np.full(len(p), s) for s, _, p in got])
    if sensor == "roof":
        assert np.array_equal(pts["ring"], ref["channel"])
        assert np.allclose(stamps + pts["t"] * 1e-9, ref["timestamp"], atol=1e-9)
        assert np.allclose(pts["range"] * 1e-3, ref["range"], atol=5e-4)
    elif sensor == "vlp":
        assert np.array_equal(pts["ring"], ref["channel"])
        assert np.allclose(stamps + pts["time"], ref["timestamp"], atol=1e-6)
    elif sensor == "mid":
        assert np.allclose(pts["timestamp"] * 1e-9, ref["timestamp"], atol=1e-9)
        beam = ref["bin"].astype(np.int64) * 1 + ref["channel"]
        assert np.array_equal(pts["line"], beam % 4)
    else:
        assert np.array_equal(pts["ring"], ref["channel"]) and np.array_equal(pts["bin"], ref["bin"])
        assert np.array_equal(pts["geom_id"], ref["geom_id"])
        assert np.allclose(stamps + pts["time"], ref["timestamp"], atol=1e-6)
        check_colour_fields(session, sensor, pts, ref, tmp_path)
    # Each cloud is one revolution: its first tick is a multiple of the revolution's length.
    period = 0.2 if sensor == "custom" else 0.1
    for stamp, _, _ in got:
        assert abs((stamp - 0.02) / period - round((stamp - 0.02) / period)) < 1e-6, stamp


def check_colour_fields(session: Path, sensor: str, pts, ref, tmp: Path) -> None:
    """glint's layout carries the seed's colour-by modes: azimuth of the beam, height in the
    world, sample order (the beam's emission index), incidence from the recorded normal."""
    import pyarrow.parquet as pq

    azimuth = np.degrees(np.arctan2(ref["y"], ref["x"])) % 360.0
    assert np.allclose(pts["azimuth"], azimuth, atol=1e-3)
    world = glint_points(session, sensor, "world", tmp)
    assert np.allclose(pts["height"], world["z"], atol=1e-4)
    channels = json.loads(next(session.glob(f"data/chunk-000/lidar-{sensor}-000.json")).read_text())["sensor"]["scan"]["channels"]
    assert np.array_equal(pts["order"], ref["bin"].astype(np.int64) * channels + ref["channel"])
    rows = pq.read_table(session / "data" / "chunk-000" / f"lidar-{sensor}-000.parquet").to_pydict()
    hit = np.asarray(rows["hit"]) == 1
    normals = np.stack([np.asarray(rows[f"normal_{a}"])[hit] for a in "xyz"], axis=1).astype(np.float64)
    dirs = np.stack([ref["x"], ref["y"], ref["z"]], axis=1).astype(np.float64)
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    incidence = np.degrees(np.arccos(np.clip(-np.sum(dirs * normals, axis=1), -1.0, 1.0)))
    assert np.allclose(pts["incidence"], incidence, atol=0.05)
    assert 0.0 <= pts["incidence"].min() and pts["incidence"].max() <= 90.0 + 1e-3


def quat_rotate(q, v):
    """Rotates vectors `v` (N×3) by unit quaternions `q` (N×4, x y z w)."""
    xyz, w = q[:, :3], q[:, 3:4]
    t = 2.0 * np.cross(xyz, v)
    return v + w * t + np.cross(xyz, t)


def world_poses(path: Path) -> dict:
    """Every frame's pose in `world` at every `/tf` stamp, composed down the tree (`/tf`) and
    to the sensors fixed in its bodies (`/tf_static`): {(frame, stamp ns): (quaternion x y z
    w, position)}."""
    tree: dict[int, dict] = {}
    static: dict = {}
    for topic, _, stamp, _, msg in rosbags_messages(path):
        if topic not in ("/tf", "/tf_static"):
            continue
        links = {t.child_frame_id: t for t in msg.transforms}
        if topic == "/tf_static":
            static.update(links)
        elif topic == "/tf":
            tree.setdefault(stamp, {}).update(links)
    out = {}
    for stamp, links in tree.items():
        links = {**static, **links}

        def pose(frame):
            if frame == "world":
                return np.array([0.0, 0, 0, 1]), np.zeros(3)
            t = links[frame]
            pq_, pp = pose(t.header.frame_id)
            r, p = t.transform.rotation, t.transform.translation
            q = np.array([r.x, r.y, r.z, r.w])
            return quat_mul(pq_, q), quat_rotate(pq_[None], np.array([[p.x, p.y, p.z]]))[0] + pp

        for frame in links:
            out[(frame, stamp)] = pose(frame)
    return out


def test_points_placed_by_tf_equal_glint_points_in_the_world(session, tmp_path):
    tf = world_poses(session / "mcap" / "episode_000000.mcap")
    assert ("roof", 20_000_000) in tf and ("overview_optical", 20_000_000) in tf
    got = clouds(session, "/roof/points")
    pts = np.concatenate([p for _, _, p in got])
    stamps = np.concatenate([np.full(len(p), s) for s, _, p in got])
    ticks = np.round((stamps + pts["t"] * 1e-9) * 1e9).astype(np.int64)
    q = np.array([tf[("roof", int(n))][0] for n in ticks])
    o = np.array([tf[("roof", int(n))][1] for n in ticks])
    local = np.stack([pts["x"], pts["y"], pts["z"]], axis=1).astype(np.float64)
    world = quat_rotate(q, local) + o
    ref = glint_points(session, "roof", "world", tmp_path)
    expected = np.stack([ref["x"], ref["y"], ref["z"]], axis=1)
    # The cloud's float32 sensor-frame points, placed by float64 transforms.
    assert np.abs(world - expected).max() < 1e-4


def test_depth_and_colour_frames_equal_the_sessions(session):
    import imageio_ffmpeg

    depth, colour, info = [], [], []
    for topic, _, _, _, msg in rosbags_messages(session / "mcap" / "episode_000000.mcap"):
        if topic == "/overview/depth/image_raw":
            assert (msg.encoding, msg.width, msg.height, msg.step) == ("16UC1", 64, 48, 128)
            assert msg.header.frame_id == "overview_optical"
            depth.append(np.frombuffer(bytes(msg.data), "<u2").reshape(48, 64))
        elif topic == "/overview/image/compressed":
            assert msg.format == "png"
            colour.append(decode_png(bytes(msg.data)))
        elif topic == "/overview/camera_info":
            info.append(msg)
    folder = session / "depth/chunk-000/observation.depth.overview/episode_000000"
    pngs = sorted(folder.glob("frame_*.png"))
    assert len(depth) == len(pngs) == len(info) == 4
    for got, png in zip(depth, pngs):
        assert np.array_equal(got, decode_png(png.read_bytes()))
    video = session / "videos/chunk-000/observation.images.overview/episode_000000.mp4"
    reader = imageio_ffmpeg.read_frames(str(video))
    next(reader)
    frames = [np.frombuffer(f, np.uint8).reshape(48, 64, 3) for f in reader]
    assert len(colour) == len(frames) == 4
    for got, want in zip(colour, frames):
        assert np.array_equal(got, want)
    sidecar = json.loads(video.with_suffix(".json").read_text())
    fx, fy, cx, cy = sidecar["intrinsics"]
    assert list(info[0].k) == [fx, 0, cx, 0, fy, cy, 0, 0, 1]
    assert list(info[0].p) == [fx, 0, cx, 0, 0, fy, cy, 0, 0, 0, 1, 0]


def run_glint(*args: str, env=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(GLINT_BIN), *args], capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_variant_carries_intensity_reflectivity_and_second_echoes(tmp_path):
    """The showroom's own manifest (return model, materials): a variant exported under its bake,
    written as MCAP in glint's layout, gives back the variant's echoes."""
    import pyarrow.parquet as pq

    manifest = tmp_path / "showroom.toml"
    text = (REPO / "examples" / "showroom" / "showroom.toml").read_text()
    manifest.write_text(text.replace('scene = "showroom.xml"', f'scene = "{SHOWROOM}"'))
    run_glint("bake", str(manifest))
    run_glint("run", str(manifest), "--seconds", "0.2", "--out", str(tmp_path / "s"))
    s = next((tmp_path / "s").glob("session_*"))
    run_glint("export", str(s), "--bake", "showroom", "--out", str(tmp_path / "variant"))
    run_glint("export", str(s), "--format", "mcap", "--variant", str(tmp_path / "variant"), "--layout", "glint",
              "--out", str(tmp_path / "mcap"))
    got = []
    for topic, _, _, _, msg in rosbags_messages(tmp_path / "mcap" / "episode_000000.mcap"):
        if topic == "/roof/points":
            dtype = np.dtype({"names": [f.name for f in msg.fields], "formats": [NUMPY[f.datatype] for f in msg.fields],
                              "offsets": [f.offset for f in msg.fields], "itemsize": msg.point_step})
            got.append(np.frombuffer(bytes(msg.data), dtype=dtype))
    pts = np.concatenate(got)
    table = pq.read_table(tmp_path / "variant" / "data" / "chunk-000" / "lidar-roof-000.parquet").to_pydict()
    rng, sec = np.array(table["range"]), np.array(table["secondary_range"])
    primary, second = pts[pts["echo"] == 0], pts[pts["echo"] == 1]
    assert len(primary) == int((rng >= 0).sum()) > 0 and len(second) == int((sec >= 0).sum()) > 0
    assert np.array_equal(primary["range"], rng[rng >= 0].astype(np.float32))
    assert np.array_equal(primary["intensity"], np.array(table["intensity"], np.float32)[rng >= 0])
    refl = np.array(table["reflectivity_calibrated"], np.float32)[rng >= 0]
    assert np.array_equal(primary["reflectivity"], np.maximum(refl, 0)) and primary["reflectivity"].max() > 0
    # The variant's bake gives each hit its NIR reflectivity: the showroom's materials differ.
    nir = primary["nir_reflectivity"]
    assert (nir >= 0).mean() > 0.99 and nir.max() <= 1.0 and len(np.unique(nir[nir >= 0])) >= 3
    assert np.all(second["nir_reflectivity"] == -1.0), "a second echo has no surface material read"
    # A clean export without a bake says -1.
    run_glint("export", str(s), "--format", "mcap", "--layout", "glint", "--out", str(tmp_path / "clean"))
    for topic, _, _, _, msg in rosbags_messages(tmp_path / "clean" / "episode_000000.mcap"):
        if topic == "/roof/points":
            assert msg.point_step == 60


def test_run_mcap_writes_the_exports_messages_while_it_runs(tmp_path):
    manifest = tmp_path / "m.toml"
    manifest.write_text(
        f'scene = "{SHOWROOM}"\n[recorder]\nlidar_runner_hz = 50.0\n'
        '[[lidar]]\nname = "roof"\nattach_site = "lidar"\npreset = "ouster-os1-64"\nmax_range = 40.0\n'
        'self_ignore = "whole-robot"\n'
        '[[lidar]]\nname = "mid"\nattach_site = "lidar"\npreset = "livox-mid360"\nself_ignore = "whole-robot"\n'
        '[[camera]]\ncamera = "overview"\nwidth = 64\nheight = 48\nrate_hz = 10.0\n'
    )
    run_glint("run", str(manifest), "--seconds", "0.3", "--episodes", "2", "--mcap", "--out", str(tmp_path / "s"),
              env=ffmpeg_env())
    s = next((tmp_path / "s").glob("session_*"))
    run_glint("export", str(s), "--format", "mcap", "--out", str(tmp_path / "exported"), env=ffmpeg_env())
    for episode in (0, 1):
        name = f"episode_{episode:06d}.mcap"
        assert not list((s / "mcap").glob("*.partial"))

        def by_topic(path):
            out: dict[str, list] = {}
            for topic, _, stamp, raw, _ in rosbags_messages(path):
                out.setdefault(topic, []).append((stamp, bytes(raw)))
            return out

        live, exported = by_topic(s / "mcap" / name), by_topic(tmp_path / "exported" / name)
        assert set(live) == set(exported)
        for topic in live:
            if topic == "/overview/image/compressed":
                # The run's PNGs hold the renderer's pixels; an export decodes the lossy video.
                assert len(live[topic]) == len(exported[topic]) == 3
                for (ta, a), (tb, b) in zip(live[topic], exported[topic]):
                    assert ta == tb
                    # Both decode; the video's frames differ from the renderer's by compression only.
                    from rosbags.typesys import Stores, get_typestore

                    store = get_typestore(Stores.ROS2_JAZZY)
                    pa = decode_png(bytes(store.deserialize_cdr(a, "sensor_msgs/msg/CompressedImage").data))
                    pb = decode_png(bytes(store.deserialize_cdr(b, "sensor_msgs/msg/CompressedImage").data))
                    assert np.abs(pa.astype(int) - pb.astype(int)).mean() < 8
            elif topic == "/tf":
                # The sensors' frames are the same bytes; the body tree the same transforms up
                # to rounding (a run composes them from MuJoCo's matrices, an export from the
                # state table's quaternions).
                (live_sensors, live_trees), (sensors, trees) = split_tf(live[topic]), split_tf(exported[topic])
                assert live_sensors == sensors == [], "the sensors hang from their bodies on /tf_static"
                assert [t for t, _ in live_trees] == [t for t, _ in trees] and trees
                static = [(split_tf(live["/tf_static"])[1], split_tf(exported["/tf_static"])[1])]
                for (_, a), (_, b) in list(zip(live_trees, trees)) + [(x[0], y[0]) for x, y in static]:
                    assert [(x.header.frame_id, x.child_frame_id) for x in a] == \
                        [(x.header.frame_id, x.child_frame_id) for x in b]
                    for x, y in zip(a, b):
                        ta, tb = x.transform, y.transform
                        assert np.allclose([ta.translation.x, ta.translation.y, ta.translation.z],
                                           [tb.translation.x, tb.translation.y, tb.translation.z], atol=1e-9)
                        qa = np.array([ta.rotation.x, ta.rotation.y, ta.rotation.z, ta.rotation.w])
                        qb = np.array([tb.rotation.x, tb.rotation.y, tb.rotation.z, tb.rotation.w])
                        assert min(np.abs(qa - qb).max(), np.abs(qa + qb).max()) < 1e-9
                check_body_tree(s / "mcap" / name, s, episode)
                check_body_tree(tmp_path / "exported" / name, s, episode)
            elif topic == "/tf_static":
                pass  # compared with /tf above
            else:
                assert live[topic] == exported[topic], topic


def split_tf(messages: list) -> tuple[list, list]:
    """A file's `/tf` (or `/tf_static`) messages split into those of single sensor frames
    (stamp, raw bytes) and the others (stamp, decoded transforms)."""
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    sensors, trees = [], []
    for stamp, raw in messages:
        transforms = store.deserialize_cdr(raw, "tf2_msgs/msg/TFMessage").transforms
        if len(transforms) > 1 or any(t.child_frame_id == "lidar_mount" for t in transforms):
            trees.append((stamp, transforms))
        else:
            sensors.append((stamp, raw))
    return sensors, trees


def check_body_tree(path: Path, session: Path, episode: int) -> None:
    """The body frames form one tree under `world`, the lidars hang from their body
    (`lidar_mount`) and the fixed camera from `world` on `/tf_static`, and composed down to a
    lidar they give its recorded pose at every tick."""
    import pyarrow.parquet as pq

    static = {}
    for topic, _, _, _, msg in rosbags_messages(path):
        if topic == "/tf_static":
            static.update({t.child_frame_id: t.header.frame_id for t in msg.transforms})
    assert static["roof"] == "lidar_mount" and static["overview_optical"] == "world", static
    poses = world_poses(path)
    table = pq.read_table(session / "data" / "chunk-000" / f"lidar-roof-{episode:03d}.poses.parquet").to_pydict()
    assert len(table["timestamp"]) > 0
    for k, t in enumerate(table["timestamp"]):
        q, p = poses[("roof", round(t * 1e9))]
        assert np.allclose(p, [table["x"][k], table["y"][k], table["z"][k]], atol=1e-9)
        want = np.array([table["qx"][k], table["qy"][k], table["qz"][k], table["qw"][k]])
        assert min(np.abs(q - want).max(), np.abs(q + want).max()) < 1e-9


def quat_mul(a, b):
    """The product a·b of quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def stream_messages(path: Path) -> tuple[int, bool]:
    """Messages the `mcap` stream reader reads from `path`, and whether it reached the end."""
    from mcap.stream_reader import StreamReader
    from mcap.records import Message

    count = 0
    try:
        with open(path, "rb") as f:
            for record in StreamReader(f, skip_magic=False).records:
                count += isinstance(record, Message)
    except Exception:  # noqa: BLE001 - a cut file ends in an error after its whole chunks
        return count, False
    return count, True


def test_a_killed_run_leaves_an_mcap_read_up_to_its_last_chunk_and_recover_closes_it(tmp_path):
    import signal
    import time

    manifest = tmp_path / "m.toml"
    manifest.write_text(
        f'scene = "{SHOWROOM}"\n[recorder]\nlidar_runner_hz = 50.0\n'
        '[[lidar]]\nname = "roof"\nattach_site = "lidar"\npreset = "ouster-os1-64"\nself_ignore = "whole-robot"\n'
    )
    out = tmp_path / "s"
    proc = subprocess.Popen([str(GLINT_BIN), "run", str(manifest), "--seconds", "3600", "--mcap", "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        partial = None
        # Wait for three chunks (4 MB of messages each, compressed) to be on disk.
        while time.monotonic() < deadline:
            found = list(out.glob("session_*/mcap/episode_000000.mcap.partial"))
            if found and found[0].stat().st_size > 3 * 1_500_000:
                partial = found[0]
                break
            assert proc.poll() is None, "the run ended early"
            time.sleep(0.05)
        assert partial is not None
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    read, whole = stream_messages(partial)
    assert read > 0 and not whole
    session = partial.parents[1]
    done = run_glint("recover", str(session))
    assert "closed as" in done.stdout, done.stdout
    assert not list(session.glob("mcap/*.partial"))
    closed = session / "mcap" / "episode_000000.mcap"
    assert stream_messages(closed) == (read, True)
    assert sum(1 for _ in rosbags_messages(closed)) == read


def test_the_docs_python_example_runs(session, capsys):
    text = (REPO / "docs" / "interop.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(block, "docs/interop.md", "exec"), {"mcap_path": session / "mcap" / "episode_000000.mcap"})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 14 and all(l.startswith("/") for l in lines), lines


def test_bench_mcap_reports_well_formed_figures(tmp_path):
    done = run_glint("bench", "mcap", str(REPO / "examples" / "showroom" / "showroom.toml"), "--seconds", "0.2",
                     "--repeats", "1", "--json", "--out", str(tmp_path / "b"))
    report = json.loads(done.stdout)
    assert report["seconds"] == 0.2 and report["points"] > 0 and report["messages"] > 0 and report["bytes"] > 0
    assert report["export_s"] > 0 and np.isfinite(report["real_time_factor"]) and report["real_time_factor"] > 0
    assert not (tmp_path / "b").exists()


def test_bad_requests_get_clear_errors(session, tmp_path):
    def fails(*args: str) -> str:
        proc = subprocess.run([str(GLINT_BIN), *args], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        assert proc.returncode != 0 and "panicked" not in proc.stderr, proc.stderr
        return proc.stderr

    assert "--bake" in fails("export", str(session))
    assert "there is no bake 'x'" in fails("export", str(session), "--format", "mcap", "--bake", "x")
    assert "not an exported variant" in fails("export", str(session), "--format", "mcap", "--variant", "nope")
    assert "has no episode 7" in fails("export", str(session), "--format", "mcap", "--episode", "7",
                                       "--out", str(tmp_path / "x"))
    assert "unknown point layout 'hdl'" in fails("export", str(session), "--format", "mcap", "--layout", "hdl")
    # An existing file is never replaced.
    assert "already exists" in fails("export", str(session), "--format", "mcap")
    assert "--layout belongs to `--format mcap`" in fails("export", str(session), "--bake", "b", "--layout", "glint")


def test_split_by_tick_gives_one_cloud_per_tick_with_the_same_points(session, tmp_path):
    run_glint("export", str(session), "--format", "mcap", "--split", "tick", "--out", str(tmp_path / "ticks"),
              env=ffmpeg_env())
    per_tick = []
    for topic, _, stamp, _, msg in rosbags_messages(tmp_path / "ticks" / "episode_000000.mcap"):
        if topic == "/vlp/points":
            per_tick.append((stamp, bytes(msg.data)))
    # 0.4 s at 50 ticks a second: 20 ticks, each its own cloud stamped with its own time.
    assert len(per_tick) == 20
    assert [s for s, _ in per_tick] == [round((0.02 + 0.02 * i) * 1e9) for i in range(20)]
    whole = b"".join(bytes(p.tobytes()) for _, _, p in clouds(session, "/vlp/points"))
    joined = np.concatenate([np.frombuffer(d, np.uint8).reshape(-1, 22) for _, d in per_tick])
    ref = np.frombuffer(whole, np.uint8).reshape(-1, 22)
    # x, y, z, intensity and ring are the same bytes; time restarts at each tick's stamp.
    assert np.array_equal(joined[:, :18], ref[:, :18])
    assert not joined[:, 18:22].any()
