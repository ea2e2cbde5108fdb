#!/usr/bin/env bash
# Step time of examples/mlp_trainer on an NVIDIA GPU: (a) a database tuned for its GEMMs, (b) an
# empty database (fallback kernels only), (c) cuBLAS. Binaries built elsewhere and carried.
# Usage: examples/h200_mlp.sh BUILD_DIR OUT_DIR [trainer size options...]
set -uo pipefail
B=${1:-build}
OUT=${2:-/tmp/mlp-out}
shift 2 || true
SIZE=("$@")
[ ${#SIZE[@]} -eq 0 ] && SIZE=(--batch 4096 --inputs 1024 --hidden 4096 --classes 512 --layers 3 --dtype bf16)
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T="$B/examples/mlp_trainer"
# The trainer's GEMM problems at this size, on the tensor-core templates narrowed as in configs/h200/h200_gemm_bf16.json.
"$T" "${SIZE[@]}" --print-config > "$OUT/mlp_problems.json" || exit 1
python3 - "$OUT/mlp_problems.json" "$OUT/mlp_gpu.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["name"] = "mlp_gpu"
c["templates"] = {
  "wgmma_gemm": {"parameters": {"BM": [128, 256], "BN": [64, 128, 256], "STAGES": [4, 6], "CONSUMERS": [2],
                                "RASTER": [0], "GROUP": [8, 16], "PINGPONG": [0, 1]}},
  "mma_gemm": {"parameters": {"BM": [128], "BN": [128, 256], "BK": [64], "WM": [64], "WN": [64], "STAGES": [3, 4],
                              "GROUP_M": [8], "SPLITK": [1, 4], "VB": [16]}}}
c["benchmark"] = {"warmup": 2, "min_iterations": 5, "max_iterations": 20, "target_ms": 30}
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
echo "== tune"
time "$B/tiletune" tune "$OUT/mlp_gpu.json" --backend cuda --db "$OUT/mlp_gpu.db" > "$OUT/tune.log" 2>&1
echo "tune exit $?"; tail -14 "$OUT/tune.log"
STEPS=(--steps 20 --log-every 5)
echo "== (a) tuned";         "$T" "${SIZE[@]}" "${STEPS[@]}" --backend cuda --db "$OUT/mlp_gpu.db" 2>&1 | tee "$OUT/a_tuned.log"
echo "== (b) fallback only"; "$T" "${SIZE[@]}" "${STEPS[@]}" --backend cuda --db "$OUT/empty.db" --create-db 2>&1 | tee "$OUT/b_fallback.log"
echo "== (c) cuBLAS";        "$T" "${SIZE[@]}" "${STEPS[@]}" --gemm cublas 2>&1 | tee "$OUT/c_cublas.log"
