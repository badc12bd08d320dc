#!/usr/bin/env bash
# QEMU's user-mode emulator (Debian's qemu-user-static, pinned), unpacked into .deps/qemu
# without root, so that tests can run glint's portable build on an emulated older CPU
# (`qemu-x86_64 -cpu SandyBridge ...`): an AVX-2 or AVX-512 instruction outside the paths
# chosen at run time dies there with SIGILL. One static binary, no dependencies. Idempotent:
# does nothing once the pinned version is unpacked and runs. Prints the emulator's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.deps/qemu"
arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
pin="qemu-user-static=1:7.2+dfsg-7+deb12u18+b2"
stamp="$dest/.glint-pins"
qemu="$dest/usr/bin/qemu-x86_64-static"

runs() { [ -x "$qemu" ] && "$qemu" -version >/dev/null 2>&1; }

# Test processes that start at once unpack it once.
mkdir -p "$root/.deps"
exec 9>"$root/.deps/.qemu.lock"
flock 9

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pin $arch" ] && runs; then
  echo "$qemu"
  exit 0
fi
if [ "$arch" != amd64 ]; then
  echo "error: the emulated-CPU tests need an x86-64 (amd64) Debian machine; this one is '$arch'." >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
  echo "error: unpacking QEMU needs Debian's apt-get and dpkg-deb; elsewhere install qemu-user (qemu-x86_64) and set GLINT_QEMU to its path." >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest/debs"
echo "unpacking $pin into $dest (once) ..." >&2
if ! (cd "$dest/debs" && apt-get download "$pin" >/dev/null 2>"$dest/apt.log"); then
  echo "error: apt-get download $pin failed (see $dest/apt.log); run 'apt-get update' if the package lists are missing." >&2
  exit 1
fi
for deb in "$dest"/debs/*.deb; do
  dpkg-deb -x "$deb" "$dest"
done
# Only the x86-64 emulator is used: the package's other architectures (60 MB) are dropped.
find "$dest/usr/bin" -type f ! -name qemu-x86_64-static -delete
find "$dest/usr" -mindepth 1 -maxdepth 1 ! -name bin -exec rm -rf {} +
rm -rf "$dest/debs" "$dest/apt.log"
if ! runs; then
  echo "error: $qemu was unpacked but does not run" >&2
  exit 1
fi
echo "$pin $arch" > "$stamp"
echo "$qemu"
