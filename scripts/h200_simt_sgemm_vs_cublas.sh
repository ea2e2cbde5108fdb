#!/usr/bin/env bash
# On the H200, in one device call: GPU tests, the SIMT fp32 sweep (sq4096 and
# odd1000) against cuBLAS, and the winners re-timed through the runtime by gemm_vs_vendor.
# Usage (binaries built elsewhere and carried): scripts/h200_simt_sgemm_vs_cublas.sh BUILD_DIR OUT_DIR COMMIT
set -uo pipefail
B=${1:-build}
OUT=${2:-/tmp/tiletune-out}
COMMIT=${3:-unknown}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/nvidia-smi.csv"
cat "$OUT/nvidia-smi.csv"
"$B/tiletune" devices
echo "== GPU tests"
"$B/tests/test_cuda_gemm" > "$OUT/test_cuda_gemm.log" 2>&1
echo "test_cuda_gemm exit $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED" "$OUT/test_cuda_gemm.log" | head -20
echo "== sweep"
time "$B/tiletune" tune configs/h200/h200_simt_sgemm.json --backend cuda --db "$OUT/h200_simt.db" > "$OUT/tune.log" 2>&1
echo "tune exit $?"; tail -12 "$OUT/tune.log"
echo "== winners vs cuBLAS through the runtime"
"$B/benchmarks/gemm_vs_vendor" --db "$OUT/h200_simt.db" --commit "$COMMIT" --out "$OUT/simt_sgemm_h200" \
  --label "SIMT template only (simt_gemm), fp32, cuBLAS SGEMM in default (non-TF32) math mode"
