#!/usr/bin/env bash
# On the H200: a database tuned on a shipped config (model search, the vendor's default and its
# other algorithms timed as candidates), who won each problem (benchmarks/vendor_share.py), then
# the shipped shapes and the untuned set through the C API against PyTorch (benchmarks/vs_torch.py).
# KIND gemm also tunes the untuned GEMMs themselves on the shipped bf16 space (coverage: every one
# must have a generated candidate) and measures them on that database. Each stage has a time limit; a sweep stopped by it keeps what
# it finished. The limits (seconds) are T_TUNE, T_COVER and T_BENCH (each vs_torch run): lower
# them to fit the stages into one device call.
# Usage: [COVERAGE=0] [T_TUNE=170] [T_COVER=150] [T_BENCH=130] scripts/h200_ladder.sh BUILD_DIR OUT_DIR LABEL KIND(gemm|conv) [BUDGET]
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 KIND=$4 BUDGET=${5:-16}
T_TUNE=${T_TUNE:-170} T_COVER=${T_COVER:-150} T_BENCH=${T_BENCH:-130}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
DB="$OUT/shipped_$KIND.db"
config=$([ "$KIND" = gemm ] && echo h200_gemm_bf16 || echo h200_conv_resnet50)
timeout "$T_TUNE" "$B/tiletune" tune "configs/h200/$config.json" --backend cuda --db "$DB" --search model --budget "$BUDGET" \
  > "$OUT/tune_$config.log" 2>&1
echo "tune $config exit $?"; grep -E "^summary|took|no candidate" "$OUT/tune_$config.log" | tail -4
python3 benchmarks/vendor_share.py "$DB" --out "$OUT/share_$KIND.md" | tail -2
if [ "$KIND" = gemm ] && [ "${COVERAGE:-1}" = 1 ]; then
  python3 - "$OUT/coverage.json" <<'PY'
import json, sys
sys.path.insert(0, "benchmarks")
import vs_torch
cfg = json.load(open("configs/h200/h200_gemm_bf16.json"))
dtype = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}
problems = [{"dtype": dtype[str(t)], "transA": ta, "transB": tb, "m": m, "n": n, "k": k}
            for _, ta, tb, m, n, k, t in vs_torch.untuned_gemms()]
json.dump({"name": "untuned-gemm-coverage", "problems": problems, "templates": cfg["templates"],
           "benchmark": cfg["benchmark"]}, open(sys.argv[1], "w"), indent=1)
PY
  timeout "$T_COVER" "$B/tiletune" tune "$OUT/coverage.json" --backend cuda --db "$OUT/coverage.db" --search model \
    --budget "$BUDGET" > "$OUT/tune_coverage.log" 2>&1
  echo "tune coverage exit $?"; grep -E "^summary|took|no candidate" "$OUT/tune_coverage.log" | tail -4
  python3 benchmarks/vendor_share.py "$OUT/coverage.db" --out "$OUT/share_coverage.md" | tail -2
  PYTHONUNBUFFERED=1 timeout "$T_BENCH" python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$OUT/coverage.db" \
    --set untuned --only gemm --rounds 2 --out "$OUT/coverage_gemm.md" \
    --label "$LABEL, untuned set tuned offline on the shipped bf16 space (model search, budget $BUDGET)" \
    > "$OUT/coverage_gemm.log" 2>&1
  echo "vs_torch coverage exit $?"; tail -3 "$OUT/coverage_gemm.md"
fi
for set in shipped untuned; do
  PYTHONUNBUFFERED=1 timeout "$T_BENCH" python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$DB" --set $set \
    --only "$KIND" --rounds 2 --out "$OUT/${set}_$KIND.md" \
    --label "$LABEL, $set set, database tuned on configs/h200/$config.json (model search, budget $BUDGET)" \
    > "$OUT/${set}_$KIND.log" 2>&1
  echo "vs_torch $set exit $?"; tail -3 "$OUT/${set}_$KIND.md"
done
rm -f "$OUT"/*.db-wal "$OUT"/*.db-shm
