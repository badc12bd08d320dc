"""A glint.gym.VectorEnv loop: 16 showroom worlds in one simulation, random actions, every
world's episodes reset on their own (Gymnasium's NEXT_STEP autoreset).

    python examples/python/vector_env.py [--steps 100] [--envs 16] [--seed 0] [--manifest M]

Prints the batched spaces, the episodes that ended, the mean reward and the rate in
environment steps per second.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import glint.gym

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="vector steps (default 100)")
    parser.add_argument("--envs", type=int, default=16, help="worlds (default 16)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the episodes and of the actions")
    parser.add_argument("--manifest", default=str(HERE / "showroom_vlp16.toml"), help="scene manifest")
    args = parser.parse_args()

    envs = glint.gym.VectorEnv(args.manifest, num_envs=args.envs)
    print(f"{envs.num_envs} worlds, autoreset {envs.metadata['autoreset_mode'].name}")
    for key, space in envs.observation_space.spaces.items():
        print(f"  obs[{key!r}]: {space.shape} {space.dtype}")
    print(f"  actions: {envs.action_space.shape} {envs.action_space.dtype}")
    envs.action_space.seed(args.seed)
    obs, info = envs.reset(seed=args.seed)
    total = np.zeros(envs.num_envs)
    ended = 0
    start = time.perf_counter()
    for _ in range(args.steps):
        obs, rewards, terminated, truncated, info = envs.step(envs.action_space.sample())
        total += rewards
        ended += int(np.count_nonzero(terminated | truncated))
    seconds = time.perf_counter() - start
    ranges = obs["lidar_ranges"]
    print(
        f"{args.steps} steps x {envs.num_envs} worlds in {seconds:.2f} s: "
        f"{args.steps * envs.num_envs / seconds:.0f} environment steps/s"
    )
    print(f"episodes ended: {ended}; mean return so far {total.mean():+.3f}; world times {info['time'].min():.2f} to {info['time'].max():.2f} s")
    print(f"last observation: lidar_ranges {ranges.shape} {ranges.dtype}, {np.count_nonzero(ranges >= 0)} returns")


if __name__ == "__main__":
    main()
