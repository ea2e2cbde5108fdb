#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test with ctest (GPU tests skip without a GPU),
# the installed CMake package's and the Python package's tests;
# then the input-facing tests and the fuzzers (bounded) again under AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan/ (host backend only; TILETUNE_SKIP_SANITIZE=1 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
# Every compile goes through ccache with a cache inside build/: the Python package (build-python/,
# the same depth below the tree, so the same relative paths) then reuses the objects compiled here
# instead of compiling the libraries and the program a second time. Depend mode: no extra
# preprocessor run on a miss. The compiler's name is part of ccache's key: CXX names it for both
# (scikit-build-core would otherwise take Python's g++ where CMake takes c++).
export CXX=${CXX:-c++} CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_DIR="$PWD/build/ccache" CCACHE_BASEDIR="$PWD" \
       CCACHE_NOHASHDIR=1 CCACHE_DEPEND=1 CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime CCACHE_MAXSIZE=2G
# Every kernel the tests build from source goes through one compile cache (gpu/compile_cache.h),
# one per host as the Python dependencies are (TILETUNE_TEST_COMPILE_CACHE): ctest's, pytest's and
# the sanitized runs' sweeps tune the same few kernels again and again, and a later clone's compile
# tests read what an earlier one compiled. Its keys name the compiler and every input, so a changed
# template or compiler compiles anew; delete the folder to empty it.
export TILETUNE_COMPILE_CACHE=${TILETUNE_TEST_COMPILE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tiletune/compile-cache}
# configure DIR ARGS...: Ninja, unless DIR was configured with another generator before.
configure() {
  local dir=$1; shift
  local generator=(-G Ninja)
  [ -f "$dir/CMakeCache.txt" ] && generator=()
  cmake -S . -B "$dir" "${generator[@]}" "$@" >/dev/null
}
# Unity builds (a library's files compiled in batches, pyproject.toml's too): the headers each file
# parses (nlohmann-json, CLI11, the standard library) and their templates' code once per batch.
configure build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DTILETUNE_TEST_COMPILE_CACHE="$TILETUNE_COMPILE_CACHE"
# The fuzzers run twice: 2 s per target here, 5 s under the sanitizers below, where what they
# find shows (TILETUNE_FUZZ_SECONDS sets both).
fuzz_seconds=${TILETUNE_FUZZ_SECONDS:-}
export TILETUNE_FUZZ_SECONDS=${fuzz_seconds:-2}
cmake --build build -j"$(nproc)"
(cd build && ctest --output-on-failure -j"$(nproc)" "$@")
scripts/test_install.sh build  # the installed package from C, C++, pkg-config and add_subdirectory
sanitize=1
[ "${TILETUNE_SKIP_SANITIZE:-0}" = 1 ] && sanitize=0
if [ "$sanitize" = 1 ]; then
# The tests marked SANITIZE in tests/CMakeLists.txt (input-facing ones and the fuzzers), again.
# Line tables (-g1) are what the sanitizers' reports need. Clang 22 (install-deps.sh's optional
# clang-22, the offline AMD compiler) at -O0 builds this folder in a quarter of the CPU time of g++
# at -O1 (GCC's UBSan instrumentation is slow to compile), and the sanitized tests run as long: they
# wait on the fuzzers' clocks and on the program. Without it, g++ at -O1 (half the time of -O2 -g).
# A folder keeps the compiler it was configured with. Debug is only the configuration's name:
# asserts stay off (NDEBUG) as in build/; libstdc++'s deprecations are g++'s to report (build/).
asan_cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' build-asan/CMakeCache.txt 2>/dev/null || true)
if [ -z "$asan_cxx" ] && command -v clang++-22 >/dev/null &&
   echo 'int main() {}' | clang++-22 -fsanitize=address,undefined -x c++ - -o /dev/null 2>/dev/null; then
  asan_cxx=$(command -v clang++-22)
fi
asan_build=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
[[ "$asan_cxx" == *clang++-22 ]] && asan_build=(-DCMAKE_CXX_COMPILER="$asan_cxx" -DCMAKE_BUILD_TYPE=Debug
  -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1 -DNDEBUG -Wno-deprecated-declarations")
# It compiles while the Python package is built and tested below (pytest keeps about one core busy),
# its output in build/asan-build.log, shown if it fails.
(
  configure build-asan -DCMAKE_UNITY_BUILD=ON "${asan_build[@]}" \
    -DTILETUNE_SANITIZE=ON -DTILETUNE_CUDA=OFF -DTILETUNE_HIP=OFF -DTILETUNE_BENCHMARKS=OFF -DTILETUNE_EXAMPLES=OFF \
    -DTILETUNE_MPI=OFF -DTILETUNE_TESTS_SANITIZED_ONLY=ON
  cmake --build build-asan -j"$(nproc)" --target tiletune tiletune_tests
) > build/asan-build.log 2>&1 &
asan_pid=$!
trap 'kill "$asan_pid" 2>/dev/null || true' EXIT
fi
# The Python package with PyTorch on the CPU (TILETUNE_SKIP_PYTHON=1 skips it).
[ "${TILETUNE_SKIP_PYTHON:-0}" = 1 ] || scripts/test_python.sh
[ "$sanitize" = 1 ] || exit 0
wait "$asan_pid" || { tail -50 build/asan-build.log; echo "build-asan/ failed to build (build/asan-build.log)"; exit 1; }
trap - EXIT
export TILETUNE_FUZZ_SECONDS=${fuzz_seconds:-5}
# Leaks are not failures here; the crash tests expect their workers' signals (handle_segv=0).
export ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigill=0:handle_abort=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Each test executable runs whole (one ASan start per executable, not one per test as ctest would
# do: those starts cost more than the tests), as many at a time as there are cores; each one's
# output is printed when it finishes, and the failures are named at the end.
logs=build-asan/sanitized-logs
rm -rf "$logs" && mkdir -p "$logs"
run_sanitized() {
  local name=${1##*/} status=passed
  "$1" --gtest_brief=1 >"$logs/$name.log" 2>&1 || { status=FAILED; touch "$logs/$name.failed"; }
  { echo "== $name under ASan+UBSan: $status"; cat "$logs/$name.log"; } | flock "$logs" cat
}
export -f run_sanitized && export logs
find build-asan/tests -maxdepth 1 -type f -executable -name 'test*' | xargs -P"$(nproc)" -I{} bash -c 'run_sanitized {}'
failed=$(find "$logs" -name '*.failed' -printf '%f ' | sed 's/\.failed//g')
if [ -n "$failed" ]; then
  echo "failed under the sanitizers: $failed"
  exit 1
fi
echo "all sanitized tests passed"
