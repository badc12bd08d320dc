#!/usr/bin/env bash
# Fetches MuJoCo 3.17.0's shared library and headers from the `mujoco` wheel on PyPI into
# .deps/mujoco/{lib,include}. Idempotent: does nothing when the library is already there.
set -euo pipefail
version=3.17.0
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.deps/mujoco"
lib="$dest/lib/libmujoco.so.$version"

if [ -f "$lib" ] && [ -e "$dest/lib/libmujoco.so" ]; then
  exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "error: python3 is needed once to fetch MuJoCo $version (the mujoco wheel from PyPI)." >&2
  echo "       install it, e.g. 'apt-get install python3 python3-pip', then run make again." >&2
  exit 1
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "error: pip is needed once to fetch MuJoCo $version; install it with 'apt-get install python3-pip'." >&2
  exit 1
fi

wheels="$root/.deps/wheels"
mkdir -p "$wheels"
if ! ls "$wheels"/mujoco-$version-*.whl >/dev/null 2>&1; then
  echo "fetching the mujoco==$version wheel (once) ..." >&2
  python3 -m pip download --quiet --no-cache-dir --no-deps --only-binary=:all: "mujoco==$version" -d "$wheels"
fi
wheel=$(ls "$wheels"/mujoco-$version-*.whl | head -n 1)

rm -rf "$dest.tmp"
mkdir -p "$dest.tmp/lib" "$dest.tmp/include"
python3 - "$wheel" "$dest.tmp" "$version" <<'PY'
import os, sys, zipfile
wheel, out, version = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name == f"mujoco/libmujoco.so.{version}":
            target = os.path.join(out, "lib", os.path.basename(name))
        elif name.startswith("mujoco/include/mujoco/") and name.endswith(".h"):
            target = os.path.join(out, "include", "mujoco", os.path.basename(name))
        else:
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(name) as src, open(target, "wb") as dst:
            dst.write(src.read())
if not os.path.exists(os.path.join(out, "lib", f"libmujoco.so.{version}")):
    sys.exit(f"error: {wheel} holds no libmujoco.so.{version}")
PY
ln -sf "libmujoco.so.$version" "$dest.tmp/lib/libmujoco.so"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "MuJoCo $version is in $dest" >&2
