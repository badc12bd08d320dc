"""The Python module on emulated older CPUs.

The `glint` module is built for x86-64-v2 and its lane loops pick AVX2 or AVX-512 at run time.
Here `import glint` and a few steps of the showroom's lidar run under QEMU's user-mode
emulator as a Sandy Bridge (AVX, but no AVX2, FMA or AVX-512: the oldest CPU that MuJoCo's own
library, built with AVX, runs on) and as a Haswell (AVX2, no AVX-512), and give the same
ranges, bit for bit, as this CPU. A module built for this machine's CPU (`make native` on an
AVX-512 one) dies there with SIGILL.

glibc's libm picks its own code by CPU, and its FMA variants of `sin`, `cos` and the like differ
from the others in the last bit (glint's scan patterns, and MuJoCo, call them): every run here
is told to use the variants without FMA (`GLIBC_TUNABLES=glibc.cpu.hwcaps=-FMA`), which a Sandy
Bridge uses anyway, so that only glint's own code paths differ between runs.

QEMU comes from `scripts/qemu.sh` (Debian's qemu-user-static, pinned, in `.deps/qemu`), or
`$GLINT_QEMU`; where it cannot be had, the test is skipped with the reason.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHOWROOM_TOML = REPO / "examples" / "showroom" / "showroom.toml"

# Two worlds, three ticks of the showroom's OS1-64; the ranges' digest and hit count.
SCRIPT = f"""
import hashlib
import glint
import numpy as np

sim = glint.Simulation.from_manifest(r"{SHOWROOM_TOML}", nworld=2)
sim.lidar_live = True
digest = hashlib.sha256()
hits = 0
for _ in range(3):
    sim.step()
    ranges = np.ascontiguousarray(sim.lidars[0].scan().ranges)
    digest.update(ranges.tobytes())
    hits += int((ranges > 0).sum())
print(digest.hexdigest(), hits)
"""


def qemu() -> str:
    """QEMU's x86-64 user-mode emulator; skips the test where there is none."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the emulated CPUs are x86-64 ones")
    if os.environ.get("GLINT_QEMU"):
        return os.environ["GLINT_QEMU"]
    run = subprocess.run(["bash", str(REPO / "scripts" / "qemu.sh")], capture_output=True, text=True)
    lines = run.stdout.strip().splitlines()
    if run.returncode != 0 or not lines:
        pytest.skip(f"QEMU could not be had: {run.stderr.strip()}")
    return lines[-1]


def scan(*wrapper: str) -> str:
    """The script's report, run by this Python (under `wrapper`, e.g. QEMU, when given)."""
    env = dict(os.environ, GLIBC_TUNABLES="glibc.cpu.hwcaps=-FMA")
    run = subprocess.run([*wrapper, sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env)
    # 132 (or -4): SIGILL, an instruction the CPU lacks.
    assert run.returncode == 0, f"{wrapper} failed ({run.returncode}): {run.stderr}\n{run.stdout}"
    return run.stdout.strip().splitlines()[-1]


def test_the_module_runs_on_older_cpus_with_the_same_ranges():
    emulator = qemu()
    here = scan()
    assert int(here.split()[1]) > 100_000, here
    for cpu in ("SandyBridge", "Haswell"):
        assert scan(emulator, "-cpu", cpu) == here, f"a {cpu}'s ranges differ from this CPU's"
