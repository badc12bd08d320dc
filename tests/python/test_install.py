"""A user's install: `pip install ./crates/glint-py` into a new virtual environment builds the
module, and it runs the bundled showroom from there."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_pip_install_into_a_new_venv_then_step_the_showroom(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "LD_LIBRARY_PATH")}
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(REPO / "crates" / "glint-py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    run = subprocess.run(
        [
            str(python),
            "-c",
            "import glint; glint.Simulation.from_manifest('examples/showroom/showroom.toml').step()",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # The installed package is the user's copy, not the checkout's sources.
    where = subprocess.run(
        [str(python), "-c", "import glint; print(glint.__file__)"], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert str(env_dir) in where.stdout, where.stdout + where.stderr
