"""Gymnasium 1.x environments over a glint scene manifest.

:class:`Env` is one world; :class:`VectorEnv` is ``num_envs`` worlds of one
:class:`glint.Simulation`, stepped together by glint's thread pool (physics and lidar) in a
single call that releases the GIL:

    >>> import numpy as np, glint.gym
    >>> envs = glint.gym.VectorEnv("examples/python/showroom_vlp16.toml", num_envs=16, seed=0)
    >>> obs, info = envs.reset(seed=0)
    >>> obs["lidar_ranges"].shape, obs["lidar_ranges"].dtype
    ((16, 28800), dtype('float32'))
    >>> obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())

**What the manifest decides.** The observation is a :class:`gymnasium.spaces.Dict` with one
entry per ``[[observation]]`` component: ``"joint_positions"`` (MuJoCo's ``qpos``) and
``"joint_velocities"`` (``qvel``), unbounded float32 boxes, and ``"lidar_ranges"`` (sensor 0;
``"lidar_ranges_<sensor>"`` for sensor ``<sensor>`` > 0), a float32 box of ``beams`` values from
``-1`` (no return, a beam past the scan, or a beam not cast yet this episode) to the sensor's
``max_range`` (unbounded for a ``material = true`` component, whose noise may reach past it).
A component whose name repeats gets its component index appended (``"lidar_ranges_0_3"``); a
``lidar_ranges`` component without a positive ``beams`` emits nothing and is left out. Actions
are the actuators in MuJoCo's order (``sim.actuator_names``), a float32 box bounded by each
actuator's ``ctrlrange`` (unbounded where the actuator is not limited; MuJoCo clamps the
control). One environment step is one tick of the manifest's lidar runner
(``[recorder] lidar_runner_hz``): ``1 / lidar_runner_hz / timestep`` physics steps, then every
lidar casts the slice of its pattern that tick covers (a 10 Hz unit on a 50 Hz runner a fifth
of its revolution), and the observation keeps the newest range of every beam.

**Reward and episode ends.** With a ``[task]`` table the reward is glint's built-in one
(progress towards the goal times ``progress_weight``, ``goal_reward`` on reaching it, minus
``collision_penalty`` per step the task body's tree touches another body); ``terminated`` is
true when the goal is reached or MuJoCo found the world unstable, and ``truncated`` when the
episode has run ``episode_seconds``. Without a ``[task]`` the reward is 0 and episodes end only
when the world goes unstable (wrap :class:`Env` in ``gymnasium.wrappers.TimeLimit`` for a time
limit). Either way a ``reward_fn`` replaces the reward: ``reward_fn(obs, action, info)``, where
``info["task_reward"]`` holds the built-in reward. The step's ``info`` has ``distance`` (metres
from the task body to the goal; left out without a task), ``collided``, ``reached``, ``time``
(simulated seconds since the episode began) and ``task_reward``.

**Seeds.** ``reset(seed=s)`` makes ``s`` the simulation's run seed and numbers the episodes from
0 again, so it reproduces the same episodes (the manifest's ``[reset]`` draws and the return
model's noise); ``reset()`` starts the next episode of the same run.

**Zero-copy hand-off to torch and JAX.** Observations are numpy arrays, which export DLPack
capsules; torch and JAX take them without a copy (glint itself needs neither)::

    import torch, jax
    ranges = torch.from_dlpack(obs["lidar_ranges"])        # shares memory with the numpy array
    ranges = jax.dlpack.from_dlpack(obs["lidar_ranges"])   # (or jax.numpy.from_dlpack)

The arrays of one observation are views into one ``(num_envs, size)`` float32 buffer that
:meth:`glint.Simulation.observe` fills in place (``"lidar_ranges"`` is a strided view of it: its
rows are ``size`` floats apart). By default each step fills a buffer that no array you still
hold refers to (a new one, or one of the last few whose arrays have all been dropped), so an
observation you keep, or a tensor made from it, stays as it was. :class:`VectorEnv` with
``copy=False`` fills the same buffer every step instead, and each step overwrites the arrays
it returned before, and the tensors made from them by DLPack.
"""

