"""Renders MJCF files with MuJoCo's classic OpenGL renderer (``mujoco.Renderer``), for
``glint lights report``. Reads a JSON list of jobs on standard input, each
``{"mjcf": path, "camera": name, "width": W, "height": H, "out": path}``, writes each image's
raw RGB bytes (rows top to bottom) to ``out``, and prints one JSON line with MuJoCo's version.
Headless machines render on the CPU with ``MUJOCO_GL=osmesa`` (Debian's libosmesa6)."""

import json
import sys


def main() -> int:
    jobs = json.load(sys.stdin)
    import mujoco

    for job in jobs:
        model = mujoco.MjModel.from_xml_path(job["mjcf"])
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, job["width"])
        model.vis.global_.offheight = max(model.vis.global_.offheight, job["height"])
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        renderer = mujoco.Renderer(model, job["height"], job["width"])
        try:
            renderer.update_scene(data, camera=job["camera"])
            image = renderer.render()
        finally:
            renderer.close()
        with open(job["out"], "wb") as f:
            f.write(image.tobytes())
    print(json.dumps({"mujoco": mujoco.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
