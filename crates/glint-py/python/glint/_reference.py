"""A reference vector environment written with the ``mujoco`` Python package alone: the yardstick
of ``python -m glint.bench gym`` and of glint's Python tests. Not part of glint's API; it needs
``pip install mujoco==3.17.0`` (the MuJoCo glint is built on).

:class:`ReferenceVectorEnv` is what one would write without glint: ``num_envs`` ``MjData`` over
the manifest's MJCF, each step setting the controls, running the physics steps of one lidar
tick, and casting the lidar's rays for that tick with ``mujoco.mj_multiRay`` from the sensor
site's pose, one world after the other in Python. It builds the observation glint's
:class:`glint.gym.VectorEnv` builds from the same manifest (joint positions, joint velocities,
the lidar's ranges with ``-1`` for no return and for beams not cast yet this episode), the same
built-in reward terms, and autoresets as Gymnasium's ``NEXT_STEP`` mode.

The lidar is described by plain values (:class:`ReferenceLidar`); the beam directions are the
sensor-frame azimuth and elevation glint reports (``Lidar.beam_angles()``), so both cast the
same rays. :meth:`ReferenceVectorEnv.from_glint` reads them, and the layout, from a glint
simulation of the same manifest, once, outside any timing.

Limits, for what the benchmark and the tests use it for: one spinning lidar on a site; the
sensor's whole-robot self-ignore is approximated by ``mj_multiRay``'s single excluded body (the
site's body), which is exact when the rest of the robot is out of the sensor's sight (as on the
showroom's robot); collisions count any contact between the task body's subtree and a non-plane
geom of another body.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

try:
    import mujoco
except ImportError as _error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "glint._reference needs the mujoco Python package: pip install mujoco==3.17.0"
    ) from _error

__all__ = ["ReferenceLidar", "ReferenceVectorEnv", "read_manifest"]


def read_manifest(manifest: str | os.PathLike) -> dict:
    """The manifest as a dict (TOML), with ``"scene"`` made an absolute path and
    ``"lidar_runner_hz"`` set from ``[recorder]`` (default 100)."""
    import tomllib

    manifest = os.fspath(manifest)
    with open(manifest, "rb") as f:
        table = tomllib.load(f)
    scene = table["scene"]
    if not os.path.isabs(scene):
        scene = os.path.join(os.path.dirname(os.path.abspath(manifest)), scene)
    table["scene"] = os.path.normpath(scene)
    table["lidar_runner_hz"] = float(table.get("recorder", {}).get("lidar_runner_hz", 100.0))
    return table


def physics_steps_per_tick(timestep: float, lidar_runner_hz: float) -> int:
    """Physics steps of one lidar tick: ``1 / lidar_runner_hz / timestep``, a whole number."""
    steps = 1.0 / lidar_runner_hz / timestep
    whole = round(steps)
    if whole < 1 or abs(steps - whole) > 1e-6:
        raise ValueError(f"lidar_runner_hz = {lidar_runner_hz} is {steps} physics steps of {timestep} s")
    return whole


@dataclass
class ReferenceLidar:
    """One spinning lidar as plain values: the site it sits on, its pattern and ranges, and
    its beams' sensor-frame azimuth and elevation (radians, beam ``bin * channels + channel``)."""

    site: str
    channels: int
    azimuth_bins: int
    rotation_hz: float
    min_range: float
    max_range: float
    azimuth: np.ndarray
    elevation: np.ndarray

    def directions(self) -> np.ndarray:
        """Unit sensor-frame directions of every beam, ``(beams, 3)`` float64."""
        az = np.asarray(self.azimuth, dtype=np.float64)
        el = np.asarray(self.elevation, dtype=np.float64)
        d = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=1)
        return d / np.linalg.norm(d, axis=1, keepdims=True)


