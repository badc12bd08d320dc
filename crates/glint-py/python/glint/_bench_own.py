"""``python -m glint.bench byo``: glint's sensors on your own model and data against what a
MuJoCo user runs today, on the same model, data and rays, one thread each, in one process.

- ``glint.Lidar.scan`` against ``mujoco.mj_multiRay`` casting the lidar's own rays, and
  against MuJoCo-LiDAR's CPU backend (``mujoco_lidar.MjLidarWrapper(..., backend="cpu")``,
  when installed) given the same beam angles;
- ``glint.Renderer`` (update_scene + render) against ``mujoco.Renderer`` (MuJoCo's classic
  OpenGL renderer; headless through ``MUJOCO_GL=osmesa`` or ``egl``), RGB at the same size;
- the overhead of reading your data against the same cast through glint's own
  ``Simulation`` (``Simulation.rays`` with the lidar's rays): ``glint.rays`` and
  ``glint.Lidar.scan`` over it.

Each figure is the median of ``--repeats`` timed calls, the contenders' calls alternating;
ratios are medians of per-repeat ratios. Targets: each speed-up >= 10x, overhead <= 10 %.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Callable, Optional

import numpy as np

TARGET_SPEEDUP = 10.0
TARGET_OVERHEAD = 0.10


def _timed(call: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def _race(ours: Callable[[], object], theirs: Callable[[], object], repeats: int) -> dict:
    """Median seconds of each, and the median of per-repeat ratios theirs / ours."""
    ours(), theirs()  # warm-up
    a, b = [], []
    for _ in range(repeats):
        a.append(_timed(ours))
        b.append(_timed(theirs))
    return {
        "glint_s": statistics.median(a),
        "reference_s": statistics.median(b),
        "speedup": statistics.median(y / x for x, y in zip(a, b)),
    }


def _default_mjcf() -> str:
    """The checkout's showroom (beside this module, or under the working directory)."""
    from glint.bench import _default_manifest

    showroom = os.path.join(os.path.dirname(os.path.dirname(_default_manifest())), "showroom", "showroom.xml")
    if not os.path.isfile(showroom):
        raise ValueError(
            f"no --mjcf given, and the showroom of a glint checkout is not here ({showroom}): pass --mjcf YOUR.xml "
            "(a model without the lidar's site gets one above its centre)"
        )
    return showroom


def _with_site(mujoco, model, mjcf: str, site: str):
    """`model`, or, when it has no site `site` (a robot model of someone else's), the model
    with one added on the world body half an extent above its centre (through `mjSpec`)."""
    if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site) >= 0:
        return model
    spec = mujoco.MjSpec.from_file(mjcf)
    above = np.asarray(model.stat.center) + [0.0, 0.0, 0.5 * float(model.stat.extent)]
    spec.worldbody.add_site(name=site, pos=above)
    return spec.compile()


