"""glint.gym: the single-world Env passes Gymnasium's env checker and reproduces seeded
episodes; the VectorEnv keeps Gymnasium 1.x's vector API (batched spaces, shapes and dtypes,
the three autoreset modes, per-world episodes, seeded resets)."""

from __future__ import annotations

import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import glint
import glint.gym

REPO = Path(__file__).resolve().parents[2]
SHOWROOM_XML = REPO / "examples" / "showroom" / "showroom.xml"
SHOWROOM_TOML = REPO / "examples" / "showroom" / "showroom.toml"
VLP16_TOML = REPO / "examples" / "python" / "showroom_vlp16.toml"

BINS = 360
BEAMS = 16 * BINS


def manifest(tmp_path: Path, task: str | None = None, extra: str = "", observations: str | None = None) -> Path:
    """The showroom with a 16 x 360 VLP-16 on a 50 Hz runner (a fifth of a revolution per
    step), the joints and ranges observed, and `task` as the [task] table's body."""
    if observations is None:
        observations = (
            '[[observation]]\nname = "joint_positions"\n[[observation]]\nname = "joint_velocities"\n'
            f'[[observation]]\nname = "lidar_ranges"\nbeams = {BEAMS}\n'
        )
    text = f"""scene = "{SHOWROOM_XML}"
[[lidar]]
name = "roof"
attach_site = "lidar"
preset = "velodyne-vlp16"
azimuth_bins = {BINS}
self_ignore = "whole-robot"
[recorder]
lidar_runner_hz = 50.0
{observations}
{extra}
"""
    if task is not None:
        text += f'[task]\nbody = "robot"\n{task}\n'
    path = tmp_path / "env.toml"
    path.write_text(text)
    return path


SHORT_TASK = "goal = [2.0, -3.0]\nepisode_seconds = 0.1\n"  # 5 steps of 20 ms


# -- Env --------------------------------------------------------------------------------------


def test_env_passes_the_env_checker():
    env = glint.gym.Env(VLP16_TOML)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium's advice on unbounded and unnormalised boxes
        check_env(env)


def test_env_made_through_gymnasium_passes_the_checkers_determinism_checks():
    # With a spec (gymnasium.make), check_env also asks that reset(seed=123) twice gives
    # equal observations.
    gymnasium.register(id="GlintShowroomVLP16-v0", entry_point=glint.gym.Env, kwargs={"manifest": str(VLP16_TOML)})
    try:
        env = gymnasium.make("GlintShowroomVLP16-v0")
        assert env.unwrapped.spec is not None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env.unwrapped)
        env.close()
    finally:
        del gymnasium.registry["GlintShowroomVLP16-v0"]


def test_env_spaces_follow_the_manifest():
    env = glint.gym.Env(VLP16_TOML)
    space = env.observation_space
    assert isinstance(space, gymnasium.spaces.Dict)
    assert list(space.spaces) == ["joint_positions", "joint_velocities", "lidar_ranges"]
    for key in ("joint_positions", "joint_velocities"):
        assert space[key].shape == (3,) and space[key].dtype == np.float32
        assert np.all(space[key].low == -np.inf) and np.all(space[key].high == np.inf)
    lidar = space["lidar_ranges"]
    assert lidar.shape == (28800,) and lidar.dtype == np.float32
    assert np.all(lidar.low == -1) and np.all(lidar.high == 100.0)  # the VLP-16's max_range
    assert env.action_space.shape == (3,) and env.action_space.dtype == np.float32
    assert np.array_equal(env.action_space.low, [-2, -2, -2]) and np.array_equal(env.action_space.high, [2, 2, 2])
    assert env.sim.nworld == 1
    with pytest.raises(ValueError, match="render_mode"):
        glint.gym.Env(VLP16_TOML, render_mode="human")


