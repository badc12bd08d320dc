"""``python -m glint.bench distributed``: episodes per second of ``glint.distributed.generate``
on 1 and 2 Ray workers against one plain ``glint run``, in one run. Every ``glint run`` gets
one thread (``RAYON_NUM_THREADS=1``), so a worker is a core and the figures compare like with
like: scaling is 2 workers' rate over 1 worker's, Ray's overhead 1 worker's time over the
plain run's, less one. Starting the local Ray instance is not timed (a cluster starts once)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path


def bench_distributed(manifest: str, episodes: int, seconds: float, seed: int = 1) -> dict:
    import ray

    from glint.distributed import generate, glint_binary

    os.environ["RAYON_NUM_THREADS"] = "1"
    os.environ.setdefault("RAY_NODE_IP_ADDRESS", "127.0.0.1")
    glint = glint_binary()
    work = Path(tempfile.mkdtemp(prefix="glint-bench-distributed-"))
    try:
        started = time.perf_counter()
        proc = subprocess.run([glint, "run", manifest, "--episodes", str(episodes), "--seconds", str(seconds),
                               "--seed", str(seed), "--out", str(work / "plain")], capture_output=True, text=True)
        plain = time.perf_counter() - started
        if proc.returncode != 0:
            raise ValueError(f"glint run failed: {proc.stderr.strip()}")
        times = {}
        for workers in (1, 2):
            if ray.is_initialized():
                ray.shutdown()
            ray.init(num_cpus=workers, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
            started = time.perf_counter()
            report = generate(manifest, episodes, seed, work / f"ray{workers}", seconds=seconds, progress=False)
            times[workers] = time.perf_counter() - started
            if report.failed:
                raise ValueError(f"shards failed: {report.failed}")
        ray.shutdown()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "manifest": manifest, "episodes": episodes, "seconds_per_episode": seconds,
        "plain_episodes_per_s": episodes / plain,
        "ray_1_worker_episodes_per_s": episodes / times[1],
        "ray_2_workers_episodes_per_s": episodes / times[2],
        "scaling_2_over_1": times[1] / times[2],
        "ray_overhead": times[1] / plain - 1.0,
    }


def print_report(r: dict) -> None:
    print(f"{r['manifest']}: {r['episodes']} episodes of {r['seconds_per_episode']} s, one thread per glint run")
    print(f"  plain glint run        {r['plain_episodes_per_s']:.3f} episodes/s")
    print(f"  Ray, 1 worker          {r['ray_1_worker_episodes_per_s']:.3f} episodes/s "
          f"(overhead {100 * r['ray_overhead']:+.1f} %, target <= 10 %)")
    print(f"  Ray, 2 workers         {r['ray_2_workers_episodes_per_s']:.3f} episodes/s "
          f"(scaling {r['scaling_2_over_1']:.2f}x, target >= 1.8x)")
