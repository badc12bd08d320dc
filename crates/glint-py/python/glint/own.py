"""glint's sensors on your own MuJoCo program: your ``mujoco.MjModel`` and ``MjData``, stepped
by you (or by MJX, MuJoCo Warp or any batched simulator whose state you copy to numpy).

    >>> import mujoco, glint
    >>> model = mujoco.MjModel.from_xml_path("robot.xml"); data = mujoco.MjData(model)
    >>> lidar = glint.Lidar(model, site="lidar", preset="ouster-os1-64")
    >>> mujoco.mj_step(model, data)
    >>> ranges = lidar.scan(data).ranges          # (1, 65536) float32, -1 = no return

glint reads the model's arrays once (by ``mjModel``'s names, so any ``mujoco`` 3.x or 4.x
works) and builds its scene (meshes, height fields and their BVHs) once per model; each call
reads the data's frames (``geom_xpos``, ``geom_xmat``, ...) and refits. Nothing is passed by
pointer.
"""

from __future__ import annotations

import weakref
from typing import Any, Optional, Sequence

import numpy as np

from glint import _glint

__all__ = ["Lidar", "Renderer", "rays", "scene_of"]

# One scene per model, shared by its lidars, renderers and rays() calls: built once.
_SCENES: "weakref.WeakKeyDictionary[Any, _glint.OwnScene]" = weakref.WeakKeyDictionary()
# Models that cannot be weakly referenced are kept (the last few) by id.
_STRONG: "dict[int, tuple[Any, _glint.OwnScene]]" = {}
_STRONG_LIMIT = 8


def scene_of(model) -> "_glint.OwnScene":
    """glint's scene of ``model`` (a ``mujoco.MjModel``), built on first use and shared."""
    try:
        scene = _SCENES.get(model)
    except TypeError:
        kept = _STRONG.get(id(model))
        if kept is not None and kept[0] is model:
            return kept[1]
        scene = _glint.OwnScene(model)
        if len(_STRONG) >= _STRONG_LIMIT:
            _STRONG.pop(next(iter(_STRONG)))
        _STRONG[id(model)] = (model, scene)
        return scene
    if scene is None:
        scene = _glint.OwnScene(model)
        _SCENES[model] = scene
    return scene


def rays(
    model,
    data,
    pnt,
    vec,
    geomgroup: Optional[Sequence[int]] = None,
    flg_static: int = 1,
    bodyexclude: int = -1,
    cutoff: Optional[float] = None,
):
    """Casts rays as ``mujoco.mj_multiRay`` does, through glint's BVH: ``pnt`` one origin
    ``(3,)`` (or one per ray ``(nray, 3)``), ``vec`` ``(nray, 3)`` or flat ``(3 * nray,)``, need
    not be unit. Returns ``(dist, geomid)``, each ``(nray,)``: distances in units of each
    ``vec``'s length, ``-1`` (and geom ``-1``) where nothing is hit (or past ``cutoff``)."""
    return scene_of(model).rays(data, pnt, vec, _groups(geomgroup), bool(flg_static), int(bodyexclude), cutoff)


def _groups(geomgroup):
    return None if geomgroup is None else [int(g) for g in np.asarray(geomgroup).ravel()]


class Lidar:
    """A lidar on a site (or body) of your model.

    ``preset`` is a scan preset (``"ouster-os1-64"``, ``"velodyne-vlp16"``, ``"livox-mid360"``,
    ``"unitree-l1"``); ``config`` a dict of ``[[lidar]]`` keys applied after it (``channels``,
    ``azimuth_bins``, ``vfov_min_deg``, ``max_range``, ``geom_group_mask``, ``self_ignore``,
    ...). The beams pass through the body the lidar sits on (``self_ignore = "mount-body"``).

    ``materials`` turns on the return model (the seed's: noise, dropout, glass, water, mirrors,
    retroreflectors, second echoes): a dict of the manifest's ``[materials]`` tables keyed by
    your MJCF material names, e.g. ``{"window": {"preset": "clear-float-glass"}}``; geoms without one take
    a material from their colour. The materials are baked from the first data scanned;
    ``scan(data, material=True)`` then reports the measurement, its noise keyed by ``seed``.
    """

    def __init__(
        self,
        model,
        site: Optional[str] = None,
        body: Optional[str] = None,
        preset: Optional[str] = None,
        config: Optional[dict] = None,
        materials: Optional[dict] = None,
        mount_offset: Sequence[float] = (0.0, 0.0, 0.0),
        name: Optional[str] = None,
        seed: int = 0,
    ):
        self.model = model
        self._lidar = _glint.OwnLidar(
            scene_of(model), site, body, preset, config, tuple(float(x) for x in mount_offset), name, materials, seed
        )

    def scan(self, data, material: bool = False) -> "_glint.Scan":
        """One whole cycle from the frames of ``data`` (after ``mj_forward`` or ``mj_step``):
        ``Scan.ranges`` ``(1, beam_count)`` float32 metres (``-1``: no return) and
        ``Scan.geomid`` the geom each beam met; with ``material`` (and ``materials=``) the
        return model's ranges, ``secondary``, ``intensity`` and ``reflectivity``."""
        return self._lidar.scan(data, material)

    def scan_batch(self, geom_xpos, geom_xmat, site_xpos=None, site_xmat=None, xpos=None, xmat=None, material=False):
        """One cycle in each world of a batch: ``geom_xpos`` ``(nworld, ngeom, 3)``,
        ``geom_xmat`` ``(nworld, ngeom, 9)`` and the attach point's frames (``site_xpos``,
        ``site_xmat`` for a lidar on a site; ``xpos``, ``xmat`` on a body). ``ranges`` is
        ``(nworld, beam_count)``."""
        return self._lidar.scan_batch(geom_xpos, geom_xmat, site_xpos, site_xmat, xpos, xmat, material)

    @property
    def beam_count(self) -> int:
        """Beams per cycle."""
        return self._lidar.beam_count

    @property
    def config(self) -> dict:
        """The scan configuration as ``[[lidar]]`` keys."""
        return self._lidar.config

    def rays(self, world: int = 0):
        """The last scan's rays: ``(origin (3,), directions (beam_count, 3), bodyexclude,
        geomgroup)``, world frame: ``mujoco.mj_multiRay``'s arguments for the same beams."""
        return self._lidar.rays(world)

    def __repr__(self) -> str:
        return repr(self._lidar)


