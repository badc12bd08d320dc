"""Renders MJCF files with MuJoCo's classic OpenGL renderer (``mujoco.Renderer``), for
``glint lights report`` and ``glint bench render``. Reads a JSON list of jobs on standard
input, each ``{"mjcf": path, "camera": name, "width": W, "height": H, "out": path}`` and
optionally ``"frames": N`` (then the render is timed: one warm-up frame, then N frames of the
same scene, ``update_scene`` and ``render`` each time, as a loop that draws a moving scene
would), writes each image's raw RGB bytes (rows top to bottom) to ``out``, and prints one JSON
line with MuJoCo's version and each job's seconds per frame (null when not timed).
The scene options are MuJoCo's defaults but for the rangefinder rays (``mjVIS_RANGEFINDER``),
a debug overlay of sensor readings that glint's cameras, which show the scene, do not draw.
Headless machines render on the CPU with ``MUJOCO_GL=osmesa`` (Debian's libosmesa6)."""

import json
import sys
import time


def main() -> int:
    jobs = json.load(sys.stdin)
    import mujoco

    timings = []
    options = mujoco.MjvOption()
    options.flags[mujoco.mjtVisFlag.mjVIS_RANGEFINDER] = False
    for job in jobs:
        model = mujoco.MjModel.from_xml_path(job["mjcf"])
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, job["width"])
        model.vis.global_.offheight = max(model.vis.global_.offheight, job["height"])
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        renderer = mujoco.Renderer(model, job["height"], job["width"])
        try:
            renderer.update_scene(data, camera=job["camera"], scene_option=options)
            image = renderer.render()
            frames = int(job.get("frames", 0))
            if frames > 0:
                t0 = time.perf_counter()
                for _ in range(frames):
                    renderer.update_scene(data, camera=job["camera"], scene_option=options)
                    image = renderer.render()
                timings.append((time.perf_counter() - t0) / frames)
            else:
                timings.append(None)
        finally:
            renderer.close()
        with open(job["out"], "wb") as f:
            f.write(image.tobytes())
    print(json.dumps({"mujoco": mujoco.__version__, "seconds_per_frame": timings}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
