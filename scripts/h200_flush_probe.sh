#!/usr/bin/env bash
# On the H200: does the tuner's timing method pick winners that hold under do_bench? The bf16 GEMM
# config tuned twice (back-to-back runs, the default; and benchmark.flush_l2, do_bench's way), each
# database's winners then timed against torch.matmul by benchmarks/vs_torch.py.
# Usage: scripts/h200_flush_probe.sh BUILD_DIR OUT_DIR LABEL [BUDGET]
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 BUDGET=${4:-16}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c.setdefault("benchmark",{})["flush_l2"]=True; c["name"]+="-flush"; json.dump(c,open(sys.argv[2],"w"))' \
  configs/h200/h200_gemm_bf16.json configs/h200/.h200_gemm_bf16_flush.json
for mode in backtoback flush; do
  cfg=configs/h200/h200_gemm_bf16.json; [ $mode = flush ] && cfg=configs/h200/.h200_gemm_bf16_flush.json
  timeout 150 "$B/tiletune" tune $cfg --backend cuda --db "$OUT/$mode.db" --search model --budget "$BUDGET" > "$OUT/tune_$mode.log" 2>&1
  echo "tune $mode exit $?"
  PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$OUT/$mode.db" --set shipped \
    --only gemm --rounds 3 --out "$OUT/shipped_gemm_$mode.md" --label "$LABEL, tuner timing: $mode" > "$OUT/vs_$mode.log" 2>&1
  echo "vs_torch $mode exit $?"; grep -A16 "^problem " "$OUT/tune_$mode.log" | cut -c1-100; cat "$OUT/shipped_gemm_$mode.md"
done
rm -f "$OUT"/*.db*
