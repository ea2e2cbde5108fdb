#!/usr/bin/env bash
# On the H200: a database tuned on the shipped configs (bf16 GEMM, ResNet-50 convolutions; model
# search, the vendor timed as a candidate), then the shipped shapes and the untuned set through the
# C API against PyTorch (benchmarks/vs_torch.py). Each stage has a time limit; a sweep stopped by it
# keeps what it finished.
# Usage: scripts/h200_ladder.sh BUILD_DIR OUT_DIR LABEL [BUDGET]
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 BUDGET=${4:-16}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
DB="$OUT/shipped.db"
for c in h200_gemm_bf16 h200_conv_resnet50; do
  timeout 170 "$B/tiletune" tune "configs/$c.json" --backend cuda --db "$DB" --search model --budget "$BUDGET" \
    > "$OUT/tune_$c.log" 2>&1
  echo "tune $c exit $?"; grep -E "^summary|took" "$OUT/tune_$c.log" | tail -3
done
for set in shipped untuned; do
  PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$DB" --set $set \
    --rounds 2 --out "$OUT/$set.md" --label "$LABEL, $set set, database tuned on the shipped configs (model search, budget $BUDGET)" \
    > "$OUT/$set.log" 2>&1
  echo "vs_torch $set exit $?"; tail -4 "$OUT/$set.md"
done
