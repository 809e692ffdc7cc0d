#!/usr/bin/env bash
# Installs what building and testing kgen needs, where it is missing:
# meson, ninja, jinja2, pytest (PyPI) and Catch2 (Debian/Ubuntu package).
# The CUDA toolkit (nvcc) must already be installed.
set -euo pipefail
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null || { echo "install-deps: nvcc not found (install the CUDA toolkit)" >&2; exit 1; }
missing=()
for m in mesonbuild jinja2 pytest; do python3 -c "import $m" 2>/dev/null || missing+=("$m"); done
command -v ninja >/dev/null || missing+=(ninja)
if [ ${#missing[@]} -gt 0 ]; then
  python3 -m pip install -q meson ninja jinja2 pytest
fi
if ! pkg-config --exists catch2 2>/dev/null; then
  if command -v apt-get >/dev/null; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq catch2 pkg-config >/dev/null
  else
    echo "install-deps: Catch2 not found; install it (catch2 2.13+ or 3.x)" >&2; exit 1
  fi
fi
