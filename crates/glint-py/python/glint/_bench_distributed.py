"""``python -m glint.bench distributed``: episodes per second of ``glint.distributed.generate``
on 1 and 2 Ray workers against one plain ``glint run``, in one run. Every ``glint run`` gets
one thread (``RAYON_NUM_THREADS=1``), so a worker is a core and the figures compare like with
like: scaling is 2 workers' rate over 1 worker's, Ray's overhead 1 worker's time over the
plain run's, less one. As the machine's own reference, two plain runs at once share the same
episodes: what two cores give without Ray. A round times the plain run, the two plain runs,
1 worker and 2 workers in turn; the rates are the median times of ``repeats`` rounds, the
ratios the medians of each round's own ratios (a slow spell of the machine falls on one
round's runs alike).
Starting the local Ray instance and its worker processes is not timed (a cluster starts
once); everything a task does is (its ``glint run``, the shard's rename, the catalog)."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def bench_distributed(manifest: str, episodes: int, seconds: float, seed: int = 1, episodes_per_task: int = 2,
                      repeats: int = 3) -> dict:
    if episodes < 1 or repeats < 1 or episodes_per_task < 1 or episodes % episodes_per_task:
        raise ValueError(f"--episodes ({episodes}) must be a positive multiple of --episodes-per-task "
                         f"({episodes_per_task}), and --repeats ({repeats}) positive")
    os.environ["RAYON_NUM_THREADS"] = "1"
    os.environ.setdefault("RAY_NODE_IP_ADDRESS", "127.0.0.1")
    work = Path(tempfile.mkdtemp(prefix="glint-bench-distributed-"))
    if episodes % 2:
        raise ValueError(f"--episodes ({episodes}) must be even: two plain runs share them as the machine's reference")
    rounds: dict[str, list[float]] = {"plain": [], "pair": [], "1": [], "2": []}
    try:
        for r in range(repeats):
            rounds["plain"].append(_time_plain(manifest, episodes, seconds, seed, work / f"plain{r}"))
            rounds["pair"].append(_time_plain(manifest, episodes, seconds, seed, work / f"pair{r}", processes=2))
            for workers in (1, 2):
                rounds[str(workers)].append(_time_ray(manifest, episodes, seconds, seed, episodes_per_task, workers,
                                                      work / f"ray{workers}-{r}"))
            for d in work.iterdir():  # the disk between rounds is not what is measured
                shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    plain, one, two = (statistics.median(rounds[k]) for k in ("plain", "1", "2"))
    # The ratios per round, then their median: a round's three runs share the machine's
    # speed of the moment, which drifts by tens of per cent on a shared virtual machine.
    scaling = statistics.median(a / b for a, b in zip(rounds["1"], rounds["2"]))
    overhead = statistics.median(a / b for a, b in zip(rounds["1"], rounds["plain"])) - 1.0
    machine = statistics.median(a / b for a, b in zip(rounds["plain"], rounds["pair"]))
    ray_over_pair = statistics.median(a / b for a, b in zip(rounds["2"], rounds["pair"]))
    return {
        "manifest": manifest, "episodes": episodes, "seconds_per_episode": seconds,
        "episodes_per_task": episodes_per_task, "repeats": repeats,
        "plain_s": rounds["plain"], "two_plain_s": rounds["pair"], "ray_1_worker_s": rounds["1"],
        "ray_2_workers_s": rounds["2"],
        "plain_episodes_per_s": episodes / plain,
        "ray_1_worker_episodes_per_s": episodes / one,
        "ray_2_workers_episodes_per_s": episodes / two,
        "scaling_2_over_1": scaling,
        "ray_overhead": overhead,
        "machine_scaling": machine,
        "ray_2_workers_over_two_plain": ray_over_pair,
    }


def _time_plain(manifest: str, episodes: int, seconds: float, seed: int, out: Path, processes: int = 1) -> float:
    """Seconds for ``processes`` plain ``glint run`` processes at once sharing the episodes
    (two: what the machine's two cores give without Ray)."""
    from glint.distributed import glint_binary

    share = episodes // processes
    started = time.perf_counter()
    procs = [subprocess.Popen([glint_binary(), "run", manifest, "--episodes", str(share), "--first-episode",
                               str(k * share), "--seconds", str(seconds), "--seed", str(seed), "--out", str(out / str(k))],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for k in range(processes)]
    errors = [p.communicate()[1] for p in procs]
    elapsed = time.perf_counter() - started
    for p, err in zip(procs, errors):
        if p.returncode != 0:
            raise ValueError(f"glint run failed: {err.strip()}")
    return elapsed


def _time_ray(manifest: str, episodes: int, seconds: float, seed: int, per_task: int, workers: int,
              out: Path) -> float:
    import ray

    from glint.distributed import generate

    ray.init(num_cpus=workers, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        # Every worker process started and glint's package imported, as on a running cluster.
        @ray.remote(num_cpus=1)
        def warm() -> int:
            import glint.distributed  # noqa: F401

            time.sleep(0.2)  # held, so that each worker gets one
            return os.getpid()

        ray.get([warm.remote() for _ in range(workers)])
        started = time.perf_counter()
        report = generate(manifest, episodes, seed, out, episodes_per_task=per_task, seconds=seconds, progress=False)
        elapsed = time.perf_counter() - started
    finally:
        ray.shutdown()
    if report.failed:
        raise ValueError(f"shards failed: {report.failed}")
    return elapsed


def print_report(r: dict) -> None:
    print(f"{r['manifest']}: {r['episodes']} episodes of {r['seconds_per_episode']} s, {r['episodes_per_task']} per "
          f"task, one thread per glint run, median of {r['repeats']}")
    print(f"  plain glint run        {r['plain_episodes_per_s']:.3f} episodes/s")
    print(f"  Ray, 1 worker          {r['ray_1_worker_episodes_per_s']:.3f} episodes/s "
          f"(overhead {100 * r['ray_overhead']:+.1f} %, target <= 10 %)")
    print(f"  Ray, 2 workers         {r['ray_2_workers_episodes_per_s']:.3f} episodes/s "
          f"(scaling {r['scaling_2_over_1']:.2f}x, target >= 1.8x)")
    print(f"  the machine itself: two plain runs at once scale {r['machine_scaling']:.2f}x; Ray's 2 workers take "
          f"{r['ray_2_workers_over_two_plain']:.2f}x their time")
