#!/usr/bin/env bash
# On the H200: the untuned GEMMs tuned online in the running process (benchmarks/vs_torch.py
# --online: each problem is called until handed to the tuner, then timed on its online winner),
# and the untuned convolutions on the vendor rung. No shipped database.
# Usage: scripts/h200_online.sh BUILD_DIR OUT_DIR LABEL [BUDGET] [SECONDS]
set -uo pipefail
B=$1 OUT=$2 LABEL=$3
export TILETUNE_ONLINE_BUDGET=${4:-8} TILETUNE_ONLINE_SECONDS=${5:-5} TILETUNE_EXE=$B/tiletune
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
PYTHONUNBUFFERED=1 timeout 420 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --user-db "$OUT/user.db" \
  --set untuned --only gemm --online --online-wait 360 --rounds 2 --out "$OUT/online_gemm.md" \
  --label "$LABEL, untuned GEMMs after online tuning (budget $TILETUNE_ONLINE_BUDGET candidates, $TILETUNE_ONLINE_SECONDS s)" \
  > "$OUT/online_gemm.log" 2>&1
echo "vs_torch online exit $?"; grep "online tuning of" "$OUT/online_gemm.log"; tail -4 "$OUT/online_gemm.md"
PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --set untuned --only conv \
  --rounds 3 --out "$OUT/untuned_conv.md" --label "$LABEL, untuned convolutions, no database (vendor rung)" \
  > "$OUT/untuned_conv.log" 2>&1
echo "vs_torch conv exit $?"; tail -4 "$OUT/untuned_conv.md"
rm -f "$OUT"/user.db*
