#!/usr/bin/env bash
# Installs what is missing, builds, and runs a quickstart sweep on the best backend found
# (CUDA, else HIP, else the host CPU), writing tiletune.db and printing the winners.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
# Ninja and unity batches as scripts/test.sh configures build/ (a tree configured before keeps its generator).
generator=(-G Ninja) && [ -f build/CMakeCache.txt ] && generator=()
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build -j"$(nproc)" --target tiletune
./build/tiletune devices
./build/tiletune tune configs/examples/quickstart.json --db tiletune.db "$@"
./build/tiletune db winners tiletune.db
