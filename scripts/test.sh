#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test with ctest. GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
cd build && ctest --output-on-failure -j"$(nproc)" "$@"
