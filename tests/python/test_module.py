"""The `glint` Python module end to end: building simulations from manifests and MJCF, stepping
and resetting them, observations, scans (into caller buffers, through DLPack), beam angles,
lidar configuration, the return model and its parameters, material bakes, recordings, ray
queries against MuJoCo's own `mj_multiRay`, and errors with the command line's messages."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import mujoco
import numpy as np
import pytest

import glint

REPO = Path(__file__).resolve().parents[2]
GLINT_BIN = Path(os.environ.get("GLINT_BIN", str(REPO / "target" / "release" / "glint")))
SHOWROOM_TOML = REPO / "examples" / "showroom" / "showroom.toml"
SHOWROOM_XML = REPO / "examples" / "showroom" / "showroom.xml"
VLP16_TOML = REPO / "examples" / "python" / "showroom_vlp16.toml"
VLP16 = {"attach_site": "lidar", "preset": "velodyne-vlp16", "self_ignore": "whole-robot"}


def small_manifest(tmp_path: Path, extra: str = "", name: str = "m.toml", bins: int = 360) -> Path:
    """A manifest in `tmp_path` (its project folder) over the showroom with a small VLP-16
    (16 x `bins`), a 50 Hz runner, a return model, a coarse bake and an observation of the
    joints and the lidar's ranges."""
    text = f"""scene = "{SHOWROOM_XML}"
[[lidar]]
name = "roof"
attach_site = "lidar"
preset = "velodyne-vlp16"
azimuth_bins = {bins}
self_ignore = "whole-robot"
[recorder]
lidar_runner_hz = 50.0
[return_model]
preset = "ouster-os1"
seed = 7
[bake]
name = "testbake"
cell_size = 0.25
[materials.storefront_glass]
preset = "clear-float-glass"
[materials.mirror_silver]
preset = "mirror"
[materials.sign_retro]
preset = "retroreflector"
[[observation]]
name = "joint_positions"
[[observation]]
name = "joint_velocities"
[[observation]]
name = "lidar_ranges"
beams = {16 * bins}
{extra}
"""
    path = tmp_path / name
    path.write_text(text)
    return path


# -- building ---------------------------------------------------------------------------------


def test_from_manifest_exposes_the_scene():
    sim = glint.Simulation.from_manifest(SHOWROOM_TOML, nworld=3)
    assert sim.nworld == 3
    assert sim.nu == 3 and sim.actuator_names == ["vx", "vy", "wz"]
    ctrl = np.asarray(sim.ctrlrange)
    assert ctrl.shape == (3, 2) and np.array_equal(ctrl, [[-2, 2]] * 3)
    assert sim.dt == pytest.approx(0.02)  # lidar_runner_hz = 50
    assert len(sim.lidars) == 1
    lidar = sim.lidars[0]
    assert lidar.name == "roof" and lidar.beam_count == 64 * 1024 and lidar.index == 0
    assert "3 worlds" in repr(sim) and "65536 beams" in repr(lidar)
    assert sim.observation_components == [
        ("joint_positions", 0, 3, False),
        ("joint_velocities", 3, 3, False),
        ("lidar_ranges/0", 6, 65536, False),
    ]
    names = sim.observation_names
    assert len(names) == 6 + 65536
    assert names[:3] == ["joint_positions/base_x", "joint_positions/base_y", "joint_positions/base_yaw"]
    assert names[6] == "lidar_ranges/0/0" and names[-1] == "lidar_ranges/0/65535"
    assert sim.task is None
    assert np.array_equal(sim.time, np.zeros(3))


def test_the_task_table_reads_back():
    sim = glint.Simulation.from_manifest(VLP16_TOML)
    assert sim.task == {
        "body": "robot",
        "goal": [2.0, -3.0],
        "goal_tolerance": 0.3,
        "episode_seconds": 10.0,
        "progress_weight": 1.0,
        "goal_reward": 10.0,
        "collision_penalty": 1.0,
    }
    assert sim.lidars[0].beam_count == 28800


