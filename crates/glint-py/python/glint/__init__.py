"""glint: fast, MuJoCo-exact sensor simulation for robots, from Python.

    >>> import glint
    >>> sim = glint.Simulation.from_manifest("examples/showroom/showroom.toml", nworld=4)
    >>> sim.lidar_live = True
    >>> report = sim.step()                     # every world, one lidar tick; GIL released
    >>> ranges = sim.lidars[0].scan().ranges    # (nworld, beams) float32, -1 = no return

On your own MuJoCo program (your ``mujoco.MjModel`` and ``MjData``, stepped by you):

    >>> lidar = glint.Lidar(model, site="lidar", preset="ouster-os1-64")
    >>> ranges = lidar.scan(data).ranges        # (1, beams) float32
    >>> renderer = glint.Renderer(model, 480, 640); renderer.update_scene(data); rgb = renderer.render()
    >>> dist, geomid = glint.rays(model, data, pnt, vec)   # as mujoco.mj_multiRay

Arrays are numpy arrays: hand them to torch or JAX without a copy through DLPack
(``torch.from_dlpack(ranges)``, ``jax.dlpack.from_dlpack(ranges)``). Gymnasium environments
are in :mod:`glint.gym`.
"""

from __future__ import annotations

import ctypes
import glob
import os

from glint import errors
from glint.errors import *  # noqa: F403 - the exception classes, listed in errors.__all__

MUJOCO_VERSION = "3.17.0"
_LIBRARY = f"libmujoco.so.{MUJOCO_VERSION}"


def _mujoco_candidates() -> list[str]:
    """Where MuJoCo's library may be besides the place the build recorded: $GLINT_MUJOCO_LIB
    (the file or its folder), then the `mujoco` Python package of the same version."""
    found = []
    env = os.environ.get("GLINT_MUJOCO_LIB")
    if env:
        found.append(os.path.join(env, _LIBRARY) if os.path.isdir(env) else env)
    try:
        import importlib.util

        spec = importlib.util.find_spec("mujoco")
        if spec is not None and spec.origin:
            found.extend(glob.glob(os.path.join(os.path.dirname(spec.origin), _LIBRARY)))
    except (ImportError, ValueError):
        pass
    return found


def _import_extension():
    try:
        from glint import _glint
        return _glint
    except ImportError as first:
        if "libmujoco" not in str(first):
            raise
        for candidate in _mujoco_candidates():
            try:
                ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
                from glint import _glint
                return _glint
            except OSError:
                continue
        raise ImportError(
            f"glint could not load MuJoCo's library ({_LIBRARY}): {first}. glint loads it from the "
            "checkout it was built in (.deps/mujoco/lib, fetched by `make deps`); if that checkout moved or "
            f"its .deps folder is gone, run `make deps` there, set GLINT_MUJOCO_LIB to the library (or its "
            f"folder), or `pip install mujoco=={MUJOCO_VERSION}`, whose package carries it."
        ) from first


_glint = _import_extension()
Simulation = _glint.Simulation
Fields = _glint.Fields
SimulationLidar = _glint.SimulationLidar
Scan = _glint.Scan
StepReport = _glint.StepReport
Recording = _glint.Recording

from glint.own import Lidar, Renderer, rays  # noqa: E402 - needs the extension loaded

__all__ = [
    "Simulation",
    "Fields",
    "SimulationLidar",
    "Lidar",
    "Renderer",
    "rays",
    "Scan",
    "StepReport",
    "Recording",
    "MUJOCO_VERSION",
    *errors.__all__,
]
