#!/usr/bin/env bash
# The acceptance corpus of real robot models (tests/corpus/scenes.toml): downloads the pinned
# wheels of tests/corpus/requirements.txt from PyPI (`pip download --no-deps
# --require-hashes`: never installed, as their own mujoco pins would clash with
# mujoco==3.17.0), unpacks their MJCF and asset files into .deps/corpus/<package>, and writes
# each scene of scenes.toml beside its source file with the corpus camera added
# (tests/corpus/assemble.py). Needs .deps/venv (scripts/python-deps.sh) for pip and the
# `mujoco` package. Idempotent: does nothing when the pinned wheels are unpacked and the
# scenes were written from the current scenes.toml and templates.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.deps/corpus"
py="$root/.deps/venv/bin/python"
reqs="$root/tests/corpus/requirements.txt"
stamp="$dest/.glint-pins"

if [ ! -x "$py" ]; then
  echo "error: $py is missing: run 'make pydeps' (scripts/python-deps.sh) before scripts/corpus.sh" >&2
  exit 1
fi
want=$(cat "$reqs" "$root/tests/corpus/scenes.toml" "$root/tests/corpus/assemble.py" "$root"/tests/corpus/templates/*.xml | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
mkdir -p "$dest/wheels"
# Only the wheels are kept between versions of scenes.toml; the unpacked trees are remade.
if ! "$py" -m pip download --quiet --disable-pip-version-check --no-cache-dir --no-deps --require-hashes \
  --only-binary :all: -r "$reqs" -d "$dest/wheels" >"$dest/pip.log" 2>&1; then
  echo "error: pip download of the corpus packages failed (see $dest/pip.log); PyPI must be reachable, or put the pinned wheels of $reqs into $dest/wheels" >&2
  exit 1
fi
# Only the pinned versions' wheels: an older pin's wheel left in wheels/ is not unpacked.
grep -o '^[A-Za-z0-9_.-]*==[^ ]*' "$reqs" | while IFS='=' read -r pkg _ version; do
  name=${pkg//-/_}
  wheel=$(ls "$dest/wheels/$name-$version-"*.whl)
  rm -rf "$dest/$name"
  mkdir -p "$dest/$name"
  # MJCF and its assets only: no Python is unpacked, so nothing of them can be imported.
  "$py" - "$wheel" "$dest/$name" <<'PY'
import sys, zipfile
keep = (".xml", ".stl", ".obj", ".msh", ".png", ".skn", ".ply", ".bin")
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.lower().endswith(keep) and ".dist-info/" not in n])
PY
done
"$py" "$root/tests/corpus/assemble.py" "$dest"
echo "$want" > "$stamp"
