"""Dataset generation on a Ray cluster: the episodes of a run split into shards, each shard a
Ray task running glint's own episode loop (``glint run --first-episode``) into a session of
its own, made visible by one atomic rename when it is complete; then one catalog
(``dataset.json``) over them all.

Episode seeds and file numbers follow the global episode index exactly as one ``glint run``
numbers them, so a shard's files are byte for byte those of the same episodes in one
process. A shard that exists complete is skipped: calling :func:`generate` again after a
failure or Ctrl-C does only what is missing. A task that dies is retried by Ray; what a dead
attempt left is removed at the end, never renamed into place.

Run it from Python, or as ``python -m glint.distributed MANIFEST --episodes N --seed S --out
DIR [--episodes-per-task K] [--worlds W] [--seconds S] [--address ADDR]`` (docs/distributed.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

CATALOG = "dataset.json"
_BUNDLED = Path(__file__).resolve().parent / "_bin" / "glint"


class DistributedError(RuntimeError):
    """A generation that cannot start (bad input, no cluster) or whose shards failed."""


@dataclass(frozen=True)
class Shard:
    """One Ray task's share: episodes ``first .. first + episodes - 1``."""

    index: int
    first: int
    episodes: int

    @property
    def name(self) -> str:
        return f"shard-{self.index:05d}"


@dataclass
class Report:
    """What :func:`generate` did."""

    out: Path
    shards: int
    ran: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    #: Shard → attempts beyond the first (a worker died, a task raised).
    retried: dict[int, int] = field(default_factory=dict)
    #: Shard → why it failed after every retry (its episodes, run seed and error).
    failed: dict[int, str] = field(default_factory=dict)
    catalog: Path | None = None


def glint_binary() -> str:
    """The ``glint`` tool: the wheel's own, else ``$GLINT_BIN``, else ``glint`` on PATH."""
    if os.access(_BUNDLED, os.X_OK):
        return str(_BUNDLED)
    tool = os.environ.get("GLINT_BIN") or shutil.which("glint") or ""
    if not tool or not os.access(tool, os.X_OK):
        raise DistributedError("no glint tool found: install the wheel, or set GLINT_BIN to a built glint")
    return tool


def plan(episodes: int, episodes_per_task: int, worlds: int = 1) -> list[Shard]:
    """The shards of ``episodes`` episodes, ``episodes_per_task`` each (the last may hold
    fewer); with ``worlds`` worlds a shard holds a whole number of episodes per world."""
    if episodes < 1 or episodes_per_task < 1 or worlds < 1:
        raise DistributedError("episodes, episodes_per_task and worlds must be at least 1")
    if episodes_per_task % worlds or episodes % worlds:
        raise DistributedError(
            f"with {worlds} worlds, episodes ({episodes}) and episodes_per_task ({episodes_per_task}) must be "
            "multiples of the worlds: every world runs the same number of episodes in a shard")
    firsts = range(0, episodes, episodes_per_task)
    return [Shard(k, first, min(episodes_per_task, episodes - first)) for k, first in enumerate(firsts)]


