#!/usr/bin/env bash
# On the H200: the first measurement of the gradient kernels built without a GPU (2026-12-05), in
# one call. wgmma_tap_wgrad (3x3 weight gradients, x's rows shared by a filter row's taps) and
# wgmma_conv PHASE 1 (strided input gradients by stride phases): their GPU tests (samples validated
# twice against the fp64 reference, workspaces left zeroed), the samples under compute-sanitizer
# memcheck and racecheck, then each probe config tuned (configs/probes/h200_tap_wgrad_wgmma_probe.json
# without the vendor, exhaustive: which SHIFT validates, which wins; h200_phase_dgrad_probe.json with
# cuDNN among the candidates) and the first one's winners timed against cuDNN through PyTorch.
# Usage: scripts/h200_grad_probes.sh BUILD_DIR TESTS_BINARY OUT_DIR LABEL [TUNE_LIMIT_S]
#   TESTS_BINARY: a tests_backends_cuda built with CUDA on.
set -uo pipefail
B=$1 T=$2 OUT=$3 LABEL=$4 LIMIT=${5:-150}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
filter='WgmmaTapWgrad*:WgmmaConvGpu.SampleMatchesTheReference'
timeout 200 "$T" --gtest_filter="$filter" > "$OUT/gtest.log" 2>&1
echo "gtest exit $?"; grep -E '^\[  FAILED  \]|validated' "$OUT/gtest.log" | sort -u | head
# The failing variants by SHIFT and PHASE (what the first run decides).
grep -oE 'wgmma_(tap_wgrad|conv)_[A-Z0-9_-]+ on' "$OUT/gtest.log" | grep -oE '(SHIFT|PHASE)-[0-9]' | sort | uniq -c
for tool in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool "$tool" --print-limit 5 "$T" --gtest_filter="$filter" > "$OUT/$tool.log" 2>&1
  echo "$tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)"
done
for probe in tap_wgrad_wgmma phase_dgrad; do
  vendor=--no-vendor
  [ "$probe" = phase_dgrad ] && vendor=
  start=$(date +%s)
  timeout "$LIMIT" "$B/tiletune" tune "configs/probes/h200_${probe}_probe.json" --backend cuda $vendor \
    --db "$OUT/$probe.db" > "$OUT/$probe.log" 2>&1
  echo "$probe tune exit $? after $(( $(date +%s) - start )) s"; grep -A8 '^winners' "$OUT/$probe.log"
  grep -E '^summary|failed by reason' "$OUT/$probe.log"
done
PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" \
  --db "$OUT/tap_wgrad_wgmma.db" --set shipped --only conv --conv-dtype bf16 --rounds 2 --out "$OUT/vs_torch.md" \
  --label "$LABEL" > "$OUT/vs_torch.log" 2>&1
echo "vs_torch exit $?"; grep -E '^\| conv wgrad \| l[1-4]_3x3' "$OUT/vs_torch.md"
rm -f "$OUT"/*.db-wal "$OUT"/*.db-shm
