#!/usr/bin/env bash
# On the H200 (or H100): Nsight Compute's view of generated kernels that stay below their peers, one
# kernel launch each: the generated kernel (a one-candidate sweep in-process, its first launch) and,
# for convolutions, cuDNN's kernels for the same layer and direction through PyTorch
# (benchmarks/probes/torch_conv_once.py). GEMM lines ("gemm" as the direction, the layer as
# TRANSA,TRANSB,M,N,K, bf16) profile wgmma_gemm arrangements side by side: the LM head's epilogues.
# --clock-control none: the clocks as do_bench meets them (ncu's default locks them to base, 1.36 GHz
# on the H100, where the tap kernel measured level with cuDNN on l3 that do_bench puts at 0.86x; METHOD.md).
# The stall metrics: per issued instruction, the warps stalled for each reason (where the cycles go).
# SOURCE=1: also the source counters (sampled stall reasons per SASS instruction), exported as OUT/sass_NAME.csv
# (ncu's source page), which say which instruction each kernel's warps wait at.
# Usage: [SOURCE=1] scripts/h200_ncu.sh BUILD_DIR OUT_DIR [NAME_FILTER]   (NAME_FILTER: a grep -E pattern)
set -uo pipefail
B=$1 OUT=$2 ONLY=${3:-.}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
sections="--clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis
          --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section SchedulerStats
          --section WarpStateStats --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
