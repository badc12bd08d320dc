"""A recording read as one dataset: a session folder (``glint run``) or the catalog
(``dataset.json``) that :mod:`glint.distributed` writes over its shard sessions.

>>> from glint.dataset import Dataset
>>> ds = Dataset("datasets/showroom")                      # doctest: +SKIP
>>> [e.index for e in ds.episodes]                         # doctest: +SKIP
[0, 1, 2, 3]
>>> ds.lidar(2, "roof", columns=["timestamp", "range"])    # doctest: +SKIP
pyarrow.Table ...

Every shard is an ordinary session whose files carry the dataset's own episode numbers, so
an episode is read from whichever session holds it; the tables are those of
``docs/recording.md`` (``pyarrow.parquet.read_table`` underneath).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CATALOG = "dataset.json"
CATALOG_FORMAT = ("glint-dataset", 1)


class DatasetError(ValueError):
    """The path is not a session or a catalog glint can read, or asks for what it lacks."""


@dataclass(frozen=True)
class Episode:
    """One finished episode: its index in the dataset, the world it ran in, its seed and
    status, the session folder that holds it and its files (relative to that session)."""

    index: int
    world: int
    seed: int | None
    status: str
    session: Path
    files: list[str] = field(default_factory=list)
    state: str | None = None
    rangefinders: str | None = None


class Dataset:
    """A session folder, a folder with a ``dataset.json``, or the ``dataset.json`` itself."""

    def __init__(self, path: str | os.PathLike[str]):
        path = Path(path)
        catalog = path if path.is_file() else path / CATALOG
        if catalog.is_file():
            self.root = catalog.parent
            self.catalog: dict[str, Any] | None = _read_catalog(catalog)
            self.sessions = [self.root / "shards" / s["name"] for s in self.catalog["shards"]]
            worlds = {e["episode"]: e.get("world", 0) for e in self.catalog["episodes"]}
        else:
            if not (path / "meta" / "info.json").is_file():
                raise DatasetError(f"'{path}' is neither a glint session (it has no meta/info.json) nor a dataset "
                                   f"(it has no {CATALOG})")
            self.root, self.catalog, self.sessions, worlds = path, None, [path], None
        for session in self.sessions:
            if not (session / "meta" / "info.json").is_file():
                raise DatasetError(f"the dataset's shard '{session}' is missing: run the same "
                                   "glint.distributed.generate call again to make it")
        self.info: dict[str, Any] = json.loads((self.sessions[0] / "meta" / "info.json").read_text())
        self.episodes = self._episodes(worlds)

    @property
    def is_catalog(self) -> bool:
        return self.catalog is not None

    @property
    def sensors(self) -> list[str]:
        """The recorded lidars, by the ``<Name>`` of their files."""
        return [s["file_name"] for s in self.info["sensors"]]

    def episode(self, index: int) -> Episode:
        for e in self.episodes:
            if e.index == index:
                return e
        listed = ", ".join(str(e.index) for e in self.episodes) or "none"
        raise DatasetError(f"'{self.root}' has no finished episode {index} (it has: {listed})")

    def lidar_file(self, index: int, sensor: str | None = None) -> Path:
        """The Parquet file of ``sensor`` (default: the first recorded) in episode ``index``."""
        e = self.episode(index)
        name = sensor if sensor is not None else self.sensors[0]
        if name not in self.sensors:
            raise DatasetError(f"'{self.root}' records no lidar '{name}' (it has: {', '.join(self.sensors)})")
        for f in e.files:
            if Path(f).name == f"lidar-{name}-{index:03d}.parquet":
                return e.session / f
        raise DatasetError(f"episode {index} of '{self.root}' has no file of lidar '{name}'")

    def lidar(self, index: int, sensor: str | None = None, columns: list[str] | None = None):
        """A lidar's rows of one episode (``pyarrow.Table``: one row per beam cast)."""
        import pyarrow.parquet as pq

        return pq.read_table(self.lidar_file(index, sensor), columns=columns)

    def poses(self, index: int, sensor: str | None = None):
        """A lidar's pose table of one episode (one row per tick)."""
        import pyarrow.parquet as pq

        return pq.read_table(self.lidar_file(index, sensor).with_suffix(".poses.parquet"))

    def state(self, index: int):
        """The robot state table of one episode (``qpos``, ``qvel``, ``ctrl``, body poses)."""
        return self._tick_table(index, "state")

    def rangefinders(self, index: int):
        """The MJCF rangefinder table of one episode."""
        return self._tick_table(index, "rangefinders")

    def lidar_files(self, sensor: str | None = None) -> list[tuple[Path, Episode]]:
        """Every lidar file (of ``sensor``, or of every lidar) with its episode."""
        out = []
        for e in self.episodes:
            out.extend((e.session / f, e) for f in e.files if is_lidar_file(Path(f).name, sensor))
        return out

    def _tick_table(self, index: int, kind: str):
        import pyarrow.parquet as pq

        e = self.episode(index)
        rel = getattr(e, kind)
        if rel is None:
            raise DatasetError(f"episode {index} of '{self.root}' has no {kind} table")
        return pq.read_table(e.session / rel)

    def _episodes(self, worlds: dict[int, int] | None) -> list[Episode]:
        episodes = []
        nworld = max(int(self.info.get("worlds", 1)), 1)
        for session in self.sessions:
            records = [json.loads(line) for line in (session / "meta" / "episodes.jsonl").read_text().splitlines()
                       if line.strip()] if (session / "meta" / "episodes.jsonl").is_file() else []
            first = min((r["index"] for r in records), default=0)
            for r in records:
                # glint run resets its worlds together: world w runs episodes first + k·W + w.
                world = worlds.get(r["index"], 0) if worlds is not None else (r["index"] - first) % nworld
                episodes.append(Episode(r["index"], world, r.get("seed"), r["status"], session, list(r.get("files", [])),
                                        r.get("state"), r.get("rangefinders")))
        return sorted(episodes, key=lambda e: e.index)


def is_lidar_file(name: str, sensor: str | None = None) -> bool:
    """Whether file ``name`` is a lidar's rows (``lidar-<Name>-NNN.parquet``, of ``sensor``
    or any), not its pose or beam table nor another table of the episode."""
    return name.startswith("lidar-") and name.endswith(".parquet") and not name.endswith(
        (".poses.parquet", ".beams.parquet")) and (sensor is None or name.startswith(f"lidar-{sensor}-"))


def _read_catalog(path: Path) -> dict[str, Any]:
    try:
        catalog = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise DatasetError(f"'{path}' is not a readable glint dataset catalog: {e}") from e
    return _check_catalog(catalog, path)


def _check_catalog(catalog: dict[str, Any], path: Path | str) -> dict[str, Any]:
    if (catalog.get("format"), catalog.get("format_version")) != CATALOG_FORMAT:
        raise DatasetError(f"'{path}' is a '{catalog.get('format')}' catalog version {catalog.get('format_version')}, "
                           f"and this glint reads '{CATALOG_FORMAT[0]}' version {CATALOG_FORMAT[1]}")
    if not catalog.get("shards"):
        raise DatasetError(f"'{path}' lists no shard")
    return catalog
