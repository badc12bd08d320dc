"""glint's sensors on a user's own `mujoco` model and data (`glint.rays`, `glint.Lidar`,
`glint.Renderer`), against MuJoCo 3.17's own `mj_ray` and `mujoco.Renderer` in this venv. The
same checks run against the newest `mujoco` (4.x) from the installed wheel in test_wheel.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

import glint
import own_checks
from corpus_figures import foreground_mean, ssim

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [ROOT / "examples/showroom/showroom.xml", ROOT / "examples/meshes.xml", ROOT / "examples/primitives.xml",
            ROOT / "examples/crowded.xml", ROOT / "examples/lights/scene.xml"]


def test_rays_lidar_and_camera_equal_mj_ray_on_examples_and_random_scenes():
    figures = own_checks.run([str(p) for p in EXAMPLES], random=6)
    assert figures["mujoco"] == "3.17.0"
    for name, f in figures["scenes"].items():
        assert f["rays"]["geom_mismatch"] == 0, (name, f)
        assert f["rays"]["max_rel"] <= 1e-9, (name, f)
        if "lidar" in f:
            assert f["lidar"]["geom_mismatch"] == 0, (name, f)
            assert f["lidar"]["hits"] > 0, (name, f)
            assert f["lidar"]["max_rel"] <= 1.2e-7, (name, f)  # float32 ranges
        assert f["camera"]["seg_mismatch"] == 0, (name, f)
        assert f["camera"]["depth_checked"] > 0, (name, f)
        assert f["camera"]["max_rel"] <= 1.2e-7, (name, f)  # float32 depth


def test_rays_and_camera_equal_mj_ray_on_the_real_robot_corpus():
    """Every model of the acceptance corpus (robosuite, dm_control, mjlab, a Franka; skins,
    cloth, height fields, textured meshes), from its corpus camera."""
    import corpus_figures

    checked = 0
    for scene in corpus_figures.scenes():
        model = mujoco.MjModel.from_xml_path(str(corpus_figures.scene_file(scene)))
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        rays = own_checks.check_rays(model, data, checked)
        camera = own_checks.check_camera(model, data, "corpus_view")
        assert rays["geom_mismatch"] == 0 and rays["max_rel"] <= 1e-9, (scene["name"], rays)
        assert camera["seg_mismatch"] == 0, (scene["name"], camera)
        # Float32 depth; where coincident surfaces are drawn, re-cast from the nearer one.
        assert camera["depth_checked"] > 0 and camera["max_rel"] <= 1e-6, (scene["name"], camera)
        checked += 1
    assert checked >= 16


def _data(model, seed=0):
    return own_checks.posed(model, seed)


def test_batches_equal_one_world_at_a_time():
    model = mujoco.MjModel.from_xml_string(own_checks.random_scene(3))
    datas = [_data(model, k) for k in range(4)]
    lidar = glint.Lidar(model, site="lidar", preset="velodyne-vlp16")
    singles = [lidar.scan(d).ranges[0].copy() for d in datas]
    stack = lambda name: np.stack([getattr(d, name) for d in datas])  # noqa: E731
    batch = lidar.scan_batch(stack("geom_xpos"), stack("geom_xmat"), stack("site_xpos"), stack("site_xmat"))
    assert batch.ranges.shape == (4, lidar.beam_count)
    np.testing.assert_array_equal(batch.ranges, np.stack(singles))

    renderer = glint.Renderer(model, 32, 40)
    images = []
    for d in datas:
        renderer.update_scene(d)
        images.append(renderer.render())
    frames = {n: stack(n) for n in ("geom_xpos", "geom_xmat", "xpos", "xmat", "light_xpos", "light_xdir")}
    renderer.update_scene_batch(**frames)
    np.testing.assert_array_equal(renderer.render(), np.stack(images))

    pnt, vec = np.zeros(3), np.random.default_rng(0).normal(size=(50, 3))
    dist, geomid = glint.own.scene_of(model).rays_batch(stack("geom_xpos"), stack("geom_xmat"), pnt, vec)
    for k, d in enumerate(datas):
        one = glint.rays(model, d, pnt, vec)
        np.testing.assert_array_equal(dist[k], one[0])
        np.testing.assert_array_equal(geomid[k], one[1])


def test_scene_option_geomgroup_is_drawn_and_other_options_are_named():
    model = mujoco.MjModel.from_xml_string(own_checks.random_scene(2))
    data = _data(model)
    renderer = glint.Renderer(model, 24, 32)
    renderer.enable_segmentation_rendering()
    renderer.update_scene(data)
    default = renderer.render()
    option = mujoco.MjvOption()
    renderer.update_scene(data, scene_option=option)
    np.testing.assert_array_equal(renderer.render(), default)
    option.geomgroup[:] = [1, 0, 0, 0, 0, 0]
    renderer.update_scene(data, scene_option=option)
    only0 = renderer.render()
    drawn = set(only0[..., 0].ravel()) - {-1}
    assert drawn and all(model.geom_group[g] == 0 for g in drawn)
    assert set(default[..., 0].ravel()) - {-1} != drawn
    option.frame = mujoco.mjtFrame.mjFRAME_BODY
    with pytest.warns(glint.GlintWarning, match="frame differ"):
        renderer.update_scene(data, scene_option=option)


def test_cameras_by_id_name_free_and_mjvcamera():
    model = mujoco.MjModel.from_xml_path(str(ROOT / "examples/lights/scene.xml"))
    data = _data(model)
    renderer = glint.Renderer(model, 24, 32)
    renderer.update_scene(data, camera="view")
    by_name = renderer.render()
    renderer.update_scene(data, camera=0)
    np.testing.assert_array_equal(renderer.render(), by_name)
    fixed = mujoco.MjvCamera()
    fixed.type, fixed.fixedcamid = mujoco.mjtCamera.mjCAMERA_FIXED, 0
    renderer.update_scene(data, camera=fixed)
    np.testing.assert_array_equal(renderer.render(), by_name)
    free = mujoco.MjvCamera()
    mujoco.mjv_defaultFreeCamera(model, free)
    renderer.update_scene(data, camera=free)
    from_free = renderer.render()
    renderer.update_scene(data)  # -1: MuJoCo's default free camera
    np.testing.assert_array_equal(renderer.render(), from_free)
    assert not np.array_equal(from_free, by_name)


RENDER_SCRIPT = """
import json, sys, mujoco, numpy as np
req = json.loads(sys.argv[1])
m = mujoco.MjModel.from_xml_path(req["mjcf"]); d = mujoco.MjData(m); mujoco.mj_forward(m, d)
r = mujoco.Renderer(m, req["height"], req["width"]); r.update_scene(d, camera=req["camera"])
np.save(req["out"], r.render())
"""


def test_rgb_matches_mujoco_renderer_on_the_lighting_scene(tmp_path):
    scene = ROOT / "examples/lights/scene.xml"
    out = tmp_path / "mujoco.npy"
    env = dict(os.environ, MUJOCO_GL="osmesa")
    request = {"mjcf": str(scene), "camera": "view", "width": 256, "height": 256, "out": str(out)}
    done = subprocess.run([sys.executable, "-c", RENDER_SCRIPT, json.dumps(request)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    reference = np.load(out)
    model = mujoco.MjModel.from_xml_path(str(scene))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    renderer = glint.Renderer(model, 256, 256)
    renderer.update_scene(data, camera="view")
    ours = renderer.render()
    assert ours.shape == reference.shape == (256, 256, 3)
    ref_mean = foreground_mean(reference)
    assert abs(foreground_mean(ours) - ref_mean) / ref_mean <= 0.03
    assert ssim(ours, reference) >= 0.95


SDF_TORUS = """<mujoco>
  <extension><plugin plugin="mujoco.sdf.torus"><instance name="torus">
    <config key="radius1" value="0.35"/><config key="radius2" value="0.15"/></instance></plugin></extension>
  <asset><mesh name="torus"><plugin instance="torus"/></mesh></asset>
  <worldbody><geom type="sdf" name="donut" mesh="torus"><plugin instance="torus"/></geom></worldbody>