def test_env_observations_are_the_simulations(tmp_path):
    """After reset(seed) and k steps, the observation is what a freshly built simulation with
    that seed observes after the same k steps: beams not cast yet this episode read -1, not
    the last episode's ranges."""
    path = manifest(tmp_path, task=SHORT_TASK.replace("0.1", "5.0"))
    env = glint.gym.Env(path)
    rng = np.random.default_rng(1)
    actions = rng.uniform(-2, 2, size=(8, 3))
    for _ in range(12):  # an episode that has cast every beam
        env.step(rng.uniform(-2, 2, size=3))
    obs, info = env.reset(seed=5)
    assert info == {"time": 0.0}
    assert np.all(obs["lidar_ranges"] == -1)
    assert np.array_equal(obs["joint_positions"], np.zeros(3))
    fresh = glint.Simulation.from_manifest(path, seed=5)
    for k, a in enumerate(actions):
        obs, reward, terminated, truncated, info = env.step(a)
        report = fresh.step(a[None, :].astype(np.float64))
        want = fresh.observe()[0]
        got = np.concatenate([obs["joint_positions"], obs["joint_velocities"], obs["lidar_ranges"]])
        assert np.array_equal(got, want), f"step {k}"
        assert reward == report.reward[0] and info["task_reward"] == reward
        assert info["distance"] == report.distance[0] and info["time"] == pytest.approx(0.02 * (k + 1))
        cast = min(k + 1, 5) * BINS * 16 // 5
        assert np.all(obs["lidar_ranges"][cast:] == -1) and np.any(obs["lidar_ranges"][:cast] >= 0)
        assert obs in env.observation_space


def test_env_episode_ends(tmp_path):
    env = glint.gym.Env(manifest(tmp_path, task=SHORT_TASK))
    env.reset(seed=0)
    flags = [env.step(np.zeros(3))[2:4] for _ in range(5)]
    assert flags[:4] == [(False, False)] * 4
    assert flags[4] == (False, True)  # truncated at episode_seconds
    # A goal within reach terminates on the first step, with the goal reward.
    near = tmp_path / "near"
    near.mkdir()
    env = glint.gym.Env(manifest(near, task="goal = [0.1, 0.0]\ngoal_tolerance = 0.25\ngoal_reward = 10.0\n"))
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(np.zeros(3))
    assert terminated and not truncated and info["reached"]
    assert reward == pytest.approx(10.0, abs=0.01)


def test_step_reports_carry_gymnasiums_flags_and_vector_info(tmp_path):
    """A StepReport's `terminated` (goal reached or unstable), `truncated` (status "ended") and
    `info()` (the vector env's info dict: this report's arrays, each with a new all-true
    mask) and `ended` agree with its status and task arrays, with and without a task."""
    sim = glint.Simulation.from_manifest(manifest(tmp_path, task=SHORT_TASK), nworld=2)
    for k in range(5):
        report = sim.step(np.zeros((2, 3)))
        status = np.array(report.status)
        assert np.array_equal(report.truncated, status == "ended"), k
        assert np.array_equal(report.terminated, report.reached | (status == "unstable")), k
        assert report.ended == np.flatnonzero(report.terminated | report.truncated).tolist(), k
    assert report.truncated.all() and report.has_task and report.ended == [0, 1]  # 5 steps of 20 ms: the episode's length
    info = report.info()
    keys = ["distance", "collided", "reached", "time", "task_reward"]
    assert sorted(info) == sorted(keys + ["_" + k for k in keys])
    # task_reward is a copy: the vector env hands `reward` out as the step's rewards.
    assert info["distance"] is report.distance and info["task_reward"] is not report.reward
    assert np.array_equal(info["task_reward"], report.reward)
    masks = [info["_" + k] for k in keys]
    assert all(m.dtype == np.bool_ and m.shape == (2,) and m.all() for m in masks)
    assert len({id(m) for m in masks}) == len(masks) and info["_time"] is not report.info()["_time"]
    bare = tmp_path / "bare"
    bare.mkdir()
    report = glint.Simulation.from_manifest(manifest(bare), nworld=2).step()
    assert not report.has_task and "distance" not in report.info() and "_reached" in report.info()
    assert not report.terminated.any() and not report.truncated.any()


