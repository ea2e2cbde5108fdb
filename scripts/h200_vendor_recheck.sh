#!/usr/bin/env bash
# On the H200: a tuned GEMM database (scripts/h200_ladder.sh) measured again through the C API
# against PyTorch with more rounds, and its vendor algorithms timed again by the tuner for longer
# (200 ms per candidate instead of the config's 25): do cuBLASLt alternatives that led cuBLAS's
# default at tune time lead it under do_bench?
# Usage: scripts/h200_vendor_recheck.sh BUILD_DIR OUT_DIR LABEL DB
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 DB=$4
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$DB" --set shipped \
  --only gemm --rounds 5 --out "$OUT/shipped_gemm_5rounds.md" --label "$LABEL, shipped set, 5 rounds" \
  > "$OUT/shipped_gemm_5rounds.log" 2>&1
echo "vs_torch shipped exit $?"; tail -3 "$OUT/shipped_gemm_5rounds.md"
PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$DB" --set untuned \
  --only gemm --rounds 2 --out "$OUT/untuned_gemm.md" --label "$LABEL, untuned set, database tuned on the shipped bf16 config" \
  > "$OUT/untuned_gemm.log" 2>&1
echo "vs_torch untuned exit $?"; tail -3 "$OUT/untuned_gemm.md"
cat > "$OUT/long_timing.json" <<'JSON'
{"name": "vendor-long-timing",
 "problems": [{"dtype": "bf16", "transA": "T", "transB": "N", "m": 4096, "n": 8192, "k": 14336},
              {"dtype": "bf16", "transA": "T", "transB": "N", "m": 6144, "n": 8192, "k": 4096},
              {"dtype": "bf16", "transA": "N", "transB": "N", "m": 1024, "n": 1024, "k": 1024},
              {"dtype": "bf16", "transA": "N", "transB": "N", "m": 8192, "n": 8192, "k": 128}],
 "templates": {"mma_gemm": {"parameters": {"BM": [128], "BN": [128], "BK": [32], "WM": [64], "WN": [64], "STAGES": [3],
                                           "GROUP_M": [8], "SPLITK": [1], "VB": [16]}}},
 "benchmark": {"warmup": 5, "min_iterations": 20, "max_iterations": 2000, "target_ms": 200}}
JSON
timeout 120 "$B/tiletune" tune "$OUT/long_timing.json" --backend cuda --db "$OUT/long_timing.db" > "$OUT/long_timing.log" 2>&1
echo "tune long timing exit $?"
python3 benchmarks/vendor_share.py "$OUT/long_timing.db" --out "$OUT/share_long_timing.md" | tail -2
rm -f "$OUT"/*.db "$OUT"/*.db-wal "$OUT"/*.db-shm
