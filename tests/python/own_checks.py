"""glint's sensors on a user's own model and data against the `mujoco` package they run with:
`glint.rays` and `glint.Lidar(...).scan` against `mujoco.mj_ray`, `glint.Renderer`'s depth and
segmentation against `mj_ray` along each pixel's ray. Imported by the tests, and run as a
script inside the fresh venvs of test_wheel.py (any `mujoco` 3.x or 4.x):

    python own_checks.py SCENE.xml ... --random 8      # prints one JSON line of figures
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import glint
import mujoco


def mj_ray(model, data, pnt, vec, geomgroup=None, flg_static=1, bodyexclude=-1):
    """`mujoco.mj_ray` as any 3.x or 4.x spells it: (distance, geom id)."""
    geomid = np.zeros(1, np.int32)
    groups = None if geomgroup is None else np.asarray(geomgroup, np.uint8)
    pnt, vec = np.asarray(pnt, np.float64), np.asarray(vec, np.float64)
    try:
        dist = mujoco.mj_ray(model, data, pnt, vec, groups, flg_static, bodyexclude, geomid)
    except TypeError:  # a version with the normal output
        dist = mujoco.mj_ray(model, data, pnt, vec, groups, flg_static, bodyexclude, geomid, None)
    return float(dist), int(geomid[0])


def random_scene(seed: int) -> str:
    """MJCF with every geom type glint casts against (plane, height field, sphere, capsule,
    ellipsoid, cylinder, box, mesh), static and on free bodies, random sizes and poses."""
    rng = np.random.default_rng(seed)
    n = 5
    elevation = " ".join(f"{v:.3f}" for v in rng.uniform(0, 1, n * n))
    verts = " ".join(f"{v:.3f}" for v in rng.uniform(-0.3, 0.3, 3 * 10))
    kinds = ["sphere", "capsule", "ellipsoid", "cylinder", "box"]

    def size(kind: str) -> str:
        s = rng.uniform(0.05, 0.5, 3)
        return {"sphere": f"{s[0]:.3f}", "capsule": f"{s[0]:.3f} {s[1]:.3f}", "cylinder": f"{s[0]:.3f} {s[1]:.3f}"}.get(
            kind, f"{s[0]:.3f} {s[1]:.3f} {s[2]:.3f}"
        )

    def pose() -> str:
        p = rng.uniform(-2, 2, 3) + [0, 0, 1.5]
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        return f'pos="{p[0]:.3f} {p[1]:.3f} {p[2]:.3f}" quat="{q[0]:.4f} {q[1]:.4f} {q[2]:.4f} {q[3]:.4f}"'

    static = "".join(f'<geom type="{k}" size="{size(k)}" {pose()} group="{rng.integers(0, 3)}"/>' for k in kinds)
    moving = "".join(
        f'<body {pose()}><freejoint/><geom type="{k}" size="{size(k)}"/></body>' for k in rng.choice(kinds, 4)
    )
    return f"""<mujoco>
  <asset>
    <hfield name="terrain" nrow="{n}" ncol="{n}" size="3 3 0.6 0.1" elevation="{elevation}"/>
    <mesh name="rock" vertex="{verts}"/>
  </asset>
  <worldbody>
    <geom type="plane" size="10 10 0.1" pos="0 0 -0.5"/>
    <geom type="hfield" hfield="terrain" pos="0 0 -0.4"/>
    <geom type="mesh" mesh="rock" {pose()}/>
    <body {pose()}><freejoint/><geom type="mesh" mesh="rock"/></body>
    {static}{moving}
    <site name="lidar" pos="0.1 -0.2 1.3"/>
  </worldbody>
