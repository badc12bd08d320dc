"""Bad requests are refused with a message naming what is wrong, change nothing, and leave
the server serving (a following GetLidarBeamCount works): out-of-range configuration, return
parameters and bake fields, bake names that leave the project folder, unknown enum values,
bad actions and agents, answers larger than --max-message-mib (refused before they are
built), clients that vanish mid-call, and a manifest the server cannot start with."""

from __future__ import annotations

import math
import re
import socket
import subprocess

import grpc
import pytest

from conftest import (
    BASE_FIELDS,
    GOOD_CONFIG,
    RPC_TIMEOUT_S,
    SMALL_BEAMS,
    STOP_TIMEOUT_S,
    assert_serving,
    launch,
    rpc_error,
    showroom_manifest,
    step,
    tick_of,
)

T = RPC_TIMEOUT_S
NAN = float("nan")
MIB = 1024 * 1024



def words(text: str) -> str:
    """Lower case, camelCase split, '_' and '-' as spaces: `maxRangeAtRef`, `max_range_at_ref`
    and `max range at ref` all read alike."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return re.sub(r"[_\-]+", " ", text).lower()


def assert_names(message: str, *parts: str) -> None:
    for part in parts:
        assert words(part) in words(message), f"{part!r} not named in {message!r}"


def assert_number(message: str, value: str) -> None:
    assert re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", message), f"value {value} not in {message!r}"


def config_tuple(client):
    c = client.lidar.GetLidarConfig(client.pb.lidar.LidarSensorRequest(sensor=0), timeout=T)
    return tuple(getattr(c, f.name) for f in c.DESCRIPTOR.fields)


def params_tuple(client):
    p = client.lidar.GetLidarReturnParams(client.pb.lidar.GetLidarReturnParamsRequest(), timeout=T)
    return tuple(getattr(p, f.name) for f in p.DESCRIPTOR.fields)


def bake_tuple(client):
    s = client.get_lidar_bake_status()
    return tuple(getattr(s, f.name) for f in s.DESCRIPTOR.fields)


@pytest.fixture
def client(serve, connect):
    return connect(serve(showroom_manifest()))


# (fields over GOOD_CONFIG, what the message must name, the value as written, the range)
CONFIG_CASES = [
    ({"channels": 0}, ["channels"], "0", "1 to 256"),
    ({"channels": 257}, ["channels"], "257", "1 to 256"),
    ({"azimuth_bins": 0}, ["azimuth_bins"], "0", "1 to 65535"),
    ({"azimuth_bins": 65536}, ["azimuth_bins"], "65536", "1 to 65535"),
    ({"rotation_hz": -1.0}, ["rotation_hz"], "-1", "0 to 1000"),
    ({"rotation_hz": 1001.0}, ["rotation_hz"], "1001", None),
    ({"vfov_min_deg": -91.0}, ["vfov_min_deg"], "-91", "-90 to 90"),
    ({"vfov_max_deg": 91.0}, ["vfov_max_deg"], "91", "-90 to 90"),
    ({"vfov_min_deg": NAN}, ["vfov_min_deg"], "NaN", "-90 to 90"),
    ({"min_range": -1.0}, ["min_range"], "-1", "0 to 10000"),
    ({"min_range": 10001.0, "max_range": 20000.0}, ["min_range"], "10001", "0 to 10000"),
    ({"max_range": 100001.0}, ["max_range"], "100001", "0 to 100000"),
    ({"max_range": math.inf}, ["max_range"], "inf", "0 to 100000"),
    ({"scan_pattern": 2}, ["scan pattern"], "2", None),
    ({"self_ignore": 3}, ["self-ignore"], "3", None),
    ({"vfov_min_deg": 10.0, "vfov_max_deg": -10.0}, ["vfov_min_deg", "vfov_max_deg"], "10", None),
    ({"min_range": 20.0, "max_range": 10.0}, ["min_range", "max_range"], "20", None),
    ({"scan_pattern": 1}, ["channels"], "8", None),  # a non-repetitive pattern has one channel
]


@pytest.mark.parametrize("fields,names,value,range_", CONFIG_CASES, ids=[repr(c[0]) for c in CONFIG_CASES])
def test_out_of_range_lidar_config(client, fields, names, value, range_):
    before = config_tuple(client)
    ack = client.lidar.SetLidarConfig(client.pb.lidar.SetLidarConfigRequest(**{**GOOD_CONFIG, **fields}), timeout=T)
    assert not ack.ok
    assert_names(ack.message, *names)
    assert_number(ack.message, value)
    if range_:
        assert range_ in ack.message
    assert config_tuple(client) == before, "a refused configuration changes nothing"
    assert_serving(client, 0, SMALL_BEAMS)


# (field, value, the value as written): one field of the current parameters made bad.
PARAM_CASES = [
    ("max_range_at_ref", 0.0, "0"),
    ("max_range_at_ref", 10001.0, "10001"),
    ("ref_reflectivity", -1.0, "-1"),
    ("range_exp", 5.0, "5"),
    ("range_exp", NAN, "NaN"),
    ("noise_sigma0", 11.0, "11"),
    ("grazing_cos_cutoff", 1.5, "1.5"),
    ("intensity_ref_range", 0.0, "0"),
    ("detect_floor", 1001.0, "1001"),
    ("near_range_r0", 101.0, "101"),
    ("noise_slope_per_m", 2.0, "2"),
    ("spec_slope_floor", 0.0, "0"),
    ("spec_slope_floor", 2.0, "2"),
    ("spec_peak_max", -1.0, "-1"),
    ("retro_gain", 2.0e6, "2000000"),
    ("retro_cos_exp", 101.0, "101"),
    ("fold_max_slope", 2.0, "2"),
    ("range_floor", 11.0, "11"),
    ("min_return_separation", 101.0, "101"),
    ("max_returns", 0, "0"),
    ("max_returns", 9, "9"),
]


@pytest.mark.parametrize("field,value,text", PARAM_CASES, ids=[f"{c[0]}={c[1]}" for c in PARAM_CASES])
def test_bad_return_params(client, field, value, text):
    pb = client.pb.lidar
    current = client.lidar.GetLidarReturnParams(pb.GetLidarReturnParamsRequest(), timeout=T)
    base = BASE_FIELDS
    request = {f: getattr(current, f) for f in base}
    request[field] = value
    before = params_tuple(client)
    ack = client.lidar.SetLidarReturnParams(pb.SetLidarReturnParamsRequest(**request), timeout=T)
    assert not ack.ok
    assert_names(ack.message, field)
    assert_number(ack.message, text)
    assert params_tuple(client) == before, "a refused calibration changes nothing"
    assert_serving(client)


BAKE_CASES = [
    ({"cell_size": -1.0}, "cell_size", "-1"),
    ({"cell_size": 11.0}, "cell_size", "11"),
    ({"cell_size": NAN}, "cell_size", "NaN"),
    ({"max_dim": -5}, "max_dim", "-5"),
    ({"max_dim": 2000}, "max_dim", "2000"),
    ({"splat_radius": -2}, "splat_radius", "-2"),
    ({"splat_radius": 17}, "splat_radius", "17"),
    ({"include_hidden": 3}, "include_hidden", "3"),
]


@pytest.mark.parametrize("fields,field,text", BAKE_CASES, ids=[repr(c[0]) for c in BAKE_CASES])
def test_bad_bake_fields(client, fields, field, text):
    assert client.bake_lidar_material().ok
    before = bake_tuple(client)
    ack = client.lidar.BakeLidarMaterial(client.pb.lidar.BakeLidarMaterialRequest(**fields), timeout=T)
    assert not ack.ok
    assert_names(ack.message, field)
    assert_number(ack.message, text)
    assert bake_tuple(client) == before, "a refused bake leaves the loaded one"
    assert_serving(client)


@pytest.mark.parametrize("kind", ["parent", "slash", "absolute", "dotdot", "nested-dotdot"])
def test_bake_names_that_leave_the_project_folder(tmp_path, client, kind):
    outside = tmp_path.parent / f"escape-{tmp_path.name}"
    name = {
        "parent": f"../escape-{tmp_path.name}",
        "slash": "sub/bake",
        "absolute": str(outside),
        "dotdot": "..",
        "nested-dotdot": "a/../../b",
    }[kind]
    pb = client.pb.lidar
    assert client.bake_lidar_material().ok
    before = bake_tuple(client)
    ack = client.lidar.SaveLidarBake(pb.SaveLidarBakeRequest(name=name), timeout=T)
    assert not ack.ok and ack.message
    ack = client.lidar.LoadLidarBake(pb.LoadLidarBakeRequest(name=name), timeout=T)
    assert not ack.ok and ack.message
    assert bake_tuple(client) == before
    written = sorted(tmp_path.rglob("*.lvxb"))
    assert written == [], f"bake files written: {written}"
    for escaped in (outside, outside.with_suffix(".lvxb"), tmp_path.parent / "b.lvxb", tmp_path / "b.lvxb"):
        assert not escaped.exists(), escaped
    assert_serving(client)


@pytest.mark.parametrize("preset", [4, 99, 4294967295])
def test_unknown_preset_index(client, preset):
    before = params_tuple(client)
    ack = client.lidar.SetLidarPreset(client.pb.lidar.SetLidarPresetRequest(preset=preset), timeout=T)
    assert not ack.ok
    assert_number(ack.message, str(preset))
    assert params_tuple(client) == before
    assert_serving(client)


@pytest.mark.parametrize(
    "capture,scope,bad",
    [(4, 0, "4"), (4294967295, 0, "4294967295"), (1, 2, "2"), (0, 99, "99")],
)
def test_unknown_secondary_capture_or_scope(client, capture, scope, bad):
    before = config_tuple(client)
    ack = client.lidar.SetLidarSecondaryCapture(
        client.pb.lidar.SetLidarSecondaryCaptureRequest(sensor=0, capture=capture, scope=scope), timeout=T
    )
    assert not ack.ok
    assert_number(ack.message, bad)
    assert config_tuple(client) == before
    assert_serving(client)


def _current_tick(client) -> int:
    _, call = client.lidar.GetLidarScan.with_call(client.pb.lidar.GetLidarScanRequest(sensor=0), timeout=T)
    return tick_of(call)


AGENT_CASES = {
    "too-few-actions": (dict(actions=[0.0, 0.0]), ["2", "3"]),
    "too-many-actions": (dict(actions=[0.0] * 4), ["4", "3"]),
    "no-actions": (dict(actions=[]), ["0", "3"]),
    "nan-action": (dict(actions=[0.0, NAN, 0.0]), ["vy"]),
    "unknown-agent": (dict(agent_name="agent_5", actions=[0.0] * 3), ["agent_5"]),
    "unknown-agent-name": (dict(agent_name="robot", actions=[0.0] * 3), ["robot"]),
    "group-index-past-end": (
        dict(actions=[0.0] * 3, action_groups=[dict(group_name="arm", actions=[1.0], action_indices=[7])]),
        ["7"],
    ),
    "group-index-negative": (
        dict(actions=[0.0] * 3, action_groups=[dict(group_name="arm", actions=[1.0], action_indices=[-1])]),
        ["-1"],
    ),
    "group-lengths-differ": (
        dict(actions=[0.0] * 3, action_groups=[dict(group_name="arm", actions=[1.0, 2.0], action_indices=[0])]),
        ["arm"],
    ),
}


@pytest.mark.parametrize("case", list(AGENT_CASES))
def test_bad_step(client, case):
    fields, named = AGENT_CASES[case]
    pb = client.pb.agent
    fields = dict(fields)
    groups = [pb.ActionGroupEntry(**g) for g in fields.pop("action_groups", [])]
    before = _current_tick(client)
    r = client.agent.Step(pb.StepRequest(**fields, action_groups=groups), timeout=T)
    assert not r.success
    assert r.message
    for n in named:
        assert_number(r.message, n)
    assert _current_tick(client) == before, "a refused step does not advance the simulation"
    step(client)
    assert _current_tick(client) == before + 1
    assert_serving(client)


def test_unknown_agent_elsewhere(client):
    pb = client.pb
    r = client.agent.ResetAgent(pb.agent.ResetAgentRequest(agent_name="bogus"), timeout=T)
    assert not r.success and "bogus" in r.message
    r = client.mujoco.GetMujocoInfo(pb.mujoco.GetMujocoInfoRequest(robot_name="agent_9"), timeout=T)
    assert not r.success and "agent_9" in r.message
    r = client.mujoco.GetJointState(pb.mujoco.GetJointStateRequest(robot_name="agent_9"), timeout=T)
    assert not r.success and "agent_9" in r.message
    with pytest.raises(grpc.RpcError) as e:
        client.agent.GetAgentSchema(pb.agent.GetAgentSchemaRequest(agent_name="bogus"), timeout=T)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND and "bogus" in e.value.details()
    assert_serving(client)
    assert client.reset_agent().success


def peak_rss(server) -> int:
    """The server's peak resident memory so far (VmHWM), bytes."""
    with open(f"/proc/{server.proc.pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/PID/status")


