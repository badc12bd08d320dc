"""glint's sensors in a plain `mujoco` program: the robot, the loop and the physics are yours.

    python examples/python/own_mujoco_loop.py [--mjcf examples/showroom/showroom.xml] [--steps 200]

Loads an MJCF with `mujoco`, steps it with random controls, and every 10 steps scans with an
Ouster OS1-64 on the model's `lidar` site (`glint.Lidar`), renders the first camera (or
MuJoCo's free camera) with `glint.Renderer`, and casts a fan of rays with `glint.rays`. Saves
the last colour image and the last point cloud (world frame, .npy) into --out.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mujoco
import numpy as np

import glint

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mjcf", default=str(HERE.parent / "showroom" / "showroom.xml"))
    parser.add_argument("--site", default="lidar")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--out", default="out/own_mujoco_loop")
    args = parser.parse_args()

    model = mujoco.MjModel.from_xml_path(args.mjcf)
    data = mujoco.MjData(model)
    lidar = glint.Lidar(model, site=args.site, preset="ouster-os1-64")
    renderer = glint.Renderer(model, height=240, width=320)
    rng = np.random.default_rng(0)
    low, high = model.actuator_ctrlrange.T if model.nu else (np.zeros(0), np.zeros(0))

    scans, scan = 0, None
    for step in range(args.steps):
        data.ctrl[:] = rng.uniform(low, high)
        mujoco.mj_step(model, data)
        if step % 10 == 9:
            scan = lidar.scan(data)
            scans += 1
    if scan is None:
        scan = lidar.scan(data)
        scans += 1
    renderer.update_scene(data, camera=0 if model.ncam else -1)
    image = renderer.render()

    origin, directions, _, _ = lidar.rays()
    ranges = scan.ranges[0]
    hit = ranges >= 0
    cloud = (np.asarray(origin) + directions[hit] * ranges[hit, None]).astype(np.float32)
    fan = np.stack([np.cos(np.linspace(0, 2 * np.pi, 36)), np.sin(np.linspace(0, 2 * np.pi, 36)), np.zeros(36)], 1)
    dist, geomid = glint.rays(model, data, np.asarray(origin), fan)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "cloud.npy", cloud)
    np.save(out / "image.npy", image)
    print(f"{args.steps} mujoco steps, {scans} scans of {lidar.beam_count} beams; last: {hit.sum()} returns")
    print(f"image {image.shape[1]}x{image.shape[0]}, mean {image.mean():.1f}; fan: {int((geomid >= 0).sum())} of 36 rays hit")
    print(f"saved {out / 'cloud.npy'} and {out / 'image.npy'}")


if __name__ == "__main__":
    main()