</mujoco>"""


def posed(model, seed: int):
    """A data with the free bodies moved off their initial poses."""
    data = mujoco.MjData(model)
    rng = np.random.default_rng(seed)
    data.qpos[:] += rng.normal(scale=0.2, size=model.nq)
    mujoco.mj_forward(model, data)
    return data


def check_rays(model, data, seed: int, nray: int = 1500) -> dict:
    """glint.rays from random origins against mj_ray: geoms equal, worst relative distance."""
    rng = np.random.default_rng(seed)
    center, extent = np.asarray(model.stat.center), float(model.stat.extent)
    pnt = center + rng.uniform(-0.5, 0.5, 3) * extent
    vec = rng.normal(size=(nray, 3)) * rng.uniform(0.5, 2.0, (nray, 1))  # not unit: units of |vec|
    groups = [1, 1, 1, 0, 1, 1]
    dist, geomid = glint.rays(model, data, pnt, vec, geomgroup=groups)
    ref = np.array([mj_ray(model, data, pnt, v, groups) for v in vec])
    same = geomid == ref[:, 1].astype(np.int32)
    hit = ref[:, 1] >= 0
    rel = np.abs(dist[hit] - ref[hit, 0]) / np.maximum(np.abs(ref[hit, 0]), 1e-12)
    return {"rays": nray, "geom_mismatch": int((~same).sum()), "hits": int(hit.sum()), "max_rel": float(rel.max(initial=0.0))}


def check_lidar(model, data, site: str) -> dict:
    """A lidar's scan against mj_ray along its own rays (its ranges are float32)."""
    lidar = glint.Lidar(model, site=site, preset="velodyne-vlp16")
    scan = lidar.scan(data)
    origin, dirs, bodyexclude, groups = lidar.rays()
    config = lidar.config
    ref = np.array([mj_ray(model, data, origin, d, groups, 1, bodyexclude) for d in dirs])
    inside = (ref[:, 0] >= config["min_range"]) & (ref[:, 0] < config["max_range"]) & (ref[:, 1] >= 0)
    want_geom = np.where(inside, ref[:, 1], -1).astype(np.int32)
    want_range = np.where(inside, ref[:, 0], -1.0)
    got_range = scan.ranges[0].astype(np.float64)
    rel = np.abs(got_range - want_range)[inside] / ref[inside, 0]
    return {
        "beams": int(len(dirs)),
        "geom_mismatch": int((scan.geomid[0] != want_geom).sum()),
        "hits": int(inside.sum()),
        "max_rel": float(rel.max(initial=0.0)),
    }


def check_camera(model, data, camera, width: int = 64, height: int = 48) -> dict:
    """glint.Renderer's depth and segmentation against mj_ray along each pixel's ray, on the
    pixels whose geom is opaque (transparent geoms write no depth, as in MuJoCo). Where two
    surfaces coincide (a pool's water level with its rim), MuJoCo's renderer shows the one
    drawn later and mj_ray the first in model order: such a pixel is counted apart. So are the
    pixels of what only the renderer draws (skins and cloth, which mj_ray does not see) and of
    geoms only mj_ray sees (alpha 0 but a visible material: MuJoCo's renderer draws the geom's
    own colour, mj_ray reads the material's)."""
    renderer = glint.Renderer(model, height=height, width=width)
    renderer.update_scene(data, camera=camera)
    renderer.enable_depth_rendering()
    depth = renderer.render()
    renderer.enable_segmentation_rendering()
    seg = renderer.render()
    origins, dirs, axis = renderer.pixel_rays()
    far = float(model.vis.map.zfar * model.stat.extent)
    groups = [1, 1, 1, 0, 0, 0]
    seg_mismatch = coincident = apart = depth_checked = 0
    worst = 0.0
    for r in range(height):
        for c in range(width):
            t, g = mj_ray(model, data, origins[r, c], dirs[r, c], groups)
            if seg[r, c, 1] in (9, 11) or (g >= 0 and model.geom_rgba[g, 3] == 0):
                apart += 1
                continue
            want = (g, 5) if g >= 0 else (-1, -1)
            if tuple(seg[r, c]) != want:
                same_depth = g >= 0 and abs(float(depth[r, c]) - t * float(dirs[r, c] @ axis)) <= 1e-6 * t
                coincident += same_depth
                seg_mismatch += not same_depth
            alpha = model.geom_rgba[g, 3] if g >= 0 else 1.0
            if g >= 0 and model.geom_matid[g] >= 0:
                alpha = model.mat_rgba[model.geom_matid[g], 3]
            if g >= 0 and alpha >= 1.0 and t * float(dirs[r, c] @ axis) < far:
                want_depth = t * float(dirs[r, c] @ axis)
                worst = max(worst, abs(float(depth[r, c]) - want_depth) / want_depth)
                depth_checked += 1
    return {
        "pixels": width * height,
        "seg_mismatch": int(seg_mismatch),
        "coincident": int(coincident),
        "skins_or_invisible": int(apart),
        "depth_checked": depth_checked,
        "max_rel": worst,
    }


def run(scenes: list[str], random: int) -> dict:
    out = {"mujoco": mujoco.__version__, "scenes": {}}
    models = [(Path(s).name, mujoco.MjModel.from_xml_path(s)) for s in scenes]
    models += [(f"random{k}", mujoco.MjModel.from_xml_string(random_scene(k))) for k in range(random)]
    for k, (name, model) in enumerate(models):
        data = posed(model, k)
        figures = {"rays": check_rays(model, data, k)}
        site = next((mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SITE, i) for i in range(model.nsite)), None)
        if site:
            figures["lidar"] = check_lidar(model, data, site)
        figures["camera"] = check_camera(model, data, 0 if model.ncam else -1)
        out["scenes"][name] = figures
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    random = 0
    if "--random" in args:
        i = args.index("--random")
        random = int(args[i + 1])
        del args[i : i + 2]
    print(json.dumps(run(args, random)))
