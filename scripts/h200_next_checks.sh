#!/usr/bin/env bash
# On the H200 (or H100): the GPU checks of wgmma_gemm's and wgmma_tap_wgrad's SCHED 1 (stream-K over
# the last partial wave; since 674d373 its last part sums with four reads in flight), wgmma_gemm's
# EPI 2 (unaligned 16-bit C in aligned runs) and split-K of 16+ parts in two levels, and their probes;
# logs packed into OUT/next_tests.tgz, OUT/split_tail_probe.tgz, OUT/streamk_probe.tgz,
# OUT/tap_probe.tgz and OUT/lmhead_probe.tgz:
#   1. their GPU samples (test_cuda_gemm: CudaDevice.SanitizerSampleOfWgmmaStreamK, ...AlignedRunsOf-
#      UnalignedC, ...DeepSplitK, WgmmaSplitKValidatesOnOddShapesDeterministically; tests_backends_cuda:
#      WgmmaTapWgradGpu.*, Conv1x1Gpu.*, WgmmaConvGpu.DeepSplitKSanitizerSample), then memcheck and
#      racecheck on the sanitizer samples;
#   2. configs/probes/h200_streamk_probe.json (ResNet-50's 1x1 layers of 100 and 196 tiles), then
#      vs_torch on those layers;
#   3. configs/probes/h200_tap_wgrad_streamk_probe.json (ResNet-50's 7x7 weight gradient), then vs_torch;
#   4. configs/probes/h200_lmhead_epi2_probe.json (the GPT-2 LM head, EPI 0 / 2), then vs_torch on it;
#   5. (with step tests) configs/probes/h200_split_tail_probe.json: time against split count on two 1x1
#      weight gradients of few tiles, every measurement kept (OUT/split_tail_probe.tgz).
# Two calls, each under ten minutes: STEP tests (1, 5), STEP probes (2-4).
# Usage: scripts/h200_next_checks.sh tests|probes BUILD_DIR TESTS_BINARY OUT_DIR LABEL
# (TESTS_BINARY: tests_backends_cuda, with test_cuda_gemm beside it; both need LD_LIBRARY_PATH=BUILD_DIR.)
set -uo pipefail
STEP=$1 B=$2 T=$3 OUT=$4 LABEL=$5
D=$OUT/next
mkdir -p "$D"
source "$(dirname "$0")/h200_env.sh"
show_all() {  # every measurement of every problem of a database (which variant of each kind won, and by how much)
  for id in $("$B/tiletune" db problems "$1" | awk 'NR > 1 {print $1}'); do "$B/tiletune" db show "$1" "$id"; done
}
if [ "$STEP" = tests ]; then
  # CudaDevice.* live in their own executable (test_cuda_gemm, beside TESTS_BINARY); the tap kernel's in TESTS_BINARY.
  G=$(dirname "$T")/test_cuda_gemm
  SAN='CudaDevice.SanitizerSampleOfWgmmaStreamK:CudaDevice.SanitizerSampleOfWgmmaAlignedRunsOfUnalignedC:CudaDevice.SanitizerSampleOfWgmmaDeepSplitK'
  timeout 200 "$G" --gtest_filter="$SAN:CudaDevice.WgmmaSplitKValidatesOnOddShapesDeterministically" > "$D/gtest_gemm.log" 2>&1
  echo "test_cuda_gemm exit $?"; grep -E '^\[  FAILED  \]|^\[       OK \]|PASSED|Failure' "$D/gtest_gemm.log" | sort -u | head
  timeout 180 "$T" --gtest_filter='WgmmaTapWgradGpu.*:Conv1x1Gpu.*:WgmmaConvGpu.DeepSplitKSanitizerSample' > "$D/gtest.log" 2>&1
  echo "tests_backends_cuda exit $?"; grep -E '^\[  FAILED  \]|^\[       OK \]|PASSED|Failure' "$D/gtest.log" | sort -u | head
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool "$tool" --print-limit 5 "$G" --gtest_filter="$SAN" > "$D/${tool}_gemm.log" 2>&1
    echo "$tool (gemm) exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$D/${tool}_gemm.log" | tail -1)"
    timeout 100 compute-sanitizer --tool "$tool" --print-limit 5 "$T" \
      --gtest_filter='WgmmaTapWgradGpu.StreamKSanitizerSample:WgmmaConvGpu.DeepSplitKSanitizerSample' \
      > "$D/$tool.log" 2>&1
    echo "$tool (tap) exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$D/$tool.log" | tail -1)"
  done
  (cd "$D" || exit; tar czf "$OUT/next_tests.tgz" ./*.log; rm -f ./*.log)
  start=$(date +%s)
  timeout 120 "$B/tiletune" tune configs/probes/h200_split_tail_probe.json --backend cuda --no-vendor --db "$D/st.db" > "$D/tune.log" 2>&1
  echo "split-tail tune exit $? after $(( $(date +%s) - start )) s"; grep -A3 '^winners' "$D/tune.log" | awk 'NF > 3 {print $1, $2, $(NF-2), $(NF-1), $NF}'
  show_all "$D/st.db" > "$D/db_show.txt" 2>&1
  rm -f "$D"/st.db*
  (cd "$D" || exit; tar czf "$OUT/split_tail_probe.tgz" tune.log db_show.txt)
  rm -rf "$D"
  exit 0
fi
start=$(date +%s)
timeout 75 "$B/tiletune" tune configs/probes/h200_streamk_probe.json --backend cuda --no-vendor --db "$D/sk.db" > "$D/tune.log" 2>&1
echo "tune exit $? after $(( $(date +%s) - start )) s"; grep -A8 '^winners' "$D/tune.log" | awk 'NF > 3 {print $1, $2, $(NF-2), $(NF-1), $NF}'
grep -E '^summary|failed by reason' "$D/tune.log"
PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/sk.db" --set shipped \
  --only conv --names l4_1x1_2048,l3_1x1_1024 --rounds 2 --out "$D/vs_torch.md" --label "$LABEL" > "$D/vs_torch.log" 2>&1
echo "vs_torch exit $?"; grep -E '^\| conv' "$D/vs_torch.md"
show_all "$D/sk.db" > "$D/db_show.txt" 2>&1
rm -f "$D"/sk.db*
(cd "$D" || exit; tar czf "$OUT/streamk_probe.tgz" tune.log vs_torch.md vs_torch.log db_show.txt; rm -f ./*)
start=$(date +%s)
timeout 100 "$B/tiletune" tune configs/probes/h200_tap_wgrad_streamk_probe.json --backend cuda --no-vendor --db "$D/tap.db" \
  > "$D/tune.log" 2>&1
echo "tap tune exit $? after $(( $(date +%s) - start )) s"; grep -A4 '^winners' "$D/tune.log" | awk 'NF > 3 {print $1, $2, $(NF-2), $(NF-1), $NF}'
for dtype in bf16 fp16; do
  PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/tap.db" --set shipped \
    --only conv --names l4_3x3_512 --conv-dtype "$dtype" --rounds 2 --out "$D/vs_torch_$dtype.md" --label "$LABEL, $dtype" \
    > "$D/vs_torch_$dtype.log" 2>&1
  echo "vs_torch $dtype exit $?"; grep -E '^\| conv wgrad' "$D/vs_torch_$dtype.md"
done
show_all "$D/tap.db" > "$D/db_show.txt" 2>&1
rm -f "$D"/tap.db*
(cd "$D" || exit; tar czf "$OUT/tap_probe.tgz" ./*; rm -f ./*)
start=$(date +%s)
timeout 100 "$B/tiletune" tune configs/probes/h200_lmhead_epi2_probe.json --backend cuda --no-vendor --db "$D/lm.db" > "$D/tune.log" 2>&1
echo "lmhead tune exit $? after $(( $(date +%s) - start )) s"; grep -A4 '^winners' "$D/tune.log" | awk 'NF > 3 {print $1, $2, $(NF-2), $(NF-1), $NF}'
for dtype in bf16 fp16; do
  PYTHONUNBUFFERED=1 timeout 80 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/lm.db" --set shipped \
    --only gemm --names lmhead_odd --dtype "$dtype" --rounds 2 --out "$D/vs_torch_$dtype.md" --label "$LABEL, $dtype" \
    > "$D/vs_torch_$dtype.log" 2>&1
  echo "vs_torch $dtype exit $?"; grep -E '^\| gemm' "$D/vs_torch_$dtype.md"
done
show_all "$D/lm.db" > "$D/db_show.txt" 2>&1
rm -f "$D"/lm.db*
(cd "$D" && tar czf "$OUT/lmhead_probe.tgz" ./*)
rm -rf "$D"
