#!/usr/bin/env bash
# Builds glint's Python module (crates/glint-py, PyO3 + maturin) into .deps/venv as an editable
# install: the compiled `_glint` goes beside the package's Python sources
# (crates/glint-py/python/glint/), which the venv imports in place. Cargo rebuilds only what
# changed. Needs scripts/python-deps.sh first (it pins maturin).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.deps/venv"
if [ ! -x "$venv/bin/maturin" ]; then
  echo "error: $venv has no maturin: run scripts/python-deps.sh (make pydeps) first" >&2
  exit 1
fi
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop --release --quiet \
  -m "$root/crates/glint-py/Cargo.toml" >&2
