"""A lidar scan as a numpy point cloud in the sensor frame, saved as .npy.

    python examples/python/point_cloud.py [--steps N] [--out out/point_cloud.npy] [--manifest M]

Steps the scene's first lidar through one revolution (or `--steps` ticks), reads the newest
range of every beam (`sim.lidars[0].scan()`, a (nworld, beams) float32 array, -1 for no return)
and turns each return into a point along its beam: the beam's sensor-frame azimuth and
elevation (`beam_angles()`) give the unit direction, times the range. Saves an (N, 3) float32
array of the returns of world 0 and prints how many there are.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import glint

HERE = Path(__file__).resolve().parent


def points(ranges: np.ndarray, azimuth: np.ndarray, elevation: np.ndarray) -> np.ndarray:
    """Sensor-frame points (N, 3) of the beams with a return (range >= 0)."""
    az, el = azimuth.astype(np.float64), elevation.astype(np.float64)
    directions = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=1)
    hit = ranges >= 0
    return (directions[hit] * ranges[hit, None]).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="lidar ticks to step (default: one revolution)")
    parser.add_argument("--out", default="out/point_cloud.npy", help="where to save the points (.npy)")
    parser.add_argument("--manifest", default=str(HERE.parent / "showroom" / "showroom.toml"), help="scene manifest")
    args = parser.parse_args()

    sim = glint.Simulation.from_manifest(args.manifest)
    sim.lidar_live = True
    lidar = sim.lidars[0]
    config = lidar.config
    steps = args.steps
    if steps is None:
        hz = config.get("rotation_hz", 0.0)
        steps = 1 if hz <= 0 else math.ceil(1.0 / (hz * sim.dt) - 1e-9)
    for _ in range(steps):
        sim.step()  # the manifest's controller drives (zero, waypoints, ...)
    ranges = lidar.scan().ranges[0]
    azimuth, elevation = lidar.beam_angles()
    cloud = points(ranges, azimuth, elevation)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, cloud)
    radius = np.linalg.norm(cloud, axis=1)
    print(
        f"{lidar.name}: {lidar.beam_count} beams ({config['channels']} x {config['azimuth_bins']}), {steps} ticks of "
        f"{sim.dt * 1000:.0f} ms"
    )
    print(f"{len(cloud)} points saved to {out} (sensor frame, metres; {radius.min():.2f} to {radius.max():.2f} m away)")


if __name__ == "__main__":
    main()