def test_step_resets_the_worlds_it_is_given_after_the_steps(tmp_path):
    """`step(reset=worlds)` starts those worlds' next episode after the steps, in the same
    call: their observation is a new episode's first (as `reset(worlds=...)` then `observe()`
    gives it), and their report entries read as a new episode's, with no step information in
    `info()` but the time."""
    path = manifest(tmp_path, task=SHORT_TASK)
    sim, twin = (glint.Simulation.from_manifest(path, nworld=3, seed=4) for _ in range(2))
    actions = np.tile([1.0, 0.5, 0.0], (3, 1))
    for s in (sim, twin):
        s.step(actions, n=2)
    out = np.empty_like(sim.observe())
    report = sim.step(actions, out=out, reset=[1])
    twin.step(actions)
    twin.reset(worlds=[1])
    assert np.array_equal(out, twin.observe())
    assert report.restarted == [1] and report.status[1] == "ok" and report.time[1] == 0.0
    assert report.time[0] > 0.0 and np.allclose(report.time, twin.time)
    assert report.reward[1] == 0.0 and not report.terminated[1] and not report.truncated[1]
    info = report.info()
    assert info["_time"].all() and info["_reached"].tolist() == [True, False, True]
    assert info["_task_reward"].tolist() == [True, False, True]
    with pytest.raises(ValueError, match=r"reset = \[\.\., 3, \.\.\]: the simulation has worlds 0 to 2"):
        sim.step(actions, reset=[3])


def test_env_without_a_task_and_with_a_reward_fn(tmp_path):
    path = manifest(tmp_path)
    env = glint.gym.Env(path)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(np.array([1.0, 0.0, 0.0]))
    assert reward == 0.0 and not terminated and not truncated
    assert "distance" not in info and info["reached"] is False

    seen = []

    def reward_fn(obs, action, info):
        seen.append((obs, action, info))
        return float(obs["joint_positions"][0]) + 100.0 * action[0]

    env = glint.gym.Env(path, reward_fn=reward_fn)
    env.reset(seed=0)
    obs, reward, *_ = env.step(np.array([1.0, 0.0, 0.0]))
    assert reward == pytest.approx(float(obs["joint_positions"][0]) + 100.0)
    assert set(seen[0][2]) == {"collided", "reached", "time", "task_reward"}
    with pytest.raises(ValueError, match="give 3 values"):
        env.step(np.zeros(4))


def test_env_with_unlimited_actuators_and_two_lidars(tmp_path):
    scene = tmp_path / "cart.xml"
    scene.write_text(
        """<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="10 10 0.1"/>
    <geom name="wall" type="box" pos="4 0 1" size="0.1 4 1"/>
    <body name="cart" pos="0 0 0.5">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <geom type="box" size="0.2 0.2 0.2" mass="1"/>
      <site name="front" pos="0.25 0 0.3"/>
      <site name="top" pos="0 0 0.3"/>
    </body>
  </worldbody>
  <actuator><motor name="push" joint="slide"/></actuator>
</mujoco>"""
    )
    path = tmp_path / "cart.toml"
    path.write_text(
        f"""scene = "{scene}"
[[lidar]]
attach_site = "front"
channels = 4
azimuth_bins = 90
max_range = 20.0
rotation_hz = 0.0
[[lidar]]
attach_site = "top"
channels = 2
azimuth_bins = 45
max_range = 8.0
rotation_hz = 0.0
[recorder]
lidar_runner_hz = 50.0
[[observation]]
name = "joint_positions"
[[observation]]
name = "lidar_ranges"
beams = 360
sensor = 0
[[observation]]
name = "lidar_ranges"
beams = 90
sensor = 1
[[observation]]
name = "lidar_ranges"
sensor = 1
"""
    )
    with pytest.warns(glint.GlintWarning):  # the component without beams emits nothing, once
        env = glint.gym.Env(path)
    space = env.observation_space
    assert list(space.spaces) == ["joint_positions", "lidar_ranges", "lidar_ranges_1"]
    assert space["lidar_ranges"].shape == (360,) and space["lidar_ranges"].high.max() == 20.0
    assert space["lidar_ranges_1"].shape == (90,) and space["lidar_ranges_1"].high.max() == 8.0
    assert env.action_space.shape == (1,)
    assert env.action_space.low[0] == -np.inf and env.action_space.high[0] == np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env)
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(np.array([50.0]))
    # A frozen pattern (rotation_hz = 0) casts every beam each tick; the wall is ahead.
    assert np.all(obs["lidar_ranges"] != -1) or np.any(obs["lidar_ranges"] > 0)
    assert np.any((obs["lidar_ranges_1"] > 0) & (obs["lidar_ranges_1"] < 8.0))
    assert obs["joint_positions"][0] > 0


