#!/usr/bin/env bash
# On the H200 (or H100): Nsight Compute's view of the weight gradients that stay below cuDNN, one
# kernel launch each: the generated kernel (a one-candidate sweep in-process, its first launch) and
# cuDNN's kernels for the same layer through PyTorch (benchmarks/probes/torch_conv_once.py).
# Usage: scripts/h200_wgrad_ncu.sh BUILD_DIR OUT_DIR
set -uo pipefail
B=$1 OUT=$2
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
sections="--section SpeedOfLight --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis
          --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section SchedulerStats
          --section WarpStateStats"
# name layer(n c h w k r s stride pad) template parameters
while read -r name layer tpl params; do
  read -r n c h w k r s st pad <<< "${layer//,/ }"
  python3 - "$OUT/$name.json" "$tpl" "$params" $n $c $h $w $k $r $s $st $pad <<'PY'
import json, sys
out, tpl, params = sys.argv[1:4]
n, c, h, w, k, r, s, st, pad = (int(v) for v in sys.argv[4:13])
values = {kv.split("=")[0]: [int(kv.split("=")[1])] for kv in params.split(",")}
json.dump({"name": "ncu", "problems": [{"kind": "conv", "name": "p", "direction": "wgrad", "dtype": "bf16",
           "layout": "NHWC", "n": n, "c": c, "h": h, "w": w, "k": k, "r": r, "s": s, "stride": st, "pad": pad}],
           "templates": {tpl: {"parameters": values}},
           "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 2, "target_ms": 1, "timeout_s": 20}},
          open(out, "w"))
PY
  timeout 90 ncu $sections -k regex:"$tpl" -c 1 "$B/tiletune" tune "$OUT/$name.json" --backend cuda --no-vendor \
    --isolation none --db "$OUT/$name.db" > "$OUT/ncu_$name.txt" 2>&1
  echo "$name: exit $?, $(grep -E 'Duration|Compute \(SM\) Throughput|Memory Throughput' "$OUT/ncu_$name.txt" | tr -s ' ' | paste -sd';')"
  rm -f "$OUT/$name".db* "$OUT/$name.json"
done <<'LIST'
l3_tap 128,256,14,14,256,3,3,1,1 wgmma_tap_wgrad FR=3,FS=3,SHIFT=1,SPLITK=8,STAGES=4,SW=1,AREG=0
l3_tap_areg 128,256,14,14,256,3,3,1,1 wgmma_tap_wgrad FR=3,FS=3,SHIFT=1,SPLITK=8,STAGES=4,SW=1,AREG=1
l4_tap 128,512,7,7,512,3,3,1,1 wgmma_tap_wgrad FR=3,FS=3,SHIFT=1,SPLITK=2,STAGES=4,SW=1,AREG=0
l4_tap_areg 128,512,7,7,512,3,3,1,1 wgmma_tap_wgrad FR=3,FS=3,SHIFT=1,SPLITK=2,STAGES=4,SW=1,AREG=1
l4_conv 128,512,7,7,512,3,3,1,1 wgmma_conv BM=128,BN=128,CONSUMERS=2,GROUP=8,PHASE=0,PINGPONG=1,RASTER=0,SPLITK=2,STAGES=4
LIST
for layer in "l3 128 256 14 14 256 3 3 1 1" "l4 128 512 7 7 512 3 3 1 1"; do
  set -- $layer
  timeout 90 ncu $sections --profile-from-start off python3 benchmarks/probes/torch_conv_once.py wgrad "${@:2}" \
    > "$OUT/ncu_$1_cudnn.txt" 2>&1
  echo "$1 cudnn: exit $?, $(grep -E '^  [a-zA-Z_0-9]+.*\(|Duration' "$OUT/ncu_$1_cudnn.txt" | tr -s ' ' | paste -sd';' | cut -c1-400)"
done
