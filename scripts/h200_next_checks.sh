#!/usr/bin/env bash
# On the H200 (or H100): the GPU checks and probes of wgmma_gemm's and wgmma_tap_wgrad's SCHED 1
# (stream-K over the last partial wave; since 674d373 its last part sums with four reads in flight),
# of split-K in two levels on wgmma_conv, and of wgmma_gemm's EPI 2. Steps (each under ten minutes;
# tests and sched fit one call together), logs packed into OUT/*.tgz:
#   tests:      the samples of the newest split-K code (test_cuda_gemm: CudaDevice.SanitizerSampleOf-
#               WgmmaStreamK; tests_backends_cuda: WgmmaTapWgradGpu.StreamKSanitizerSample,
#               WgmmaConvGpu.DeepSplitKSanitizerSample; passed on an H100 at 7ca9047), each also under
#               memcheck and racecheck (OUT/next_tests.tgz);
#   sched:      configs/probes/h200_streamk_probe.json (ResNet-50's 1x1 layers of 100 and 196 tiles) and
#               configs/probes/h200_tap_wgrad_streamk_probe.json (its 7x7 weight gradient), SCHED 0 against
#               1, each then through vs_torch (OUT/streamk_probe.tgz, OUT/tap_probe.tgz);
#   gemm_tests: the rest of the wgmma_gemm samples (EPI 2, deep split-K, odd shapes; run on an H100
#               at 9934a01) with the sanitizers (OUT/gemm_tests.tgz);
#   split_tail: configs/probes/h200_split_tail_probe.json, time against split count on two 1x1 weight
#               gradients of few tiles, every measurement kept (OUT/split_tail_probe.tgz);
#   lmhead:     configs/probes/h200_lmhead_epi2_probe.json (the GPT-2 LM head, EPI 0 / 2), then vs_torch.
#   lmhead_epi3: wgmma_gemm EPI 3 (the tile staged for the producer warpgroup's spare warps to store; built
#               without a GPU on 2026-12-07): its GPU sample plain (CudaDevice.SanitizerSampleOfWgmmaStagedStores), then
#               (if it passes) configs/probes/h200_lmhead_epi3_probe.json tuned (EPI 2 / 3 on the LM head, EPI 1 / 3 on
#               it padded to aligned C, every measurement kept) and vs_torch on lmhead_odd in bf16 and fp16, then the
#               sample under memcheck and racecheck (OUT/lmhead_epi3.tgz, OUT/lmhead_epi3_sanitizers.tgz).
#   lmhead_ncu: Nsight Compute (with the source counters: where each warp waits) on the LM head's EPI 3 winners, its
#               EPI 2 winner and the head padded to aligned rows on EPI 1 / EPI 3 (scripts/h200_ncu.sh 'lmhead'): whether
#               the consumers wait on the storers ("stored") or the unaligned stores cost in the memory system
#               (OUT/lmhead_ncu.tgz; about 3 minutes).
#   dgrad_budget: the other nets' input gradients (0.854x cuDNN on 2026-12-05) tuned with the shipped
#               space at budget 96 instead of 16, every measurement kept: whether the space holds faster
#               kernels than the model's 16 (a search problem) or not (a kernel problem);
#   diagnose:   why the GEMM numbers that resist do: the cuBLASLt the tuner loads (this environment)
#               and the one PyTorch loads, with their paths; the bf16 GEMM config tuned and the shapes
#               the vendor served at 0.94-0.97x torch.matmul timed with vs_torch --kernels --clocks (the
#               kernels each side launches; each side back to back with its SM clock and power)
#               (OUT/diagnose.tgz);
#   vendor_default: whether the vendor-served GEMM rows lose under do_bench because the tuner crowns a cuBLASLt
#               algorithm by a tune-time lead of a few % (issue 23): configs/h200/h200_gemm_bf16.json tuned as shipped
#               and again with the vendor's default alone (VENDOR_ALGOS=0, the kernel torch.matmul runs), each through
#               vs_torch in the same call (OUT/vendor_default.tgz; about 5 minutes). If the default-only database holds
#               the rows that sat at 0.93-0.97x at about 1.0x and the geomean does not drop, a served vendor algorithm
#               should need a lead over the default as a kernel needs one over the vendor (solutions/selection.h).
#   vendor_default_untuned: the same question on the untuned set's rows that sat at 0.93-0.97x (BERT's FFN input
#               gradients, its FFN at 512 tokens, QKV at 16 tokens, 96^3) and a few level ones: tuned as shipped (with the
#               kernels each side launches, vs_torch --kernels) and with the vendor's default alone
#               (OUT/vendor_default_untuned.tgz; about 5 minutes).
#   diagnose_conv: the same for l4_3x3_512's weight gradient, then Nsight Compute at do_bench's
#               clocks on it and on MobileNet's 1x1 input gradient beside cuDNN (OUT/diagnose_conv.tgz);
#   swap:       wgmma_conv's SWAP 1 and 2 (channels as wgmma's M; 2, its epilogue staged by all four warps, built
#               without a GPU): their GPU sample with the sanitizers, then configs/probes/h200_swap_probe.json tuned
#               (SWAP 0 / 1 / 2 in one sweep, every measurement kept) and vs_torch on its layers (OUT/swap.tgz).
#   swap_budget: configs/probes/h200_resnet_swap_budget_probe.json (the ResNet config's SWAP and budget 96 on the
#               layers they were made for) tuned, then vs_torch on them in bf16 and fp16 (DTYPES="bf16": one)
#               (OUT/swap_budget.tgz).
#   stream_k:   wgmma_conv's SCHED 1 (stream-K, built without a GPU on 2026-12-06) and SWAP 2: their GPU samples
#               with the sanitizers, then configs/probes/h200_conv_stream_k_probe.json tuned (SCHED 0 / 1 in one
#               sweep, every measurement kept) and vs_torch on its layers in bf16 and fp16 (OUT/stream_k.tgz).
#   search_depth: configs/probes/h200_resnet_search_depth_probe.json (ResNet-50's layers below cuDNN) by model
#               search at the shipped budget (64) and at 256, every measurement kept: whether the space holds
#               faster kernels than the model's first 64 (OUT/search_depth.tgz).
#   e5m2:       fp8 e5m2 (compile-verified only on 2026-12-06): the 8-bit wgmma sample with e4m3 x e5m2,
#               e5m2 x e4m3 and e5m2 x e5m2 under the sanitizers, cuBLASLt's mixed fp8 and its refusal of
#               e5m2 x e5m2, the device reference of the pairs; then configs/probes/h200_gemm_e5m2_probe.json
#               tuned (six shapes, e4m3 and e4m3 x e5m2) and vs_torch --dtype fp8 on them (OUT/e5m2.tgz).
#   flush_l2:   the other nets' layers (bf16) tuned twice on the ResNet config's templates and budget, with its
#               benchmark settings as shipped and with benchmark.flush_l2 (each timed run alone behind an L2
#               overwrite, as do_bench times), each then through vs_torch: whether tuning under do_bench's conditions
#               picks kernels that do better under do_bench (tune-time and do_bench times part by 15-20% on the
#               1x1 weight gradients) (OUT/flush_l2.tgz).
#   flush_grads: ResNet-50's gradients (DIRECTIONS, default dgrad,wgrad; DTYPE, default fp16) tuned on the ResNet
#               config twice, as shipped and with benchmark.flush_l2, then vs_torch --directions on each database
#               alternately, twice while the call has time: whether ranking under do_bench's cold L2 finds faster 1x1
#               layers (the tuner's warm-L2 times ran 6-17% above do_bench's on the 1x1 weight gradients, 3-11% on
#               the 1x1 input gradients, H200 2026-12-06) (OUT/flush_grads.tgz; about 7 minutes, 4 with one direction).
#   warp_store: wgmma_conv EPI 1 (the warps' own TMA stores; built without a GPU on 2026-12-06, branch conv-warp-store):
#               its sample plain, configs/probes/h200_warp_store_probe.json tuned (EPI 0 / 1 in one sweep, every
#               measurement kept) and vs_torch on the other nets' 1x1 layers, then the sample under memcheck and
#               racecheck (OUT/warp_store.tgz, OUT/warp_store_sanitizers.tgz).
#   waves_5x5:  configs/probes/h200_5x5_waves_probe.json (Inception's 5x5 of 48 channels, forward and input gradient:
#               2.33 waves of 128-pixel tiles) exhaustive over BM, stream-K, SWAP and ring depth, every measurement
#               kept, then vs_torch on it (OUT/waves_5x5.tgz).
#   halo:       wgmma_conv HALO 1 (a patch a tile; passed on an H100 on 2026-12-06, ping-pong consumers too): its sample
#               plain, then (if it passes) configs/probes/h200_halo_probe.json tuned (HALO 0 / 1 in one sweep, every measurement kept)
#               and vs_torch on its layers, then the sample under memcheck and racecheck (OUT/halo.tgz,
#               OUT/halo_sanitizers.tgz).
#   cluster:    wgmma_conv CLUSTERN (weight gradients, dy multicast to 2 or 4 CTAs on adjacent tile columns; built
#               without a GPU on 2026-12-06): its sample plain, then (if it passes) configs/probes/h200_wgrad_cluster_probe.json
#               tuned (CLUSTERN 1 / 2 / 4, whole tiles, split-K 2 and stream-K in one sweep) and vs_torch on l4 / l3's 3x3
#               layers, then the sample under memcheck and racecheck (OUT/cluster.tgz, OUT/cluster_sanitizers.tgz).
#   stem:       narrow_col2im (the stem's input gradient as col2im; on an H100 on 2026-12-07 valid, clean, 1.68x cuDNN): its GPU sample
#               plain, then (if it passes) configs/probes/h200_stem_col2im_probe.json tuned (narrow_dgrad and
#               narrow_col2im, bf16 and fp16, every measurement kept) and vs_torch on the stem's input gradient in both
#               dtypes, then the sample under memcheck and racecheck (OUT/stem.tgz, OUT/stem_sanitizers.tgz; about 4
#               minutes).
#   stem_wgmma: wgmma_narrow_wgrad and wgmma_narrow_fwd (the stem's weight gradient and forward pass on wgmma, the
#               im2col operand as register A from paired input rows; wgmma_narrow_wgrad with ROWS 2, two output rows a
#               step; valid, clean and timed on an H100 on 2026-12-07): their GPU
#               samples plain, then (if they pass) configs/probes/h200_stem_wgmma_probe.json tuned (narrow_wgrad /
#               narrow_fwd against them, bf16 and fp16, every measurement kept) and vs_torch on the stem's forward pass
#               and weight gradient in both dtypes, then the samples under memcheck and racecheck (OUT/stem_wgmma.tgz,
#               OUT/stem_wgmma_sanitizers.tgz).
#   rows1x1:    wgmma_rows1x1 (1x1 layers that write more than they read, whole output rows a tile stored by one bulk
#               copy; built without a GPU on 2026-12-07): its GPU sample plain (Rows1x1Gpu.SampleMatchesTheReference, four
#               candidates a problem), then (if it passes) configs/probes/h200_rows1x1_probe.json tuned (the ResNet config's
#               templates and wgmma_rows1x1 at its budget) and vs_torch on MobileNet's and EfficientNet's 1x1 input
#               gradients and ResNet-50's l1 1x1 layers (fwd, dgrad), then Rows1x1Gpu.SanitizerSample under memcheck
#               and racecheck (OUT/rows1x1.tgz, OUT/rows1x1_sanitizers.tgz).
#   warp_vector: wgmma_conv EPI 2 (each warp's own 16-byte stores, phases too; on an H100 on 2026-12-07 valid, clean, mixed): its GPU
#               sample plain, then (if it passes) configs/probes/h200_warp_vector_probe.json tuned (EPI 1 / 2 on the other nets'
#               1x1 layers and l1_1x1_64's input gradient, EPI 0 / 2 on the stride-2 3x3 input gradient, every measurement
#               kept) and vs_torch on them (fwd, dgrad), after benchmarks/probes/write_bound.py (their floor: a plain write
#               of the output and read of the inputs under do_bench, beside cuDNN), then the sample under memcheck and racecheck (OUT/warp_vector.tgz,
#               OUT/warp_vector_sanitizers.tgz). PROBE_SANITIZE=0 (any probe step) leaves the sanitizers out.
#   conv_samples: the sanitizer samples of the Hopper convolution kernels in the shipped spaces (wgmma_conv's 9,
#               wgmma_tap_wgrad's 2, wgmma_conv1x1's BN 32 and BN 160, narrow_fwd's and narrow_col2im's), each plain,
#               under memcheck and under racecheck (OUT/conv_samples.tgz; about 3 minutes). The 13 before
#               PhasesOverSeveralPasses ran as one step on an H200 on 2026-12-06: all pass, 0 errors, 0 hazards.
#   phases:     C's column phases (wgmma_gemm REPACK 2; built without a GPU on 2026-12-08) and the TMA store's
#               refusal past M: CudaDevice.SanitizerSampleOfWgmmaColumnPhases (every offset of C against EPI 0, both
#               betas, 8 / 4 / 2 phases, fp32 C) and CudaDevice.WgmmaLeavesTheRowsPastMAlone plain, then under memcheck
#               and racecheck; then (if they pass) the bf16 table of configs/h200/h200_gemm_bf16.json, whose sweep now
#               times phased LM head candidates (scripts/h200_gemm_dtypes.sh, KERNELS=1), and the LM head's measurements
#               (OUT/phases.tgz; about 7 minutes).
# Usage: scripts/h200_next_checks.sh STEP[,STEP...] BUILD_DIR TESTS_BINARY OUT_DIR LABEL
# (TESTS_BINARY: tests_backends_cuda, with test_cuda_gemm beside it; both need LD_LIBRARY_PATH=BUILD_DIR.)
set -uo pipefail
STEPS=$1 B=$2 T=$3 OUT=$4 LABEL=$5
D=$OUT/next
G=$(dirname "$T")/test_cuda_gemm  # CudaDevice.* live in their own executable, beside TESTS_BINARY
source "$(dirname "$0")/h200_env.sh"
show_all() {  # every measurement of every problem of a database (which variant of each kind won, and by how much)
  for id in $("$B/tiletune" db problems "$1" | awk 'NR > 1 {print $1}'); do "$B/tiletune" db show "$1" "$id"; done
}
gtest_and_sanitizers() {  # BINARY FILTER NAME LIMIT_S [TOOLS]: the filter's tests, then under memcheck and racecheck
  if [ -z "${5:-}" ]; then
    timeout "$4" "$1" --gtest_filter="$2" > "$D/gtest_$3.log" 2>&1
    echo "$3 exit $?"; grep -E '^\[  FAILED  \]|^\[       OK \]|PASSED|Failure' "$D/gtest_$3.log" | sort -u | head
  fi
  for tool in ${5:-memcheck racecheck}; do
    sanitize "$tool" "$(( $4 * 2 ))" "$1" "$2" "$D/${tool}_$3.log" "$3"
  done
}
sample_probe_sanitizers() {  # NAME SAMPLE CONFIG LIMIT_S SET:NAMES...: a new kernel's GPU sample plain; if it passes,
  # the probe tuned (every measurement kept) and vs_torch on each SET's NAMES (in each of PROBE_DTYPES, default bf16;
  # the directions PROBE_DIRECTIONS, default all three); packed into OUT/NAME.tgz; then the sample under memcheck and
  # racecheck (OUT/NAME_sanitizers.tgz)
  local name=$1 sample=$2 config=$3 limit=$4 rc; shift 4
  timeout 120 "$T" --gtest_filter="$sample" > "$D/gtest_$name.log" 2>&1
  rc=$?; echo "sample exit $rc"; grep -E '^\[  FAILED  \]|^\[       OK \]|Failure|rel|invalid' "$D/gtest_$name.log" | sort -u | head -20
  if [ $rc -eq 0 ]; then
    tune_probe "$config" "$limit" "$name"
    show_all "$D/$name.db" > "$D/db_show.txt" 2>&1
    for sn in "$@"; do
      for dt in ${PROBE_DTYPES:-bf16}; do
        local out=$D/vs_torch_${sn%%:*}_$dt
        PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" \
          --db "$D/$name.db" --set "${sn%%:*}" --only conv --names "${sn#*:}" \
          --directions "${PROBE_DIRECTIONS:-fwd,dgrad,wgrad}" --conv-dtype "$dt" --rounds 2 --out "$out.md" \
          --label "$LABEL, $dt" > "$out.log" 2>&1
        echo "vs_torch ${sn%%:*} $dt exit $?"; grep -E '^\| conv (fwd|dgrad|wgrad)' "$out.md"
      done
    done
    rm -f "$D/$name".db*
  fi
  pack "$name"
  [ "${PROBE_SANITIZE:-1}" = 0 ] && return  # the sanitizers in a later call
  gtest_and_sanitizers "$T" "$sample" "$name" 120 "memcheck racecheck"
  pack "${name}_sanitizers"
}
pack() {  # NAME: D's files into OUT/NAME.tgz, D emptied
  (cd "$D" && tar czf "$OUT/$1.tgz" ./* && rm -rf ./*)
}
tune_probe() {  # CONFIG LIMIT_S NAME: the config tuned alone, without the vendor, into D/NAME.db (log D/tune_NAME.log)
  local start; start=$(date +%s)
  timeout "$2" "$B/tiletune" tune "$1" --backend cuda --no-vendor --db "$D/$3.db" > "$D/tune_$3.log" 2>&1
  echo "tune $1 exit $? after $(( $(date +%s) - start )) s"
  grep -A8 '^winners' "$D/tune_$3.log" | awk 'NF > 3 {print $1, $2, $(NF-2), $(NF-1), $NF}'
  grep -E '^summary|failed by reason' "$D/tune_$3.log"
}
tune_then_vs_torch() {  # CONFIG LIMIT_S WHAT NAMES DTYPES: the config tuned alone, then vs_torch on NAMES per dtype
  tune_probe "$1" "$2" p
  for dtype in $5; do
    local flag=--conv-dtype; [ "$3" = gemm ] && flag=--dtype
    PYTHONUNBUFFERED=1 timeout 80 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/p.db" \
      --set shipped --only "$3" --names "$4" "$flag" "$dtype" --rounds 2 --out "$D/vs_torch_$dtype.md" \
      --label "$LABEL, $dtype" > "$D/vs_torch_$dtype.log" 2>&1
    echo "vs_torch $dtype exit $?"; grep -E "^\| $3" "$D/vs_torch_$dtype.md"
  done
  show_all "$D/p.db" > "$D/db_show.txt" 2>&1
  rm -f "$D"/p.db*
}
for STEP in ${STEPS//,/ }; do
  mkdir -p "$D"
  case "$STEP" in
    tests)
      gtest_and_sanitizers "$G" 'CudaDevice.SanitizerSampleOfWgmmaStreamK' gemm_streamk 60
      gtest_and_sanitizers "$T" 'WgmmaTapWgradGpu.StreamKSanitizerSample:WgmmaConvGpu.DeepSplitKSanitizerSample' tap_conv 60
      pack next_tests ;;
    sched)
      tune_then_vs_torch configs/probes/h200_streamk_probe.json 75 conv l4_1x1_2048,l3_1x1_1024 bf16
      pack streamk_probe
      tune_then_vs_torch configs/probes/h200_tap_wgrad_streamk_probe.json 100 conv l4_3x3_512 "bf16 fp16"
      pack tap_probe ;;
    phases)
      timeout 150 "$G" --gtest_filter='CudaDevice.SanitizerSampleOfWgmmaColumnPhases:CudaDevice.WgmmaLeavesTheRowsPastMAlone' \
        > "$D/gtest_phases.log" 2>&1
      rc=$?; echo "phases samples exit $rc"; grep -E '^\[  FAILED  \]|^\[       OK \]|Failure|differs' "$D/gtest_phases.log" | sort -u | head
      if [ $rc -eq 0 ]; then
        KERNELS=1 T_TUNE=150 T_BENCH=110 scripts/h200_gemm_dtypes.sh "$B" "$D/bf16" "$LABEL" 64 bf16
        "$B/tiletune" db show "$D/bf16/gemm_bf16.db" \
          'gemm|bf16>bf16|acc_f32|TN|m50257|n4096|k768|b1|lda768|ldb768|ldc50257|sa0|sb0|sc0|beta0' > "$D/lmhead_show.txt" 2>&1
        head -12 "$D/lmhead_show.txt" | cut -c1-200
        rm -f "$D"/bf16/*.db*
      fi
      gtest_and_sanitizers "$G" 'CudaDevice.SanitizerSampleOfWgmmaColumnPhases:CudaDevice.WgmmaLeavesTheRowsPastMAlone' phases 90 \
        "memcheck racecheck"
      pack phases ;;
    gemm_tests)
      gtest_and_sanitizers "$G" 'CudaDevice.SanitizerSampleOfWgmmaAlignedRunsOfUnalignedC:CudaDevice.SanitizerSampleOfWgmmaDeepSplitK' gemm 60
      timeout 100 "$G" --gtest_filter=CudaDevice.WgmmaSplitKValidatesOnOddShapesDeterministically > "$D/gtest_odd.log" 2>&1
      echo "odd shapes exit $?"; grep -E '^\[  FAILED  \]|^\[       OK \]|Failure' "$D/gtest_odd.log" | sort -u
      pack gemm_tests ;;
    split_tail)
      tune_probe configs/probes/h200_split_tail_probe.json 120 st
      show_all "$D/st.db" > "$D/db_show.txt" 2>&1
      rm -f "$D"/st.db*
      pack split_tail_probe ;;
    lmhead)
      tune_then_vs_torch configs/probes/h200_lmhead_epi2_probe.json 100 gemm lmhead_odd "bf16 fp16"
      pack lmhead_probe ;;
    lmhead_epi3)
      timeout 150 "$G" --gtest_filter=CudaDevice.SanitizerSampleOfWgmmaStagedStores > "$D/gtest_staged.log" 2>&1
      rc=$?; echo "staged-store sample exit $rc"
      grep -E '^\[  FAILED  \]|^\[       OK \]|Failure|invalid' "$D/gtest_staged.log" | sort -u | head -20
      [ $rc -eq 0 ] && tune_then_vs_torch configs/probes/h200_lmhead_epi3_probe.json 150 gemm lmhead_odd "bf16 fp16"
      pack lmhead_epi3
      [ "${PROBE_SANITIZE:-1}" = 0 ] || { gtest_and_sanitizers "$G" CudaDevice.SanitizerSampleOfWgmmaStagedStores staged 120 \
                                            "memcheck racecheck"; pack lmhead_epi3_sanitizers; } ;;
    lmhead_ncu)
      SOURCE=1 "$(dirname "$0")/h200_ncu.sh" "$B" "$D/ncu" 'lmhead'
      pack lmhead_ncu ;;
    dgrad_budget)
      ONLY='^dgrad_' "$(dirname "$0")/h200_untuned.sh" conv "$B" "$D" "$LABEL, bf16, budget 96" 200 bf16 96
      show_all "$D/untuned.db" > "$D/db_show.txt" 2>&1
      rm -f "$D"/untuned.db*
      pack dgrad_budget ;;
    diagnose)
      lt_version='import ctypes, sys; l = ctypes.CDLL("libcublasLt.so.13"); print(sys.argv[1], l.cublasLtGetVersion(),
[m.split()[-1] for m in open("/proc/self/maps") if "cublasLt" in m][:1])'
      python3 -c "$lt_version" "the tuner's environment:" 2>&1 | tee "$D/versions.txt"
      python3 -c "import torch; torch.ones(8, 8, device='cuda') @ torch.ones(8, 8, device='cuda'); $lt_version" \
        "PyTorch's process:" 2>&1 | tee -a "$D/versions.txt"
      timeout 130 "$B/tiletune" tune configs/h200/h200_gemm_bf16.json --backend cuda --db "$D/g.db" --search model \
        --budget 64 > "$D/tune_gemm.log" 2>&1
      echo "gemm tune exit $?"
      PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/g.db" \
        --set shipped --only gemm --names sq8192,sq4096,llm_down_fwd,llm_qkv_fwd,llm_down_wgrad --kernels --clocks 2 \
        --rounds 2 \
        --out "$D/vs_torch_gemm.md" --label "$LABEL, bf16" > "$D/vs_torch_gemm.log" 2>&1
      echo "vs_torch exit $?"; grep -E "^kernels|^clocks|^\| gemm" "$D/vs_torch_gemm.log"
      show_all "$D/g.db" > "$D/db_show_gemm.txt" 2>&1
      rm -f "$D"/g.db*
      pack diagnose ;;
    vendor_default)
      T_TUNE=110 T_BENCH=130 "$(dirname "$0")/h200_gemm_dtypes.sh" "$B" "$D/shipped" "$LABEL, as shipped" 64 bf16
      VENDOR_ALGOS=0 T_TUNE=110 T_BENCH=130 "$(dirname "$0")/h200_gemm_dtypes.sh" "$B" "$D/default_only" "$LABEL, vendor default only" 64 bf16
      rm -f "$D"/*/*.db
      pack vendor_default ;;
    vendor_default_untuned)
      names='^(bert_ffn1_dgrad|bert_ffn1_fwd_t512|bert_qkv_fwd_t(16|4096)|small_96|llama8b_qkv_fwd_t512|vit_l_qkv_fwd_t512)'
      ONLY=$names "$(dirname "$0")/h200_untuned.sh" gemm "$B" "$D/shipped" "$LABEL, as shipped" 100 bf16 64
      PYTHONUNBUFFERED=1 timeout 100 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" \
        --db "$D/shipped/untuned.db" --set untuned --only gemm --dtype bf16 --names "$(cat "$D/shipped/names.txt")" \
        --kernels --rounds 1 --out "$D/kernels.md" --label "$LABEL, kernels" > "$D/kernels.log" 2>&1
      echo "kernels exit $?"; grep -E "^kernels" "$D/kernels.log"
      ONLY=$names VENDOR_ALGOS=0 "$(dirname "$0")/h200_untuned.sh" gemm "$B" "$D/default_only" \
        "$LABEL, vendor default only" 100 bf16 64
      rm -f "$D"/*/*.db
      pack vendor_default_untuned ;;
    diagnose_conv)
      # l4_3x3_512's weight gradient: the tap kernel and cuDNN back to back, their clocks and power
      timeout 60 "$B/tiletune" tune configs/probes/h200_tap_wgrad_streamk_probe.json --backend cuda --no-vendor \
        --db "$D/t.db" > "$D/tune_tap.log" 2>&1
      PYTHONUNBUFFERED=1 timeout 90 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/t.db" \
        --set shipped --only conv --names l4_3x3_512 --kernels --clocks 3 --rounds 2 --out "$D/vs_torch_tap.md" \
        --label "$LABEL, bf16" > "$D/vs_torch_tap.log" 2>&1
      echo "vs_torch tap exit $?"; grep -E "^clocks|^\| conv wgrad" "$D/vs_torch_tap.log"
      rm -f "$D"/t.db*
      "$(dirname "$0")/h200_ncu.sh" "$B" "$D/ncu" 'l4_tap_pack|l4_wgrad_cudnn|mbnet_dgrad'
      pack diagnose_conv ;;
    swap)
      gtest_and_sanitizers "$T" 'WgmmaConvGpu.SwappedOperandsSanitizerSample' swap 60
      tune_probe configs/probes/h200_swap_probe.json 120 sw
      show_all "$D/sw.db" > "$D/db_show.txt" 2>&1
      for set in shipped:l1_3x3_64 untuned:unet_3x3_64,5x5_48; do
        PYTHONUNBUFFERED=1 timeout 80 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/sw.db" \
          --set "${set%%:*}" --only conv --names "${set#*:}" --conv-dtype bf16 --rounds 2 --out "$D/vs_torch_${set%%:*}.md" \
          --label "$LABEL, bf16" > "$D/vs_torch_${set%%:*}.log" 2>&1
        echo "vs_torch ${set%%:*} exit $?"; grep -E '^\| conv (fwd|dgrad)' "$D/vs_torch_${set%%:*}.md"
      done
      rm -f "$D"/*.db*
      pack swap ;;
    swap_budget)
      tune_then_vs_torch configs/probes/h200_resnet_swap_budget_probe.json 150 conv l1_3x3_64,l4_1x1_2048 "${DTYPES:-bf16 fp16}"
      pack swap_budget ;;
    stream_k)
      # the samples plain, the timings, then the sanitizers: what a call cut at its limit leaves is the least needed
      sample='WgmmaConvGpu.StreamKSanitizerSample:WgmmaConvGpu.SwappedOperandsSanitizerSample'
      timeout 90 "$T" --gtest_filter="$sample" > "$D/gtest_sk.log" 2>&1
      echo "sk exit $?"; grep -E '^\[  FAILED  \]|^\[       OK \]|PASSED|Failure' "$D/gtest_sk.log" | sort -u | head
      tune_probe configs/probes/h200_conv_stream_k_probe.json 150 sk
      show_all "$D/sk.db" > "$D/db_show.txt" 2>&1
      for dtype in bf16 fp16; do  # (fp16: the probe tunes l4_3x3_512 alone)
        names=l4_3x3_512; [ "$dtype" = bf16 ] && names=l4_3x3_512,l3_3x3_256,l2_3x3_128,l4_1x1_2048,l3_1x1_1024
        PYTHONUNBUFFERED=1 timeout 80 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/sk.db" \
          --set shipped --only conv --names "$names" --conv-dtype "$dtype" \
          --rounds 2 --out "$D/vs_torch_$dtype.md" --label "$LABEL, $dtype" > "$D/vs_torch_$dtype.log" 2>&1
        echo "vs_torch $dtype exit $?"; grep -E '^\| conv wgrad' "$D/vs_torch_$dtype.md"
      done
      rm -f "$D"/*.db*
      pack stream_k  # before the sanitizers: a call cut short brings back 8 files at most
      gtest_and_sanitizers "$T" "$sample" sk 90 "memcheck racecheck"
      pack stream_k_sanitizers ;;
    search_depth)
      for budget in 64 256; do
        start=$(date +%s)
        timeout 250 "$B/tiletune" tune configs/probes/h200_resnet_search_depth_probe.json --backend cuda --no-vendor \
          --search model --budget "$budget" --db "$D/b$budget.db" > "$D/tune_b$budget.log" 2>&1
        echo "budget $budget: tune exit $? after $(( $(date +%s) - start )) s"
        grep -E '^summary' "$D/tune_b$budget.log"
        show_all "$D/b$budget.db" > "$D/db_show_b$budget.txt" 2>&1
        awk '/^problem/ {p = $2; getline; getline; k = ""; for (i = 1; i <= NF; ++i) if ($i ~ /_.*-/) k = $i; print "problem", p, $3, k}' "$D/db_show_b$budget.txt"
      done
      rm -f "$D"/*.db*
      pack search_depth ;;
    e5m2)
      gtest_and_sanitizers "$T" 'CudaDevice.SanitizerSampleOfWgmmaEightBit' eight_bit 120
      timeout 120 "$T" --gtest_filter='CudaDevice.VendorRunsEightBitGemmsThroughCublasLt:CudaDevice.DeviceReferenceMatchesTheHostReference:CudaDevice.EightBitWgmmaSampleValidates' \
        > "$D/gtest_e5m2_rest.log" 2>&1
      echo "vendor, reference, sample exit $?"; grep -E '^\[  FAILED  \]|^\[       OK \]|Failure' "$D/gtest_e5m2_rest.log" | sort -u
      tune_then_vs_torch configs/probes/h200_gemm_e5m2_probe.json 300 gemm \
        sq4096,llm_qkv_fwd,llm_down_dgrad,llm_down_wgrad,odd1000,skinny16 fp8
      pack e5m2 ;;
    flush_l2)
      python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['benchmark']['flush_l2']=True; json.dump(c,open(sys.argv[2],'w'),indent=1)" \
        configs/h200/h200_conv_resnet50.json "$D/resnet_flush.json"
      "$(dirname "$0")/h200_untuned.sh" conv "$B" "$D/other_std" "$LABEL, bf16, flush_l2 off" 120 bf16
      SHIPPED="$D/resnet_flush.json" "$(dirname "$0")/h200_untuned.sh" conv "$B" "$D/other_flush" "$LABEL, bf16, flush_l2 on" 150 bf16
      rm -f "$D"/other_*/*.db
      pack flush_l2 ;;
    flush_grads)
      dt=${DTYPE:-fp16} dirs=${DIRECTIONS:-dgrad,wgrad} t0=$(date +%s)
      for mode in warm flush; do
        python3 - configs/h200/h200_conv_resnet50.json "$D/rn_$mode.json" "$dt" "$dirs" "$mode" <<'PY'
import json, os, sys
c = json.load(open(sys.argv[1]))
c["shapes"].update(file=os.path.abspath("configs/shapes/conv_resnet50.json"), dtypes=[sys.argv[3]],
                   directions=sys.argv[4].split(","))
c["benchmark"]["flush_l2"] = sys.argv[5] == "flush"
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
        tune_probe "$D/rn_$mode.json" 200 "$mode"
        "$B/tiletune" db winners "$D/$mode.db" > "$D/winners_$mode.txt" 2>&1
      done
      for r in 1 2; do
        [ "$r" = 2 ] && [ $(( $(date +%s) - t0 )) -gt 420 ] && break  # a second round only where the call has time
        for mode in warm flush; do
          PYTHONUNBUFFERED=1 timeout 90 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/$mode.db" \
            --set shipped --only conv --directions "$dirs" --conv-dtype "$dt" --rounds 2 --out "$D/vs_${mode}_$r.md" \
            --label "$LABEL, $dt, tuned $mode" > "$D/vs_${mode}_$r.log" 2>&1
          echo "vs_torch $mode round $r exit $?:"; grep -E '^conv (dgrad|wgrad):' "$D/vs_${mode}_$r.md"
        done
      done
      rm -f "$D"/*.db*
      pack flush_grads ;;
    warp_store)
      timeout 90 "$T" --gtest_filter=WgmmaConvGpu.WarpTmaStoreSanitizerSample > "$D/gtest_ws.log" 2>&1
      echo "sample exit $?"; grep -E '^\[  FAILED  \]|^\[       OK \]|Failure' "$D/gtest_ws.log" | sort -u | head
      tune_probe configs/probes/h200_warp_store_probe.json 200 ws
      show_all "$D/ws.db" > "$D/db_show.txt" 2>&1
      PYTHONUNBUFFERED=1 timeout 80 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/ws.db" \
        --set untuned --only conv --names mbnet_1x1_144_24,effnet_1x1_240_40,incep_1x1_96_160 --conv-dtype bf16 \
        --rounds 2 --out "$D/vs_torch.md" --label "$LABEL, bf16" > "$D/vs_torch.log" 2>&1
      echo "vs_torch exit $?"; grep -E '^\| conv (fwd|dgrad)' "$D/vs_torch.md"
      rm -f "$D"/ws.db*
      pack warp_store
      gtest_and_sanitizers "$T" 'WgmmaConvGpu.WarpTmaStoreSanitizerSample' ws 90 "memcheck racecheck"
      pack warp_store_sanitizers ;;
    waves_5x5)
      tune_probe configs/probes/h200_5x5_waves_probe.json 240 w5
      show_all "$D/w5.db" > "$D/db_show.txt" 2>&1
      PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$D/w5.db" \
        --set untuned --only conv --names 5x5_48 --conv-dtype bf16 \
        --rounds 2 --out "$D/vs_torch.md" --label "$LABEL, bf16" > "$D/vs_torch.log" 2>&1
      echo "vs_torch exit $?"; grep -E '^\| conv (fwd|dgrad)' "$D/vs_torch.md"
      rm -f "$D"/w5.db*
      pack waves_5x5 ;;
    halo)
      sample_probe_sanitizers halo WgmmaConvGpu.HaloPatchSanitizerSample configs/probes/h200_halo_probe.json 240 \
        untuned:5x5_48,unet_3x3_64 shipped:l1_3x3_64 ;;
    cluster)
      sample_probe_sanitizers cluster WgmmaConvGpu.ClustersSharingDySanitizerSample configs/probes/h200_wgrad_cluster_probe.json \
        200 shipped:l4_3x3_512,l3_3x3_256 ;;
    stem)
      PROBE_DTYPES="bf16 fp16" PROBE_DIRECTIONS=dgrad sample_probe_sanitizers stem \
        NarrowConvGpu.SanitizerSampleOfCol2im configs/probes/h200_stem_col2im_probe.json 120 shipped:conv1_7x7 ;;
    stem_wgmma)
      PROBE_DTYPES="bf16 fp16" PROBE_DIRECTIONS=fwd,wgrad sample_probe_sanitizers stem_wgmma \
        'NarrowConvGpu.SanitizerSampleOfWgmmaWgrad:NarrowConvGpu.SanitizerSampleOfWgmmaFwd' \
        configs/probes/h200_stem_wgmma_probe.json 150 shipped:conv1_7x7 ;;
    rows1x1)
      PROBE_DIRECTIONS=fwd,dgrad PROBE_SANITIZE=0 sample_probe_sanitizers rows1x1 Rows1x1Gpu.SampleMatchesTheReference \
        configs/probes/h200_rows1x1_probe.json 200 untuned:mbnet_1x1_144_24,effnet_1x1_240_40 shipped:l1_1x1_64,l1_1x1_256
      [ "${PROBE_SANITIZE:-1}" = 0 ] || { gtest_and_sanitizers "$T" Rows1x1Gpu.SanitizerSample rows1x1 120 "memcheck racecheck"
                                          pack rows1x1_sanitizers; } ;;
    warp_vector)
      timeout 90 python3 benchmarks/probes/write_bound.py > "$D/write_bound.md" 2>&1  # the layers' floor, beside cuDNN
      echo "write_bound exit $?"; cat "$D/write_bound.md"
      PROBE_DIRECTIONS=fwd,dgrad sample_probe_sanitizers warp_vector WgmmaConvGpu.WarpVectorStoreSanitizerSample \
        configs/probes/h200_warp_vector_probe.json 200 untuned:mbnet_1x1_144_24,effnet_1x1_240_40,incep_1x1_96_160,stride2_3x3_128 \
        shipped:l1_1x1_64 ;;
    conv_samples)
      for f in WgmmaConvGpu.SanitizerSample WgmmaConvGpu.DeepSplitKSanitizerSample WgmmaConvGpu.StreamKSanitizerSample \
               WgmmaConvGpu.ClustersSharingDySanitizerSample WgmmaConvGpu.SwappedOperandsSanitizerSample \
               WgmmaConvGpu.OneHundredSixtyChannelTilesSanitizerSample WgmmaConvGpu.WarpTmaStoreSanitizerSample \
               WgmmaConvGpu.HaloPatchSanitizerSample WgmmaConvGpu.PhasesOverSeveralPassesSanitizerSample \
               WgmmaConvGpu.WarpVectorStoreSanitizerSample \
               WgmmaTapWgradGpu.SanitizerSample WgmmaTapWgradGpu.StreamKSanitizerSample \
               Conv1x1Gpu.ThirtyTwoColumnTilesMatchTheReference Conv1x1Gpu.OneHundredSixtyColumnTilesMatchTheReference \
               NarrowConvGpu.SanitizerSampleOfTheForwardPass NarrowConvGpu.SanitizerSampleOfCol2im; do
        gtest_and_sanitizers "$T" "$f" "${f//./_}" 100
      done
      pack conv_samples ;;
    *) echo "usage: $0 tests|sched|gemm_tests|split_tail|lmhead|dgrad_budget|diagnose|diagnose_conv|swap|swap_budget|stream_k|search_depth|e5m2|flush_l2|flush_grads|warp_store|waves_5x5|halo|cluster|stem|stem_wgmma|rows1x1|warp_vector|conv_samples[,...] BUILD_DIR TESTS_BINARY OUT_DIR LABEL" >&2
       exit 2 ;;
  esac
done
rm -rf "$D"
