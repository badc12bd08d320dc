"""Each error glint raises has one fixed Python class: every kind of the simulation's error
(`SimError`'s variants and the errors of the crates it wraps) is triggered here through the
Python module, and its class, its Python kind (ValueError, IndexError, FileNotFoundError,
OSError, RuntimeError) and its message are checked. The classes are looked up once, when the
module is imported (`crates/glint-py/src/errors.rs`), never by name at raise time."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import glint
import glint.errors
from conftest import RPC_TIMEOUT_S

REPO = Path(__file__).resolve().parents[2]
SHOWROOM_XML = REPO / "examples" / "showroom" / "showroom.xml"
LIDAR = {"attach_site": "lidar", "channels": 4, "azimuth_bins": 90}
LIDAR_TABLE = '[[lidar]]\nattach_site = "lidar"\nchannels = 4\nazimuth_bins = 90\n'


def manifest(tmp: Path, extra: str = "", lidar: str = LIDAR_TABLE) -> Path:
    """A manifest over the showroom with a small lidar and `extra` appended."""
    path = tmp / "m.toml"
    path.write_text(f'scene = "{SHOWROOM_XML}"\n{lidar}{extra}')
    return path


def small(tmp: Path) -> glint.Simulation:
    return glint.Simulation.from_manifest(manifest(tmp))


def record_twice(tmp: Path) -> None:
    sim = small(tmp)
    with sim.record(tmp / "a"):
        sim.record(tmp / "b")


def configure_while_recording(tmp: Path) -> None:
    sim = small(tmp)
    with sim.record(tmp / "rec"):
        sim.lidars[0].config = {"channels": 8}


def record_over_a_file(tmp: Path) -> None:
    (tmp / "taken").write_text("a file where the session's folder goes")
    small(tmp).record(tmp / "taken")


def load_a_damaged_bake(tmp: Path) -> None:
    (tmp / "MaterialBakes").mkdir()
    (tmp / "MaterialBakes" / "broken.lvxb").write_bytes(b"not a bake")
    small(tmp).load_bake("broken")


def bind_a_camera_twice(tmp: Path) -> None:
    small(tmp).set_cameras(["overview", "overview"])


# (what is done, the SimError variant (or the Python-side check) it meets, its class, its kind,
# a piece of its message)
CASES = [
    (
        lambda tmp: small(tmp).step(np.array([[0.0, np.nan, 0.0]])),
        "Action",
        glint.ActionError,
        ValueError,
        "world 0's action 1 (vy) is NaN",
    ),
    (
        lambda tmp: glint.Simulation.from_manifest(tmp / "missing.toml"),
        "Manifest(Read)",
        glint.ManifestNotFoundError,
        FileNotFoundError,
        "cannot read manifest",
    ),
    (
        lambda tmp: glint.Simulation.from_manifest(manifest(tmp, "bogus_key = 1\n")),
        "Manifest",
        glint.ManifestError,
        ValueError,
        "bogus_key",
    ),
    (
        lambda tmp: glint.Simulation.from_xml(str(SHOWROOM_XML), lidars=[dict(LIDAR, chanels=8)]),
        "Manifest (lidar dicts)",
        glint.ManifestError,
        ValueError,
        "chanels",
    ),
    (
        lambda tmp: glint.Simulation.from_xml("<mujoco><worldbody><geom type='nonsense'/></worldbody></mujoco>"),
        "Mujoco",
        glint.SceneError,
        ValueError,
        "nonsense",
    ),
    (
        lambda tmp: small(tmp).set_return_preset("nope"),
        "Lidar",
        glint.LidarError,
        ValueError,
        "unknown return preset 'nope'",
    ),
    (
        lambda tmp: small(tmp).lidars[0].set_secondary_capture("sideways", "all-surfaces"),
        "Lidar (a spelling)",
        glint.LidarError,
        ValueError,
        "sideways",
    ),
    (
        lambda tmp: glint.Simulation.from_manifest(
            manifest(tmp, '[[camera]]\ncamera = "overview"\nrate_hz = 7.0\n', lidar="")
        ),
        "Rate",
        glint.LidarError,
        ValueError,
        "not a whole fraction",
    ),
    (bind_a_camera_twice, "Camera", glint.SettingError, ValueError, "is bound twice"),
    (
        lambda tmp: small(tmp).rays(np.zeros(3), np.zeros((1, 3))),
        "Rays",
        glint.ShapeError,
        ValueError,
        "direction",
    ),
    (record_over_a_file, "Record", glint.RecordingError, OSError, "taken"),
    (
        lambda tmp: small(tmp).lidars[0].beam_angles(world=3),
        "NoSuchWorld",
        glint.IndexOutOfRangeError,
        IndexError,
        "world 3 does not exist",
    ),
    (
        lambda tmp: small(tmp).lidars[0].scan(material=True),
        "NoBake",
        glint.BakeError,
        ValueError,
        "no material bake is loaded",
    ),
    (
        lambda tmp: small(tmp).bake(cell_size=-1.0),
        "Material (bake settings)",
        glint.BakeError,
        ValueError,
        "cell_size",
    ),
    (
        lambda tmp: small(tmp).load_bake("../elsewhere"),
        "Material (a bake's name)",
        glint.BakeError,
        ValueError,
        "../elsewhere",
    ),
    (load_a_damaged_bake, "Material (a damaged bake file)", glint.BakeError, ValueError, "broken.lvxb"),
    (
        lambda tmp: small(tmp).load_bake("nope"),
        "NoSuchBake",
        glint.BakeNotFoundError,
        FileNotFoundError,
        "no bake named 'nope'",
    ),
    (configure_while_recording, "Recording", glint.RecordingStateError, RuntimeError, "while a recording is armed"),
    (record_twice, "NotRecording", glint.RecordingStateError, RuntimeError, "record"),
    (
        lambda tmp: glint.Simulation.from_manifest(manifest(tmp, '[controller]\nkind = "velocity"\nctrl = { vz = 0.5 }\n')),
        "Controller",
        glint.SettingError,
        ValueError,
        "names actuator 'vz'",
    ),
    (
        lambda tmp: glint.Simulation.from_manifest(
            manifest(tmp, f'[controller]\nkind = "replay"\nactions = "{tmp / "none.csv"}"\n')
        ),
        "Actions",
        glint.SettingError,
        ValueError,
        "none.csv",
    ),
    (
        lambda tmp: small(tmp).set_field("geom_rgbz", np.zeros((1, 1, 4))),
        "Setting",
        glint.SettingError,
        ValueError,
        "geom_rgbz",
    ),
    (
        lambda tmp: glint.Simulation.from_manifest(manifest(tmp), nworld=2**40),
        "Memory",
        glint.SettingError,
        ValueError,
        "worlds",
    ),
    (
        lambda tmp: glint.Simulation.from_manifest(manifest(tmp, "[reset.joints]\nnope = 0.1\n")),
        "Reset",
        glint.SettingError,
        ValueError,
        "nope",
    ),
    # Checked by the Python module itself before the simulation is called.
    (
        lambda tmp: small(tmp).step(np.zeros((5, 5))),
        "actions' shape",
        glint.ShapeError,
        ValueError,
        "actions have shape",
    ),
    (
        lambda tmp: small(tmp).observe(out=np.zeros((1, 1), np.float64)),
        "an out= buffer",
        glint.ShapeError,
        ValueError,
        "float32",
    ),
    (
        lambda tmp: small(tmp).reset(seed=-1),
        "a seed past its range",
        glint.SettingError,
        ValueError,
        "seed = -1",
    ),
]


@pytest.mark.parametrize(
    "trigger, variant, cls, kind, words", CASES, ids=[c[1] for c in CASES]
)
def test_each_kind_of_error_has_its_class(tmp_path, trigger, variant, cls, kind, words):
    with pytest.raises(glint.GlintError) as info:
        trigger(tmp_path)
    assert type(info.value) is cls, f"{variant}: {type(info.value).__name__}: {info.value}"
    assert isinstance(info.value, kind), f"{variant}: {type(info.value).__mro__}"
    assert words in str(info.value), f"{variant}: {info.value}"


def test_every_class_is_a_glint_error_of_its_python_kind():
    kinds = {
        "ManifestError": ValueError,
        "ManifestNotFoundError": FileNotFoundError,
        "SceneError": ValueError,
        "LidarError": ValueError,
        "IndexOutOfRangeError": IndexError,
        "BakeError": ValueError,
        "BakeNotFoundError": FileNotFoundError,
        "RecordingError": OSError,
        "RecordingStateError": RuntimeError,
        "ShapeError": ValueError,
        "ActionError": ValueError,
        "SettingError": ValueError,
    }
    exported = [n for n in glint.errors.__all__ if n not in ("GlintError", "GlintWarning")]
    assert sorted(exported) == sorted(kinds)
    for name, kind in kinds.items():
        cls = getattr(glint, name)
        assert cls is getattr(glint.errors, name)
        assert issubclass(cls, glint.GlintError) and issubclass(cls, kind), name
    assert issubclass(glint.GlintWarning, UserWarning)


def test_a_seed_of_another_type_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="seed"):
        small(tmp_path).reset(seed="seven")


def test_a_class_missing_from_glint_errors_stops_the_import():
    """The classes are looked up when the module is imported: one that is missing fails the
    import naming it, where a raise would once have become a bare RuntimeError."""
    # The package's __init__ loads the compiled part right after glint.errors: an empty
    # package stands in for it, so a class can be deleted before the compiled part loads.
    code = (
        "import importlib.util, sys\n"
        "spec = importlib.util.find_spec('glint')\n"
        "import types\n"
        "pkg = types.ModuleType('glint'); pkg.__path__ = list(spec.submodule_search_locations)\n"
        "sys.modules['glint'] = pkg\n"
        "import glint.errors\n"
        "del glint.errors.BakeError\n"
        "try:\n"
        "    from glint import _glint\n"
        "except TypeError as e:\n"
        "    print('refused:', e)\n"
        "else:\n"
        "    print('imported')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "refused: glint.errors.BakeError is not a class glint can raise" in done.stdout, done.stdout


def test_a_nan_action_is_the_same_error_over_grpc_and_from_python(tmp_path, serve, connect):
    """The class Python raises is the kind gRPC's Step names, with the same message."""
    path = manifest(tmp_path, "")
    with pytest.raises(glint.ActionError) as info:
        glint.Simulation.from_manifest(path).step(np.array([0.0, np.nan, 0.0]))
    c = connect(serve(path))
    r = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0, float("nan"), 0.0]), timeout=RPC_TIMEOUT_S)
    assert not r.success
    assert r.message == f"ActionError: {info.value}", r.message


