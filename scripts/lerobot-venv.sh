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
# The installed set is about 5.3 GB; one package at a time (below) needs room for it and the
# largest wheel besides (cuDNN, under 1 GB), where one pip call would hold every download
# (about 3 GB more) until the end.
need_mb=6500
mkdir -p "$(dirname "$venv")"
free_mb=$(df -Pm "$(dirname "$venv")" | awk 'NR == 2 { print $4 }')
if [ "${free_mb:-0}" -lt "$need_mb" ]; then
  echo "error: LeRobot and PyTorch need about $need_mb MB free in $(dirname "$venv"), and only $free_mb MB" \
    "are: free some space (an old target/ or ~/.cache/pip) and run make test again." >&2
  exit 1
fi
"$base" -m venv "$venv"
echo "installing LeRobot 0.6.1 and its pinned dependencies into $venv with $base (once, about 5 GB) ..." >&2
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-cache-dir)
# The pins are the whole closure, so each goes in without its dependencies; no cache, so the
# wheels do not stay behind beside what they installed.
grep -o '^[A-Za-z0-9_.-]*==[^ ]*' "$pins" | while read -r pin; do
  "${pip[@]}" install --quiet --no-deps "$pin"
done
# Then the set as pip resolves it: a pin missing from the closure fails here, by name.
"${pip[@]}" install --quiet -r "$pins"
"${pip[@]}" check >&2
cp "$pins" "$stamp"