# -- VectorEnv --------------------------------------------------------------------------------


def check_batch(envs, obs, n):
    assert set(obs) == {"joint_positions", "joint_velocities", "lidar_ranges"}
    assert obs["joint_positions"].shape == (n, 3) and obs["joint_velocities"].shape == (n, 3)
    assert obs["lidar_ranges"].shape == (n, BEAMS)
    for value in obs.values():
        assert value.dtype == np.float32
    assert obs in envs.observation_space


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_vector_env_api_under_each_autoreset_mode(tmp_path, mode):
    n = 4
    envs = glint.gym.VectorEnv(manifest(tmp_path, task=SHORT_TASK), num_envs=n, autoreset_mode=mode)
    assert isinstance(envs, gymnasium.vector.VectorEnv)
    assert envs.metadata["autoreset_mode"] == mode and envs.num_envs == n and envs.sim.nworld == n
    assert envs.single_observation_space["lidar_ranges"].shape == (BEAMS,)
    assert envs.observation_space["lidar_ranges"].shape == (n, BEAMS)
    assert envs.observation_space["joint_positions"].shape == (n, 3)
    assert envs.single_action_space.shape == (3,) and envs.action_space.shape == (n, 3)
    assert envs.action_space.dtype == np.float32

    obs, info = envs.reset(seed=3)
    check_batch(envs, obs, n)
    assert np.all(obs["lidar_ranges"] == -1)
    actions = np.tile(np.array([1.0, -1.0, 0.5], dtype=np.float32), (n, 1))
    for step in range(5):
        obs, rewards, terminated, truncated, info = envs.step(actions)
        check_batch(envs, obs, n)
        assert rewards.shape == (n,) and rewards.dtype == np.float64
        assert terminated.shape == truncated.shape == (n,)
        assert terminated.dtype == truncated.dtype == np.bool_
        for key in ("distance", "collided", "reached", "time", "task_reward"):
            assert info[key].shape == (n,) and info["_" + key].dtype == np.bool_
        assert np.array_equal(rewards, info["task_reward"])
    # The fifth step ends every episode (episode_seconds = 0.1).
    assert truncated.all() and not terminated.any()
    if mode == AutoresetMode.SAME_STEP:
        # Reset in the same step: the observation is the new episode's, the old one's last is
        # in the info.
        assert np.all(obs["lidar_ranges"] == -1) and np.all(obs["joint_positions"] == 0)
        assert np.array_equal(info["time"], np.zeros(n))
        assert info["_final_obs"].all() and info["_final_info"].all()
        final = info["final_obs"]
        assert final.dtype == object and final.shape == (n,)
        assert final[0]["lidar_ranges"].shape == (BEAMS,) and np.any(final[0]["lidar_ranges"] >= 0)
        assert final[0]["joint_positions"][0] > 0
        assert np.allclose(info["final_info"]["time"], 0.1)
        obs, rewards, terminated, truncated, info = envs.step(actions)
        assert not truncated.any() and np.allclose(info["time"], 0.02)
    elif mode == AutoresetMode.NEXT_STEP:
        assert np.allclose(info["time"], 0.1) and "final_obs" not in info
        # The next step resets the ended worlds instead: their first observation, reward 0.
        obs, rewards, terminated, truncated, info = envs.step(actions)
        assert np.all(rewards == 0) and not terminated.any() and not truncated.any()
        assert np.all(obs["lidar_ranges"] == -1) and np.all(obs["joint_positions"] == 0)
        assert np.array_equal(info["time"], np.zeros(n)) and not info["_distance"].any()
        obs, rewards, terminated, truncated, info = envs.step(actions)
        assert np.allclose(info["time"], 0.02) and np.all(rewards != 0)
    else:
        with pytest.raises(RuntimeError, match="reset_mask"):
            envs.step(actions)
        mask = np.array([True, False, True, False])
        obs, _ = envs.reset(options={"reset_mask": mask})
        with pytest.raises(RuntimeError, match=r"\[1, 3\]"):
            envs.step(actions)
        obs, _ = envs.reset(options={"reset_mask": ~mask})
        obs, rewards, terminated, truncated, info = envs.step(actions)
        assert np.allclose(info["time"], 0.02)