def test_from_xml_takes_a_path_or_the_text_and_lidar_dicts():
    by_path = glint.Simulation.from_xml(str(SHOWROOM_XML), nworld=2, lidars=[VLP16])
    by_text = glint.Simulation.from_xml(SHOWROOM_XML.read_text(), nworld=2, lidars=[dict(VLP16, name="front")])
    bare = glint.Simulation.from_xml(str(SHOWROOM_XML))
    assert len(bare.lidars) == 0 and bare.nu == 3
    assert by_path.lidars[0].beam_count == by_text.lidars[0].beam_count == 16 * 1800
    assert by_path.lidars[0].name == "lidar"  # named after its attach target by default
    assert by_text.lidars[0].name == "front"
    for sim in (by_path, by_text):
        sim.lidar_live = True
        assert sim.lidar_live
        for _ in range(5):  # one revolution at 10 Hz on the default 100 Hz runner is 10 ticks
            sim.step(np.array([0.5, 0.0, 0.2]))
    a, b = by_path.lidars[0].scan().ranges, by_text.lidars[0].scan().ranges
    assert a.shape == (2, 28800) and a.dtype == np.float32
    assert np.array_equal(a, b)
    assert (a >= 0).sum() > 10000
    with pytest.raises(glint.ManifestError, match="chanels"):
        glint.Simulation.from_xml(str(SHOWROOM_XML), lidars=[dict(VLP16, chanels=8)])
    with pytest.raises(glint.SceneError):
        glint.Simulation.from_xml("<mujoco><worldbody><geom type='nonsense'/></worldbody></mujoco>")


# -- stepping and resetting -------------------------------------------------------------------


def test_step_takes_actions_of_both_shapes():
    one = glint.Simulation.from_manifest(VLP16_TOML, nworld=2)
    per_world = glint.Simulation.from_manifest(VLP16_TOML, nworld=2)
    action = np.array([1.0, -0.5, 0.3])
    r1 = one.step(action)
    r2 = per_world.step(np.stack([action, action]))
    for r in (r1, r2):
        assert r.status == ["ok", "ok"]
        assert r.time.shape == (2,) and r.time.dtype == np.float64
        assert r.reward.dtype == np.float64 and r.reached.dtype == np.bool_ and r.collided.dtype == np.bool_
        assert r.distance.shape == (2,)
    assert np.array_equal(r1.reward, r2.reward) and np.array_equal(r1.distance, r2.distance)
    assert np.allclose(r1.time, 0.02)
    # One world's info (glint.gym.Env) has the vector info's keys (glint.gym.VectorEnv), as
    # Python floats and bools.
    vector = r1.info()
    for w in (0, 1):
        info = r1.world_info(w)
        assert list(info) == [k for k in vector if not k.startswith("_")]
        assert info == {k: vector[k][w].item() for k in info}
        assert {type(v) for v in info.values()} == {float, bool}
    assert np.array_equal(one.observe(), per_world.observe())
    # Different actions per world give different worlds.
    r3 = per_world.step(np.array([[1.0, 0, 0], [-1.0, 0, 0]]))
    obs = per_world.observe()
    assert obs[0, 0] != obs[1, 0]
    assert r3.distance[0] != r3.distance[1]
    # The task: distance from the robot (base_x, base_y) to the goal (2, -3); the reward is
    # the progress from the start at the origin.
    x, y = one.observe()[0, :2]
    assert r1.distance[0] == pytest.approx(np.hypot(2.0 - x, -3.0 - y), abs=1e-2)
    assert r1.reward[0] == pytest.approx(np.hypot(2.0, 3.0) - r1.distance[0])
    # n steps at once, summing the reward.
    before = per_world.time.copy()
    per_world.step(n=3)
    assert np.allclose(per_world.time, before + 3 * 0.02)
    with pytest.raises(glint.ShapeError, match=r"give \(2, 3\)"):
        one.step(np.zeros(4))
    with pytest.raises(ValueError):
        one.step(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="n = 0"):
        one.step(n=0)


