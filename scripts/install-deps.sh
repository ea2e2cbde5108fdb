#!/usr/bin/env bash
# Installs what tiletune needs to build and test, from Debian/Ubuntu packages; does nothing when
# everything is already there. The CUDA toolkit is optional (the CUDA backend builds when it is
# found, e.g. in /usr/local/cuda); HIP comes from Debian's libamdhip64-dev where it exists. OpenBLAS is
# the host backend's vendor library, loaded with dlopen (the runtime library, not the headers).
set -euo pipefail
need=(cmake g++ make pkg-config python3-venv python3-pip libsqlite3-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev libcli11-dev libopenblas0 libssl-dev libexpat1-dev)
optional=(libamdhip64-dev llvm-14 chromium libopenmpi-dev openmpi-bin slurm-wlm munge)
# What goes without each optional package.
declare -A without=([libamdhip64-dev]="the HIP backend will be off" [llvm-14]="the HIP backend will be off"
                    [chromium]="the browser test of tiletune report will be skipped"
                    [libopenmpi-dev]="tune --mpi will be off" [openmpi-bin]="the mpirun test will be skipped"
                    [slurm-wlm]="the Slurm array test will be skipped" [munge]="the Slurm array test will be skipped")
missing=()
for p in "${need[@]}" "${optional[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "installing: ${missing[*]}"
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
# HIP and the LLVM tools only enable the AMD compile path, Chromium one test; a distribution
# without them still builds and tests.
for p in "${optional[@]}"; do
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null 2>&1 || echo "note: $p not available; ${without[$p]}"
done
