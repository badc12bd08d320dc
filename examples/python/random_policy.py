"""A random policy on the showroom through glint.gym.Env: one world, the robot driven by uniform
random velocity commands, observing its joints and its VLP-16's 28 800 ranges each step.

    python examples/python/random_policy.py [--steps 300] [--seed 0] [--manifest M]

Prints the observation space, then every episode's return and length and how it ended, and the
lidar's share of beams with a return at the last step.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import glint.gym

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="environment steps (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the episodes and of the policy")
    parser.add_argument("--manifest", default=str(HERE / "showroom_vlp16.toml"), help="scene manifest")
    args = parser.parse_args()

    env = glint.gym.Env(args.manifest)
    print(f"observation space: {env.observation_space}")
    print(f"action space: {env.action_space} ({', '.join(env.sim.actuator_names)})")
    env.action_space.seed(args.seed)
    obs, info = env.reset(seed=args.seed)
    episode, ret, length = 0, 0.0, 0
    for _ in range(args.steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        ret += reward
        length += 1
        if terminated or truncated:
            how = "reached the goal" if info["reached"] else ("truncated" if truncated else "terminated")
            print(f"episode {episode}: return {ret:+.3f} over {length} steps, {how}")
            episode, ret, length = episode + 1, 0.0, 0
            obs, info = env.reset()
    ranges = obs["lidar_ranges"]
    print(
        f"episode {episode} (running): return {ret:+.3f} over {length} steps, {info['distance']:.2f} m from the goal, "
        f"t = {info['time']:.2f} s"
    )
    print(f"last scan: {np.count_nonzero(ranges >= 0)} of {ranges.size} beams returned, nearest {ranges[ranges >= 0].min():.2f} m")
    print(f"{args.steps} random steps done")


if __name__ == "__main__":
    main()
