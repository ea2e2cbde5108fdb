#!/usr/bin/env bash
# On the H200: one device call of three probes and the GPU checks one needs, logs packed into
# OUT/small_probes_tests.tgz and OUT/PROBE.tgz.
#   1. wgmma_tap_wgrad (PACK 1 above all): its GPU samples validated against the fp64 reference,
#      then compute-sanitizer memcheck and racecheck on its sanitizer sample;
#   2. configs/probes/h200_tap_wgrad_pack_probe.json (ResNet-50's 7x7 weight gradient, PACK 0 / 1),
#      then vs_torch on that layer, bf16 and fp16;
#   3. configs/probes/h200_conv_small_1x1_probe.json (the other nets' 1x1 layers on wgmma_conv1x1
#      with OCC 2, other rings and tiles), then vs_torch on those layers;
#   4. configs/probes/h200_lmhead_probe.json (the GPT-2 LM head on a wider wgmma_gemm space), then
#      vs_torch on it against torch.matmul and Triton.
# Usage: scripts/h200_small_probes.sh BUILD_DIR TESTS_BINARY OUT_DIR LABEL
set -uo pipefail
B=$1 T=$2 OUT=$3 LABEL=$4
D=$OUT/small_probes
mkdir -p "$D"
source "$(dirname "$0")/h200_env.sh"
timeout 150 "$T" --gtest_filter='WgmmaTapWgrad*' > "$D/gtest.log" 2>&1
echo "gtest exit $?"; grep -E '^\[  FAILED  \]|validated|PASSED' "$D/gtest.log" | sort -u | head
grep -oE 'wgmma_tap_wgrad_[A-Z0-9_-]+ on' "$D/gtest.log" | grep -oE 'PACK-[0-9]' | sort | uniq -c
for tool in memcheck racecheck; do
  sanitize "$tool" 150 "$T" WgmmaTapWgradGpu.SanitizerSample "$D/$tool.log"
done
tar czf "$OUT/small_probes_tests.tgz" -C "$D" gtest.log memcheck.log racecheck.log
probe() {  # config, tune limit, vs_torch set, names, dtypes, --only
  local name=$1 limit=$2 set=$3 names=$4 only=${6:-conv} start
  start=$(date +%s)
  timeout "$limit" "$B/tiletune" tune "configs/probes/h200_${name}_probe.json" --backend cuda --no-vendor \
    --db "$D/$name.db" > "$D/$name.log" 2>&1
  echo "$name tune exit $? after $(( $(date +%s) - start )) s"; grep -A12 '^winners' "$D/$name.log"
  grep -E '^summary|failed by reason' "$D/$name.log"
  "$B/tiletune" db show "$D/$name.db" > "$D/${name}_db.txt" 2>&1
  for dtype in $5; do
    local gemm_dtype=bf16  # (vs_torch times convolutions only with the GEMM type bf16)
    [ "$only" = gemm ] && gemm_dtype=$dtype
    PYTHONUNBUFFERED=1 timeout 90 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/$name.db" \
      --set "$set" --only "$only" --names "$names" --conv-dtype "$dtype" --dtype "$gemm_dtype" --rounds 2 --out "$D/vs_torch_${name}_$dtype.md" \
      --label "$LABEL, $dtype" > "$D/vs_torch_${name}_$dtype.log" 2>&1
    echo "vs_torch $name $dtype exit $?"; grep -E '^\| (conv|gemm)' "$D/vs_torch_${name}_$dtype.md" | grep -v '| vendor |'
  done
  rm -f "$D/$name".db*
  (cd "$D" && tar czf "$OUT/$name.tgz" "$name"* vs_torch_"$name"_*)  # each probe's logs as it ends: a call cut short keeps them
}
probe tap_wgrad_pack 150 shipped l4_3x3_512 "bf16 fp16"
probe conv_small_1x1 150 untuned incep_1x1_96_160,mbnet_1x1_144_24,effnet_1x1_240_40 bf16
probe lmhead 100 shipped lmhead_odd "bf16 fp16" gemm
rm -rf "$D"