[ "${SOURCE:-0}" = 1 ] && sections="$sections --section SourceCounters --import-source no"
profile() {  # NAME COMMAND...: ncu on the command, its report printed to OUT/ncu_NAME.txt (SOURCE=1: and its SASS page)
  local name=$1; shift
  if [ "${SOURCE:-0}" != 1 ]; then timeout 90 ncu $sections "$@" > "$OUT/ncu_$name.txt" 2>&1; return; fi
  timeout 120 ncu $sections -f -o "$OUT/rep_$name" "$@" > "$OUT/run_$name.log" 2>&1
  local rc=$?
  ncu -i "$OUT/rep_$name.ncu-rep" > "$OUT/ncu_$name.txt" 2>&1
  cat "$OUT/run_$name.log" >> "$OUT/ncu_$name.txt"
  ncu -i "$OUT/rep_$name.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_$name.csv" 2>&1
  rm -f "$OUT/rep_$name.ncu-rep" "$OUT/run_$name.log"
  return $rc
}
# name direction layer(n,c,h,w,k,r,s,stride,pad; gemm: transa,transb,m,n,k) template parameters ("cudnn": PyTorch's cuDNN)
grep -E "^($ONLY)" <<'LIST' | while read -r name dir layer tpl params; do
l3_tap wgrad 128,256,14,14,256,3,3,1,1 wgmma_tap_wgrad FR=3,FS=3,SHIFT=1,SPLITK=8,STAGES=4,SW=1,AREG=0
l3_tap_areg wgrad 128,256,14,14,256,3,3,1,1 wgmma_tap_wgrad FR=3,FS=3,SHIFT=1,SPLITK=8,STAGES=4,SW=1,AREG=1
l3_wgrad_cudnn wgrad 128,256,14,14,256,3,3,1,1 cudnn -
l4_tap wgrad 128,512,7,7,512,3,3,1,1 wgmma_tap_wgrad FR=3,FS=3,SHIFT=1,SPLITK=2,STAGES=4,SW=1,AREG=0
l4_tap_areg wgrad 128,512,7,7,512,3,3,1,1 wgmma_tap_wgrad FR=3,FS=3,SHIFT=1,SPLITK=2,STAGES=4,SW=1,AREG=1
l4_tap_pack wgrad 128,512,7,7,512,3,3,1,1 wgmma_tap_wgrad FR=1,FS=3,SHIFT=1,SPLITK=1,STAGES=3,SW=1,AREG=1,PACK=1,SCHED=0
l4_tap_win wgrad 128,512,7,7,512,3,3,1,1 wgmma_tap_wgrad FR=3,FS=3,SHIFT=1,SPLITK=2,STAGES=3,SW=1,AREG=0,PACK=1,SCHED=0
l4_conv wgrad 128,512,7,7,512,3,3,1,1 wgmma_conv BM=128,BN=128,CONSUMERS=2,GROUP=8,PHASE=0,PINGPONG=1,RASTER=0,SPLITK=2,STAGES=4
l4_conv_sk wgrad 128,512,7,7,512,3,3,1,1 wgmma_conv BM=256,BN=128,CONSUMERS=2,GROUP=8,PHASE=0,PINGPONG=0,RASTER=0,SCHED=1,SPLITK=1,STAGES=4,SWAP=0
l4_conv_whole wgrad 128,512,7,7,512,3,3,1,1 wgmma_conv BM=256,BN=128,CONSUMERS=2,GROUP=8,PHASE=0,PINGPONG=0,RASTER=0,SCHED=0,SPLITK=1,STAGES=4,SWAP=0
l4_wgrad_cudnn wgrad 128,512,7,7,512,3,3,1,1 cudnn -
l3_fwd fwd 128,256,14,14,256,3,3,1,1 wgmma_conv BM=64,BN=256,CONSUMERS=2,GROUP=8,PHASE=0,PINGPONG=1,RASTER=0,SPLITK=1,STAGES=4
l3_fwd_cudnn fwd 128,256,14,14,256,3,3,1,1 cudnn -
stem_fwd fwd 128,3,224,224,64,7,7,2,3 narrow_fwd WARPS=8,MT=2,RB=32,KC=4,STAGES=2
stem_fwd_cudnn fwd 128,3,224,224,64,7,7,2,3 cudnn -
stem_fwd_wgmma fwd 128,3,224,224,64,7,7,2,3 wgmma_narrow_fwd KS=10,MT=2,OCC=2,STAGES=3
stem_wgrad_wgmma wgrad 128,3,224,224,64,7,7,2,3 wgmma_narrow_wgrad KQ=7,MT=3,SPLIT=132,STAGES=3,ROWS=2
stem_wgrad_rows1 wgrad 128,3,224,224,64,7,7,2,3 wgmma_narrow_wgrad KQ=7,MT=3,SPLIT=132,STAGES=3,ROWS=1
stem_wgrad_narrow wgrad 128,3,224,224,64,7,7,2,3 narrow_wgrad KM=64,NT=3,RT=7,SPLIT=132,STAGES=3,WK=2
stem_wgrad_cudnn wgrad 128,3,224,224,64,7,7,2,3 cudnn -
s2_dgrad dgrad 32,128,56,56,128,3,3,2,1 wgmma_conv BM=128,BN=128,CONSUMERS=2,GROUP=8,PHASE=1,PINGPONG=0,RASTER=0,SPLITK=1,STAGES=4
s2_dgrad_win dgrad 32,128,56,56,128,3,3,2,1 wgmma_conv BM=256,BN=128,CONSUMERS=2,GROUP=8,PHASE=1,PINGPONG=0,RASTER=0,SPLITK=1,STAGES=3
s2_dgrad_pp dgrad 32,128,56,56,128,3,3,2,1 wgmma_conv BM=128,BN=128,CONSUMERS=2,GROUP=8,PHASE=1,PINGPONG=1,RASTER=0,SPLITK=1,STAGES=4
s2_dgrad_cudnn dgrad 32,128,56,56,128,3,3,2,1 cudnn -
mbnet_dgrad dgrad 64,144,56,56,24,1,1,1,0 wgmma_conv1x1 AREG=0,BK=64,BM=128,BN=256,CLUSTER=1,CLUSTERN=1,CONSUMERS=2,COOPK=0,COOPN=0,EPI=1,GROUP=8,L2PROMO=3,LOADER=0,OCC=1,PINGPONG=0,RASTER=0,SPLITK=1,STAGES=4
mbnet_dgrad_win dgrad 64,144,56,56,24,1,1,1,0 wgmma_conv1x1 AREG=0,BK=64,BM=256,BN=128,CLUSTER=1,CLUSTERN=1,CONSUMERS=2,COOPK=0,COOPN=0,EPI=1,GROUP=8,L2PROMO=3,LOADER=0,OCC=1,PINGPONG=0,RASTER=0,SPLITK=1,STAGES=3
mbnet_dgrad_conv dgrad 64,144,56,56,24,1,1,1,0 wgmma_conv BM=128,BN=192,CONSUMERS=2,GROUP=8,PHASE=0,PINGPONG=0,RASTER=0,SPLITK=1,STAGES=3
mbnet_dgrad_cudnn dgrad 64,144,56,56,24,1,1,1,0 cudnn -
incep_wgrad wgrad 32,96,35,35,160,1,1,1,0 wgmma_conv1x1 AREG=0,BK=64,BM=64,BN=64,CLUSTER=1,CLUSTERN=1,COOPK=0,COOPN=0,GROUP=8,L2PROMO=2,LOADER=0,OCC=1,RASTER=0,CONSUMERS=1,EPI=1,PINGPONG=0,SPLITK=16,STAGES=8
incep_wgrad_cudnn wgrad 32,96,35,35,160,1,1,1,0 cudnn -
effnet_wgrad wgrad 64,240,28,28,40,1,1,1,0 wgmma_conv1x1 AREG=0,BK=64,BM=64,BN=64,CLUSTER=1,CLUSTERN=1,COOPK=0,COOPN=0,GROUP=8,L2PROMO=2,LOADER=0,OCC=1,RASTER=0,CONSUMERS=1,EPI=1,PINGPONG=0,SPLITK=32,STAGES=6
effnet_wgrad_cudnn wgrad 64,240,28,28,40,1,1,1,0 cudnn -
mbnet_wgrad wgrad 64,144,56,56,24,1,1,1,0 wgmma_conv1x1 AREG=0,BK=64,BM=64,BN=64,CLUSTER=1,CLUSTERN=1,COOPK=0,COOPN=0,GROUP=8,L2PROMO=2,LOADER=0,OCC=1,RASTER=0,CONSUMERS=2,EPI=0,PINGPONG=1,SPLITK=44,STAGES=8
mbnet_wgrad_cudnn wgrad 64,144,56,56,24,1,1,1,0 cudnn -
lmhead_epi3 gemm T,N,50257,4096,768 wgmma_gemm BM=256,BN=128,STAGES=3,CONSUMERS=2,PINGPONG=0,COOPN=0,CLUSTER=1,EPI=3,L2PROMO=2,GROUP=8,RASTER=0
lmhead_epi3_cn gemm T,N,50257,4096,768 wgmma_gemm BM=128,BN=256,STAGES=3,CONSUMERS=2,PINGPONG=0,COOPN=1,CLUSTER=2,EPI=3,L2PROMO=2,GROUP=8,RASTER=0
lmhead_epi2 gemm T,N,50257,4096,768 wgmma_gemm BM=128,BN=128,STAGES=4,CONSUMERS=2,PINGPONG=1,COOPN=0,CLUSTER=2,EPI=2,L2PROMO=2,GROUP=8,RASTER=0
lmhead_pad_epi1 gemm T,N,50304,4096,768 wgmma_gemm BM=128,BN=256,STAGES=3,CONSUMERS=2,PINGPONG=0,COOPN=0,CLUSTER=1,EPI=1,L2PROMO=2,GROUP=8,RASTER=0
lmhead_pad_epi3 gemm T,N,50304,4096,768 wgmma_gemm BM=128,BN=256,STAGES=3,CONSUMERS=2,PINGPONG=0,COOPN=0,CLUSTER=1,EPI=3,L2PROMO=2,GROUP=8,RASTER=0
LIST
  read -r n c h w k r s st pad <<< "${layer//,/ }"
  if [ "$tpl" = cudnn ]; then
    profile "$name" --profile-from-start off python3 benchmarks/probes/torch_conv_once.py "$dir" \
      $n $c $h $w $k $r $s $st $pad
    echo "$name: exit $?, $(grep -E '^  [a-zA-Z_0-9]+.*\(|Duration' "$OUT/ncu_$name.txt" | tr -s ' ' | paste -sd';' | cut -c1-400)"
    continue
  fi
  python3 - "$OUT/$name.json" "$dir" "$tpl" "$params" $n $c $h $w $k $r $s $st $pad <<'PY'
