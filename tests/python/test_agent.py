"""The agent step loop: LuckyEnv over a lidar_ranges observation in lockstep pace, the action
vector's clamping and layout, agents as worlds, and Step refused outside lockstep pace."""

from __future__ import annotations

import time

import numpy as np
import pytest

from conftest import (
    RPC_TIMEOUT_S,
    SHOWROOM_ACTUATORS,
    SHOWROOM_NQ,
    SMALL_BEAMS,
    showroom_manifest,
    step,
    tick_of,
)

T = RPC_TIMEOUT_S
HANG_GUARD_S = 120.0
EXTRA_BEAMS = 64  # the observation asks for more beams than the sensor has: -1 past the scan


def lidar_observation_manifest(beams: int) -> str:
    return showroom_manifest(
        observations=[
            {"name": "joint_positions"},
            {"name": "lidar_ranges", "beams": beams, "sensor": 0},
        ]
    )


def live_scan(client):
    r, call = client.lidar.GetLidarScan.with_call(client.pb.lidar.GetLidarScanRequest(sensor=0), timeout=T)
    return np.asarray(r.ranges, dtype=np.float32), tick_of(call)


def test_lucky_env_observation_is_the_live_scan(serve, connect):
    from luckyrobots import LuckyEnv

    beams = SMALL_BEAMS + EXTRA_BEAMS
    server = serve(lidar_observation_manifest(beams))
    c = connect(server)
    # LuckyEnv's own wait_for_server never succeeds (it polls an untouched stub), so it costs
    # `timeout` seconds; keep it small.
    env = LuckyEnv(port=server.port, timeout=2.0)
    try:
        assert env.observation_space.shape == (SHOWROOM_NQ + beams,)
        assert env.action_space.shape == (len(SHOWROOM_ACTUATORS),)

        obs, info = env.reset()
        assert obs.shape == (SHOWROOM_NQ + beams,)
        ranges, tick = live_scan(c)
        assert tick == 1  # reset() is ResetAgent then one Step with zeros
        assert len(ranges) == SMALL_BEAMS
        np.testing.assert_array_equal(obs[SHOWROOM_NQ : SHOWROOM_NQ + SMALL_BEAMS], ranges)
        np.testing.assert_array_equal(obs[SHOWROOM_NQ + SMALL_BEAMS :], np.full(EXTRA_BEAMS, -1.0, np.float32))
        first_frame = info["frame_number"]

        hits = 0
        for k in range(1, 8):
            obs, reward, terminated, truncated, info = env.step(np.array([0.4, -0.2, 0.3], dtype=np.float32))
            assert not terminated and not truncated
            assert info["frame_number"] == first_frame + k
            ranges, tick = live_scan(c)
            assert tick == 1 + k
            np.testing.assert_array_equal(obs[SHOWROOM_NQ : SHOWROOM_NQ + SMALL_BEAMS], ranges)
            assert np.all(obs[SHOWROOM_NQ + SMALL_BEAMS :] == -1.0)
            hits = int(np.count_nonzero(ranges > 0))
            # The joint positions are those GetJointState reports.
            js = c.get_joint_state(robot_name="agent_0")
            assert js.success, js.message
            np.testing.assert_allclose(obs[:SHOWROOM_NQ], np.asarray(js.state.positions, np.float32))
        # An observation that reads a lidar makes it fire on every step: after more than a
        # revolution in a closed room, most beams hit.
        assert hits > SMALL_BEAMS // 2
        assert obs[0] > 0.0  # the robot moved along +x

        # A second episode starts again from the initial state.
        obs, info = env.reset()
        np.testing.assert_allclose(obs[:SHOWROOM_NQ], np.zeros(SHOWROOM_NQ), atol=0.05)
        ranges, _ = live_scan(c)
        np.testing.assert_array_equal(obs[SHOWROOM_NQ : SHOWROOM_NQ + SMALL_BEAMS], ranges)
    finally:
        env.close()


def test_observation_cut_to_fewer_beams(serve, connect):
    """An observation narrower than the sensor holds the scan's first `beams` ranges."""
    beams = 1000
    server = serve(lidar_observation_manifest(beams))
    c = connect(server)
    schema = c.get_agent_schema().schema
    assert schema.observation_size == SHOWROOM_NQ + beams == len(schema.observation_names)
    for _ in range(6):
        r = step(c, (0.2, 0.0, 0.0))
    ranges, _ = live_scan(c)
    obs = np.asarray(r.observation.observations, np.float32)
    assert len(obs) == SHOWROOM_NQ + beams
    np.testing.assert_array_equal(obs[SHOWROOM_NQ:], ranges[:beams])