</mujoco>"""


class _Proxy:
    """A model whose named arrays are replaced (as a newer or foreign model might give them)."""

    def __init__(self, model, **replaced):
        self._model, self._replaced = model, replaced

    def __getattr__(self, name):
        if name in self._replaced:
            return self._replaced[name]
        return getattr(self._model, name)


def test_bad_input_gets_one_clear_error_each():
    model = mujoco.MjModel.from_xml_string(own_checks.random_scene(1))
    data = _data(model)
    other = mujoco.MjModel.from_xml_path(str(ROOT / "examples/primitives.xml"))
    with pytest.raises(glint.ShapeError, match=r"geom_xpos has shape \(44, 3\).* \(is it from another model\?\)"):
        glint.rays(model, mujoco.MjData(other), np.zeros(3), np.ones((2, 3)))
    with pytest.raises(glint.ShapeError, match="vec has shape"):
        glint.rays(model, data, np.zeros(3), np.ones((2, 4)))
    with pytest.raises(TypeError, match="vec must be numbers"):
        glint.rays(model, data, np.zeros(3), np.array([["a", "b", "c"]]))
    lidar = glint.Lidar(model, site="lidar")
    diverged = np.array(data.geom_xpos)
    diverged[3, 1] = np.nan
    with pytest.raises(glint.ShapeError, match=r"geom_xpos\[3\] of world 0 holds NaN"):
        lidar.scan_batch(diverged[None], data.geom_xmat[None], data.site_xpos[None], data.site_xmat[None])
    with pytest.raises(glint.ShapeError, match=r"site_xpos and site_xmat"):
        lidar.scan_batch(data.geom_xpos[None], data.geom_xmat[None])
    with pytest.raises(glint.ShapeError, match="geom_xmat has shape"):
        lidar.scan_batch(data.geom_xpos[None], data.geom_xmat[None, :, :4], data.site_xpos[None], data.site_xmat[None])
    with pytest.raises(glint.LidarError, match="lidarr"):
        glint.Lidar(model, site="lidarr").scan(data)
    with pytest.raises(glint.LidarError, match="site= or a body="):
        glint.Lidar(model)
    with pytest.raises(glint.LidarError, match="preset"):
        glint.Lidar(model, site="lidar", preset="ouster-os9")
    renderer = glint.Renderer(model, 8, 8)
    with pytest.raises(glint.SettingError, match="no camera 'front'"):
        renderer.update_scene(data, camera="front")
    with pytest.raises(glint.SettingError, match="camera 7 does not exist"):
        renderer.update_scene(data, camera=7)
    # A geom type glint cannot cast (an SDF shape from MuJoCo's plugin) is named.
    sdf = mujoco.MjModel.from_xml_string(SDF_TORUS)
    with pytest.raises(glint.SceneError, match=r"geom 0 \('donut'\) is an SDF geom"):
        glint.Lidar(sdf, body="world")
    # An array of the wrong length (a model from elsewhere) is named.
    short = _Proxy(model, mesh_vert=model.mesh_vert[:-1])
    with pytest.raises(glint.SceneError, match=r"mesh_vert has .* nmeshvert × 3"):
        glint.rays(short, data, np.zeros(3), np.ones((1, 3)))


def test_the_docs_first_example_runs_as_written():
    doc = (ROOT / "docs" / "python.md").read_text()
    block = doc.split("```python\n", 1)[1].split("```", 1)[0]
    model = mujoco.MjModel.from_xml_path(str(ROOT / "examples/showroom/showroom.xml"))
    space = {"glint": glint, "mujoco": mujoco, "model": model, "data": mujoco.MjData(model)}
    exec(block, space)  # noqa: S102 - the documentation's own code
    assert space["ranges"].shape == (1, 65536)
    assert (space["ranges"] > 0).mean() > 0.5


def test_bench_byo_runs_and_reports_well_formed_figures():
    env = dict(os.environ, MUJOCO_GL="osmesa")
    done = subprocess.run(
        [sys.executable, "-m", "glint.bench", "byo", "--repeats", "1", "--width", "64", "--height", "48", "--json"],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    r = json.loads(done.stdout.strip().splitlines()[-1])
    assert r["threads"] == "1" and r["beams"] == 65536
    for key in ["scan_vs_mj_multiRay", "scan_vs_mujoco_lidar_cpu", "render_vs_mujoco_renderer"]:
        figures = r[key]
        assert isinstance(figures, dict), (key, figures)
        assert figures["glint_s"] > 0 and figures["reference_s"] > 0 and np.isfinite(figures["speedup"]), (key, figures)
    assert np.isfinite(r["overhead"]["rays_over_simulation"]) and np.isfinite(r["overhead"]["scan_over_simulation"])
    assert r["agreement"]["geom_mismatch"] == 0


def test_the_return_model_runs_on_your_own_model():
    import tomllib

    manifest = tomllib.loads((ROOT / "examples/showroom/showroom.toml").read_text())
    model = mujoco.MjModel.from_xml_path(str(ROOT / "examples/showroom/showroom.xml"))
    data = _data(model)
    clean = glint.Lidar(model, site="lidar", preset="ouster-os1-64").scan(data)
    measured = [
        glint.Lidar(model, site="lidar", preset="ouster-os1-64", materials=manifest["materials"], seed=seed).scan(
            data, material=True
        )
        for seed in (7, 7, 8)
    ]
    first = measured[0]
    for channel in ("ranges", "secondary", "intensity", "reflectivity"):
        assert getattr(first, channel).shape == clean.ranges.shape, channel
    np.testing.assert_array_equal(first.ranges, measured[1].ranges)  # same seed, same noise
    assert not np.array_equal(first.ranges, measured[2].ranges)  # another seed, other noise
    hit = (clean.ranges > 0) & (first.ranges > 0)
    assert hit.mean() > 0.5
    assert 0 < np.median(np.abs(first.ranges[hit] - clean.ranges[hit])) < 0.05  # noise of centimetres
    glass = [i for i in range(model.ngeom) if model.geom_matid[i] >= 0
             and mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_MATERIAL, model.geom_matid[i]) == "storefront_glass"]
    through = np.isin(clean.geomid, glass) & (first.ranges > 0)
    assert through.any() and (first.ranges[through] > clean.ranges[through] + 0.05).mean() > 0.5  # seen through
    assert (first.intensity[hit] >= 0).all()

    with pytest.raises(glint.BakeError, match="materials="):
        glint.Lidar(model, site="lidar").scan(data, material=True)
    with pytest.raises(glint.ManifestError, match="did you mean `pool_water`"):
        glint.Lidar(model, site="lidar", materials={"pool_watr": {"preset": "still-water"}})
    with pytest.raises(glint.ManifestError, match="preset"):
        glint.Lidar(model, site="lidar", materials={"pool_water": {"preset": "lava"}})