def test_reset_with_a_seed_reproduces_material_scans(tmp_path):
    manifest = small_manifest(tmp_path)
    sim = glint.Simulation.from_manifest(manifest, nworld=2)
    sim.bake()
    sim.lidar_live = True
    action = np.array([0.8, 0.2, 0.5])

    def episode(seed):
        sim.reset(seed=seed)
        assert np.array_equal(sim.time, [0.0, 0.0])
        for _ in range(5):
            sim.step(action)
        scan = sim.lidars[0].scan(material=True, intensity=True)
        return scan.ranges.copy(), scan.intensity.copy(), sim.observe().copy()

    a, b, c = episode(11), episode(11), episode(12)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
    assert not np.array_equal(a[0], c[0])  # the return model's noise follows the seed
    assert np.array_equal(a[2], c[2])  # ... and the physics does not depend on it
    # Resetting one world leaves the other's episode running.
    sim.reset(worlds=[1])
    assert sim.time[0] == pytest.approx(0.1) and sim.time[1] == 0.0
    obs = sim.observe()
    assert np.array_equal(obs[1, :6], np.zeros(6)) and not np.array_equal(obs[0, :6], np.zeros(6))


def test_reset_draws_follow_the_seed(tmp_path):
    manifest = small_manifest(tmp_path, extra="[reset.joints]\nbase_x = 0.5\nbase_yaw = 1.0\n")
    sim = glint.Simulation.from_manifest(manifest, nworld=3)
    sim.reset(seed=1)
    first = sim.observe()[:, :3].copy()
    sim.reset(seed=1)
    assert np.array_equal(sim.observe()[:, :3], first)
    sim.reset(seed=2)
    assert not np.array_equal(sim.observe()[:, :3], first)
    assert len({tuple(row) for row in first}) == 3  # every world's episode starts apart
    assert np.all(np.abs(first[:, 0]) <= 0.5) and np.all(np.abs(first[:, 2]) <= 1.0)


# -- observations and scans -------------------------------------------------------------------


def test_observe_fills_a_caller_buffer():
    sim = glint.Simulation.from_manifest(VLP16_TOML, nworld=2)
    fresh = sim.observe()
    assert fresh.shape == (2, 6 + 28800) and fresh.dtype == np.float32
    assert np.all(fresh[:, 6:] == -1)  # nothing cast yet
    sim.step(np.array([1.0, 0.0, 0.0]))
    out = np.zeros((2, 6 + 28800), dtype=np.float32)
    got = sim.observe(out=out)
    assert got is out
    assert np.array_equal(out[:, 6:], sim.lidars[0].scan().ranges)
    assert out[0, 3] > 0  # base_x velocity
    with pytest.raises(glint.ShapeError, match=r"of shape \(2, 28806\).*; got a float32 array of shape \(2, 5\)"):
        sim.observe(out=np.zeros((2, 5), dtype=np.float32))
    with pytest.raises(glint.ShapeError, match="got a float64 array"):
        sim.observe(out=np.zeros((2, 6 + 28800), dtype=np.float64))
    # A step writes the observation after it into `out` in the same call.
    stepped = np.zeros_like(out)
    sim.step(np.array([1.0, 0.0, 0.0]), out=stepped)
    assert np.array_equal(stepped, sim.observe()) and not np.array_equal(stepped, out)
    time = sim.time.copy()
    with pytest.raises(glint.ShapeError, match=r"got a float32 array of shape \(2, 5\)"):
        sim.step(out=np.zeros((2, 5), dtype=np.float32))
    assert np.array_equal(sim.time, time), "a refused step does not run"
    strided = np.zeros((2, 2 * (6 + 28800)), dtype=np.float32)[:, ::2]
    with pytest.raises(glint.ShapeError, match="C-ordered float32 .* in a strided layout"):
        sim.observe(out=strided)
    with pytest.raises(glint.ShapeError, match="C-ordered float32 .* in a strided layout"):
        sim.step(out=strided)
    assert np.array_equal(sim.time, time)


