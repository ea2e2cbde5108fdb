#!/usr/bin/env bash
# The installed package as a consumer sees it: `cmake --install` of BUILD_DIR into a fresh prefix,
# a tiny host sweep with the installed program, then tests/consumer built against the prefix with
# find_package(tiletune) (C and C++) and with pkg-config (C), each run on the tuned database; and
# the tree configured inside another project with add_subdirectory (tests, benchmarks, examples and
# install rules off by default there).
# Usage: scripts/test_install.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cmake --install "$B" --prefix "$T/prefix" > "$T/install.log"
# The configs keep their folders, with the shapes their relative paths name, and the license.
for f in configs/examples/quickstart.json configs/h200/h200_gemm_bf16.json configs/shapes/gemm.json; do
  [ -f "$T/prefix/share/tiletune/$f" ] || { echo "not installed: share/tiletune/$f"; exit 1; }
done
[ -f "$T/prefix/share/doc/tiletune/LICENSE" ] || { echo "not installed: share/doc/tiletune/LICENSE"; exit 1; }
"$T/prefix/bin/tiletune" --version | grep -qx "tiletune [0-9]*\.[0-9]*\.[0-9]*"
# The library exports the C API and nothing else (cmake/runtime.map).
lib=$(find "$T/prefix" -name libtiletune_runtime.so.0 | head -1)
extra=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^tiletune_' || true)
[ -z "$extra" ] || { echo "libtiletune_runtime exports more than the C API:"; echo "$extra" | head; exit 1; }
cat > "$T/tiny.json" <<'JSON'
{"name": "install-test",
 "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 40, "n": 24, "k": 16}],
 "templates": {"host_gemm": {"parameters": {"MT0": [16], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [4]}}},
 "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 3, "target_ms": 2}}
JSON
"$T/prefix/bin/tiletune" tune "$T/tiny.json" --backend host --db "$T/tiny.db" > "$T/tune.log" 2>&1 ||
  { cat "$T/tune.log"; exit 1; }
cmake -S tests/consumer -B "$T/consumer" -DCMAKE_PREFIX_PATH="$T/prefix" > "$T/consumer.log" ||
  { cat "$T/consumer.log"; exit 1; }
cmake --build "$T/consumer" > "$T/consumer_build.log" || { cat "$T/consumer_build.log"; exit 1; }
"$T/consumer/consumer_c" "$T/tiny.db"
"$T/consumer/consumer_cpp" "$T/tiny.db"
pc=$(PKG_CONFIG_PATH="$T/prefix/lib/pkgconfig" pkg-config --cflags --libs tiletune)
cc tests/consumer/consumer.c $pc -lm -o "$T/consumer_pc"
"$T/consumer_pc" "$T/tiny.db"
mkdir -p "$T/parent"
cat > "$T/parent/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.22)
project(parent LANGUAGES CXX)
add_subdirectory("$PWD" tiletune)
if(TARGET tiletune_tests OR NOT TARGET tiletune::runtime)
  message(FATAL_ERROR "add_subdirectory: expected tiletune::runtime and no tests")
endif()
CMAKE
cmake -S "$T/parent" -B "$T/parent/build" > "$T/parent.log" || { cat "$T/parent.log"; exit 1; }
echo "install test passed: find_package (C, C++), pkg-config (C), add_subdirectory"
