"""A lidar that opts in (`see_skins`) sees the skins and flexes of real models (dm_control's dog
and rodent, a cloth; tests/corpus) where MuJoCo's own renderer poses them: each beam's range
equals the nearer of `mj_ray` on the geoms and `mj_ray` on the triangles that `mjv_updateScene`
gives the skins and flexes. Without the opt-in the lidar equals `mj_ray` on the geoms alone,
and the two differ on many beams (the dog's capsules lie inside its skin; a cloth is not
there), which is what the opt-in is for."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import corpus_figures as cf
import glint

SURFACED = [s for s in cf.scenes() if {"skin", "flex"} & set(s["features"])]

# Ranges are float32 metres: a relative band of 1e-5 covers their rounding.
RANGE_RTOL = 1e-5


def lidar_sim(path, origin, see_skins: bool, timestep: float):
    lidar = {
        "name": "probe",
        "attach_body": "world",
        "mount_offset": [float(v) for v in origin],
        "channels": 48,
        "azimuth_bins": 360,
        "vfov_min_deg": -60.0,
        "vfov_max_deg": 30.0,
        "min_range": 0.0,
        "max_range": 1000.0,
        "rotation_hz": 0.0,
        "geom_group_mask": 0b111,
        "see_skins": see_skins,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = glint.Simulation.from_xml(str(path), lidars=[lidar], runner_hz=1.0 / timestep)
    sim.lidar_live = True
    sim.step()
    return sim


def reference(model, data, origin, dirs, with_skins: bool) -> np.ndarray:
    """Ranges as `mj_ray` gives them on the geoms of groups 0-2, and, `with_skins`, on the skins
    and flexes MuJoCo's renderer draws; -1 where nothing is met."""
    _, dist, _ = cf.mj_rays(model, data, origin, dirs, np.array([1, 1, 1, 0, 0, 0], dtype=np.uint8))
    if with_skins:
        skin_id, skin_dist = cf.skin_rays(model, data, origin, dirs)
        nearer = (skin_id >= 0) & ((dist < 0) | (skin_dist < dist))
        dist = np.where(nearer, skin_dist, dist)
    return dist


@pytest.mark.parametrize("scene", SURFACED, ids=[s["name"] for s in SURFACED])
def test_a_lidar_that_opts_in_sees_skins_and_flexes_where_mujoco_draws_them(scene):
    cf.require_corpus()
    import mujoco

    path = cf.scene_file(scene)
    model, data = cf.mujoco_model(path)
    origin = cf.ray_origins(model, data)[1]
    # glint reads the poses that MuJoCo's step computed before integrating (those of the
    # state it started from), as MuJoCo's own sensors do: the reference is that state.
    mujoco.mj_step(model, data)
    seen, blind = (lidar_sim(path, origin, flag, model.opt.timestep) for flag in (True, False))
    az, el = seen.lidars[0].beam_angles()
    az, el = az.astype(np.float64), el.astype(np.float64)
    dirs = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1)
    got_seen = seen.lidars[0].scan().ranges[0].astype(np.float64)
    got_blind = blind.lidars[0].scan().ranges[0].astype(np.float64)
    want_seen, want_blind = reference(model, data, origin, dirs, True), reference(model, data, origin, dirs, False)

    def disagree(got, want):
        return ((got < 0) != (want < 0)) | ((want >= 0) & (np.abs(got - want) > RANGE_RTOL * np.maximum(1.0, want)))

    wrong_seen, wrong_blind = disagree(got_seen, want_seen), disagree(got_blind, want_blind)
    surfaced = disagree(want_seen, want_blind)
    print(f"{scene['name']}: {len(dirs)} beams, {surfaced.sum()} on a skin or flex, "
          f"{wrong_seen.sum()} differ with see_skins, {wrong_blind.sum()} without")
    assert surfaced.sum() > 100, "the probe must see the surfaces"
    # A beam through a shared edge of two triangles may meet either, or slip between them
    # in one of the two casters: a few in a thousand at most.
    assert wrong_seen.sum() <= 0.001 * len(dirs), f"{wrong_seen.sum()} beams differ with see_skins"
    assert wrong_blind.sum() <= 0.001 * len(dirs), f"{wrong_blind.sum()} beams differ without"