def test_scan_into_out_shares_memory_and_exports_dlpack():
    sim = glint.Simulation.from_xml(str(SHOWROOM_XML), nworld=2, lidars=[VLP16])
    sim.lidar_live = True
    sim.step(n=10)
    lidar = sim.lidars[0]
    plain = lidar.scan()
    assert plain.secondary is None and plain.intensity is None and plain.reflectivity is None
    out = np.full((2, lidar.beam_count), 7.0, dtype=np.float32)
    scan = lidar.scan(out=out)
    assert np.shares_memory(out, scan.ranges)
    assert np.array_equal(out, plain.ranges)
    with pytest.raises(glint.ShapeError):
        lidar.scan(out=np.zeros((2, 3), dtype=np.float32))
    # DLPack: what torch.from_dlpack / jax.dlpack.from_dlpack take without a copy.
    ranges = scan.ranges
    capsule = ranges.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule"
    assert ranges.__dlpack_device__() == (1, 0)  # kDLCPU
    view = np.from_dlpack(ranges)
    assert np.shares_memory(view, ranges) and np.shares_memory(view, out)
    # Intensity without the return model reads -1.
    with_intensity = lidar.scan(intensity=True)
    assert np.all(with_intensity.intensity == -1) and np.all(with_intensity.reflectivity == -1)


def test_beam_angles_follow_the_beam_index():
    sim = glint.Simulation.from_xml(str(SHOWROOM_XML), lidars=[VLP16])
    lidar = sim.lidars[0]
    az, el = lidar.beam_angles()
    assert az.shape == el.shape == (28800,) and az.dtype == el.dtype == np.float32
    channels, bins = 16, 1800
    grid_el = el.reshape(bins, channels)  # index = bin * channels + channel
    assert np.allclose(grid_el, grid_el[0])  # every bin has the same channel elevations
    assert np.all(np.diff(grid_el[0]) > 0)  # channel 0 is the lowest
    assert np.allclose(np.degrees(grid_el[0][[0, -1]]), [-15.0, 15.0], atol=1e-4)
    grid_az = az.reshape(bins, channels)
    assert np.allclose(grid_az[:, 0], grid_az[:, 5])
    assert grid_az[0, 0] == pytest.approx(0.0, abs=1e-6)  # bin 0 along the sensor's +X
    step = np.angle(np.exp(1j * np.diff(grid_az[:, 0].astype(np.float64))))
    assert np.allclose(step, 2 * np.pi / bins, atol=1e-5)  # counter-clockwise about +Z
    with pytest.raises(glint.IndexOutOfRangeError):
        lidar.beam_angles(world=1)


def test_beam_angles_give_the_rays_the_lidar_casts():
    # The robot stands at the origin, its `lidar` site at (0, 0, 1.2) with the world's axes:
    # rays along the beam directions from there, past the robot's lidar_mount body, hit what
    # the scan reports.
    sim = glint.Simulation.from_xml(str(SHOWROOM_XML), lidars=[VLP16])
    sim.lidar_live = True
    still = np.zeros(3)
    for _ in range(10):  # one revolution at 10 Hz, 100 Hz runner
        sim.step(still)
    ranges = sim.lidars[0].scan().ranges[0].astype(np.float64)
    az, el = (a.astype(np.float64) for a in sim.lidars[0].beam_angles())
    dirs = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=1)
    m = mujoco.MjModel.from_xml_path(str(SHOWROOM_XML))
    mount = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "lidar_mount")
    dist, geomid, _ = sim.rays(np.array([0.0, 0.0, 1.2]), dirs, bodyexclude=mount)
    hit = (geomid[0] >= 0) & (dist[0] >= 0.5) & (dist[0] < 100.0)
    assert np.array_equal(ranges >= 0, hit)
    assert np.allclose(ranges[hit], dist[0][hit], atol=1e-3)