def test_vector_env_runs_per_world_episodes(tmp_path):
    n = 3
    envs = glint.gym.VectorEnv(manifest(tmp_path, task=SHORT_TASK), num_envs=n)
    envs.reset(seed=0)
    actions = np.zeros((n, 3))
    actions[:, 0] = 1.0
    envs.step(actions)
    envs.step(actions)
    # World 1 starts over; the others keep their episodes.
    obs, _ = envs.reset(options={"reset_mask": np.array([False, True, False])})
    assert np.allclose(envs.sim.time, [0.04, 0.0, 0.04])
    assert np.all(obs["lidar_ranges"][1] == -1) and np.any(obs["lidar_ranges"][0] >= 0)
    assert obs["joint_positions"][1, 0] == 0 and obs["joint_positions"][0, 0] > 0
    ended_at = {}
    for step in range(3, 10):
        obs, rewards, terminated, truncated, info = envs.step(actions)
        for w in np.flatnonzero(truncated):
            ended_at.setdefault(int(w), step)
    assert ended_at == {0: 5, 2: 5, 1: 7}  # each world after its own five steps
    # NEXT_STEP: worlds 0 and 2 restarted at step 6, world 1 at step 8.
    assert np.allclose(info["time"], [0.06, 0.02, 0.06])


def test_vector_env_seeded_resets_reproduce(tmp_path):
    path = manifest(tmp_path, task=SHORT_TASK, extra="[reset.joints]\nbase_x = 0.4\nbase_yaw = 1.0\n")
    envs = glint.gym.VectorEnv(path, num_envs=4)
    actions = np.random.default_rng(0).uniform(-2, 2, size=(8, 4, 3))

    def run(seed):
        obs, _ = envs.reset(seed=seed)
        first = {k: v.copy() for k, v in obs.items()}
        trace = [first]
        for a in actions:
            obs, rewards, terminated, truncated, info = envs.step(a)
            trace.append({k: v.copy() for k, v in obs.items()} | {"rewards": rewards})
        return trace

    a, b, c = run(7), run(7), run(8)
    for x, y in zip(a, b):
        for key in x:
            assert np.array_equal(x[key], y[key]), key
    assert not np.array_equal(a[0]["joint_positions"], c[0]["joint_positions"])
    assert len({tuple(r) for r in a[0]["joint_positions"]}) == 4  # every world starts apart
    # After the autoreset (step 6) the new episodes are reproduced too.
    assert np.array_equal(a[7]["joint_positions"], b[7]["joint_positions"])
    assert not np.array_equal(a[7]["joint_positions"], a[1]["joint_positions"])
    with pytest.raises(ValueError, match="share one run seed"):
        envs.reset(seed=[1, 2, 3, 4])
    obs, _ = envs.reset(seed=[None] * 4)
    check_batch(envs, obs, 4)