def bench_byo(
    mjcf: Optional[str] = None,
    site: str = "lidar",
    preset: str = "ouster-os1-64",
    camera: Optional[str] = None,
    width: int = 640,
    height: int = 480,
    repeats: int = 7,
) -> dict:
    """The figures as a dict (see the module's docs). Run with ``RAYON_NUM_THREADS=1`` for one
    thread (``main`` sets it)."""
    import mujoco

    import glint

    mjcf = mjcf or _default_mjcf()
    model = _with_site(mujoco, mujoco.MjModel.from_xml_path(mjcf), mjcf, site)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    lidar = glint.Lidar(model, site=site, preset=preset)
    lidar.scan(data)
    origin, dirs, bodyexclude, groups = lidar.rays()
    origin, nray = np.asarray(origin), len(dirs)
    groups_u8 = np.asarray(groups, np.uint8)
    max_range = float(lidar.config["max_range"])
    report: dict = {"mjcf": mjcf, "mujoco": mujoco.__version__, "beams": nray, "preset": preset,
                    "threads": os.environ.get("RAYON_NUM_THREADS", "all"), "repeats": repeats}

    geomid, dist = np.zeros(nray, np.int32), np.zeros(nray)
    flat = np.ascontiguousarray(dirs).ravel()

    def multiray():
        mujoco.mj_multiRay(model, data, origin, flat, groups_u8, 1, bodyexclude, geomid, dist, None, nray, max_range)

    scan = lambda: lidar.scan(data)  # noqa: E731
    report["scan_vs_mj_multiRay"] = _race(scan, multiray, repeats)
    hits = (dist >= 0) & (dist < max_range)
    got = lidar.scan(data)
    report["agreement"] = {"geom_mismatch": int((got.geomid[0] != np.where(hits, geomid, -1)).sum())}

    try:
        from mujoco_lidar import MjLidarWrapper
    except ImportError as e:
        report["scan_vs_mujoco_lidar_cpu"] = f"skipped: mujoco-lidar is not installed ({e})"
    else:
        sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
        local = np.asarray(dirs) @ data.site_xmat[sid].reshape(3, 3)  # rows: R^T d
        theta, phi = np.arctan2(local[:, 1], local[:, 0]), np.arcsin(np.clip(local[:, 2], -1, 1))
        wrapper = MjLidarWrapper(
            model, site, backend="cpu", cutoff_dist=max_range, args={"geomgroup": groups_u8, "bodyexclude": bodyexclude}
        )
        report["scan_vs_mujoco_lidar_cpu"] = _race(scan, lambda: wrapper.trace_rays(data, theta, phi), repeats)

    cam = camera if camera is not None else (0 if model.ncam else -1)
    ours = glint.Renderer(model, height, width)

    def glint_render():
        ours.update_scene(data, camera=cam)
        return ours.render()

    try:
        theirs = mujoco.Renderer(model, height, width)
    except Exception as e:  # noqa: BLE001 - no OpenGL: say why
        report["render_vs_mujoco_renderer"] = f"skipped: mujoco.Renderer cannot start ({e}); set MUJOCO_GL=osmesa or egl"
    else:

        def mujoco_render():
            theirs.update_scene(data, camera=cam)
            return theirs.render()

        report["render_vs_mujoco_renderer"] = {"size": [width, height], "camera": cam, **_race(glint_render, mujoco_render, repeats)}
        theirs.close()

    sim = glint.Simulation.from_xml(mjcf)
    through_sim = lambda: sim.rays(origin, dirs)  # noqa: E731
    rays_race = _race(through_sim, lambda: glint.rays(model, data, origin, dirs), repeats)
    scan_race = _race(through_sim, scan, repeats)
    report["overhead"] = {
        "rays_over_simulation": rays_race["speedup"] - 1.0,
        "scan_over_simulation": scan_race["speedup"] - 1.0,
        "simulation_rays_s": rays_race["glint_s"],
    }
    report["targets"] = {"speedup": TARGET_SPEEDUP, "overhead": TARGET_OVERHEAD}
    return report


def print_report(r: dict) -> None:
    print(f"glint bench byo: {r['mjcf']} (mujoco {r['mujoco']}), {r['preset']} {r['beams']} beams, "
          f"threads {r['threads']}, median of {r['repeats']}")

    def line(label: str, figures) -> None:
        if isinstance(figures, str):
            print(f"  {label:44}{figures}")
            return
        print(f"  {label:44}{figures['glint_s'] * 1e3:9.2f} ms vs {figures['reference_s'] * 1e3:9.2f} ms   "
              f"{figures['speedup']:7.2f}x  (target >= {TARGET_SPEEDUP:g}x)")

    line("glint.Lidar.scan vs mj_multiRay", r["scan_vs_mj_multiRay"])
    line("glint.Lidar.scan vs MuJoCo-LiDAR (cpu)", r["scan_vs_mujoco_lidar_cpu"])
    line("glint.Renderer vs mujoco.Renderer", r["render_vs_mujoco_renderer"])
    o = r["overhead"]
    print(f"  {'overhead over Simulation.rays: glint.rays':44}{o['rays_over_simulation'] * 100:+8.1f} %   "
          f"(target <= {TARGET_OVERHEAD * 100:g} %)")
    print(f"  {'overhead over Simulation.rays: Lidar.scan':44}{o['scan_over_simulation'] * 100:+8.1f} %")
    print(f"  agreement with mj_multiRay: {r['agreement']['geom_mismatch']} beams on another geom")
