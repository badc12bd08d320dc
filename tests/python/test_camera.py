"""Cameras from Python: ``sim.render()`` arrays, ``[[camera]]`` bindings in a manifest, and
depth and segmentation against MuJoCo's own ``mj_ray`` from the ``mujoco`` package."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import REPO

import glint

SCENE = REPO / "examples" / "lights" / "scene.xml"


def test_render_shapes_dtypes_and_worlds():
    sim = glint.Simulation.from_xml(str(SCENE), nworld=3)
    sim.set_cameras([{"camera": "view", "width": 40, "height": 30}])
    frames = sim.render()
    view = frames["view"]
    assert view["rgb"].shape == (3, 30, 40, 3) and view["rgb"].dtype == np.uint8
    assert view["depth"].shape == (3, 30, 40) and view["depth"].dtype == np.float32
    assert view["seg"].shape == (3, 30, 40) and view["seg"].dtype == np.int32
    np.testing.assert_array_equal(view["rgb"][0], view["rgb"][2])
    assert view["rgb"].mean() > 20, "the scene is lit"
    assert (view["seg"] >= -1).all() and (view["seg"] >= 0).mean() > 0.5


def test_manifest_camera_bindings(tmp_path):
    manifest = tmp_path / "cam.toml"
    manifest.write_text(
        f'scene = "{SCENE}"\n[[camera]]\ncamera = "view"\nwidth = 32\nheight = 24\noutputs = ["depth", "seg"]\n'
    )
    frames = glint.Simulation.from_manifest(str(manifest)).render()
    assert set(frames["view"]) == {"depth", "seg"}
    assert frames["view"]["depth"].shape == (1, 24, 32)
    bad = tmp_path / "bad.toml"
    bad.write_text(f'scene = "{SCENE}"\n[[camera]]\ncamera = "veiw"\n')
    with pytest.raises(glint.errors.GlintError, match="did you mean `view`"):
        glint.Simulation.from_manifest(str(bad))
    bad.write_text(f'scene = "{SCENE}"\n[[camera]]\ncamera = "view"\nwidth = 0\nheight = 10\n')
    with pytest.raises(ValueError, match="width = 0 is out of range"):
        glint.Simulation.from_manifest(str(bad))


def test_depth_and_segmentation_equal_mujoco_mj_ray():
    mujoco = pytest.importorskip("mujoco")
    w, h = 32, 24
    sim = glint.Simulation.from_xml(str(SCENE))
    sim.set_cameras([{"camera": "view", "width": w, "height": h}])
    view = sim.render()["view"]
    model = mujoco.MjModel.from_xml_path(str(SCENE))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, "view")
    pos, mat = data.cam_xpos[cam], data.cam_xmat[cam].reshape(3, 3)
    f = 0.5 / np.tan(np.radians(model.cam_fovy[cam]) / 2) * h
    geomgroup = np.array([1, 1, 1, 0, 0, 0], dtype=np.uint8)
    geomid = np.zeros(1, dtype=np.int32)
    for row in range(h):
        for col in range(w):
            d = mat @ np.array([(col + 0.5 - w / 2) / f, (h / 2 - row - 0.5) / f, -1.0])
            dist = mujoco.mj_ray(model, data, pos, d, geomgroup, 1, -1, geomid)
            assert view["seg"][0, row, col] == geomid[0], (row, col)
            if geomid[0] >= 0:
                assert abs(view["depth"][0, row, col] - dist) <= 1e-5 * dist, (row, col)
            else:
                assert view["depth"][0, row, col] == 0.0


def test_no_cameras_and_bad_requests_are_errors():
    sim = glint.Simulation.from_xml(str(SCENE))
    with pytest.raises(glint.errors.GlintError, match="no cameras are set"):
        sim.render()
    with pytest.raises(glint.errors.GlintError, match="bound twice"):
        sim.set_cameras(["view", "view"])
    with pytest.raises(glint.errors.GlintError, match="neither a camera name"):
        sim.set_cameras([3])


def test_randomize_draws_per_world_and_resets_redraw(tmp_path):
    manifest = tmp_path / "rand.toml"
    manifest.write_text(
        f'scene = "{SCENE}"\n'
        "[randomize.geom_rgba]\ncube = { uniform = [[0, 0, 0, 1], [1, 1, 1, 1]] }\n"
        '[[camera]]\ncamera = "view"\nwidth = 32\nheight = 24\n'
    )
    sim = glint.Simulation.from_manifest(str(manifest), nworld=2, seed=3)
    drawn = [sim.drawn_fields(w)["geom_rgba/cube"] for w in range(2)]
    assert drawn[0] != drawn[1]
    rgba = sim.field("geom_rgba")
    cube = 1  # floor, cube, ball, ... in the scene's order
    np.testing.assert_allclose(rgba[:, cube], np.array(drawn))
    frames = sim.render()["view"]["rgb"]
    assert not np.array_equal(frames[0], frames[1])
    sim.step()
    sim.reset(worlds=[1])
    assert sim.drawn_fields(1)["geom_rgba/cube"] != drawn[1]
    assert sim.drawn_fields(0)["geom_rgba/cube"] == drawn[0]
