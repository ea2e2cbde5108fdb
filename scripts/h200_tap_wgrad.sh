#!/usr/bin/env bash
# On the H200: wgmma_tap_wgrad's first measurement, in one call. Its GPU tests (a sample of every
# SHIFT, split and output type validated twice against the fp64 reference), the same sample under
# compute-sanitizer memcheck and racecheck, then its whole space tuned on ResNet-50's 3x3 weight
# gradients without the vendor (configs/probes/h200_tap_wgrad_wgmma_probe.json: which SHIFT
# validates, which wins) and the winners timed against cuDNN through PyTorch (vs_torch.py).
# Usage: scripts/h200_tap_wgrad.sh BUILD_DIR TESTS_BINARY OUT_DIR LABEL [TUNE_LIMIT_S]
#   TESTS_BINARY: a tests_backends_cuda built with CUDA on (the WgmmaTapWgrad* tests).
set -uo pipefail
B=$1 T=$2 OUT=$3 LABEL=$4 LIMIT=${5:-170}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
timeout 150 "$T" --gtest_filter='WgmmaTapWgrad*' > "$OUT/gtest.log" 2>&1
echo "gtest exit $?"; grep -E '^\[  FAILED  \]|validated' "$OUT/gtest.log" | sort -u | head
# Which variants failed, by SHIFT (the descriptor's base offset is what the first run decides).
grep -oE 'wgmma_tap_wgrad_[A-Z0-9_-]+ on' "$OUT/gtest.log" | grep -oE 'SHIFT-[0-9]' | sort | uniq -c
for tool in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool "$tool" --print-limit 5 "$T" --gtest_filter='WgmmaTapWgradGpu*' \
    > "$OUT/$tool.log" 2>&1
  echo "$tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)"
done
start=$(date +%s)
timeout "$LIMIT" "$B/tiletune" tune configs/probes/h200_tap_wgrad_wgmma_probe.json --backend cuda --no-vendor \
  --search exhaustive --db "$OUT/probe.db" > "$OUT/probe.log" 2>&1
echo "probe tune exit $? after $(( $(date +%s) - start )) s"; grep -A8 '^winners' "$OUT/probe.log"
grep -E 'invalid|failed' "$OUT/probe.log" | tail -3
PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$OUT/probe.db" \
  --set shipped --only conv --conv-dtype bf16 --rounds 2 --out "$OUT/vs_torch.md" --label "$LABEL" > "$OUT/vs_torch.log" 2>&1
echo "vs_torch exit $?"; grep -E '^\| conv wgrad \| l[1-4]_3x3' "$OUT/vs_torch.md"
rm -f "$OUT"/*.db-wal "$OUT"/*.db-shm