def assert_too_large(error: grpc.RpcError, what: str, at_least: int, limit_mib: int = 4) -> None:
    """A refusal from the sizing rule: RESOURCE_EXHAUSTED naming the answer (`what`), its
    size (at least `at_least` bytes), the limit, and both settings that raise it."""
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (error.code(), error.details())
    message = error.details()
    assert what in message, message
    size = re.search(r"would take (\d+) bytes, above the (\d+) bytes", message)
    assert size, message
    assert int(size.group(1)) >= at_least and int(size.group(2)) == limit_mib * MIB, message
    assert f"--max-message-mib {limit_mib})" in message, message
    assert "grpc.max_receive_message_length" in message, message


# 64 x 65535 beams: legal, and their angles (two float arrays, 32 MiB) are past the 4 MiB limit.
WIDE = dict(GOOD_CONFIG, channels=64, azimuth_bins=65535)
WIDE_BEAMS = 64 * 65535


def test_beam_angles_past_the_message_limit_are_refused_unbuilt(serve, connect):
    """GetLidarBeamAngles is sized as GetLidarScan is: past --max-message-mib it is refused
    with the size, the limit and the settings, before the angles are computed (the server's
    peak memory does not grow by the answer's 32 MiB, let alone its encoding)."""
    server = serve(showroom_manifest())
    client = connect(server)
    pb = client.pb.lidar
    ack = client.lidar.SetLidarConfig(pb.SetLidarConfigRequest(**WIDE), timeout=T)
    assert ack.ok, ack.message
    assert_serving(client, 0, WIDE_BEAMS)
    server_peak = peak_rss(server)
    e = rpc_error(client.lidar.GetLidarBeamAngles, pb.LidarSensorRequest(sensor=0), timeout=T)
    assert_too_large(e, f"beam angles of lidar sensor 0 ({WIDE_BEAMS} beams", 2 * 4 * WIDE_BEAMS)
    assert "SetLidarConfig" in e.details(), e.details()
    grew = peak_rss(server) - server_peak
    assert grew < 16 * MIB, f"the refused answer raised the server's peak memory by {grew / MIB:.0f} MiB"
    e = rpc_error(client.lidar.GetLidarScan, pb.GetLidarScanRequest(sensor=0), timeout=T)
    assert_too_large(e, f"scan of lidar sensor 0 ({WIDE_BEAMS} beams, 1 array)", 4 * WIDE_BEAMS)
    # Within the limit, the angles come back whole.
    ack = client.lidar.SetLidarConfig(pb.SetLidarConfigRequest(**GOOD_CONFIG), timeout=T)
    assert ack.ok, ack.message
    angles = client.lidar.GetLidarBeamAngles(pb.LidarSensorRequest(sensor=0), timeout=T)
    assert angles.beams == len(angles.azimuth) == len(angles.elevation) == 8 * 100


