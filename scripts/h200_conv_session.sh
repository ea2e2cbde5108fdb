#!/usr/bin/env bash
# On the H200 (or H100): one device call of the convolution work, its logs packed into OUT/STEP.tgz
# (a call brings back at most 8 files). The machine goes back 30 s after a call: have the next
# one ready. Each step stays under the ten minutes of a call.
#   check:  the GPU tests and sanitizer samples of the new kernel paths (h200_grad_probes.sh tests),
#           then Nsight Compute beside cuDNN (h200_ncu.sh);
#   probes: their probes and vs_torch on the probed layers (h200_grad_probes.sh probes);
#   tables: ResNet-50 in all three directions from configs/h200/h200_conv_resnet50.json in bf16, and
#           the other nets' layers in bf16 (h200_conv_grad.sh, h200_untuned.sh conv);
#   sk_tables: where one call is all that comes: the stream-K and SWAP samples plain, ResNet-50 in bf16, then the
#           stream-K sample under memcheck and racecheck.
#   tables_fp16: the same in fp16. (At the config's budget of 96 a problem, the other nets' layers too since
#           2026-12-06, a dtype takes ~6 minutes: ResNet-50 ~146 s of tuning, the other nets ~90 s, and their vs_torch.)
#   tables_both: tables, then tables_fp16, in one call: 451 s on an H200 with the other nets at budget 16; at the
#           config's budget it runs past a call's ten minutes, so take tables and tables_fp16 as two calls.
#   CONFIG=FILE (tables, tables_fp16): another config than the shipped ResNet one, e.g. a copy with candidate
#           templates added; the other nets are tuned on its templates too.
# Usage: [CONFIG=FILE] scripts/h200_conv_session.sh check|probes|tables|tables_fp16|tables_both|sk_tables BUILD_DIR TESTS_BINARY OUT_DIR LABEL
set -uo pipefail
STEP=$1 B=$2 T=$3 OUT=$4 LABEL=$5
here=$(dirname "$0")
source "$here/h200_env.sh" > /dev/null  # sanitize()
if [ "$STEP" = tables_both ]; then
  "$0" tables "$B" "$T" "$OUT" "$LABEL"
  exec "$0" tables_fp16 "$B" "$T" "$OUT" "$LABEL"
fi
mkdir -p "$OUT/$STEP"
case "$STEP" in
  check)  # the tests' logs packed first: what a call cut at its limit leaves still comes back
    "$here/h200_grad_probes.sh" tests "$B" "$T" "$OUT/$STEP/tests" "$LABEL"
    tar czf "$OUT/$STEP-tests.tgz" -C "$OUT/$STEP" tests && rm -rf "$OUT/$STEP/tests"
    "$here/h200_ncu.sh" "$B" "$OUT/$STEP/ncu" ;;
  probes)
    "$here/h200_grad_probes.sh" probes "$B" "$T" "$OUT/$STEP" "$LABEL" ;;
  tables|tables_fp16)
    dtype=bf16; [ "$STEP" = tables_fp16 ] && dtype=fp16
    config=${CONFIG:-configs/h200/h200_conv_resnet50.json}
    "$here/h200_conv_grad.sh" "$B" "$OUT/$STEP/resnet50_$dtype" "$LABEL, $dtype" 280 "$config" "$dtype"
    rm -f "$OUT/$STEP/resnet50_$dtype"/*.db*
    SHIPPED=$config "$here/h200_untuned.sh" conv "$B" "$OUT/$STEP/other_$dtype" "$LABEL, $dtype" 200 "$dtype" ;;
  sk_tables)  # one call when only one comes: the stream-K and SWAP samples plain, ResNet-50 bf16, then the sanitizers
    sample='WgmmaConvGpu.StreamKSanitizerSample:WgmmaConvGpu.SwappedOperandsSanitizerSample'
    timeout 90 "$T" --gtest_filter="$sample" > "$OUT/$STEP/gtest_samples.log" 2>&1
    echo "samples exit $?"; grep -E '^\[  FAILED  \]|^\[       OK \]|PASSED|Failure' "$OUT/$STEP/gtest_samples.log" | sort -u
    "$here/h200_conv_grad.sh" "$B" "$OUT/$STEP/resnet50_bf16" "$LABEL, bf16" 250 configs/h200/h200_conv_resnet50.json bf16
    rm -f "$OUT/$STEP/resnet50_bf16"/*.db*
    tar czf "$OUT/$STEP.tgz" -C "$OUT" "$STEP"  # so far, in one file: a call cut short brings back 8 files at most
    for tool in memcheck racecheck; do
      sanitize "$tool" 60 "$T" WgmmaConvGpu.StreamKSanitizerSample "$OUT/$STEP/${tool}_stream_k.log"
    done ;;
  *) echo "usage: $0 check|probes|tables|tables_fp16|tables_both|sk_tables BUILD_DIR TESTS_BINARY OUT_DIR LABEL" >&2; exit 2 ;;
esac
rm -f "$OUT/$STEP"/*.db "$OUT/$STEP"/*/*.db
tar czf "$OUT/$STEP.tgz" -C "$OUT" "$STEP" && rm -rf "${OUT:?}/$STEP"