from __future__ import annotations

import math
import operator
import os
import platform
import sys
from typing import Any, Callable, Optional, Sequence

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
    from gymnasium.vector import AutoresetMode
    from gymnasium.vector.utils import batch_space
except ImportError as _error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "glint.gym needs gymnasium 1.x: `pip install 'gymnasium>=1.0'` (or `pip install glint[gym]`)"
    ) from _error

import glint

__all__ = ["Env", "VectorEnv", "RewardFn"]

RewardFn = Callable[[dict, np.ndarray, dict], Any]
"""``reward_fn(obs, action, info)``: the reward of a step. :class:`Env` passes one world's
observation dict, action and info and expects a float; :class:`VectorEnv` passes the batched
ones (arrays with a leading ``num_envs`` axis) and expects ``num_envs`` rewards."""

# Whether reference counts say when a buffer is free to reuse (CPython), see _Core.fresh_buffer.
_REFCOUNTS = platform.python_implementation() == "CPython"


class _Component:
    """One observation component: its key in the observation dict, where its values sit in
    the observation vector, its space, and for lidar components the sensor it reads."""

    __slots__ = ("key", "offset", "length", "space", "sensor")

    def __init__(self, key: str, offset: int, length: int, space: spaces.Box, sensor: Optional[int]):
        self.key = key
        self.offset = offset
        self.length = length
        self.space = space
        self.sensor = sensor