def test_seeds_out_of_range_are_refused_with_the_range():
    """Every seed of the environments meets the module's one rule, before Gymnasium's own
    seeding sees it: a negative or too large seed names the argument and the range."""
    range_ = "give an integer from 0 to 18446744073709551615"
    with pytest.raises(glint.SettingError, match=f"seed = -1: {range_}"):
        glint.gym.Env(VLP16_TOML, seed=-1)
    with pytest.raises(glint.SettingError, match=f"seed = {2**64}: {range_}"):
        glint.gym.VectorEnv(VLP16_TOML, num_envs=2, seed=2**64)
    env = glint.gym.Env(VLP16_TOML)
    envs = glint.gym.VectorEnv(VLP16_TOML, num_envs=2)
    for reset in (env.reset, envs.reset):
        for seed in (-1, 2**64):
            with pytest.raises(glint.SettingError, match=f"seed = {seed}: {range_}"):
                reset(seed=seed)
    with pytest.raises(TypeError, match=f"seed = 1.5: {range_}"):
        env.reset(seed=1.5)
    obs, _ = env.reset(seed=np.int64(3))  # a numpy integer is a seed for glint and Gymnasium
    again, _ = env.reset(seed=3)
    assert np.array_equal(obs["joint_positions"], again["joint_positions"])


def test_vector_env_observation_buffers(tmp_path):
    path = manifest(tmp_path, task=SHORT_TASK.replace("0.1", "5.0"))
    actions = np.zeros((2, 3))
    actions[:, 2] = 2.0
    envs = glint.gym.VectorEnv(path, num_envs=2)
    envs.reset(seed=0)
    kept = []
    for _ in range(6):
        obs, *_ = envs.step(actions)
        kept.append((obs, {k: v.copy() for k, v in obs.items()}))
    for obs, copy in kept:  # observations kept are never written again
        for key in obs:
            assert np.array_equal(obs[key], copy[key])
    for i in range(len(kept)):
        for j in range(i + 1, len(kept)):
            assert not np.shares_memory(kept[i][0]["lidar_ranges"], kept[j][0]["lidar_ranges"])
    # The arrays of one observation are views into one buffer; DLPack hands them on as is.
    obs = kept[-1][0]
    assert np.shares_memory(np.from_dlpack(obs["lidar_ranges"]), obs["lidar_ranges"])
    assert obs["lidar_ranges"].base is obs["joint_positions"].base

    shared = glint.gym.VectorEnv(path, num_envs=2, copy=False)
    shared.reset(seed=0)
    first, *_ = shared.step(actions)
    second, *_ = shared.step(actions)
    assert np.shares_memory(first["lidar_ranges"], second["lidar_ranges"])
    assert np.array_equal(second["lidar_ranges"], kept[1][1]["lidar_ranges"])


def test_vector_env_reward_fn_and_gymnasium_wrappers(tmp_path):
    path = manifest(tmp_path, task=SHORT_TASK)

    def reward_fn(obs, actions, info):
        assert obs["joint_positions"].shape == (3, 3) and actions.shape == (3, 3)
        return obs["joint_positions"][:, 0] * 10.0

    envs = glint.gym.VectorEnv(path, num_envs=3, reward_fn=reward_fn)
    envs.reset(seed=0)
    actions = np.zeros((3, 3))
    actions[:, 0] = [1.0, 0.0, -1.0]
    obs, rewards, *_ = envs.step(actions)
    assert rewards.dtype == np.float64 and np.allclose(rewards, obs["joint_positions"][:, 0] * 10.0)
    assert rewards[0] > 0 and rewards[1] == 0 and rewards[2] < 0

    stats = gymnasium.wrappers.vector.RecordEpisodeStatistics(glint.gym.VectorEnv(path, num_envs=3))
    stats.reset(seed=0)
    for _ in range(5):
        obs, rewards, terminated, truncated, info = stats.step(stats.action_space.sample())
    assert info["_episode"].all() and np.array_equal(info["episode"]["l"], [5, 5, 5])
    with pytest.raises(ValueError, match="num_envs"):
        glint.gym.VectorEnv(path, num_envs=0)
