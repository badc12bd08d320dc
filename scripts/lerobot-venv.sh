#!/usr/bin/env bash
# Creates .deps/lerobot: LeRobot 0.6.1 (the reader `glint export --format lerobot` is tested
# against, tests/python/test_lerobot.py) with every dependency pinned in
# scripts/lerobot-requirements.txt. LeRobot 0.6 needs Python 3.12 or newer, which is looked
# for as $GLINT_LEROBOT_BASE_PYTHON, python3.12 or python3.13 on PATH, then pyenv's versions.
# PyTorch comes from PyPI with its CUDA libraries (about 5 GB); the tests run it on the CPU.
# Idempotent: does nothing when the pinned set is already installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.deps/lerobot"
pins="$root/scripts/lerobot-requirements.txt"
stamp="$venv/.glint-pins"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$stamp" "$pins"; then
  exit 0
fi
base="${GLINT_LEROBOT_BASE_PYTHON:-}"
if [ -z "$base" ]; then
  for candidate in python3.12 python3.13 "$HOME"/.pyenv/versions/3.12*/bin/python3 "$HOME"/.pyenv/versions/3.13*/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      base=$(command -v "$candidate")
      break
    fi
  done
fi
if [ -z "$base" ]; then
  echo "error: LeRobot 0.6 (the reader the LeRobot export is tested with) needs Python 3.12 or newer, and none" \
    "was found (python3.12, python3.13, ~/.pyenv/versions/3.12*): install one (apt-get install python3.12-venv on" \
    "Debian 13 / Ubuntu 24.04, or pyenv install 3.12) or point GLINT_LEROBOT_BASE_PYTHON at it." >&2
  exit 1
fi
rm -rf "$venv"
"$base" -m venv "$venv"
echo "installing LeRobot 0.6.1 and its pinned dependencies into $venv with $base (once, about 5 GB) ..." >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$pins"
cp "$pins" "$stamp"
