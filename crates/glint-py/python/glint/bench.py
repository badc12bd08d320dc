"""Benchmarks of glint's Python module: ``python -m glint.bench gym [--manifest M] [--steps N]
[--envs 16] [--repeats R] [--json]`` and ``python -m glint.bench byo [--mjcf F] [--json]``
(glint's sensors on your own model and data: :mod:`glint._bench_own`).

``gym`` times environment steps per second (worlds × steps / wall seconds) of
:class:`glint.gym.VectorEnv` against a reference environment written with the ``mujoco``
Python package (:mod:`glint._reference`: ``num_envs`` ``MjData`` over the same MJCF, the same
physics steps per environment step, the same lidar rays cast with ``mujoco.mj_multiRay`` from
the sensor site's pose, the same observation), in one process, with the same actions: a new
batch of uniform random actions within the actuators' ranges each step. The default manifest
is ``examples/python/showroom_vlp16.toml``: the showroom with a VLP-16 (28 800 beams, a fifth
of them cast per step) in its ``lidar_ranges`` observation. Each rate is the median of
``--repeats`` timed runs of ``--steps`` steps, each from a reset to the same initial state,
the environments' runs alternating, after a warm-up in which the two environments'
observations are compared (reported as ``agreement``). The speed-up is the median of each
repeat's ratio between the glint run and the reference run right after it, so that a shared
machine's drifting load weighs on both sides of each ratio alike.

When the compiled module has ``VectorLoop`` (the same vector-environment loop driven from
Rust), each repeat then runs the glint environment again in turns of ten steps with it, with
the same actions, and the report adds its median rate and the median of each repeat's ratio
of the Python-driven loop's time to the Rust-driven one's (``python_over_rust``). The
speed-up is taken from the environment's run on its own: a second simulation taking turns
with it evicts its data from the caches at every turn.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

__all__ = ["bench_gym", "main"]

TARGET_SPEEDUP = 10.0
TARGET_PYTHON_OVER_RUST = 1.1


def _default_manifest(example: str = "python/showroom_vlp16.toml") -> str:
    """examples/<example> of the checkout this module sits in, else of the working
    directory."""
    here = Path(__file__).resolve()
    for root in [*here.parents, Path.cwd()]:
        candidate = root / "examples" / example
        if candidate.is_file():
            return str(candidate)
    return str(Path("examples") / example)


def _rate(step, actions: list[np.ndarray], envs: int) -> float:
    """Environment steps per second of one call of `step(a)` per action batch `a`."""
    t0 = time.perf_counter()
    for a in actions:
        step(a)
    return envs * len(actions) / (time.perf_counter() - t0)


def _rust_loop(manifest: str, envs: int) -> tuple[Optional[object], str]:
    """The Rust-driven loop (``glint._glint.VectorLoop``), or None and why not."""
    import glint

    cls = getattr(glint._glint, "VectorLoop", None)
    if cls is None:
        return None, "unavailable: glint._glint has no VectorLoop"
    return cls(manifest, envs), "glint._glint.VectorLoop"


# Steps per turn when the Python-driven and Rust-driven loops take turns.
_TURN = 10


def _python_and_rust(step, loop, actions: list[np.ndarray]) -> tuple[float, float]:
    """Seconds of `step(a)` over `actions`, and of the Rust-driven loop over the same actions,
    the two taking turns of a few steps each."""
    python_s, rust_s = 0.0, 0.0
    for start in range(0, len(actions), _TURN):
        turn = actions[start : start + _TURN]
        t0 = time.perf_counter()
        for a in turn:
            step(a)
        python_s += time.perf_counter() - t0
        rust_s += loop.run(len(turn), np.stack(turn))
    return python_s, rust_s


def bench_gym(manifest: Optional[str] = None, steps: int = 100, envs: int = 16, repeats: int = 5, warmup: int = 10) -> dict:
    """Runs the ``gym`` benchmark and returns its report as a dict (see the module docstring)."""
    import gymnasium

    import glint
    import glint.gym
    from glint._reference import ReferenceVectorEnv

    if steps < 1 or envs < 1 or repeats < 1:
        raise ValueError("--steps, --envs and --repeats must be 1 or more")
    manifest = os.fspath(manifest or _default_manifest())
    env = glint.gym.VectorEnv(manifest, num_envs=envs, seed=0)
    ref = ReferenceVectorEnv.from_glint(manifest, envs)
    beams = {c.key: c.length for c in env._core.components if c.sensor is not None}

    rng = np.random.default_rng(0)
    space = env.single_action_space
    assert isinstance(space, gymnasium.spaces.Box)
    low, high = space.low, space.high
    low = np.where(np.isfinite(low), low, -1.0)
    high = np.where(np.isfinite(high), high, 1.0)
    # Uniform random actions, a new batch each step (as the Rust-driven loop draws them), the
    # same for both environments.
    actions = [rng.uniform(low, high, size=(envs, env.sim.nu)) for _ in range(steps)]

    # Warm-up, both from their initial state with the same actions: compare observations.
    env.reset(seed=0)
    ref.reset()
    mismatches, max_range_diff, max_joint_diff = 0, 0.0, 0.0
    for k in range(max(warmup, 1)):
        a, _, _, _, _ = env.step(actions[k % steps])
        b, _, _, _ = ref.step(actions[k % steps])
        for key, x in a.items():
            y = b[key]
            if key.startswith("lidar_ranges"):
                hx, hy = x != -1, y != -1
                mismatches += int(np.count_nonzero(hx != hy))
                both = hx & hy
                if both.any():
                    max_range_diff = max(max_range_diff, float(np.abs(x[both] - y[both]).max()))
            else:
                max_joint_diff = max(max_joint_diff, float(np.abs(x - y).max()))

    # Every run starts a new episode from the same state (where the robots drive changes what
    # the rays cost). Each repeat runs the glint environment alone, then the reference, and
    # takes their ratio, so that the load of a shared machine, which drifts over seconds,
    # weighs on both sides of a ratio alike; then the same glint loop driven from Python and
    # from Rust take turns of a few steps, for their ratio. The medians of the per-repeat
    # ratios are reported.
    loop, rust_note = _rust_loop(manifest, envs)
    glint_rates, ref_rates, rust_rates = [], [], []
    speedups, python_over_rust = [], []
    for _ in range(repeats):
        env.reset(seed=0)
        glint_rates.append(_rate(env.step, actions, envs))
        ref.reset()
        ref_rates.append(_rate(ref.step, actions, envs))
        speedups.append(glint_rates[-1] / ref_rates[-1])
        if loop is not None:
            env.reset(seed=0)
            loop.reset()
            python_s, rust_s = _python_and_rust(env.step, loop, actions)
            rust_rates.append(envs * steps / rust_s)
            python_over_rust.append(python_s / rust_s)
    glint_rate, ref_rate = statistics.median(glint_rates), statistics.median(ref_rates)
    rust_rate = statistics.median(rust_rates) if rust_rates else None
    return {
        "bench": "gym",
        "manifest": manifest,
        "envs": envs,
        "steps": steps,
        "repeats": repeats,
        "physics_steps_per_env_step": ref.nsub,
        "lidar_beams": beams,
        "rays_per_env_step": int(ref.beams * min(ref.lidar.rotation_hz * ref.dt, 1.0))
        if ref.lidar.rotation_hz > 0
        else ref.beams,
        "glint_env_steps_per_s": glint_rate,
        "reference_env_steps_per_s": ref_rate,
        "speedup": statistics.median(speedups),
        "target_speedup": TARGET_SPEEDUP,
        "rust_env_steps_per_s": rust_rate,
        "python_over_rust": statistics.median(python_over_rust) if python_over_rust else None,
        "target_python_over_rust": TARGET_PYTHON_OVER_RUST,
        "rust_loop": rust_note,
        "agreement": {
            "steps": max(warmup, 1),
            "lidar_hit_mismatches": mismatches,
            "max_range_diff_m": max_range_diff,
            "max_joint_diff": max_joint_diff,
        },
        "threads": os.cpu_count(),
    }


def _print_report(r: dict) -> None:
    beams = ", ".join(f"{k} {v}" for k, v in r["lidar_beams"].items())
    print(
        f"glint bench gym: {r['manifest']}\n"
        f"  {r['envs']} worlds, {r['physics_steps_per_env_step']} physics steps and {r['rays_per_env_step']} rays "
        f"per world per step ({beams} beams); median of {r['repeats']} runs of {r['steps']} steps\n"
        f"  (ratios: the median of each repeat's ratio between runs side by side)"
    )
    print(f"  {'':46}env steps/s")
    print(f"  {'glint.gym.VectorEnv':46}{r['glint_env_steps_per_s']:11.0f}")
    print(f"  {'mujoco + mj_multiRay reference (Python)':46}{r['reference_env_steps_per_s']:11.0f}")
    print(f"  {'speed-up over the reference':46}{r['speedup']:10.2f}x   (target >= {r['target_speedup']:g}x)")
    if r["rust_env_steps_per_s"] is None:
        print(f"  {'same loop driven from Rust':46}{r['rust_loop']}")
    else:
        print(f"  {'same loop driven from Rust':46}{r['rust_env_steps_per_s']:11.0f}")
        print(
            f"  {'driven from Python / driven from Rust (time)':46}{r['python_over_rust']:10.2f}x   "
            f"(target <= {r['target_python_over_rust']:g}x)"
        )
    a = r["agreement"]
    print(
        f"  agreement over {a['steps']} steps: {a['lidar_hit_mismatches']} lidar hit/miss mismatches, "
        f"max |range difference| {a['max_range_diff_m']:.3g} m, max |joint difference| {a['max_joint_diff']:.3g}"
    )


def main(argv: Optional[list[str]] = None) -> int:
    """The command line (``python -m glint.bench``)."""
    parser = argparse.ArgumentParser(prog="python -m glint.bench", description="Benchmarks of glint's Python module.")
    sub = parser.add_subparsers(dest="command", required=True)
    gym = sub.add_parser(
        "gym",
        help="glint.gym.VectorEnv against a mujoco + mj_multiRay reference environment",
        description=(
            "Environment steps per second of glint.gym.VectorEnv against a reference environment "
            "written with the mujoco package (same physics, same lidar rays, same observation)."
        ),
    )
    gym.add_argument("--manifest", default=None, help="scene manifest (default: examples/python/showroom_vlp16.toml)")
    gym.add_argument("--steps", type=int, default=100, help="environment steps per timed run (default 100)")
    gym.add_argument("--envs", type=int, default=16, help="worlds (default 16)")
    gym.add_argument("--repeats", type=int, default=5, help="timed runs; the median is reported (default 5)")
    gym.add_argument("--warmup", type=int, default=10, help="warm-up steps, compared between the two (default 10)")
    gym.add_argument("--json", action="store_true", help="print one JSON object")
    byo = sub.add_parser(
        "byo",
        help="glint.Lidar / glint.Renderer / glint.rays on your model against mj_multiRay, MuJoCo-LiDAR, mujoco.Renderer",
        description="glint's sensors on a mujoco model and data against mujoco's own calls, one thread each.",
    )
    byo.add_argument("--mjcf", default=None, help="MJCF file (default: examples/showroom/showroom.xml)")
    byo.add_argument("--site", default="lidar", help="the lidar's site (default lidar)")
    byo.add_argument("--preset", default="ouster-os1-64", help="scan preset (default ouster-os1-64)")
    byo.add_argument("--camera", default=None, help="camera name (default: the model's first, else the free camera)")
    byo.add_argument("--width", type=int, default=640)
    byo.add_argument("--height", type=int, default=480)
    byo.add_argument("--repeats", type=int, default=7, help="timed calls each; the median is reported (default 7)")
    byo.add_argument("--threads", type=int, default=1, help="glint's threads (default 1, as MuJoCo's calls)")
    byo.add_argument("--json", action="store_true", help="print one JSON object")
    dist = sub.add_parser(
        "distributed",
        help="glint.distributed on 1 and 2 Ray workers against one plain glint run",
        description="Episodes per second of glint.distributed.generate on 1 and 2 local Ray workers against glint run.",
    )
    dist.add_argument("--manifest", default=None, help="scene manifest (default: examples/showroom/showroom.toml)")
    dist.add_argument("--episodes", type=int, default=8, help="episodes per run (default 8)")
    dist.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per episode (default 10)")
    dist.add_argument("--episodes-per-task", type=int, default=2, help="episodes per Ray task (default 2)")
    dist.add_argument("--repeats", type=int, default=3, help="rounds; each figure is their median (default 3)")
    dist.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    try:
        if args.command == "distributed":
            from glint._bench_distributed import bench_distributed
            from glint._bench_distributed import print_report as print_distributed

            manifest = args.manifest or _default_manifest("showroom/showroom.toml")
            report = bench_distributed(manifest, args.episodes, args.seconds,
                                       episodes_per_task=args.episodes_per_task, repeats=args.repeats)
            printer = print_distributed
        elif args.command == "byo":
            # Before glint's first parallel call, which sizes its thread pool.
            os.environ["RAYON_NUM_THREADS"] = str(args.threads)
            from glint._bench_own import bench_byo, print_report

            report = bench_byo(args.mjcf, args.site, args.preset, args.camera, args.width, args.height, args.repeats)
            printer = print_report
        else:
            report = bench_gym(args.manifest, steps=args.steps, envs=args.envs, repeats=args.repeats, warmup=args.warmup)
            printer = _print_report
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report))
    else:
        printer(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