def run_shard(glint: str, manifest: str, shard: Shard, run: dict, shards_dir: str) -> str:
    """Runs one shard (inside a Ray task): ``glint run`` into a scratch folder, then the session
    renamed to ``shards/shard-NNNNN`` at once. Returns that folder."""
    shards = Path(shards_dir)
    final = shards / shard.name
    if final.is_dir():
        return str(final)
    attempt = uuid.uuid4().hex[:12]
    (shards / ".attempts").mkdir(exist_ok=True)
    (shards / ".attempts" / f"{shard.name}.{attempt}").touch()
    scratch = shards / f".{shard.name}.{attempt}.tmp"
    worlds = run["worlds"]
    cmd = [glint, "run", manifest, "--episodes", str(shard.episodes // worlds), "--worlds", str(worlds),
           "--first-episode", str(shard.first), "--seed", str(run["seed"]), "--out", str(scratch)]
    if run.get("seconds") is not None:
        cmd += ["--seconds", str(run["seconds"])]
    proc = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=_die_with_parent)
    what = (f"{shard.name} (episodes {shard.first}..{shard.first + shard.episodes - 1}, run seed {run['seed']})")
    if proc.returncode != 0:
        raise DistributedError(f"{what}: glint run exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    sessions = list(scratch.glob("session_*"))
    if len(sessions) != 1:
        raise DistributedError(f"{what}: glint run left {len(sessions)} sessions in {scratch}")
    try:
        os.rename(sessions[0], final)
    except OSError:
        if not final.is_dir():  # another attempt of this shard finished first: keep its files
            raise
    shutil.rmtree(scratch, ignore_errors=True)
    return str(final)


def _die_with_parent() -> None:
    """In the task's ``glint run`` child: ends it when the task's worker dies (Linux), so a
    killed worker leaves no process writing into a scratch folder that is about to go."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _check_inputs(manifest: Path, out: Path) -> None:
    """Fails once, before any task starts: a manifest that does not load, an out folder that
    cannot be written."""
    if not manifest.is_file():
        raise DistributedError(f"the manifest '{manifest}' does not exist")
    from glint import Simulation

    try:
        Simulation.from_manifest(str(manifest))
    except Exception as e:  # noqa: BLE001 - glint's own error says what is wrong
        raise DistributedError(f"the manifest '{manifest}' does not load: {e}") from e
    try:
        (out / "shards").mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{uuid.uuid4().hex[:8]}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise DistributedError(f"cannot write the dataset in '{out}': {e}") from e


def _connect(address: str | None) -> None:
    import ray

    if ray.is_initialized():
        return
    if address not in (None, "auto"):
        _probe(address)
    try:
        if address is None:
            ray.init(include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    except Exception as e:  # noqa: BLE001 - Ray's connection errors vary by version
        raise DistributedError(f"cannot reach the Ray cluster at '{address or 'a new local one'}': {e}") from e


def _probe(address: str, timeout_s: float = 10.0) -> None:
    """Fails at once where nothing answers at ``address`` (``HOST:PORT`` or
    ``ray://HOST:PORT``): Ray itself retries an unreachable head for minutes."""
    import socket

    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise DistributedError(f"the Ray address '{address}' is not HOST:PORT (or ray://HOST:PORT, or auto)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise DistributedError(f"cannot reach the Ray cluster at '{address}': {e.strerror or e}; start its head "
                               "with `ray start --head`, or check the address") from e


def _remove_scratch(shards_dir: Path) -> None:
    for leftover in shards_dir.glob(".shard-*.tmp"):
        shutil.rmtree(leftover, ignore_errors=True)
    shutil.rmtree(shards_dir / ".attempts", ignore_errors=True)


def _attempts(shards_dir: Path) -> dict[int, int]:
    counts: dict[int, int] = {}
    for marker in (shards_dir / ".attempts").glob("shard-*"):
        index = int(marker.name.split(".")[0].split("-")[1])
        counts[index] = counts.get(index, 0) + 1
    return counts


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_catalog(out: Path, shards: list[Shard], run: dict, manifest: Path) -> Path:
    """``dataset.json``: the shards, every episode's shard, seed and files (with SHA-256), the
    manifest and glint's version."""
    episodes = []
    versions = set()
    for shard in shards:
        session = out / "shards" / shard.name
        info = json.loads((session / "meta" / "info.json").read_text())
        versions.add(info["glint_version"])
        for line in (session / "meta" / "episodes.jsonl").read_text().splitlines():
            if not line.strip():
                continue
            e = json.loads(line)
            files = [*e.get("files", []), *filter(None, [e.get("state"), e.get("rangefinders")])]
            # glint run resets every world together: world w runs episodes first + k·W + w.
            world = (e["index"] - shard.first) % run["worlds"]
            episodes.append({
                "episode": e["index"], "world": world, "shard": shard.name, "seed": e.get("seed"),
                "status": e["status"],
                "files": [{"path": f"shards/{shard.name}/{f}", "sha256": _sha256(session / f)} for f in files],
            })
    episodes.sort(key=lambda e: e["episode"])
    catalog = {
        "format": "glint-dataset", "format_version": 1, "glint_version": sorted(versions),
        "manifest": str(manifest), "manifest_text": manifest.read_text(), **run,
        "shards": [{"name": s.name, "first_episode": s.first, "episodes": s.episodes} for s in shards],
        "episodes": episodes,
    }
    path = out / CATALOG
    scratch = out / f".{CATALOG}.tmp"
    scratch.write_text(json.dumps(catalog, indent=2) + "\n")
    os.replace(scratch, path)
    return path


def lidar_rows(out, sensor: str | None = None, filesystem=None):
    """Every recorded beam of the dataset at ``out`` (a catalog, or one session) as a Ray Data
    dataset, read from its lidar files (of ``sensor``, the ``<Name>`` of
    ``lidar-<Name>-NNN.parquet``, or every lidar), with ``episode`` and ``world`` columns
    added. With a ``pyarrow.fs`` file system (S3, GCS, HDFS, …), ``out`` is the catalog's
    folder in it (``bucket/datasets/showroom``): the catalog is read there, and the files
    through it."""
    import pyarrow.fs
    import ray.data

    from glint.dataset import Dataset, _check_catalog, is_lidar_file

    if filesystem is None:
        filesystem = pyarrow.fs.LocalFileSystem()
        dataset = Dataset(Path(out).resolve())
        owner = {str(path): (e.index, e.world) for path, e in dataset.lidar_files(sensor)}
    else:
        root = str(out).rstrip("/")
        with filesystem.open_input_stream(f"{root}/{CATALOG}") as f:
            catalog = _check_catalog(json.loads(f.read()), f"{root}/{CATALOG}")
        owner = {f"{root}/{f['path']}": (e["episode"], e.get("world", 0)) for e in catalog["episodes"]
                 for f in e["files"] if is_lidar_file(Path(f["path"]).name, sensor)}
    if not owner:
        raise DistributedError(f"the dataset at '{out}' lists no lidar file{f' of {sensor!r}' if sensor else ''}")

    def label(batch):
        paths = batch.pop("path")
        batch["episode"] = [owner[p][0] for p in paths]
        batch["world"] = [owner[p][1] for p in paths]
        return batch

    files = sorted(owner)
    return ray.data.read_parquet(files, filesystem=filesystem, include_paths=True).map_batches(
        label, batch_format="pandas")


def generate(manifest, episodes: int, seed: int, out, *, episodes_per_task: int = 1, worlds: int = 1,
             seconds: float | None = None, address: str | None = None, max_retries: int = 3,
             progress: bool = True) -> Report:
    """Generates ``episodes`` episodes of ``manifest`` (run seed ``seed``) on a Ray cluster
    (``address``; a new local one when ``None``, or the one this process already joined) into
    ``out``: shards of ``episodes_per_task`` episodes under ``out/shards/``, then
    ``out/dataset.json`` once every shard is complete. Complete shards are skipped. Raises
    :class:`DistributedError` for bad input before any task starts; shards that fail every
    retry are in the report's ``failed`` (and no catalog is written)."""
    import ray

    manifest, out = Path(manifest).resolve(), Path(out).resolve()
    shards = plan(episodes, episodes_per_task, worlds)
    _check_inputs(manifest, out)
    glint = glint_binary()
    _connect(address)
    shards_dir = out / "shards"
    run = {"seed": int(seed), "episodes_total": episodes, "episodes_per_task": episodes_per_task, "worlds": worlds,
           "seconds": seconds}
    report = Report(out=out, shards=len(shards))
    # What a stopped call left (Ctrl-C, a lost driver): its scratch folders and its attempt
    # counts, which would otherwise read as this call's retries.
    _remove_scratch(shards_dir)
    todo = []
    for s in shards:
        (report.skipped if (shards_dir / s.name).is_dir() else todo).append(s)
    report.skipped = [s.index for s in report.skipped]
    task = ray.remote(num_cpus=1, max_retries=max_retries, retry_exceptions=True)(run_shard)
    pending = {task.remote(glint, str(manifest), s, run, str(shards_dir)): s for s in todo}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(shards), initial=len(report.skipped), unit="shard", desc="glint shards")
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            shard = pending.pop(ref)
            try:
                ray.get(ref)
                report.ran.append(shard.index)
            except Exception as e:  # noqa: BLE001 - a task's error after its retries
                cause = getattr(e, "cause", None) or e
                report.failed[shard.index] = str(cause).strip().splitlines()[-1] if str(cause).strip() else repr(e)
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    report.retried = {k: n - 1 for k, n in _attempts(shards_dir).items() if n > 1}
    _remove_scratch(shards_dir)
    if not report.failed:
        report.catalog = write_catalog(out, shards, run, manifest)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m glint.distributed", description=__doc__.splitlines()[0])
    p.add_argument("manifest")
    p.add_argument("--episodes", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--episodes-per-task", type=int, default=1)
    p.add_argument("--worlds", type=int, default=1)
    p.add_argument("--seconds", type=float)
    p.add_argument("--address")
    p.add_argument("--max-retries", type=int, default=3)
    a = p.parse_args(argv)
    try:
        report = generate(a.manifest, a.episodes, a.seed, a.out, episodes_per_task=a.episodes_per_task,
                          worlds=a.worlds, seconds=a.seconds, address=a.address, max_retries=a.max_retries)
    except DistributedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        import ray

        ray.shutdown()  # its workers go, and their glint runs with them: nothing completes after this
        done = len(list((Path(a.out) / "shards").glob("shard-*")))
        print(f"interrupted: {done} shard(s) complete in {a.out}; run the same command again to do only the rest",
              file=sys.stderr)
        return 130
    print(f"{report.shards} shards: {len(report.ran)} ran, {len(report.skipped)} already complete, "
          f"{sum(report.retried.values())} retries, {len(report.failed)} failed")
    for k, why in sorted(report.failed.items()):
        print(f"failed: {why}", file=sys.stderr)
    if report.catalog:
        print(f"dataset: {report.catalog}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
