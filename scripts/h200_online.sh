#!/usr/bin/env bash
# On the H200: untuned problems tuned online in the running process (benchmarks/vs_torch.py
# --online: each problem is called until handed to the tuner, then timed on its online winner).
# No shipped database.
# Usage: scripts/h200_online.sh BUILD_DIR OUT_DIR LABEL KIND(gemm|conv) [NAMES] [BUDGET] [SECONDS]
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 KIND=$4 NAMES=${5:-}
export TILETUNE_ONLINE_BUDGET=${6:-8} TILETUNE_ONLINE_SECONDS=${7:-5} TILETUNE_EXE=$B/tiletune
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
PYTHONUNBUFFERED=1 timeout 400 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --user-db "$OUT/user.db" \
  --set untuned --only "$KIND" ${NAMES:+--names "$NAMES"} --online --online-wait 330 --rounds 2 \
  --out "$OUT/online_$KIND.md" \
  --label "$LABEL, untuned ${KIND}s after online tuning (budget $TILETUNE_ONLINE_BUDGET candidates, $TILETUNE_ONLINE_SECONDS s)" \
  > "$OUT/online_$KIND.log" 2>&1
echo "vs_torch online exit $?"; grep "online tuning of" "$OUT/online_$KIND.log"; tail -3 "$OUT/online_$KIND.md"
rm -f "$OUT"/user.db*