class ReferenceVectorEnv:
    """``num_envs`` MuJoCo worlds stepped and scanned from Python with ``mj_multiRay``.

    ``reset(seed)`` returns the observation dict (arrays with a leading ``num_envs`` axis);
    ``step(actions)`` returns ``(obs, rewards, terminated, truncated)`` and resets ended worlds
    on the next step (Gymnasium's ``NEXT_STEP``). The observation dict's keys and layout are
    those of :class:`glint.gym.VectorEnv` on the same manifest.
    """

    def __init__(
        self,
        manifest: str | os.PathLike,
        num_envs: int,
        lidar: ReferenceLidar,
        observation: list[tuple[str, int]],
        task: Optional[dict] = None,
    ):
        table = read_manifest(manifest)
        self.model = mujoco.MjModel.from_xml_path(table["scene"])
        self.data = [mujoco.MjData(self.model) for _ in range(num_envs)]
        self.num_envs = num_envs
        m = self.model
        self.nsub = physics_steps_per_tick(m.opt.timestep, table["lidar_runner_hz"])
        self.dt = self.nsub * m.opt.timestep
        self.lidar = lidar
        self.site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, lidar.site)
        if self.site < 0:
            raise ValueError(f"the model has no site '{lidar.site}'")
        self.exclude = int(m.site_bodyid[self.site])
        self.dirs = lidar.directions()
        self.beams = len(self.dirs)
        self.units = lidar.azimuth_bins
        self.per_unit = self.beams // self.units
        # Observation layout: (key, length) in the order the dict gives them.
        self.observation = observation
        self.size = sum(n for _, n in observation)
        self.ranges = np.full((num_envs, self.beams), -1.0, dtype=np.float32)
        self._geomid = np.zeros(self.beams, dtype=np.int32)
        self._dist = np.zeros(self.beams, dtype=np.float64)
        self._revolutions = np.zeros(num_envs)
        self._emitted = np.zeros(num_envs, dtype=np.int64)
        self._ticks = np.zeros(num_envs, dtype=np.int64)
        self._autoreset: np.ndarray = np.zeros(num_envs, dtype=np.bool_)
        # The task.
        self.task = task
        if task is not None:
            self.body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, task["body"])
            goal = list(task["goal"])
            self.goal = np.array(goal + [0.0] * (3 - len(goal)))
            self.goal_dims = len(goal)
            in_tree = np.zeros(m.nbody, dtype=np.bool_)
            for b in range(m.nbody):
                a = b
                while a != 0 and a != self.body:
                    a = m.body_parentid[a]
                in_tree[b] = a == self.body
            self.in_tree_geom = in_tree[m.geom_bodyid]
            self.touch_ok_geom = m.geom_type == mujoco.mjtGeom.mjGEOM_PLANE
            seconds = task.get("episode_seconds")
            self.episode_ticks = None if seconds is None else round(seconds / self.dt)
            self._distance = np.zeros(num_envs)

    @classmethod
    def from_glint(cls, manifest: str | os.PathLike, num_envs: int) -> "ReferenceVectorEnv":
        """The reference for `manifest`, with the lidar, observation layout and task read from a
        one-world glint simulation of it (sensor 0, which must sit on a site)."""
        import glint

        sim = glint.Simulation.from_manifest(os.fspath(manifest))
        table = read_manifest(manifest)
        binding = table["lidar"][0]
        config = sim.lidars[0].config
        az, el = sim.lidars[0].beam_angles()
        lidar = ReferenceLidar(
            site=binding["attach_site"],
            channels=int(config["channels"]),
            azimuth_bins=int(config["azimuth_bins"]),
            rotation_hz=float(config["rotation_hz"]),
            min_range=float(config["min_range"]),
            max_range=float(config["max_range"]),
            azimuth=az,
            elevation=el,
        )
        observation = []
        for name, _, length, _material in sim.observation_components:
            if length:
                observation.append(("lidar_ranges" if name == "lidar_ranges/0" else name, length))
        return cls(manifest, num_envs, lidar, observation, sim.task)

    # -- one world ---------------------------------------------------------------------------

    def _reset_world(self, w: int) -> None:
        d = self.data[w]
        mujoco.mj_resetData(self.model, d)
        mujoco.mj_forward(self.model, d)
        self.ranges[w] = -1.0
        self._revolutions[w] = 0.0
        self._emitted[w] = 0
        self._ticks[w] = 0
        if self.task is not None:
            self._distance[w] = self._distance_now(d)

    def _distance_now(self, d) -> float:
        delta = d.xpos[self.body] - self.goal
        return float(np.linalg.norm(delta[: self.goal_dims]))

    def _scan(self, w: int) -> None:
        """Casts world `w`'s slice of the pattern for this tick (glint's pattern clock)."""
        lidar, d = self.lidar, self.data[w]
        self._revolutions[w] += min(lidar.rotation_hz * self.dt, 1.0) if lidar.rotation_hz > 0 else 1.0
        target = math.floor(self._revolutions[w] * self.units + 1e-6)
        start = max(int(self._emitted[w]), target - self.units)
        self._emitted[w] = target
        if target <= start:
            return
        first, n = start % self.units, target - start
        bins = [(first, min(n, self.units - first))]
        if first + n > self.units:
            bins.append((0, first + n - self.units))
        origin = d.site_xpos[self.site].copy()
        rot = d.site_xmat[self.site].reshape(3, 3)
        for b0, nb in bins:
            k0, k1 = b0 * self.per_unit, (b0 + nb) * self.per_unit
            vec = self.dirs[k0:k1] @ rot.T
            nray = k1 - k0
            geomid, dist = self._geomid[:nray], self._dist[:nray]
            mujoco.mj_multiRay(
                self.model, d, origin, vec.reshape(-1), None, 1, self.exclude, geomid, dist, None, nray, mujoco.mjMAXVAL
            )
            hit = (geomid >= 0) & (dist >= lidar.min_range) & (dist < lidar.max_range)
            self.ranges[w, k0:k1] = np.where(hit, dist, -1.0)

    def _task(self, w: int) -> tuple[float, bool]:
        """World `w`'s task reward and whether it reached the goal, for the step just taken."""
        d, t = self.data[w], self.task
        distance = self._distance_now(d)
        progress = self._distance[w] - distance
        self._distance[w] = distance
        collided = False
        if d.ncon:
            g = d.contact.geom[: d.ncon]
            a, b = g[:, 0], g[:, 1]
            ta, tb = self.in_tree_geom[a], self.in_tree_geom[b]
            ok_a, ok_b = self.touch_ok_geom[a], self.touch_ok_geom[b]
            collided = bool(np.any((ta & ~tb & ~ok_b) | (tb & ~ta & ~ok_a)))
        assert t is not None
        reached = distance <= t.get("goal_tolerance", 0.25)
        reward = (
            t.get("progress_weight", 1.0) * progress
            + (t.get("goal_reward", 10.0) if reached else 0.0)
            - (t.get("collision_penalty", 1.0) if collided else 0.0)
        )
        return reward, reached

    # -- the batch ---------------------------------------------------------------------------

    def _obs(self) -> dict:
        out: dict[str, np.ndarray] = {}
        for key, length in self.observation:
            if key == "joint_positions":
                out[key] = np.array([d.qpos for d in self.data], dtype=np.float32).reshape(self.num_envs, length)
            elif key == "joint_velocities":
                out[key] = np.array([d.qvel for d in self.data], dtype=np.float32).reshape(self.num_envs, length)
            else:
                out[key] = self.ranges[:, :length].copy()
        return out

    def reset(self, seed: Optional[int] = None) -> dict:
        """Resets every world (MuJoCo's initial state; `seed` is unused: the reference draws
        nothing) and returns the observation."""
        for w in range(self.num_envs):
            self._reset_world(w)
        self._autoreset[:] = False
        return self._obs()

    def step(self, actions: np.ndarray) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray]:
        """One lidar tick in every world: controls, physics steps, the tick's rays, the task."""
        actions = np.asarray(actions, dtype=np.float64)
        rewards = np.zeros(self.num_envs)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        m = self.model
        for w, d in enumerate(self.data):
            if self._autoreset[w]:
                self._reset_world(w)
                continue
            d.ctrl[:] = actions[w]
            for _ in range(self.nsub):
                mujoco.mj_step(m, d)
            self._ticks[w] += 1
            self._scan(w)
            if self.task is not None:
                rewards[w], terminated[w] = self._task(w)
                truncated[w] = self.episode_ticks is not None and self._ticks[w] >= self.episode_ticks
        self._autoreset = terminated | truncated
        return self._obs(), rewards, terminated, truncated
