#!/usr/bin/env bash
# Mesa's off-screen software renderer (Debian's libosmesa6, pinned), unpacked into
# .deps/osmesa without root, so that MuJoCo's classic renderer (the `mujoco` Python package
# with MUJOCO_GL=osmesa) draws headless on the CPU for `glint lights report` and its test.
# Its own dependencies (libglapi-mesa, libLLVM 15) are unpacked beside it when the system
# lacks them. Idempotent: does nothing once the pinned set is unpacked and loads.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.deps/osmesa"
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
triplet=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
lib="$dest/usr/lib/$triplet"
pins="libosmesa6=22.3.6-1+deb12u1 libglapi-mesa=22.3.6-1+deb12u1 libllvm15=1:15.0.6-4+b1"
stamp="$dest/.glint-pins"

loads() { LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$lib/libOSMesa.so.8" 2>/dev/null | grep -q "not found" && return 1; [ -f "$lib/libOSMesa.so.8" ]; }

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins $arch" ] && loads; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
  echo "error: unpacking Mesa's OSMesa needs Debian's apt-get and dpkg-deb; on another system install OSMesa (libOSMesa.so.8) and put it on LD_LIBRARY_PATH." >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest/debs"
echo "unpacking $pins into $dest (once) ..." >&2
need="libosmesa6=22.3.6-1+deb12u1"
# The dependencies come along only where the system does not have them already.
ldconfig -p | grep -q "libglapi.so.0 " || need="$need libglapi-mesa=22.3.6-1+deb12u1"
ldconfig -p | grep -q "libLLVM-15.so.1 " || need="$need libllvm15=1:15.0.6-4+b1"
if ! (cd "$dest/debs" && apt-get download $need >/dev/null 2>"$dest/apt.log"); then
  echo "error: apt-get download $need failed (see $dest/apt.log); run 'apt-get update' if the package lists are missing, then make test again." >&2
  exit 1
fi
for deb in "$dest"/debs/*.deb; do
  dpkg-deb -x "$deb" "$dest"
done
if ! loads; then
  echo "error: $lib/libOSMesa.so.8 was unpacked but does not load:" >&2
  LD_LIBRARY_PATH="$lib" ldd "$lib/libOSMesa.so.8" | grep "not found" >&2 || true
  exit 1
fi
echo "$pins $arch" > "$stamp"
