"""glint's exceptions and warnings.

Every error glint raises is a :class:`GlintError`, carrying the message the ``glint`` command
line prints for the same mistake. Where an error is also one of Python's own kinds, its class
derives from that kind too, so ``except ValueError`` or ``except FileNotFoundError`` catch it.

The compiled part (``glint._glint``) looks each class up here once, when it is imported, and
raises it by the name of the error's kind (``ErrorKind`` in ``crates/glint-sim/src/error.rs``,
which gRPC answers too): a class it names that is missing here stops the import, naming it.
Which error raises which class is ``SimError::kind`` there.
"""

from __future__ import annotations

__all__ = [
    "GlintError",
    "GlintWarning",
    "ManifestError",
    "ManifestNotFoundError",
    "SceneError",
    "LidarError",
    "IndexOutOfRangeError",
    "BakeError",
    "BakeNotFoundError",
    "RecordingError",
    "RecordingStateError",
    "ShapeError",
    "ActionError",
    "SettingError",
]


class GlintError(Exception):
    """Base class of every error glint raises."""


class GlintWarning(UserWarning):
    """Something glint says without stopping (a stale bake, a group mask's high bits, ...)."""


class ManifestError(GlintError, ValueError):
    """A scene manifest (or a dict of manifest keys) was rejected: the message names the
    table, the key, the value and what it may be."""


class ManifestNotFoundError(GlintError, FileNotFoundError):
    """The manifest file cannot be read."""


class SceneError(GlintError, ValueError):
    """MuJoCo could not load the MJCF scene, or set up its worlds."""


class LidarError(GlintError, ValueError):
    """A lidar binding, configuration, calibration or rate was rejected."""


class IndexOutOfRangeError(GlintError, IndexError):
    """A lidar sensor or world index past the end."""


class BakeError(GlintError, ValueError):
    """A material scan or bake operation needs a bake that is not loaded, or bake settings
    are out of range."""


class BakeNotFoundError(GlintError, FileNotFoundError):
    """A saved bake asked for is not there."""


class RecordingError(GlintError, OSError):
    """A recording could not be written."""


class RecordingStateError(GlintError, RuntimeError):
    """A call the seed ignores while recording, or a recording stopped or armed twice."""


class ShapeError(GlintError, ValueError):
    """An array does not have the shape the call needs."""


class ActionError(GlintError, ValueError):
    """An agent's action is not a finite number (gRPC's Step answers `ActionError: ...` for
    the same mistake)."""


class SettingError(GlintError, ValueError):
    """A setting of the simulation itself is out of range, or does not fit the model."""