def test_a_camera_frame_past_the_message_limit_is_refused_before_rendering(serve, connect):
    """A legal 8192 x 8192 colour request (256 MiB of RGBA) answers RESOURCE_EXHAUSTED with the
    answer's size, the limit and the settings, before the step: nothing moves, nothing renders
    (the server's peak memory stays put), and the next step works."""
    server = serve(showroom_manifest())
    client = connect(server)
    pb = client.pb.agent
    before = step(client).observation.frame_number
    server_peak = peak_rss(server)
    huge = pb.GetCameraFrameRequest(name="overview", width=8192, height=8192)
    request = pb.StepRequest(actions=[0.0, 0.0, 0.0], camera_requests=[huge])
    e = rpc_error(client.agent.Step, request, timeout=T)
    assert_too_large(e, "1 camera frame (overview 8192x8192 colour)", 8192 * 8192 * 4)
    assert "width and height" in e.details(), e.details()
    grew = peak_rss(server) - server_peak
    assert grew < 16 * MIB, f"the refused frame raised the server's peak memory by {grew / MIB:.0f} MiB"
    # Many frames that each fit add up: the sum is what is sized.
    small = pb.GetCameraFrameRequest(name="overview", kind=pb.CAMERA_STREAM_DEPTH, width=1024, height=1024)
    e = rpc_error(client.agent.Step, pb.StepRequest(actions=[0.0, 0.0, 0.0], camera_requests=[small] * 3), timeout=T)
    assert_too_large(e, "3 camera frames (overview 1024x1024 depth", 3 * 2 * MIB)
    assert step(client).observation.frame_number == before + 1, "the refused steps moved nothing"


