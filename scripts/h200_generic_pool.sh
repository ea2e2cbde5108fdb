#!/usr/bin/env bash
# On the H200: the generic kernels `db pack` pools, where no vendor library serves (TILETUNE_VENDOR=off
# at run time, as on a backend without one): the shipped bf16 GEMM config tuned (model search), packed
# with GENERICS generic kernels per class and with none, and the untuned GEMM set timed through the C
# API against PyTorch (benchmarks/vs_torch.py) on each packed database.
# Usage: [T_TUNE=120] [T_BENCH=80] scripts/h200_generic_pool.sh BUILD_DIR OUT_DIR LABEL [GENERICS] [BUDGET]
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 GENERICS=${4:-2} BUDGET=${5:-16}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
timeout "${T_TUNE:-120}" "$B/tiletune" tune configs/h200/h200_gemm_bf16.json --backend cuda --db "$OUT/sweep.db" \
  --search model --budget "$BUDGET" > "$OUT/tune.log" 2>&1
echo "tune exit $?"; grep -E "^summary" "$OUT/tune.log"
for g in "$GENERICS" 0; do
  "$B/tiletune" db pack "$OUT/sweep.db" "$OUT/packed_$g.db" --generic "$g" --force | head -1
  TILETUNE_VENDOR=off PYTHONUNBUFFERED=1 timeout "${T_BENCH:-80}" python3 benchmarks/vs_torch.py \
    --lib "$B/libtiletune_runtime.so" --db "$OUT/packed_$g.db" --set untuned --only gemm --rounds 2 \
    --out "$OUT/untuned_generic$g.md" \
    --label "$LABEL, untuned GEMMs without a vendor, database packed with --generic $g" > "$OUT/untuned_generic$g.log" 2>&1
  echo "vs_torch --generic $g exit $?"; tail -3 "$OUT/untuned_generic$g.md"
done
rm -f "$OUT"/*.db "$OUT"/*.db-*
