#!/usr/bin/env bash
# examples/cnn_trainer on an NVIDIA GPU: (a) a database tuned for its convolutions and GEMMs,
# (b) an empty database (fallback kernels only). Binaries built elsewhere and carried.
# Usage: examples/h200_cnn.sh BUILD_DIR OUT_DIR [trainer size options...]
set -uo pipefail
B=${1:-build}
OUT=${2:-/tmp/cnn-out}
shift 2 || true
SIZE=("$@")
[ ${#SIZE[@]} -eq 0 ] && SIZE=(--batch 128 --height 32 --width 32 --channels 3 --conv1 64 --conv2 128 --classes 10 --dtype bf16)
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T="$B/examples/cnn_trainer"
# The trainer's problems at this size: convolutions on simt_conv (and mma_conv where this tree
# has it), the head's GEMMs on mma_gemm narrowed as in configs/h200/h200_gemm_bf16.json.
"$T" "${SIZE[@]}" --print-config > "$OUT/cnn_problems.json" || exit 1
python3 - "$OUT/cnn_problems.json" "$OUT/cnn_gpu.json" <<'PY'
import json, os, sys
c = json.load(open(sys.argv[1]))
c["name"] = "cnn_gpu"
c["templates"] = {
  "simt_conv": {"parameters": {"BM": [64, 128], "BN": [64, 128], "BK": [8, 16], "TM": [8], "TN": [4, 8], "SPLITK": [1, 4, 16]}},
  "mma_gemm": {"parameters": {"BM": [128], "BN": [128, 256], "BK": [64], "WM": [64], "WN": [64], "STAGES": [3, 4],
                              "GROUP_M": [8], "SPLITK": [1, 4], "VB": [16]}}}
if os.path.exists("kernel_templates/mma_conv.json"):
  c["templates"]["mma_conv"] = {}
c["benchmark"] = {"warmup": 2, "min_iterations": 5, "max_iterations": 20, "target_ms": 30}
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
echo "== tune"
time timeout 300 "$B/tiletune" tune "$OUT/cnn_gpu.json" --backend cuda --db "$OUT/cnn_gpu.db" > "$OUT/tune.log" 2>&1
echo "tune exit $?"; tail -12 "$OUT/tune.log"
STEPS=(--steps 40 --log-every 10)
echo "== (a) tuned";         "$T" "${SIZE[@]}" "${STEPS[@]}" --backend cuda --db "$OUT/cnn_gpu.db" 2>&1 | tee "$OUT/a_tuned.log"
echo "== (b) fallback only"; "$T" "${SIZE[@]}" "${STEPS[@]}" --backend cuda --db "$OUT/empty.db" --create-db 2>&1 | tee "$OUT/b_fallback.log"