def test_client_that_disconnects_mid_call(serve, connect):
    server = serve(showroom_manifest())
    client = connect(server)
    pb = client.pb.lidar

    # Deadlines that expire before the answer: one before the request is even out, one while
    # the server bakes a fine grid (the client gives up; the server must not care).
    gave_up = (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED)
    for timeout in (1e-4, 0.05):
        try:
            ack = client.lidar.BakeLidarMaterial(
                pb.BakeLidarMaterialRequest(cell_size=0.02, max_dim=1024), timeout=timeout
            )
        except grpc.RpcError as e:
            assert e.code() in gave_up, (e.code(), e.details())
        else:  # a machine fast enough to bake within the deadline
            assert ack.ok, ack.message
        assert_serving(client)
    step(client)  # the loop got past the abandoned bakes

    # Calls in flight when the client closes its channel.
    from luckyrobots.grpc.generated import agent_pb2, agent_pb2_grpc, lidar_pb2, lidar_pb2_grpc

    channel = grpc.insecure_channel(server.target)
    lidar = lidar_pb2_grpc.LidarServiceStub(channel)
    agent = agent_pb2_grpc.AgentServiceStub(channel)
    futures = [
        lidar.BakeLidarMaterial.future(lidar_pb2.BakeLidarMaterialRequest(cell_size=0.05, max_dim=512)),
        agent.Step.future(agent_pb2.StepRequest(actions=[0.0, 0.0, 0.0])),
        lidar.GetLidarScan.future(lidar_pb2.GetLidarScanRequest(sensor=0, want_secondary=True, want_intensity=True)),
    ]
    channel.close()
    for f in futures:
        f.exception(timeout=T)  # finished one way or another (cancelled by the close)
    assert_serving(client)

    # A connection that sends garbage, and one that says nothing, then hang up.
    for payload in (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x04\xff\xff\xff\xff\xff\xff", b""):
        with socket.create_connection(("127.0.0.1", server.port), timeout=T) as s:
            if payload:
                s.sendall(payload)
    assert_serving(client)

    # The loop is still whole: a step, a bake and a scan all work.
    step(client)
    assert client.bake_lidar_material().ok
    assert client.get_lidar_bake_status().valid
    assert len(client.get_lidar_scan().ranges) == SMALL_BEAMS
    assert server.alive()


@pytest.mark.parametrize(
    "observation,named",
    [
        ({"name": "lidar_ranges", "beams": 10**12, "sensor": 0}, ["beams", "1000000000000"]),
        ({"name": "lidar_ranges", "beams": 256 * 65535 + 1, "sensor": 0}, ["beams", str(256 * 65535 + 1)]),
        ({"name": "lidar_ranges", "beams": 100, "sensor": 5}, ["sensor"]),
    ],
    ids=["beams-1e12", "beams-one-past-the-largest-scan", "unknown-sensor"],
)
def test_manifest_the_server_refuses(tmp_path, observation, named):
    manifest = tmp_path / "bad.toml"
    manifest.write_text(showroom_manifest(observations=[{"name": "joint_positions"}, observation]))
    proc = launch(["serve", str(manifest), "--addr", "127.0.0.1:0", "--pace", "lockstep"])
    try:
        out, err = proc.communicate(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("glint serve did not refuse the manifest (it is still running)")
    assert proc.returncode == 1, (proc.returncode, out, err)
    assert "listening" not in out
    assert err.startswith("error: "), err
    for n in named:
        assert n in err, err


def test_address_in_use_is_a_startup_error(tmp_path, serve):
    first = serve(showroom_manifest())
    manifest = tmp_path / "second.toml"
    manifest.write_text(showroom_manifest())
    proc = launch(["serve", str(manifest), "--addr", first.target, "--pace", "lockstep"])
    try:
        out, err = proc.communicate(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("a second server on a port in use did not exit")
    assert proc.returncode == 1, (proc.returncode, out, err)
    assert err.startswith("error: ") and str(first.port) in err, err
    assert first.alive()
