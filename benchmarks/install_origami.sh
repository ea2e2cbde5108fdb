#!/usr/bin/env bash
# Builds hipBLASLt's analytical GEMM model (PyPI rocm-origami 0.0.3, MIT) from its sdist into a
# virtual environment, build-origami/venv (ignored by git), for benchmarks/amd_model_vs_origami.py.
# No GPU and no ROCm install: g++ against Debian's HIP 5.2 headers.
#
# The sdist's CMake wants three things this machine lacks, each replaced here:
#  - rocm-cmake, which it clones from GitHub: Debian's rocm-cmake package, given as the fetched source;
#  - nanobind, also cloned: the PyPI nanobind it was written for (2.0.0);
#  - hip-config.cmake, whose Debian copy insists on /usr/bin/hipcc (a whole clang-15): a stand-in
#    for the one target origami links, hip::host (libamdhip64, which only get_hardware_for_device
#    calls, so arch-described hardware needs no GPU).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${ORIGAMI_DIR:-$root/build-origami}"
version=0.0.3

apt-get install -y --no-install-recommends rocm-cmake libamdhip64-dev g++ >/dev/null
mkdir -p "$dir/rocm-cmake-src/share/rocmcmakebuildtools" "$dir/hip-stub"
ln -sfn /usr/share/rocm/cmake "$dir/rocm-cmake-src/share/rocmcmakebuildtools/cmake"
cat >"$dir/hip-stub/hip-config.cmake" <<'EOF'
if(NOT TARGET hip::host)
  add_library(hip::host INTERFACE IMPORTED)
  set_target_properties(hip::host PROPERTIES INTERFACE_COMPILE_DEFINITIONS __HIP_PLATFORM_AMD__
                                             INTERFACE_LINK_LIBRARIES amdhip64)
endif()
set(hip_FOUND TRUE)
EOF

[ -x "$dir/venv/bin/python" ] || python3 -m venv "$dir/venv"
pip="$dir/venv/bin/pip"
"$pip" install -q "scikit-build-core>=0.5" "nanobind==2.0.0" "cmake>=3.25" ninja scipy
export CMAKE_ARGS="-DFETCHCONTENT_SOURCE_DIR_ROCM-CMAKE=$dir/rocm-cmake-src -DFETCHCONTENT_TRY_FIND_PACKAGE_MODE=ALWAYS \
  -Dnanobind_DIR=$("$dir/venv/bin/python" -m nanobind --cmake_dir) -Dhip_DIR=$dir/hip-stub -DCMAKE_POLICY_VERSION_MINIMUM=3.5"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
"$pip" install --no-build-isolation --no-binary rocm-origami "rocm-origami==$version"
"$dir/venv/bin/python" -c "import origami; print('origami', origami.__version__)"
