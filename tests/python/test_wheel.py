"""The wheel users install (`make wheel`): built here, installed with pip into fresh venvs
outside the checkout, with an empty environment (`env -i`: no Rust toolchain, no `.deps` on
any path, no LD_LIBRARY_PATH), its dependencies from PyPI. It must import, scan, render and
run `glint run` on a copy of the showroom, and its sensors must equal `mj_ray` of whichever
`mujoco` the venv has: MuJoCo 3.17 (glint's own engine) and the newest 4.x."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The interpreter the test venv was made from (a fresh venv needs a base interpreter).
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)
PINS = {"3": ["mujoco==3.17.0", "numpy==2.2.6"], "4": ["mujoco==4.0.1", "numpy==2.2.6"]}


def _clean_env(home: Path) -> dict:
    """What `env -i` leaves, plus a home and pip's download cache (a cache, on no load path)."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "PIP_CACHE_DIR": str(ROOT / ".deps" / "pip-cache"), "LANG": "C.UTF-8"}


@pytest.fixture(scope="module")
def wheel() -> Path:
    done = subprocess.run(["bash", str(ROOT / "scripts" / "wheel.sh")], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    wheel = Path(done.stdout.strip().splitlines()[-1])
    assert wheel.name.startswith("glint-0.1.0-cp310-abi3-manylinux_2_") and wheel.name.endswith("_x86_64.whl"), wheel
    return wheel


def _venv(tmp: Path, wheel: Path, major: str) -> tuple[Path, dict]:
    env = _clean_env(tmp)
    venv = tmp / f"venv-mujoco{major}"
    subprocess.run([BASE_PYTHON, "-m", "venv", str(venv)], env=env, check=True, capture_output=True)
    install = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    done = subprocess.run([*install, str(wheel), *PINS[major]], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return venv, env


def test_the_wheel_holds_everything_and_points_nowhere_else(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        z.extractall(tmp_path)
        metadata = z.read("glint-0.1.0.dist-info/METADATA").decode()
        entry_points = z.read("glint-0.1.0.dist-info/entry_points.txt").decode()
    for needed in ["glint/_bin/glint", "glint/_libs/libmujoco.so.3.17.0", "glint/_libs/MUJOCO_LICENSE", "glint/py.typed",
                   "glint/_glint.pyi", "glint/own.py"]:
        assert needed in names, needed
    assert "glint=glint._cli:main" in entry_points.replace(" ", "")
    for field in ["License: Apache-2.0", "Requires-Dist: numpy", "Project-URL: Homepage", "Classifier: Typing :: Typed",
                  "Requires-Python: >=3.10"]:
        assert field in metadata, field
    elves = [tmp_path / "glint/_bin/glint", *tmp_path.glob("glint/_glint*.so")]
    for elf in elves:
        dynamic = subprocess.run(["readelf", "-d", str(elf)], capture_output=True, text=True, check=True).stdout
        paths = [line.split("[", 1)[1].rstrip("]") for line in dynamic.splitlines() if "RUNPATH" in line or "RPATH" in line]
        assert paths and all(p.startswith("$ORIGIN") for p in ":".join(paths).split(":")), (elf, paths)


def test_installs_into_a_fresh_venv_and_runs_without_the_checkout(wheel, tmp_path):
    venv, env = _venv(tmp_path, wheel, "3")
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples" / "showroom", work / "showroom")
    script = """
import json, glint, mujoco
m = mujoco.MjModel.from_xml_path("showroom/showroom.xml"); d = mujoco.MjData(m); mujoco.mj_forward(m, d)
scan = glint.Lidar(m, site="lidar", preset="velodyne-vlp16").scan(d)
r = glint.Renderer(m, 48, 64); r.update_scene(d); rgb = r.render()
print(json.dumps({"module": glint.__file__, "beams": scan.ranges.shape[1], "hits": int((scan.ranges > 0).sum()),
                  "rgb": list(rgb.shape), "mean": float(rgb.mean())}))
"""
    done = subprocess.run([str(venv / "bin" / "python"), "-c", script], env=env, cwd=work, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["module"].startswith(str(venv)) and str(ROOT) not in figures["module"], figures
    assert figures["beams"] == 28800 and figures["hits"] > 1000, figures
    assert figures["rgb"] == [48, 64, 3] and figures["mean"] > 5, figures

    run = [str(venv / "bin" / "glint"), "run", "showroom/showroom.toml", "--seconds", "0.5", "--out", "sessions"]
    done = subprocess.run(run, env=env, cwd=work, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert list((work / "sessions").glob("*/meta/info.json")), list((work / "sessions").rglob("*"))[:20]


@pytest.mark.parametrize("major", ["3", "4"])
def test_sensors_equal_mj_ray_of_the_venvs_mujoco(wheel, tmp_path, major):
    venv, env = _venv(tmp_path, wheel, major)
    scenes = [ROOT / "examples/showroom/showroom.xml", ROOT / "examples/meshes.xml", ROOT / "examples/primitives.xml"]
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples", work / "examples")
    shutil.copy(Path(__file__).with_name("own_checks.py"), work)
    args = [str(work / "examples" / s.relative_to(ROOT / "examples")) for s in scenes]
    done = subprocess.run(
        [str(venv / "bin" / "python"), "own_checks.py", *args, "--random", "4"], env=env, cwd=work, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["mujoco"].startswith(f"{major}."), figures["mujoco"]
    for name, f in figures["scenes"].items():
        assert f["rays"]["geom_mismatch"] == 0 and f["rays"]["max_rel"] <= 1e-9, (name, f)
        if "lidar" in f:
            assert f["lidar"]["geom_mismatch"] == 0 and f["lidar"]["max_rel"] <= 1.2e-7, (name, f)
        assert f["camera"]["seg_mismatch"] == 0 and f["camera"]["max_rel"] <= 1.2e-7, (name, f)
