"""The type stubs shipped with glint's compiled module match it (mypy's stubtest), and the
package is marked typed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import glint


def test_stubs_match_the_module():
    done = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "glint._glint"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout


def test_the_package_ships_its_stubs_and_py_typed():
    package = Path(glint.__file__).parent
    assert (package / "py.typed").exists()
    assert (package / "_glint.pyi").exists()
