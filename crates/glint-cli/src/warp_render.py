"""Times MuJoCo Warp's batch renderer (``mujoco_warp.render``) on Warp's CPU device, for
``glint bench render``. Reads one JSON job on standard input, ``{"mjcf": path, "camera":
name, "width": W, "height": H, "worlds": N, "shadows": bool, "frames": F}``: the camera of the
MJCF's own configuration (``qpos0``) drawn in N worlds at W x H, RGB only, textures on, shadows
as asked, MuJoCo Warp's defaults otherwise; one warm-up frame (which compiles the kernels,
cached under ``GLINT_WARP_CACHE`` when set), then F frames, each a BVH refit and a render, as
a loop that draws a moving scene would. Prints one JSON line with the versions and the seconds
per frame (all worlds). Exits with status 3 and a one-line reason when ``mujoco_warp`` cannot
be imported."""

import json
import os
import sys
import time


def main() -> int:
    job = json.load(sys.stdin)
    try:
        import mujoco
        import mujoco_warp as mjw
        import warp as wp
    except ImportError as e:
        print(f"cannot import MuJoCo Warp: {e}", file=sys.stderr)
        return 3
    wp.config.quiet = True
    if os.environ.get("GLINT_WARP_CACHE"):
        wp.config.kernel_cache_dir = os.environ["GLINT_WARP_CACHE"]
    with wp.ScopedDevice("cpu"):
        mjm = mujoco.MjModel.from_xml_path(job["mjcf"])
        mjd = mujoco.MjData(mjm)
        mujoco.mj_forward(mjm, mjd)
        camera = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_CAMERA, job["camera"])
        if camera < 0:
            print(f"no camera named '{job['camera']}'", file=sys.stderr)
            return 2
        nworld = int(job["worlds"])
        m, d = mjw.put_model(mjm), mjw.put_data(mjm, mjd, nworld=nworld)
        rc = mjw.create_render_context(
            mjm,
            nworld=nworld,
            cam_res=(int(job["width"]), int(job["height"])),
            render_rgb=True,
            render_depth=False,
            render_seg=False,
            use_shadows=bool(job["shadows"]),
            cam_active=[camera],
        )
        mjw.refit_bvh(m, d, rc)
        mjw.render(m, d, rc)
        wp.synchronize()
        frames = int(job["frames"])
        t0 = time.perf_counter()
        for _ in range(frames):
            mjw.refit_bvh(m, d, rc)
            mjw.render(m, d, rc)
        wp.synchronize()
        seconds = (time.perf_counter() - t0) / frames
    version = getattr(mjw, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("mujoco-warp")
    print(json.dumps({"mujoco_warp": version, "warp": wp.__version__, "seconds_per_frame": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