class _Core:
    """What :class:`Env` and :class:`VectorEnv` share: the simulation, the observation layout
    and spaces, the action space, and the observation buffer's views. (A reset world's lidar
    beams read ``-1`` until its new episode casts them, so seeded resets reproduce their
    observations exactly.)
    """

    def __init__(self, manifest: str | os.PathLike, nworld: int, seed: Optional[int]):
        manifest = os.fspath(manifest)
        self.manifest = manifest
        self.sim = glint.Simulation.from_manifest(manifest, nworld=nworld, seed=seed)
        self.nworld = nworld
        self.size = len(self.sim.observation_names)
        components: list[_Component] = []
        used: set[str] = set()
        for index, (name, offset, length, material) in enumerate(self.sim.observation_components):
            if length == 0:
                continue  # a lidar_ranges component without beams emits nothing
            sensor: Optional[int] = None
            if name.startswith("lidar_ranges/"):
                sensor = int(name.split("/", 1)[1])
                key = "lidar_ranges" if sensor == 0 else f"lidar_ranges_{sensor}"
                # The return model's noise may carry a range past max_range.
                high = math.inf if material else float(self.sim.lidars[sensor].config["max_range"])
                space = spaces.Box(low=-1.0, high=high, shape=(length,), dtype=np.float32)
            else:
                key = name
                space = spaces.Box(low=-np.inf, high=np.inf, shape=(length,), dtype=np.float32)
            if key in used:
                key = f"{key}_{index}"
            used.add(key)
            components.append(_Component(key, offset, length, space, sensor))
        # gymnasium's Dict orders its keys; observations follow the same order.
        self.observation_space = spaces.Dict({c.key: c.space for c in components})
        order = list(self.observation_space.spaces.keys())
        self.components = sorted(components, key=lambda c: order.index(c.key))
        ctrl = np.asarray(self.sim.ctrlrange, dtype=np.float64)
        self.nu = self.sim.nu
        self.action_space = spaces.Box(
            low=ctrl[:, 0].astype(np.float32), high=ctrl[:, 1].astype(np.float32), shape=(self.nu,), dtype=np.float32
        )
        self.has_task = self.sim.task is not None
        self.buffer = np.empty((nworld, self.size), dtype=np.float32)
        self._columns = [(c.key, np.s_[:, c.offset : c.offset + c.length]) for c in self.components]
        self._buffer_views = {key: self.buffer[columns] for key, columns in self._columns}
        self._pool: list[np.ndarray] = []

    # -- observations -------------------------------------------------------------------------

    def fresh_buffer(self) -> np.ndarray:
        """An observation buffer no array outside this object refers to: one of the last few
        handed out that every view of has since been dropped (CPython's reference counts
        tell), else a new one. Observations a caller keeps are never written again."""
        for buf in reversed(self._pool):  # the newest first: the likeliest to be in cache
            # Three references: the pool's, the loop's and getrefcount's argument. Every view
            # of a buffer (and every DLPack export of a view) holds one more.
            if sys.getrefcount(buf) <= 3:
                return buf
        buf = np.empty((self.nworld, self.size), dtype=np.float32)
        if _REFCOUNTS:
            self._pool.append(buf)
            if len(self._pool) > 3:
                self._pool.pop(0)
        return buf

    def observe(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Every world's observation vector, written into `out` (a fresh buffer when None)."""
        if out is None:
            out = self.fresh_buffer()
        self.sim.observe(out=out)
        return out

    def split(self, buf: np.ndarray) -> dict:
        """The observation dict of `buf` (views, no copy): one ``(nworld, length)`` array per
        component. The views of :attr:`buffer` are made once."""
        if buf is self.buffer:
            return dict(self._buffer_views)
        return {key: buf[columns] for key, columns in self._columns}

    def reset(self, seed: Optional[int], worlds: Optional[Sequence[int]]) -> None:
        """Starts new episodes in `worlds` (None: all). The simulation checks `seed` (an integer
        from 0 to 2**64 - 1), as every glint call taking a seed does."""
        if worlds is None:
            self.sim.reset(seed=seed)
        else:
            self.sim.reset(seed=seed, worlds=[int(w) for w in worlds])


class Env(gymnasium.Env):
    """One world of a glint manifest as a :class:`gymnasium.Env`.

    Args:
        manifest: the scene manifest (its ``[[observation]]`` lays the observation out, its
            ``[task]`` gives the reward and the episode's ends; see :mod:`glint.gym`).
        seed: the simulation's run seed (default: the manifest's). ``reset(seed=...)`` sets it
            again.
        reward_fn: ``reward_fn(obs, action, info) -> float`` replaces the built-in reward
            (``info["task_reward"]`` carries it).
        render_mode: only ``None``: glint renders nothing through this environment (record
            scans with ``env.sim.record(...)``).

    ``env.sim`` is the underlying :class:`glint.Simulation` (one world), for scans, rays,
    return parameters and recording.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        manifest: str | os.PathLike,
        seed: Optional[int] = None,
        reward_fn: Optional[RewardFn] = None,
        render_mode: Optional[str] = None,
    ):
        if render_mode is not None:
            raise ValueError(f"render_mode = {render_mode!r}: glint.gym.Env renders nothing; give None")
        self.render_mode = None
        self._core = _Core(manifest, 1, seed)
        self.observation_space = self._core.observation_space
        self.action_space = self._core.action_space
        self.reward_fn = reward_fn
        self._action = np.zeros((1, self._core.nu), dtype=np.float64)

    @property
    def sim(self) -> "glint.Simulation":
        """The :class:`glint.Simulation` this environment steps (one world)."""
        return self._core.sim

    def _obs(self) -> dict:
        buf = self._core.observe()
        return {key: value[0] for key, value in self._core.split(buf).items()}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> tuple[dict, dict]:
        """Starts a new episode and returns its first observation and an info dict (``time``).
        With `seed`, the simulation's run seed becomes `seed` and episodes are numbered from 0
        again, so the same seed gives the same episode; `options` is accepted and unused."""
        self._core.reset(seed, None)  # glint's check of the seed comes before Gymnasium's seeding
        super().reset(seed=None if seed is None else operator.index(seed))
        return self._obs(), {"time": float(self._core.sim.time[0])}

    def step(self, action) -> tuple[dict, float, bool, bool, dict]:
        """Applies `action` (``nu`` values, one per actuator) for one lidar tick and returns
        ``(obs, reward, terminated, truncated, info)``; see :mod:`glint.gym` for their
        meaning."""
        a = np.asarray(action, dtype=np.float64)
        if a.size != self._core.nu:
            raise ValueError(
                f"action has shape {a.shape}: give {self._core.nu} values, one per actuator "
                f"({', '.join(self._core.sim.actuator_names)})"
            )
        self._action[0] = a.reshape(-1)
        report = self._core.sim.step(self._action)
        obs = self._obs()
        terminated, truncated = bool(report.terminated[0]), bool(report.truncated[0])
        info = report.world_info(0)
        reward = float(self.reward_fn(obs, a, info)) if self.reward_fn is not None else info["task_reward"]
        return obs, reward, terminated, truncated, info

    def render(self) -> None:
        """Renders nothing (``render_mode`` is always None)."""
        return None

    def close(self) -> None:
        """Nothing to release: the simulation is freed with the environment."""


class VectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` worlds of one glint simulation as a :class:`gymnasium.vector.VectorEnv`.

    Every world runs its own episodes; ``step`` advances all of them in one call into glint
    (physics and lidars on glint's thread pool, the GIL released) and fills one observation
    buffer in place.

    Args:
        manifest: the scene manifest (see :mod:`glint.gym`).
        num_envs: the number of worlds.
        seed: the simulation's run seed (default: the manifest's).
        reward_fn: ``reward_fn(obs, actions, info)`` on the batch (arrays with a leading
            ``num_envs`` axis) returning ``num_envs`` rewards; replaces the built-in reward
            (``info["task_reward"]``).
        autoreset_mode: Gymnasium's :class:`~gymnasium.vector.AutoresetMode` (also given as
            its string value). ``NEXT_STEP`` (the default): the step after a world's episode
            ended resets that world and returns its first observation, with reward 0 and
            ``terminated``/``truncated`` false; its action is ignored. ``SAME_STEP``: a world
            whose episode ends is reset in the same step; the observation is the new
            episode's first, and ``info["final_obs"]`` / ``info["final_info"]`` (with masks
            ``info["_final_obs"]``, ``info["_final_info"]``) carry the last one's. ``DISABLED``:
            nothing resets by itself; reset ended worlds with
            ``reset(options={"reset_mask": mask})`` before stepping again.
        copy: True (the default): each step's observation arrays are views into a buffer no
            array still held refers to, so observations kept stay valid. False: every step
            writes the same buffer and returns views into it, overwritten by the next step.

    ``envs.sim`` is the underlying :class:`glint.Simulation` (``num_envs`` worlds).
    """

    def __init__(
        self,
        manifest: str | os.PathLike,
        num_envs: int = 16,
        seed: Optional[int] = None,
        reward_fn: Optional[RewardFn] = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
    ):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs = {num_envs}: give 1 or more worlds")
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.num_envs = int(num_envs)
        self._core = _Core(manifest, self.num_envs, seed)
        self.metadata = {"autoreset_mode": self.autoreset_mode, "render_modes": []}
        self.render_mode = None
        self.single_observation_space = self._core.observation_space
        self.single_action_space = self._core.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.reward_fn = reward_fn
        self.copy = bool(copy)
        self._actions = np.zeros((self.num_envs, self._core.nu), dtype=np.float64)
        # The worlds whose episode ended on the last step, still to reset (NEXT_STEP, DISABLED).
        self._pending: list[int] = []

    @property
    def sim(self) -> "glint.Simulation":
        """The :class:`glint.Simulation` this environment steps (``num_envs`` worlds)."""
        return self._core.sim

    def _observe(self) -> dict:
        buf = None if self.copy else self._core.buffer
        return self._core.split(self._core.observe(buf))

    def reset(
        self, *, seed: Optional[int | Sequence[Optional[int]]] = None, options: Optional[dict] = None
    ) -> tuple[dict, dict]:
        """Starts new episodes and returns every world's observation and an info dict.

        `seed` (an int) becomes the simulation's run seed, with episodes numbered from 0 again:
        the same seed reproduces the same episodes in every world. The worlds of one
        simulation share one run seed (each world's episodes derive from it and the world),
        so a list of seeds is accepted only when all are None. ``options={"reset_mask":
        mask}`` (a bool array of ``num_envs``) resets only the worlds marked; the others keep
        their episodes, and their observations are returned as they are.
        """
        run_seed: Optional[int] = None
        if isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ValueError(f"{len(seed)} seeds given for {self.num_envs} worlds")
            if any(s is not None for s in seed):
                raise ValueError(
                    "the worlds of a glint.gym.VectorEnv share one run seed: give reset(seed=<int>) "
                    "(each world's episodes derive from it), or a list of None"
                )
        else:
            run_seed = seed  # checked by the simulation's reset
        mask = None if options is None else options.get("reset_mask")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(
                    f"options['reset_mask'] has shape {mask.shape} and dtype {mask.dtype}: give a bool array "
                    f"of shape ({self.num_envs},)"
                )
            worlds = np.flatnonzero(mask).tolist()
            if worlds:
                self._core.reset(run_seed, worlds)
            self._pending = [w for w in self._pending if not mask[w]]
        else:
            self._core.reset(run_seed, None)
            self._pending = []
        if run_seed is not None:
            super().reset(seed=operator.index(run_seed))
        return self._observe(), {}

    def step(self, actions) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Applies `actions` (``(num_envs, nu)``) for one lidar tick in every world and returns
        ``(obs, rewards, terminated, truncated, info)``: a dict of ``(num_envs, ...)`` float32
        arrays, float64 rewards and bool flags of ``num_envs``, and the info arrays (see
        :mod:`glint.gym` and the autoreset modes in the class docstring)."""
        a = np.asarray(actions, dtype=np.float64)
        if a.shape != self._actions.shape:
            if a.size != self._actions.size:
                raise ValueError(
                    f"actions have shape {a.shape}: give ({self.num_envs}, {self._core.nu}) (num_envs, nu)"
                )
            a = a.reshape(self._actions.shape)
        mode, core, pending = self.autoreset_mode, self._core, self._pending
        if pending and mode == AutoresetMode.DISABLED:
            raise RuntimeError(
                f"worlds {pending} ended their episodes and autoreset_mode is DISABLED: reset them with "
                "reset(options={'reset_mask': mask}) before stepping again"
            )
        buf = core.fresh_buffer() if self.copy else core.buffer
        # One call into glint steps every world, writes the observation and (NEXT_STEP)
        # starts the next episode of the worlds whose episode ended on the last step: their
        # step is discarded (reward 0, not done, no step info but the time). The report's
        # arrays are new on every step: they are handed out without copies.
        report = core.sim.step(a, out=buf, reset=pending)
        info = report.info()
        obs = core.split(buf)
        if self.reward_fn is not None:
            rewards = np.array(self.reward_fn(obs, a, info), dtype=np.float64).reshape(self.num_envs)
            rewards[pending] = 0.0
        else:
            rewards = report.reward
        terminated, truncated, ended = report.terminated, report.truncated, report.ended

        if mode == AutoresetMode.SAME_STEP:
            if ended:
                obs = self._reset_same_step(ended, obs, info)
            ended = []
        self._pending = ended
        return obs, rewards, terminated, truncated, info

    def _reset_same_step(self, ended: list[int], obs: dict, info: dict) -> dict:
        """Starts the next episode of the worlds in `ended` (SAME_STEP): `info` gains their
        final observations and step information; returns the observation after the resets."""
        core, done = self._core, np.zeros(self.num_envs, dtype=np.bool_)
        done[ended] = True
        final_obs = np.full(self.num_envs, None, dtype=object)
        for w in ended:
            final_obs[w] = {key: np.array(value[w]) for key, value in obs.items()}
        final_info: dict[str, Any] = {}
        for key in [k for k in info if not k.startswith("_")]:  # the step's keys (StepReport.info)
            kept = np.zeros_like(info[key])
            kept[done] = info[key][done]
            final_info[key], final_info["_" + key] = kept, done.copy()
        core.reset(None, ended)
        info["time"] = np.asarray(core.sim.time, dtype=np.float64)
        info["final_obs"], info["_final_obs"] = final_obs, done.copy()
        info["final_info"], info["_final_info"] = final_info, done
        return self._observe()

    def render(self) -> None:
        """Renders nothing: glint's vector environment has no render mode."""
        return None

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release: the simulation is freed with the environment."""