def test_lidar_config_reads_and_writes_the_seed_fields():
    sim = glint.Simulation.from_xml(str(SHOWROOM_XML), lidars=[VLP16])
    lidar = sim.lidars[0]
    config = lidar.config
    assert config["pattern"] == "spinning" and config["channels"] == 16 and config["azimuth_bins"] == 1800
    assert config["max_range"] == 100.0 and config["min_range"] == 0.5 and config["rotation_hz"] == 10.0
    assert config["self_ignore"] == "whole-robot"
    lidar.config = {"azimuth_bins": 900, "max_range": 30.0}
    assert lidar.config["azimuth_bins"] == 900 and lidar.config["max_range"] == 30.0
    assert lidar.config["channels"] == 16  # the others kept
    assert lidar.beam_count == 16 * 900
    with pytest.raises(glint.LidarError, match="max_range") as info:
        lidar.config = {"max_range": -5.0}
    assert str(info.value) == "lidar field `max_range` is -5, outside its range 0 to 100000"
    assert isinstance(info.value, ValueError)
    assert lidar.config["max_range"] == 30.0  # unchanged by the refused write
    with pytest.raises(glint.LidarError, match="channels"):
        lidar.config = {"channels": 100000}
    assert lidar.secondary_capture == ("off", "flagged-materials")
    lidar.set_secondary_capture("both", "all-surfaces")
    assert lidar.secondary_capture == ("both", "all-surfaces")
    with pytest.raises(glint.LidarError, match="sideways"):
        lidar.set_secondary_capture("sideways")


# -- return model, bakes, recordings ----------------------------------------------------------


def test_return_params_and_presets():
    sim = glint.Simulation.from_manifest(SHOWROOM_TOML)
    params = sim.return_params
    assert len(params) == 17 and params["max_returns"] == 2  # the manifest's ouster-os1
    sim.set_return_preset("generic")
    generic = sim.return_params
    assert generic != params
    sim.set_return_preset(3)  # the seed's index of ouster-os1
    assert sim.return_params == params
    sim.set_return_preset(0)
    assert sim.return_params == generic
    base = [
        "max_range_at_ref", "ref_reflectivity", "range_exp", "noise_sigma0", "grazing_cos_cutoff",
        "intensity_ref_range", "detect_floor", "near_range_r0", "noise_slope_per_m",
    ]  # fmt: skip
    new_base = {k: generic[k] for k in base}
    new_base["max_range_at_ref"] = 150.0
    sim.set_return_params(new_base)
    assert sim.return_params["max_range_at_ref"] == 150.0
    assert sim.return_params["retro_gain"] == generic["retro_gain"]
    sim.set_return_params_ex({"retro_gain": 123.0})
    assert sim.return_params["retro_gain"] == 123.0 and sim.return_params["max_range_at_ref"] == 150.0
    with pytest.raises(ValueError, match="missing"):
        sim.set_return_params({"max_range_at_ref": 100.0})
    with pytest.raises(glint.LidarError, match="unknown return preset 'nope'"):
        sim.set_return_preset("nope")