# MjvOption's settings glint.Renderer does not draw, checked against MuJoCo's defaults.
_UNDRAWN_OPTIONS = ("label", "frame", "flags", "sitegroup", "jointgroup", "tendongroup", "actuatorgroup", "skingroup",
                    "flexgroup", "bvh_depth", "flex_layer")


def _geomgroup(scene_option) -> Optional[list]:
    """``scene_option.geomgroup`` as six flags (``None`` without an option), warning once per
    setting of the option that glint does not draw."""
    if scene_option is None:
        return None
    default = type(scene_option)()
    changed = [
        name for name in _UNDRAWN_OPTIONS
        if hasattr(default, name) and not np.array_equal(np.asarray(getattr(scene_option, name)), np.asarray(getattr(default, name)))
    ]
    if changed:
        import warnings

        from glint.errors import GlintWarning

        warnings.warn(
            f"glint.Renderer draws only scene_option.geomgroup; {', '.join(changed)} differ from MuJoCo's defaults and "
            "are not drawn",
            GlintWarning,
            stacklevel=3,
        )
    return [bool(g) for g in np.asarray(scene_option.geomgroup).ravel()]


class Renderer:
    """Draws your model as ``mujoco.Renderer`` does, with glint's ray tracer (MuJoCo's classic
    shading, shadows, textures; no OpenGL):

        >>> renderer = glint.Renderer(model, height=480, width=640)
        >>> renderer.update_scene(data, camera="front")
        >>> rgb = renderer.render()                      # (480, 640, 3) uint8
        >>> renderer.enable_depth_rendering(); depth = renderer.render()   # (480, 640) float32
    """

    def __init__(self, model, height: int = 240, width: int = 320, max_geom: int = 10000):
        del max_geom  # mujoco.Renderer's; glint draws every geom
        self.model = model
        self._renderer = _glint.OwnRenderer(scene_of(model), height, width)

    @property
    def width(self) -> int:
        return self._renderer.width

    @property
    def height(self) -> int:
        return self._renderer.height

    def update_scene(self, data, camera=-1, scene_option=None) -> None:
        """The frames of ``data`` and the camera: an id, a name, ``-1`` (MuJoCo's default free
        camera) or a ``mujoco.MjvCamera`` (free or fixed). Of ``scene_option`` (a
        ``mujoco.MjvOption``) glint reads ``geomgroup``, the geom groups drawn; any other
        setting that differs from MuJoCo's default (frames, contact points, ...) is not drawn,
        and a ``GlintWarning`` says which."""
        self._renderer.update_scene(data, camera, _geomgroup(scene_option))
    def update_scene_batch(self, camera=-1, scene_option=None, **frames) -> None:
        """A batch of worlds: ``mjData``'s frame arrays by name with a leading world axis
        (``geom_xpos``, ``geom_xmat`` at least; ``cam_xpos``/``cam_xmat`` for a model camera,
        ``light_xpos``/``light_xdir``, ``xpos``/``xmat``, ``site_xpos``/``site_xmat``)."""
        self._renderer.update_scene_batch(camera, _geomgroup(scene_option), **frames)

    def render(self, *, out: Optional[np.ndarray] = None) -> np.ndarray:
        """The image: RGB ``(h, w, 3)`` uint8, or depth ``(h, w)`` float32, or segmentation
        ``(h, w, 2)`` int32 (id, ``mjtObj`` type); a leading world axis after
        ``update_scene_batch``."""
        image = self._renderer.render()
        if out is not None:
            np.copyto(out, image)
            return out
        return image

    def enable_depth_rendering(self) -> None:
        self._renderer.enable_depth_rendering()

    def disable_depth_rendering(self) -> None:
        self._renderer.disable_depth_rendering()

    def enable_segmentation_rendering(self) -> None:
        self._renderer.enable_segmentation_rendering()

    def disable_segmentation_rendering(self) -> None:
        self._renderer.disable_segmentation_rendering()

    def pixel_rays(self, world: int = 0):
        """Every pixel centre's ray: origins and directions ``(h, w, 3)``, world frame, and the
        optical axis ``(3,)`` (depth = distance along a direction × its dot with the axis)."""
        return self._renderer.pixel_rays(world)

    def close(self) -> None:
        """Nothing to free (``mujoco.Renderer`` frees its GL context)."""

    def __enter__(self) -> "Renderer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
