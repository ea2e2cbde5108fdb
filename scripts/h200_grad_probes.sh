#!/usr/bin/env bash
# On the H200: the GPU checks and probes of the convolution kernels that reach cuDNN's paths:
# wgmma_tap_wgrad (weight gradients, x's rows shared by a filter row's taps; SHIFT, AREG),
# wgmma_conv's PHASE 1 (strided input gradients by stride phases) and partial chunks (C, K multiples
# of 8), narrow_fwd (the 3-channel stem's forward pass). Two calls, each under ten minutes:
#   tests:  their GPU tests (samples validated twice against the fp64 reference, workspaces left
#           zeroed), then their small sanitizer samples under compute-sanitizer memcheck and racecheck;
#   probes: configs/probes/h200_tap_wgrad_wgmma_probe.json (the model's best 48: which variants validate,
#           which win), h200_wgmma_conv_phases_chunks_probe.json and h200_narrow_fwd_probe.json tuned
#           without the vendor, then
#           their winners timed against cuDNN through PyTorch (vs_torch.py: the probed layers of
#           ResNet-50 and of the other nets).
# Usage: scripts/h200_grad_probes.sh tests|probes BUILD_DIR TESTS_BINARY OUT_DIR LABEL
#   TESTS_BINARY: a tests_backends_cuda built with CUDA on.
set -uo pipefail
MODE=$1 B=$2 T=$3 OUT=$4 LABEL=$5
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
filter='WgmmaTapWgrad*:WgmmaConvGpu.SampleMatchesTheReference:WgmmaConvGpu.SanitizerSample:NarrowConvGpu.*'
if [ "$MODE" = tests ]; then
  timeout 200 "$T" --gtest_filter="$filter" > "$OUT/gtest.log" 2>&1
  echo "gtest exit $?"; grep -E '^\[  FAILED  \]|validated' "$OUT/gtest.log" | sort -u | head
  # The failing variants by SHIFT, AREG and PHASE.
  grep -oE 'wgmma_(tap_wgrad|conv)_[A-Z0-9_-]+ on' "$OUT/gtest.log" | grep -oE '(SHIFT|AREG|PHASE)-[0-9]' | sort | uniq -c
  for tool in memcheck racecheck; do
    sanitize "$tool" 170 "$T" 'WgmmaTapWgradGpu.SanitizerSample:WgmmaConvGpu.SanitizerSample:NarrowConvGpu.SanitizerSampleOfTheForwardPass' \
      "$OUT/$tool.log"
  done
  exit 0
fi
# The wgmma_conv and narrow_fwd probes share one database (the user database below).
for probe in tap_wgrad_wgmma wgmma_conv_phases_chunks narrow_fwd; do
  limit=180 db=$probe
  [ "$probe" = wgmma_conv_phases_chunks ] && limit=120
  [ "$probe" = narrow_fwd ] && limit=60 db=wgmma_conv_phases_chunks
  start=$(date +%s)
  timeout "$limit" "$B/tiletune" tune "configs/probes/h200_${probe}_probe.json" --backend cuda --no-vendor \
    --db "$OUT/$db.db" > "$OUT/$probe.log" 2>&1
  echo "$probe tune exit $? after $(( $(date +%s) - start )) s"; grep -A12 '^winners' "$OUT/$probe.log"
  grep -E '^summary|failed by reason' "$OUT/$probe.log"
done
# The probed layers only (all three directions of each; the ones not tuned here run on the vendor
# rung), the wgmma_conv probe's database as the user database.
for set in shipped untuned; do
  names=conv1_7x7,l1_3x3_64,l2_3x3_128,l3_3x3_256,l4_3x3_512
  [ "$set" = untuned ] && names=vgg_3x3_256,unet_3x3_64,5x5_48,stride2_3x3_128
  PYTHONUNBUFFERED=1 timeout 80 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" \
    --db "$OUT/tap_wgrad_wgmma.db" --user-db "$OUT/wgmma_conv_phases_chunks.db" --set "$set" --only conv --names "$names" \
    --conv-dtype bf16 --rounds 2 --out "$OUT/vs_torch_$set.md" --label "$LABEL" > "$OUT/vs_torch_$set.log" 2>&1
  echo "vs_torch $set exit $?"; grep -E '^\| conv ' "$OUT/vs_torch_$set.md"
done
rm -f "$OUT"/*.db-wal "$OUT"/*.db-shm
