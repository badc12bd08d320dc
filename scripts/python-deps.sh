#!/usr/bin/env bash
# Creates .deps/venv with the pinned Python packages the tests use to read glint's outputs
# with readers that are not ours (plyfile for PLY point clouds, pyarrow for Parquet
# recordings), and imageio-ffmpeg for the static ffmpeg build the video-proxy tests encode
# with (glint finds it through GLINT_FFMPEG). Idempotent: does nothing when the pinned set is already installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.deps/venv"
pins="plyfile==1.1.5 numpy==2.2.6 pyarrow==26.0.1 imageio-ffmpeg==0.6.0"
stamp="$venv/.glint-pins"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ]; then
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
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check $pins
echo "$pins" > "$stamp"
