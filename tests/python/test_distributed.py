"""`glint.distributed.generate` on a local Ray cluster in a loopback-only network namespace
(tests/python/loopback.py): 12 episodes in 6 shards equal, file by file, the same 12 episodes
of one `glint run`; rerun after shards went missing it does only those; Ray Data reads the
catalog's lidar files; `glint replay`, `glint points`, `glint export` (variant, MCAP,
LeRobot) and `glint.dataset.Dataset` read the catalog as one dataset, with the same output
as from the one run; bad input fails once, before any task, and a shard that fails every
retry is named with its episodes, seed and error."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import GLINT_BIN, REPO
from loopback import loopback_only

SHOWROOM = REPO / "examples" / "showroom" / "showroom.xml"
RUN_TIMEOUT_S = 900.0  # hang guard
SEED = 21


@pytest.fixture(scope="module", autouse=True)
def network():
    """Every test here, and every process it starts, on loopback only."""
    with loopback_only() as namespace:
        yield namespace


@pytest.fixture(scope="module")
def ray_cluster(network):
    os.environ.setdefault("GLINT_BIN", str(GLINT_BIN))
    os.environ["RAY_NODE_IP_ADDRESS"] = "127.0.0.1"
    import ray

    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("distributed") / "m.toml"
    path.write_text(
        f'scene = "{SHOWROOM}"\n[recorder]\nlidar_runner_hz = 50.0\n'
        '[[lidar]]\nname = "roof"\nattach_site = "lidar"\npreset = "ouster-os1-64"\nself_ignore = "whole-robot"\n'
        '[randomize.geom_pos]\nwall_east = { uniform = [[8.5, 0.0, 1.5], [9.1, 0.0, 1.5]] }\n'
    )
    return path


def data_files(session: Path) -> dict[str, bytes]:
    chunk = session / "data" / "chunk-000"
    return {p.name: p.read_bytes() for p in sorted(chunk.iterdir())}


@pytest.fixture(scope="module")
def twelve(ray_cluster, manifest, tmp_path_factory) -> tuple[Path, Path, object]:
    """12 episodes in 6 shards, and the same 12 from one `glint run`: (dataset, session,
    report)."""
    from glint.distributed import generate

    tmp = tmp_path_factory.mktemp("twelve")
    out = tmp / "dataset"
    report = generate(manifest, 12, SEED, out, episodes_per_task=2, seconds=0.1, progress=False)
    proc = subprocess.run([str(GLINT_BIN), "run", str(manifest), "--episodes", "12", "--seconds", "0.1", "--seed",
                           str(SEED), "--out", str(tmp / "one")], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    return out, next((tmp / "one").glob("session_*")), report


def test_ray_listens_on_loopback_only(ray_cluster, network):
    if not network.isolated:
        pytest.skip("no loopback-only network namespace here (it needs CAP_SYS_ADMIN; CI runs as root)")
    assert network.interfaces() == {"lo"}
    gcs_port = int(ray_cluster.get_runtime_context().gcs_address.rsplit(":", 1)[1])
    ray_ports = network.listening_ports()
    assert gcs_port in ray_ports
    assert not ray_ports & network.host_listening_ports(), "Ray listens in the test's namespace only"


def test_twelve_episodes_in_six_shards_equal_one_run_and_resume(twelve, manifest):
    from glint.distributed import generate

    out, one_session, report = twelve
    assert report.failed == {} and sorted(report.ran) == list(range(6)) and report.skipped == []
    one = data_files(one_session)
    sharded: dict[str, bytes] = {}
    for shard in sorted((out / "shards").iterdir()):
        sharded.update(data_files(shard))
    assert sorted(sharded) == sorted(one) and len(one) >= 12 * 6
    for name, data in one.items():
        assert sharded[name] == data, name
    catalog = json.loads((out / "dataset.json").read_text())
    assert [e["episode"] for e in catalog["episodes"]] == list(range(12))
    assert len({e["seed"] for e in catalog["episodes"]}) == 12
    assert not list((out / "shards").glob(".*")), "no scratch folder or attempt marker is left"

    # Two shards gone (a failed run): the same call runs only those.
    import shutil

    for name in ("shard-00001", "shard-00004"):
        shutil.rmtree(out / "shards" / name)
    again = generate(manifest, 12, SEED, out, episodes_per_task=2, seconds=0.1, progress=False)
    assert sorted(again.ran) == [1, 4] and sorted(again.skipped) == [0, 2, 3, 5] and again.failed == {}
    resharded: dict[str, bytes] = {}
    for shard in sorted((out / "shards").iterdir()):
        resharded.update(data_files(shard))
    assert resharded == sharded

    # Ray Data over the catalog's lidar files: every recorded row.
    import ray.data

    files = [str(out / f["path"]) for e in catalog["episodes"] for f in e["files"] if "/lidar-" in f["path"]]
    import pyarrow.fs

    rows = ray.data.read_parquet(files, filesystem=pyarrow.fs.LocalFileSystem(), include_paths=True).count()
    sidecars = [json.loads(Path(f).with_suffix(".json").read_text())["rows"] for f in files]
    assert rows == sum(sidecars) > 0
    from glint.distributed import lidar_rows

    labelled = lidar_rows(out, "roof")
    counts = labelled.groupby("episode").count().to_pandas().set_index("episode")["count()"].to_dict()
    per_episode = {e["episode"]: json.loads((out / f["path"]).with_suffix(".json").read_text())["rows"]
                   for e in catalog["episodes"] for f in e["files"] if "/lidar-" in f["path"]}
    assert counts == per_episode
    assert set(labelled.unique("world")) == {0}
    # Through a pyarrow file system, as from object storage: the catalog and files read there.
    remote = pyarrow.fs.SubTreeFileSystem(str(out.parent), pyarrow.fs.LocalFileSystem())
    through = lidar_rows(out.name, "roof", filesystem=remote)
    assert through.groupby("episode").count().to_pandas().set_index("episode")["count()"].to_dict() == per_episode


def glint(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(GLINT_BIN), *map(str, args)], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def test_points_and_replay_read_the_catalog_as_one_dataset(twelve, tmp_path):
    out, one, _ = twelve
    for episode in (0, 7, 11):
        for source, name in ((out, "dataset"), (one, "one")):
            done = glint("points", source, "--episode", episode, "--format", "pcd", "--out", tmp_path / f"{name}.pcd")
            assert done.returncode == 0, done.stderr
        assert (tmp_path / "dataset.pcd").read_bytes() == (tmp_path / "one.pcd").read_bytes(), episode
        for f in tmp_path.glob("*.pcd"):
            f.unlink()
    missing = glint("points", out / "dataset.json", "--episode", 12)
    assert missing.returncode != 0 and "no episode 12" in missing.stderr and "0..=11" in missing.stderr

    report = glint("replay", out)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "(6 shards)" in report.stdout and "every file as listed" in report.stdout
    for episode in range(12):
        assert f"episode {episode}, sensor 0 'roof'" in report.stdout
    only = glint("replay", out, "--episode", 7)
    assert only.returncode == 0 and "episode 7, sensor 0 'roof'" in only.stdout
    assert "episode 6, sensor" not in only.stdout

    # A file that is no longer the one the catalog lists fails the dataset's check, by name.
    catalog_path = out / "dataset.json"
    text = catalog_path.read_text()
    catalog = json.loads(text)
    changed = catalog["episodes"][3]["files"][0]
    changed["sha256"] = "0" * 64
    catalog_path.write_text(json.dumps(catalog))
    try:
        tampered = glint("replay", out)
    finally:
        catalog_path.write_text(text)
    assert tampered.returncode != 0 and "1 file(s) differ from the catalog" in tampered.stderr
    assert Path(changed["path"]).name in tampered.stdout


def test_export_reads_the_catalog_as_one_dataset(twelve, manifest, tmp_path):
    out, one, _ = twelve

    def same_trees(a: Path, b: Path) -> int:
        files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
        for f in files:
            assert (a / f).read_bytes() == (b / f).read_bytes(), f
        return len(files)

    for fmt, extra in (("mcap", ["--episode", 3, "--episode", 9]), ("lerobot", [])):
        for source, name in ((out, "dataset"), (one, "one")):
            done = glint("export", source, "--format", fmt, *extra, "--out", tmp_path / fmt / name)
            assert done.returncode == 0, done.stderr
        assert same_trees(tmp_path / fmt / "dataset", tmp_path / fmt / "one") >= 2, fmt
    info = json.loads((tmp_path / "lerobot" / "dataset" / "meta" / "info.json").read_text())
    assert info["total_episodes"] == 12

    baked = glint("bake", manifest)
    assert baked.returncode == 0, baked.stderr
    bake = next((manifest.parent / "MaterialBakes").glob("*.lvxb")).stem
    for source, name in ((out, "dataset"), (one, "one")):
        done = glint("export", source, "--bake", bake, "--out", tmp_path / "variant" / name)
        assert done.returncode == 0, done.stderr
    for episode in (2, 10):
        shard = tmp_path / "variant" / "dataset" / "shards" / f"shard-{episode // 2:05d}"
        rel = Path("data") / "chunk-000" / f"lidar-roof-{episode:03d}.parquet"
        assert (shard / rel).read_bytes() == (tmp_path / "variant" / "one" / rel).read_bytes()
        for source, name in ((out, "dataset"), (one, "one")):
            done = glint("points", source, "--episode", episode, "--variant", tmp_path / "variant" / name,
                         "--out", tmp_path / f"{name}.ply")
            assert done.returncode == 0, done.stderr
        assert (tmp_path / "dataset.ply").read_bytes() == (tmp_path / "one.ply").read_bytes()
        for f in tmp_path.glob("*.ply"):
            f.unlink()
    mcap = glint("export", out, "--format", "mcap", "--variant", tmp_path / "variant" / "dataset", "--episode", 5,
                 "--out", tmp_path / "variant-mcap")
    assert mcap.returncode == 0, mcap.stderr
    assert (tmp_path / "variant-mcap" / "episode_000005.mcap").is_file()


def test_python_reader_reads_the_catalog_as_one_dataset(twelve):
    from glint.dataset import Dataset, DatasetError

    out, one, _ = twelve
    dataset, session = Dataset(out), Dataset(one)
    assert dataset.is_catalog and len(dataset.sessions) == 6 and not session.is_catalog
    assert [e.index for e in dataset.episodes] == [e.index for e in session.episodes] == list(range(12))
    assert [e.seed for e in dataset.episodes] == [e.seed for e in session.episodes]
    assert dataset.sensors == session.sensors == ["roof"]
    for episode in (0, 5, 11):
        assert dataset.lidar(episode).equals(session.lidar(episode))
        assert dataset.poses(episode, "roof").equals(session.poses(episode, "roof"))
        assert dataset.state(episode).equals(session.state(episode))
    assert Dataset(out / "dataset.json").episode(4).session == out / "shards" / "shard-00002"
    with pytest.raises(DatasetError, match="no finished episode 12"):
        dataset.lidar(12)
    with pytest.raises(DatasetError, match="no lidar 'front'"):
        dataset.lidar(0, "front")


def test_bad_input_fails_before_any_task(ray_cluster, manifest, tmp_path):
    from glint.distributed import DistributedError, generate

    bad = tmp_path / "bad.toml"
    bad.write_text('scene = "nowhere.xml"\n')
    with pytest.raises(DistributedError, match="does not load"):
        generate(bad, 2, SEED, tmp_path / "a", progress=False)
    assert not (tmp_path / "a" / "shards").exists()
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(DistributedError, match="cannot write the dataset"):
        generate(manifest, 2, SEED, blocker / "out", progress=False)
    with pytest.raises(DistributedError, match="multiples of the worlds"):
        generate(manifest, 3, SEED, tmp_path / "b", worlds=2, episodes_per_task=2, progress=False)


def test_an_unreachable_cluster_fails_at_once(manifest, tmp_path):
    import sys

    env = dict(os.environ, GLINT_BIN=str(GLINT_BIN))
    for address in ("127.0.0.1:1", "ray://127.0.0.1:1", "nowhere"):
        done = subprocess.run([sys.executable, "-m", "glint.distributed", str(manifest), "--episodes", "2", "--seed",
                               "1", "--out", str(tmp_path / "out"), "--address", address], capture_output=True,
                              text=True, env=env, timeout=120)
        assert done.returncode == 2, done.stderr
        assert f"'{address}'" in done.stderr and ("cannot reach" in done.stderr or "HOST:PORT" in done.stderr)
    assert not list((tmp_path / "out" / "shards").glob("*"))


def test_a_shard_that_fails_every_retry_is_named(ray_cluster, manifest, tmp_path):
    from glint.distributed import generate

    # 0.013 s is not a whole number of 50 Hz ticks: every attempt of every shard fails.
    report = generate(manifest, 2, SEED, tmp_path / "out", seconds=0.013, max_retries=1, progress=False)
    assert sorted(report.failed) == [0, 1] and report.catalog is None
    assert "shard-00001 (episodes 1..1, run seed 21)" in report.failed[1]
    assert "tick" in report.failed[1], report.failed[1]
    assert report.retried == {0: 1, 1: 1}
    assert not list((tmp_path / "out" / "shards").glob("*")), "a failed shard leaves nothing"


def test_the_command_line_exits_non_zero_when_shards_fail(manifest, tmp_path):
    import sys

    env = dict(os.environ, GLINT_BIN=str(GLINT_BIN), RAY_NODE_IP_ADDRESS="127.0.0.1")
    proc = subprocess.run([sys.executable, "-m", "glint.distributed", str(manifest), "--episodes", "1", "--seed", "3",
                           "--out", str(tmp_path / "out"), "--seconds", "0.013", "--max-retries", "0"],
                          capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 1, proc.stderr
    assert "failed: shard-00000 (episodes 0..0, run seed 3)" in proc.stderr


def test_a_call_stopped_by_ctrl_c_resumes_with_only_the_missing_shards(manifest, tmp_path):
    import signal
    import sys
    import time

    out = tmp_path / "out"
    env = dict(os.environ, GLINT_BIN=str(GLINT_BIN), RAY_NODE_IP_ADDRESS="127.0.0.1")
    cmd = [sys.executable, "-m", "glint.distributed", str(manifest), "--episodes", "8", "--seed", str(SEED),
           "--out", str(out), "--seconds", "20"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not list(out.glob("shards/shard-*")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    complete = sorted(p.name for p in out.glob("shards/shard-*"))
    assert proc.returncode == 130 and f"interrupted: {len(complete)} shard(s) complete" in err, err
    assert 1 <= len(complete) < 8 and not (out / "dataset.json").exists()

    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
    assert again.returncode == 0, again.stderr
    assert f"8 shards: {8 - len(complete)} ran, {len(complete)} already complete, 0 retries, 0 failed" in again.stdout
    catalog = json.loads((out / "dataset.json").read_text())
    assert [e["episode"] for e in catalog["episodes"]] == list(range(8))
    assert not list((out / "shards").glob(".*")) and not list(out.rglob("*.partial"))


def test_glint_run_ray_runs_the_shards(manifest, tmp_path):
    import sys

    env = dict(os.environ, GLINT_PYTHON=sys.executable, RAY_NODE_IP_ADDRESS="127.0.0.1")
    proc = subprocess.run([str(GLINT_BIN), "run", str(manifest), "--ray", "local", "--episodes", "2", "--seed", "4",
                           "--seconds", "0.1", "--out", str(tmp_path / "out")], capture_output=True, text=True, env=env,
                          timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    catalog = json.loads((tmp_path / "out" / "dataset.json").read_text())
    assert [e["episode"] for e in catalog["episodes"]] == [0, 1] and len(catalog["shards"]) == 2
    proc = subprocess.run([str(GLINT_BIN), "run", str(manifest), "--ray", "local", "--out", str(tmp_path / "x")],
                          capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
    assert proc.returncode != 0 and "--ray needs --seed" in proc.stderr, proc.stderr


def test_a_worker_killed_mid_shard_is_retried_and_leaves_nothing(ray_cluster, manifest, tmp_path):
    import signal
    import threading
    import time

    from glint.distributed import generate

    out = tmp_path / "out"
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(report=generate(
        manifest, 2, SEED, out, episodes_per_task=1, seconds=8.0, max_retries=2, progress=False)))
    thread.start()
    # The first shard's glint run, once it has begun writing: kill the Ray worker running it.
    killed = None
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while killed is None and time.monotonic() < deadline and thread.is_alive():
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmd = (proc / "cmdline").read_bytes().split(b"\0")
                stat = (proc / "stat").read_text()
            except OSError:
                continue
            if b"--first-episode" in cmd and cmd[cmd.index(b"--first-episode") + 1] == b"0" \
                    and list(out.glob("shards/.shard-00000.*.tmp/session_*/data")):
                worker = int(stat.rsplit(")", 1)[1].split()[1])
                os.kill(worker, signal.SIGKILL)
                killed = worker
                break
        time.sleep(0.05)
    thread.join(RUN_TIMEOUT_S)
    assert killed is not None, "the shard's worker was found and killed"
    report = result["report"]
    assert report.failed == {} and report.retried.get(0, 0) >= 1, report
    catalog = json.loads((out / "dataset.json").read_text())
    assert [e["episode"] for e in catalog["episodes"]] == [0, 1]
    assert sorted(p.name for p in (out / "shards").iterdir()) == ["shard-00000", "shard-00001"]
    assert not list(out.rglob("*.partial")), "no half file is left"
