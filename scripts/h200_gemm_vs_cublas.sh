#!/usr/bin/env bash
# On the H200: GPU tests, a compute-sanitizer memcheck sample of every CUDA template, the
# tensor-core sweeps of configs/h200/h200_gemm_<dtypes>.json into one database, and the winners against
# cuBLAS through the runtime (gemm_vs_vendor). Each stage has a time limit; a sweep stopped by it
# keeps what it finished and a rerun resumes.
# Usage: scripts/h200_gemm_vs_cublas.sh BUILD_DIR OUT_DIR COMMIT "bf16 fp16 tf32" [tests]
# DEVICES=all (or a list) sweeps on several GPUs; the table is measured on the first.
set -uo pipefail
B=$1 OUT=$2 COMMIT=$3 DTYPES=$4 TESTS=${5:-}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
DB="$OUT/h200_gemm.db"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
if [ -n "$TESTS" ]; then
  timeout 400 "$B/tests/test_cuda_gemm" --gtest_filter=-*SanitizerSample* > "$OUT/test_cuda_gemm.log" 2>&1
  echo "test_cuda_gemm exit $?"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" "$OUT/test_cuda_gemm.log"
  timeout 300 compute-sanitizer --tool memcheck "$B/tests/test_cuda_gemm" --gtest_filter=*SanitizerSample* > "$OUT/memcheck.log" 2>&1
  echo "memcheck exit $?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$OUT/memcheck.log"
fi
for dt in $DTYPES; do
  limit=240; [ "$dt" = tf32 ] && limit=120
  timeout $limit "$B/tiletune" tune "configs/h200/h200_gemm_$dt.json" --backend cuda ${DEVICES:+--devices $DEVICES} --db "$DB" \
    > "$OUT/tune_$dt.log" 2>&1
  echo "tune $dt exit $?"; grep -E "^summary|took" "$OUT/tune_$dt.log"
done
timeout 150 "$B/benchmarks/gemm_vs_vendor" --db "$DB" --commit "$COMMIT" --rounds 5 --out "$OUT/gemm_h200" \
  --label "tensor-core templates (wgmma_gemm, mma_gemm) tuned by configs/h200/h200_gemm_{$(echo $DTYPES | tr ' ' ,)}.json"
echo "gemm_vs_vendor exit $?"