SDF_SCENE = """<mujoco>
  <extension><plugin plugin="mujoco.sdf.torus"><instance name="torus">
    <config key="radius1" value="0.35"/><config key="radius2" value="0.15"/></instance></plugin></extension>
  <asset><mesh name="torus"><plugin instance="torus"/></mesh></asset>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body pos="0 0 1"><freejoint/><geom name="donut" type="sdf" mesh="torus"><plugin instance="torus"/></geom></body>
  </worldbody>
</mujoco>"""


def test_an_sdf_geom_is_refused_naming_the_geom(tmp_path):
    """SDF geoms need MuJoCo's plugins, which the `mujoco` package registers when imported; a
    model MuJoCo compiles with one is refused by name rather than cast wrongly. In a child
    process without MUJOCO_GL, so that importing `mujoco` loads no OpenGL."""
    if importlib.util.find_spec("mujoco") is None:
        pytest.skip("the mujoco package is not installed")
    path = tmp_path / "sdf.xml"
    path.write_text(SDF_SCENE)
    code = (
        "import sys, mujoco, glint\n"
        "m = mujoco.MjModel.from_xml_path(sys.argv[1])\n"
        "assert m.geom_type[1] == mujoco.mjtGeom.mjGEOM_SDF\n"
        "try:\n"
        "    glint.Simulation.from_xml(sys.argv[1])\n"
        "except glint.errors.SceneError as e:\n"
        "    print('refused:', e)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MUJOCO_GL"}
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "refused: geom 1 ('donut') is an SDF geom" in done.stdout, done.stdout