import json, sys
out, direction, tpl, params = sys.argv[1:5]
values = {kv.split("=")[0]: [int(kv.split("=")[1])] for kv in params.split(",")}
if direction == "gemm":
    ta, tb, m, n, k = sys.argv[5:10]
    problem = {"name": "p", "dtype": "bf16", "transA": ta, "transB": tb, "m": int(m), "n": int(n), "k": int(k)}
else:
    n, c, h, w, k, r, s, st, pad = (int(v) for v in sys.argv[5:14])
    problem = {"kind": "conv", "name": "p", "direction": direction, "dtype": "bf16", "layout": "NHWC", "n": n, "c": c,
               "h": h, "w": w, "k": k, "r": r, "s": s, "stride": st, "pad": pad}
json.dump({"name": "ncu", "problems": [problem],
           "templates": {tpl: {"parameters": values}},
           "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 2, "target_ms": 1, "timeout_s": 20}},
          open(out, "w"))
PY
  kernel=$tpl
  [ "$tpl" = wgmma_conv1x1 ] && kernel=wgmma_gemm  # wgmma_gemm's kernel, instantiated for the 1x1 layer
  profile "$name" -k regex:"$kernel" -c 1 "$B/tiletune" tune "$OUT/$name.json" --backend cuda --no-vendor \
    --isolation none --db "$OUT/$name.db"
  echo "$name: exit $?, $(grep -E 'Duration|Compute \(SM\) Throughput|Memory Throughput|benchmarked' "$OUT/ncu_$name.txt" | tr -s ' ' | paste -sd';')"
  rm -f "$OUT/$name".db* "$OUT/$name.json"
done
