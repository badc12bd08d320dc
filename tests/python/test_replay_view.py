"""`glint replay SESSION --live`: a recorded episode played back over the Foxglove WebSocket
protocol with a time cursor. A client speaking `foxglove.sdk.v1` sees the playback range and
capability in serverInfo, seeks with a PlaybackControlRequest, gets the PlaybackState answering
it, and then receives the episode's messages from that time on, in time order, equal to the
MCAP export's; the server's time follows the cursor, and playback ends at the episode's end."""

from __future__ import annotations

import json
import struct
import subprocess
import time
from pathlib import Path

import pytest

from conftest import GLINT_BIN, REPO
from test_live_view import HANG_GUARD_S, channels_of, listening_addresses, stop_run

SHOWROOM = REPO / "examples" / "showroom" / "showroom.xml"


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("replay")
    manifest = tmp / "m.toml"
    manifest.write_text(
        f'scene = "{SHOWROOM}"\n[recorder]\nlidar_runner_hz = 50.0\n'
        '[[lidar]]\nname = "roof"\nattach_site = "lidar"\npreset = "ouster-os1-64"\nself_ignore = "whole-robot"\n'
    )
    proc = subprocess.run([str(GLINT_BIN), "run", str(manifest), "--seconds", "0.5", "--episodes", "1",
                           "--out", str(tmp / "s")], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr
    s = next((tmp / "s").glob("session_*"))
    proc = subprocess.run([str(GLINT_BIN), "export", str(s), "--format", "mcap"], capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr
    return s


def start_replay(session: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([str(GLINT_BIN), "replay", str(session), "--live", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("replay view: "):
            return proc, line.split("replay view: ", 1)[1].strip()
        assert line or proc.poll() is None, proc.stderr.read()
    raise AssertionError("the replay never started")


def playback_request(command: int, speed: float, seek_ns: int | None, request_id: str) -> bytes:
    """A v1 PlaybackControlRequest (binary opcode 3)."""
    rid = request_id.encode()
    return struct.pack("<BBfBQI", 3, command, speed, seek_ns is not None, seek_ns or 0, len(rid)) + rid


def test_a_client_seeks_and_receives_the_episode_in_time_order(session):
    from websockets.sync.client import connect

    from test_mcap import rosbags_messages

    recorded: dict[str, list[tuple[int, bytes]]] = {}
    for topic, _, stamp, raw, _ in rosbags_messages(session / "mcap" / "episode_000000.mcap"):
        recorded.setdefault(topic, []).append((stamp, bytes(raw)))
    stamps = sorted(t for messages in recorded.values() for t, _ in messages)
    start, end = stamps[0], stamps[-1]
    seek = stamps[len(stamps) // 2]

    proc, url = start_replay(session)
    try:
        assert listening_addresses(int(url.rsplit(":", 1)[1])) == ["127.0.0.1"]
        with connect(url, subprotocols=["foxglove.sdk.v1"], max_size=None) as ws:
            info = json.loads(ws.recv(timeout=HANG_GUARD_S))
            assert info["op"] == "serverInfo", info
            assert "playbackControl" in info["capabilities"] and "time" in info["capabilities"], info
            assert (info["dataStartTime"], info["dataEndTime"]) == ({"sec": start // 10**9, "nsec": start % 10**9},
                                                                   {"sec": end // 10**9, "nsec": end % 10**9})
            subs = {1: "/roof/points", 2: "/tf"}
            channels = channels_of(ws, *subs.values())
            ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                {"id": i, "channelId": channels[t]["id"]} for i, t in subs.items()]}))
            ws.send(playback_request(0, 4.0, seek, "seek-1"))
            got: dict[str, list[tuple[int, bytes]]] = {t: [] for t in subs.values()}
            answered, ended, times = None, False, []
            deadline = time.monotonic() + HANG_GUARD_S
            due = {t: sum(1 for stamp, _ in recorded[t] if stamp >= seek) for t in subs.values()}
            # Until the state says Ended and each topic's messages from the seek time on (the last
            # may travel behind that state) have come.
            while time.monotonic() < deadline and not (
                    ended and all(sum(1 for stamp, _ in got[t] if stamp >= seek) >= due[t] for t in subs.values())):
                msg = ws.recv(timeout=HANG_GUARD_S)
                if not isinstance(msg, bytes):
                    continue
                if msg[0] == 5:  # PlaybackState
                    status, current, speed, did_seek, n = struct.unpack_from("<BQfBI", msg, 1)
                    rid = msg[19:19 + n].decode()
                    if rid == "seek-1":
                        answered = (status, current, speed, did_seek)
                    ended = status == 3
                elif msg[0] == 2:  # Time
                    times.append(struct.unpack_from("<Q", msg, 1)[0])
                elif msg[0] == 1 and answered is not None:
                    sub, log_time = struct.unpack_from("<IQ", msg, 1)
                    got[subs[sub]].append((log_time, bytes(msg[13:])))
    finally:
        stop_run(proc)
    assert proc.returncode == 0, proc.stderr.read()
    assert answered == (0, seek, 4.0, 1), answered
    assert ended, "playback ends at the episode's end"
    assert times == sorted(times) and times[-1] == end
    for topic in subs.values():
        want = [(t, data) for t, data in recorded[topic] if t >= seek]
        # After the PlaybackState that answered the seek (and what was already on its way
        # before it): every message from the seek time to the end, in time order.
        first = next(i for i, (t, _) in enumerate(got[topic]) if t >= seek)
        assert got[topic][first:] == want, topic
