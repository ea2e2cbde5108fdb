#!/usr/bin/env bash
# On the H200: tiletune through its C API against PyTorch in one process (benchmarks/vs_torch.py).
# Usage: scripts/h200_vs_torch.sh BUILD_DIR OUT_DIR LABEL [DB] [SET] [extra vs_torch.py options]
#   DB: the shipped database ("" for none: every problem untuned); SET: untuned (default) or shipped.
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 DB=${4:-} SET=${5:-untuned}
shift $(( $# < 5 ? $# : 5 ))
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
PYTHONUNBUFFERED=1 timeout 540 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" ${DB:+--db "$DB"} \
  --set "$SET" --out "$OUT/$SET.md" --label "$LABEL" "$@" 2>&1 | tee "$OUT/$SET.log"
echo "vs_torch exit ${PIPESTATUS[0]}"