def test_schema_info_and_action_clamping(serve, connect):
    server = serve(
        showroom_manifest(observations=[{"name": "joint_positions"}, {"name": "joint_velocities"}]),
        extra=["--worlds", "2"],
    )
    c = connect(server)
    schema = c.get_agent_schema().schema
    assert schema.agent_name == "agent_0"
    assert list(schema.action_names) == SHOWROOM_ACTUATORS
    assert schema.action_size == 3
    assert schema.observation_size == len(schema.observation_names) == 2 * SHOWROOM_NQ
    assert c.get_agent_schema(agent_name="agent_1").schema.agent_name == "agent_1"

    info = c.get_mujoco_info(robot_name="agent_0")
    assert info.success, info.message
    assert (info.nq, info.nv, info.nu) == (3, 3, 3)
    assert list(info.actuator_names) == SHOWROOM_ACTUATORS
    assert list(info.joint_names) == ["base_x", "base_y", "base_yaw"]

    # Actions are clamped to each actuator's ctrlrange (-2 to 2); the frame reports the
    # controls applied.
    r = step(c, (5.0, -7.5, 0.5))
    assert list(r.observation.actions) == pytest.approx([2.0, -2.0, 0.5])
    assert r.observation.agent_name == "agent_0"
    assert len(r.observation.observations) == 2 * SHOWROOM_NQ

    # agent_1 is world 1, stepped on its own.
    r1 = step(c, (-1.0, 0.0, 0.0), agent_name="agent_1")
    assert r1.observation.agent_name == "agent_1"
    assert list(r1.observation.actions) == pytest.approx([-1.0, 0.0, 0.0])
    for _ in range(20):
        r = step(c, (1.0, 0.0, 0.0))
        r1 = step(c, (-1.0, 0.0, 0.0), agent_name="agent_1")
    assert r.observation.observations[0] > 0.0 > r1.observation.observations[0]

    # Inline action groups are written over the action vector at their indices; with no
    # action vector they start from the controls in force.
    g = c.pb.agent.ActionGroupEntry
    r = c.agent.Step(
        c.pb.agent.StepRequest(
            actions=[0.1, 0.2, 0.3], action_groups=[g(group_name="turn", actions=[1.5, -9.0], action_indices=[2, 0])]
        ),
        timeout=T,
    )
    assert r.success, r.message
    assert list(r.observation.actions) == pytest.approx([-2.0, 0.2, 1.5])
    r = c.agent.Step(
        c.pb.agent.StepRequest(actions=[], action_groups=[g(group_name="side", actions=[0.7], action_indices=[1])]),
        timeout=T,
    )
    assert r.success, r.message
    assert list(r.observation.actions) == pytest.approx([-2.0, 0.7, 1.5])

    # Camera requests are answered with frames (tests/python/test_cameras_grpc.py); one naming
    # a camera the scene lacks is refused, naming the cameras it has.
    cam = c.pb.agent.GetCameraFrameRequest(name="front", width=64, height=48)
    r = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0] * 3, camera_requests=[cam]), timeout=T)
    assert not r.success and "overview" in r.message, r.message
    cam = c.pb.agent.GetCameraFrameRequest(name="overview", width=64, height=48)
    r = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0] * 3, camera_requests=[cam]), timeout=T)
    assert r.success and len(r.camera_frames) == 1, r.message

    # An empty name is agent_0.
    r = c.mujoco.GetMujocoInfo(c.pb.mujoco.GetMujocoInfoRequest(robot_name=""), timeout=T)
    assert r.success and r.nu == 3
    r = c.agent.ResetAgent(c.pb.agent.ResetAgentRequest(agent_name=""), timeout=T)
    assert r.success and "agent_0" in r.message
    # A simulation contract is accepted, and the reset says which of its fields it ignores.
    contract = c.pb.agent.SimulationContract(friction_range=[0.5, 1.0], joint_position_noise=0.01)
    r = c.agent.ResetAgent(c.pb.agent.ResetAgentRequest(agent_name="agent_0", simulation_contract=contract), timeout=T)
    assert r.success, r.message
    assert "friction_range" in r.message and "joint_position_noise" in r.message
    for _ in range(20):
        r = step(c, (1.0, 0.0, 0.0))

    # ResetAgent resets only its own world.
    ack = c.reset_agent(agent_name="agent_1")
    assert ack.success, ack.message
    x1 = c.get_joint_state(robot_name="agent_1").state.positions[0]
    x0 = c.get_joint_state(robot_name="agent_0").state.positions[0]
    assert x1 == pytest.approx(0.0, abs=1e-6) and x0 > 0.0


@pytest.mark.parametrize("pace", ["realtime", "free"])
def test_step_outside_lockstep_names_the_pace(serve, connect, pace):
    server = serve(showroom_manifest(), pace=pace)
    c = connect(server)
    r = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0, 0.0, 0.0]), timeout=T)
    assert not r.success
    assert pace in r.message
    assert "lockstep" in r.message
    # The client's own step() raises on success=false.
    with pytest.raises(RuntimeError):
        c.step(actions=[0.0, 0.0, 0.0])
    # The loop advances on its own clock: scans come from ever later ticks (a hang guard
    # bounds the wait, no sleep).
    _, first = live_scan(c)
    deadline = time.monotonic() + HANG_GUARD_S
    tick = first
    while tick <= first and time.monotonic() < deadline:
        _, tick = live_scan(c)
    assert tick > first, f"no tick completed within {HANG_GUARD_S} s"
    assert c.get_lidar_beam_count() == SMALL_BEAMS
