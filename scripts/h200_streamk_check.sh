#!/usr/bin/env bash
# On the H200 (or H100): wgmma_gemm's SCHED 1 (stream-K over the last partial wave) in one short
# device call, logs packed into OUT/streamk_tests.tgz and OUT/streamk_probe.tgz:
#   1. its GPU sample (CudaDevice.SanitizerSampleOfWgmmaStreamK: valid, deterministic, workspace
#      left zeroed, on the full grid and on two CTAs) and the split-K one beside it (SCHED 0's walk,
#      rewritten over work items, must be unchanged); with SANITIZE=1 also memcheck and racecheck
#      on the stream-K sample;
#   2. configs/probes/h200_streamk_probe.json (ResNet-50's 1x1 layers of 100 and 196 tiles), then
#      vs_torch on those layers.
# Usage: scripts/h200_streamk_check.sh BUILD_DIR TESTS_BINARY OUT_DIR LABEL
set -uo pipefail
B=$1 T=$2 OUT=$3 LABEL=$4
D=$OUT/streamk
mkdir -p "$D"
source "$(dirname "$0")/h200_env.sh"
timeout 90 "$T" --gtest_filter='CudaDevice.SanitizerSampleOfWgmmaStreamK:CudaDevice.WgmmaSplitKValidatesOnOddShapesDeterministically' \
  > "$D/gtest.log" 2>&1
echo "gtest exit $?"; grep -E '^\[  FAILED  \]|^\[       OK \]|PASSED|Failure' "$D/gtest.log" | sort -u | head
if [ "${SANITIZE:-0}" = 1 ]; then
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool "$tool" --print-limit 5 "$T" --gtest_filter='CudaDevice.SanitizerSampleOfWgmmaStreamK' \
      > "$D/$tool.log" 2>&1
    echo "$tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$D/$tool.log" | tail -1)"
  done
fi
(cd "$D" && tar czf "$OUT/streamk_tests.tgz" ./*.log)
start=$(date +%s)
timeout 75 "$B/tiletune" tune configs/probes/h200_streamk_probe.json --backend cuda --no-vendor --db "$D/sk.db" > "$D/tune.log" 2>&1
echo "tune exit $? after $(( $(date +%s) - start )) s"; grep -A8 '^winners' "$D/tune.log" | awk '{print $1, $2, $(NF-2), $(NF-1), $NF}'
grep -E '^summary|failed by reason' "$D/tune.log"
PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/sk.db" --set shipped \
  --only conv --names l4_1x1_2048,l3_1x1_1024 --rounds 2 --out "$D/vs_torch.md" --label "$LABEL" > "$D/vs_torch.log" 2>&1
echo "vs_torch exit $?"; grep -E '^\| conv' "$D/vs_torch.md"
rm -f "$D"/sk.db*
(cd "$D" && tar czf "$OUT/streamk_probe.tgz" tune.log vs_torch.md vs_torch.log)
rm -rf "$D"