def test_the_physical_return_model_from_python(tmp_path):
    sim = glint.Simulation.from_manifest(small_manifest(tmp_path), nworld=1, seed=5)
    sim.bake()
    sim.lidar_live = True
    assert sim.return_model == {"model": "seed"}

    def scan():
        sim.reset(seed=5)
        sim.step(np.zeros(sim.nu))
        s = sim.lidars[0].scan(material=True, intensity=True)
        return s.ranges.copy(), s.intensity.copy()

    seed = scan()
    sim.set_return_model("physical", {"fresnel": False, "beam_divergence_deg": 0.3})
    model = sim.return_model
    assert model["model"] == "physical" and model["physical"]["fresnel"] is False
    assert model["physical"]["detection"] is True and model["physical"]["beam_divergence_deg"] == 0.3
    physical = scan()
    assert physical[0].shape == seed[0].shape and not np.array_equal(physical[0], seed[0])
    assert np.array_equal(scan()[0], physical[0]), "the same seed gives the same physical scan"
    sim.set_return_model("physical", {"fresnel": False, "beam_divergence_deg": 0.3, "footprint_rays": 7})
    assert sim.return_model["physical"]["footprint_rays"] == 7
    footprints = scan()
    assert np.array_equal(scan()[0], footprints[0]), "the same seed gives the same footprint scan"
    assert not np.array_equal(footprints[0], physical[0])
    sim.set_return_model("physical", {"fresnel": False, "beam_divergence_deg": 0.3})
    with pytest.raises(glint.SettingError, match="fresnell"):
        sim.set_return_model("physical", {"fresnell": False})
    with pytest.raises(glint.LidarError, match="beam_divergence_deg"):
        sim.set_return_model("physical", {"beam_divergence_deg": 90.0})
    with pytest.raises(glint.LidarError, match="footprint_rays"):
        sim.set_return_model("physical", {"footprint_rays": 0})
    with pytest.raises(glint.LidarError, match="unknown return model 'fancy'"):
        sim.set_return_model("fancy")
    with pytest.raises(glint.SettingError, match="belong to model"):
        sim.set_return_model("seed", {"noise": False})
    assert sim.return_model["physical"]["beam_divergence_deg"] == 0.3, "nothing changed on an error"
    sim.set_return_model("seed")
    assert np.array_equal(scan()[0], seed[0]), "back to the seed's model, bit for bit"


def test_bake_save_load_and_status(tmp_path):
    manifest = small_manifest(tmp_path)
    sim = glint.Simulation.from_manifest(manifest, nworld=2, seed=3)
    status = sim.bake_status()
    assert status["valid"] is False
    with pytest.raises(glint.BakeError, match="no material bake is loaded"):
        sim.lidars[0].scan(material=True)
    built = sim.bake()
    assert built["valid"] and built["matches_scene"] and not built["stale"]
    # The status's serde form: the fields `glint bake --status` prints, fingerprints in hex.
    assert list(built) == list(status)
    assert len(built["material_fingerprint"]) == 16 and int(built["scene_fingerprint"], 16) != 0
    assert built["cell_size"] == 0.25 and built["filled_cells"] > 0
    assert sim.bake_status() == built
    path = Path(sim.save_bake())
    assert path == tmp_path / "MaterialBakes" / "testbake.lvxb" and path.is_file()

    other = glint.Simulation.from_manifest(manifest, nworld=2, seed=3)
    loaded = other.load_bake()
    assert loaded["valid"] and loaded["material_fingerprint"] == built["material_fingerprint"]
    with pytest.raises(glint.BakeNotFoundError, match="no bake named 'nope'") as info:
        other.load_bake("nope")
    assert isinstance(info.value, FileNotFoundError)
    # The two simulations, one baked in memory and one from the file, scan alike.
    scans = []
    for s in (sim, other):
        s.lidar_live = True
        for _ in range(5):
            s.step(np.array([0.5, 0.0, 0.0]))
        scan = s.lidars[0].scan(material=True, secondary=True, intensity=True)
        assert scan.secondary.shape == scan.intensity.shape == scan.reflectivity.shape == (2, 5760)
        scans.append(scan)
    assert np.array_equal(scans[0].ranges, scans[1].ranges)
    assert np.array_equal(scans[0].secondary, scans[1].secondary)
    assert (scans[0].secondary >= 0).any()  # the OS1 is a two-echo unit: the glass gives two


def test_record_is_a_context_manager(tmp_path):
    manifest = small_manifest(tmp_path)
    sim = glint.Simulation.from_manifest(manifest)
    assert not sim.recording
    with sim.record(tmp_path / "sessions") as rec:
        assert sim.recording
        for _ in range(5):
            sim.step()
    assert not sim.recording
    session = Path(rec.path)
    assert session.parent == tmp_path / "sessions" and session.is_dir()
    files = [p for p in session.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files), files
    assert rec.stop() == 0  # a second stop does nothing


