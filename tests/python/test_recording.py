"""`glint serve --record DIR`: an episode per ResetAgent, closed cleanly by SIGINT (or
SIGTERM, or SIGHUP: a closed terminal) with exit 0; SetLidarConfig refused while recording, secondary capture accepted and
reported."""

from __future__ import annotations

import json
import re
import signal

import pyarrow.parquet as pq
import pytest

from conftest import GOOD_CONFIG, RPC_TIMEOUT_S, SMALL_BEAMS, assert_serving, showroom_manifest, step

T = RPC_TIMEOUT_S
TICK_BEAMS = SMALL_BEAMS // 5  # 10 Hz on the 50 Hz runner: a fifth of a revolution per tick


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"]
)
def test_record_episodes_per_reset(tmp_path, serve, connect, sig):
    rec = tmp_path / "rec"
    server = serve(showroom_manifest(), extra=["--record", str(rec)])
    c = connect(server)
    L, pb = c.lidar, c.pb.lidar

    before = c.lidar.GetLidarConfig(pb.LidarSensorRequest(sensor=0), timeout=T)
    ack = L.SetLidarConfig(
        pb.SetLidarConfigRequest(**{**GOOD_CONFIG, "channels": 4}),
        timeout=T,
    )
    assert not ack.ok
    assert "record" in ack.message.lower()
    assert L.GetLidarConfig(pb.LidarSensorRequest(sensor=0), timeout=T) == before
    assert_serving(c, 0, SMALL_BEAMS)

    ack = c.set_lidar_secondary_capture(2, 1, 0)
    assert ack.ok, ack.message
    cfg = L.GetLidarConfig(pb.LidarSensorRequest(sensor=0), timeout=T)
    assert (cfg.secondary_capture, cfg.secondary_scope) == (2, 1)

    lengths = (5, 7)
    for n in lengths:
        r = c.reset_agent()
        assert r.success, r.message
        for _ in range(n):
            step(c, (0.5, 0.0, 0.0))

    assert server.stop(sig) == 0, server.output()
    stdout = "".join(server.stdout)
    m = re.search(r"recorded (\d+) episodes into (.+)", stdout)
    assert m, server.output()
    assert int(m.group(1)) == len(lengths)

    sessions = sorted(rec.glob("session_*"))
    assert len(sessions) == 1, sessions
    session = sessions[0]
    assert m.group(2).strip() == str(session)
    assert (session / "meta" / "info.json").is_file()
    lines = (session / "meta" / "episodes.jsonl").read_text().splitlines()
    episodes = [json.loads(line) for line in lines if line.strip()]
    assert [e["index"] for e in episodes] == [0, 1]
    assert [e["ticks"] for e in episodes] == list(lengths)
    assert [e["status"] for e in episodes] == ["complete", "interrupted"]
    assert episodes[0]["seed"] != episodes[1]["seed"]

    for e, n in zip(episodes, lengths):
        assert len(e["files"]) == 1
        path = session / e["files"][0]
        assert path.is_file()
        assert path.with_suffix(".json").is_file()
        table = pq.read_table(path)
        assert table.num_rows == n * TICK_BEAMS
        assert table.column_names[:4] == ["timestamp", "bin", "channel", "range"]
    # The recording was armed with the scene's capture (off): the episode recorded while
    # the new capture was only chosen has no secondary columns.
    first = pq.read_table(session / episodes[0]["files"][0])
    assert "refl_range" not in first.column_names and "sec_range" not in first.column_names
