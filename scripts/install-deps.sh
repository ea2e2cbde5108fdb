#!/usr/bin/env bash
# Installs what tiletune needs to build and test, from Debian/Ubuntu packages; does nothing when
# everything is already there. The CUDA toolkit is optional (the CUDA backend builds when it is
# found, e.g. in /usr/local/cuda); HIP comes from Debian's libamdhip64-dev where it exists. OpenBLAS is
# the host backend's vendor library, loaded with dlopen (the runtime library, not the headers).
set -euo pipefail
need=(cmake g++ make ninja-build ccache pkg-config python3-venv python3-pip libsqlite3-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev libcli11-dev libopenblas0 libssl-dev libexpat1-dev)
optional=(libamdhip64-dev llvm-14 clang-22 lld-22 llvm-22 rocm-device-libs chromium libopenmpi-dev openmpi-bin slurm-wlm munge)
# What goes without each optional package.
declare -A without=([libamdhip64-dev]="the HIP backend will be off" [llvm-14]="the HIP backend will be off"
                    [chromium]="the browser test of tiletune report will be skipped"
                    [libopenmpi-dev]="tune --mpi will be off" [openmpi-bin]="the mpirun test will be skipped"
                    [slurm-wlm]="the Slurm array test will be skipped" [munge]="the Slurm array test will be skipped")
for p in clang-22 lld-22 llvm-22 rocm-device-libs; do without[$p]="no offline AMD compiler: gfx942/gfx950 compiles and their tests skip"; done
# hipRTC's builtin header, which the offline AMD compiler (gpu/hip/clang_compiler.h) includes in
# place of the HIP headers: from PyPI's rocm-llvm-python wheel (MIT licence, AMD), fetched here and
# never committed.
hiprtc_dir=/usr/local/share/tiletune/hiprtc
hiprtc_wheel="rocm-llvm-python==7.2.2.562.46"
missing=()
for p in "${need[@]}" "${optional[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && [ -r "$hiprtc_dir/hiprtc_runtime.h" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  # HIP and the LLVM tools only enable the AMD compile path, Chromium one test; a distribution
  # without them still builds and tests.
  for p in "${optional[@]}"; do
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null 2>&1 || echo "note: $p not available; ${without[$p]}"
  done
fi
if [ ! -r "$hiprtc_dir/hiprtc_runtime.h" ]; then
  tmp=$(mktemp -d)
  if python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
       --platform manylinux_2_28_x86_64 --dest "$tmp" "$hiprtc_wheel" >/dev/null 2>&1 &&
     (cd "$tmp" && python3 -m zipfile -e rocm_llvm_python-*.whl x >/dev/null); then
    $SUDO install -D -m 0644 "$tmp/x/rocm/amd_comgr/hiprtc_runtime.h" "$hiprtc_dir/hiprtc_runtime.h"
    $SUDO install -m 0644 "$tmp"/x/rocm_llvm_python-*.dist-info/licenses/LICENSE "$hiprtc_dir/LICENSE"
  else
    echo "note: $hiprtc_wheel not fetched from PyPI; no offline AMD compiler"
  fi
  rm -rf "$tmp"
fi