# -- rays against MuJoCo ----------------------------------------------------------------------


@pytest.mark.parametrize("scene", ["primitives.xml", "crowded.xml", "meshes.xml"])
def test_rays_equal_mujoco_multiray(scene):
    path = REPO / "examples" / scene
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    sim = glint.Simulation.from_xml(str(path), nworld=2)
    rng = np.random.default_rng(7)
    site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "lidar")
    center, extent = np.asarray(m.stat.center), float(m.stat.extent)
    origins = [d.site_xpos[site].copy()] + [center + rng.uniform(-0.3, 0.3, 3) * extent for _ in range(3)]
    nray = 1500
    compared = hits = culled = 0
    for origin in origins:
        vec = rng.normal(size=(nray, 3))
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        geomid = np.zeros(nray, dtype=np.int32)
        dist = np.zeros(nray)
        normal = np.zeros(3 * nray)
        mujoco.mj_multiRay(m, d, origin, vec.reshape(-1), None, 1, -1, geomid, dist, normal, nray, mujoco.mjMAXVAL)
        g_dist, g_geom, g_normal = sim.rays(origin, vec, geomgroup=None, flg_static=True, bodyexclude=-1)
        assert g_dist.shape == (2, nray) and g_geom.shape == (2, nray) and g_normal.shape == (2, nray, 3)
        assert g_dist.dtype == np.float64 and g_geom.dtype == np.int32
        assert np.array_equal(g_geom[0], g_geom[1]) and np.array_equal(g_dist[0], g_dist[1])
        # mj_multiRay culls geoms by angular windows around the origin, and in MuJoCo 3.17 the
        # windows still drop a geom on a handful of rays (a box right next to the origin, a
        # thin upright at a grazing angle) that mj_ray, whose semantics both implement,
        # hits. On those rays glint must equal mj_ray; they must stay rare.
        differ = np.flatnonzero(g_geom[0] != geomid)
        for k in differ:
            single = np.zeros(1, dtype=np.int32)
            d1 = mujoco.mj_ray(m, d, origin, vec[k], None, 1, -1, single)
            assert g_geom[0][k] == single[0] and abs(g_dist[0][k] - d1) <= 1e-9, (
                f"ray {k} from {origin}: glint {g_geom[0][k]} at {g_dist[0][k]}, mj_ray {single[0]} at {d1}, "
                f"mj_multiRay {geomid[k]} at {dist[k]}"
            )
        culled += len(differ)
        same = g_geom[0] == geomid
        hit = same & (geomid >= 0)
        assert np.all(g_dist[0][same & (geomid < 0)] == -1)
        assert np.max(np.abs(g_dist[0][hit] - dist[hit]), initial=0.0) <= 1e-9
        assert np.allclose(g_normal[0][hit], normal.reshape(-1, 3)[hit], atol=1e-9)
        compared += nray
        hits += int(hit.sum())
    assert compared == 4 * nray and hits > compared // 4
    assert culled <= compared // 500, f"{culled} of {compared} rays differ from mj_multiRay"
    # One origin per ray, and one per world and ray, give the same answers.
    pnt = np.repeat(origins[0][None], nray, axis=0)
    per_ray = sim.rays(pnt, vec)
    per_world = sim.rays(np.stack([pnt, pnt]), np.stack([vec, vec]))
    single = sim.rays(origins[0], vec)
    for a, b in zip(per_ray, per_world):
        assert np.array_equal(a, b)
    assert np.array_equal(per_ray[1], single[1])


def test_rays_filters_and_shapes():
    path = REPO / "examples" / "primitives.xml"
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    sim = glint.Simulation.from_xml(str(path))
    rng = np.random.default_rng(3)
    vec = rng.normal(size=(800, 3))
    origin = np.array([0.0, 0.0, 1.2])
    for group in ([1, 0, 0, 0, 0, 0], [0, 1, 1, 1, 1, 1]):
        for static in (True, False):
            geomid = np.zeros(800, dtype=np.int32)
            dist = np.zeros(800)
            mujoco.mj_multiRay(
                m, d, origin, vec.reshape(-1), np.array(group, np.uint8), static, -1, geomid, dist, None, 800,
                mujoco.mjMAXVAL,
            )  # fmt: skip
            g_dist, g_geom, _ = sim.rays(origin, vec, geomgroup=group, flg_static=static)
            assert np.array_equal(g_geom[0], geomid)
            assert np.allclose(g_dist[0], dist, atol=1e-9)
    with pytest.raises(glint.ShapeError, match="vec has shape"):
        sim.rays(origin, np.zeros((4, 2)))
    with pytest.raises(glint.ShapeError, match="pnt has shape"):
        sim.rays(np.zeros((5, 3)), np.ones((4, 3)))
    with pytest.raises(glint.ShapeError, match="geomgroup"):
        sim.rays(origin, vec, geomgroup=[1, 1])


# -- errors -----------------------------------------------------------------------------------


def cli_error(manifest: Path) -> str:
    """What `glint run MANIFEST` prints after `error: `."""
    assert GLINT_BIN.exists(), f"no glint binary at {GLINT_BIN} (build it, or set GLINT_BIN)"
    env = dict(os.environ)
    lib = str(REPO / ".deps" / "mujoco" / "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    done = subprocess.run(
        [str(GLINT_BIN), "run", str(manifest), "--no-record", "--seconds", "0.1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode != 0, done.stdout
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert lines, done.stderr
    return lines[0][len("error: ") :]


@pytest.mark.parametrize(
    "name, text, kind, python_kind",
    [
        ("unknown_key", f'scene = "{SHOWROOM_XML}"\nbogus_key = 1\n', glint.ManifestError, ValueError),
        (
            "typo",
            f'scene = "{SHOWROOM_XML}"\n[[lidar]]\nattach_site = "lidar"\nchanels = 16\n',
            glint.ManifestError,
            ValueError,
        ),
        (
            "out_of_range",
            f'scene = "{SHOWROOM_XML}"\n[[lidar]]\nattach_site = "lidar"\nmax_range = -5.0\n',
            glint.ManifestError,
            ValueError,
        ),
        (
            "bad_observation",
            f'scene = "{SHOWROOM_XML}"\n[[lidar]]\nattach_site = "lidar"\n[[observation]]\nname = "lidar_rangez"\n',
            glint.ManifestError,
            ValueError,
        ),
        ("missing", None, glint.ManifestNotFoundError, FileNotFoundError),
    ],
)
def test_errors_carry_the_command_lines_messages(tmp_path, name, text, kind, python_kind):
    manifest = tmp_path / f"{name}.toml"
    if text is not None:
        manifest.write_text(text)
    with pytest.raises(kind) as info:
        glint.Simulation.from_manifest(manifest)
    assert isinstance(info.value, glint.GlintError) and isinstance(info.value, python_kind)
    assert str(info.value) == cli_error(manifest)


def test_task_errors_name_what_the_model_has(tmp_path):
    manifest = small_manifest(tmp_path, extra='[task]\nbody = "robt"\ngoal = [1.0, 2.0]\n')
    with pytest.raises(glint.SettingError, match="did you mean 'robot'"):
        glint.Simulation.from_manifest(manifest)
    manifest = small_manifest(tmp_path, extra='[task]\nbody = "robot"\ngoal = [1.0]\n', name="goal.toml")
    with pytest.raises(glint.ManifestError, match=r"\[task\] goal"):
        glint.Simulation.from_manifest(manifest)


def test_index_errors():
    sim = glint.Simulation.from_manifest(VLP16_TOML, nworld=2)
    with pytest.raises(IndexError):
        sim.lidars[1]
    with pytest.raises(glint.IndexOutOfRangeError, match="world 2 does not exist"):
        sim.lidars[0].beam_angles(world=2)
    with pytest.raises((glint.IndexOutOfRangeError, IndexError, ValueError)):
        sim.reset(worlds=[5])
