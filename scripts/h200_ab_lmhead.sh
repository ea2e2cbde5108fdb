#!/usr/bin/env bash
# On the H200 (or H100): two or more builds of wgmma_gemm's EPI 3 timed on the GPT-2 LM head in one call, the
# last first: each build's GPU sample of EPI 3 (CudaDevice.SanitizerSampleOfWgmmaStagedStores), configs/probes/h200_lmhead_epi3_storers_probe.json
# tuned (EPI 3 alone, without the vendor; DTYPES, default bf16), vs_torch on lmhead_odd (3 rounds), every timing kept
# (OUT/{A,B,...}/db_show.txt); then the sample of each build but A under memcheck and racecheck while BUDGET seconds last.
# A build: a folder with tiletune, libtiletune_runtime.so and tests/test_cuda_gemm (a build directory, or a copy of
# those three files, e.g. main with benchmarks/results/gemm/2026-12-07_epi3_storers_v4.patch applied, built in a
# worktree and copied into an ignored folder that the call carries).
# Usage: [DTYPES="bf16 fp16"] [BUDGET=S] scripts/h200_ab_lmhead.sh OUT_DIR BUILD_A BUILD_B [BUILD_C ...]
set -uo pipefail
OUT=$1; shift; s=$(date +%s)
builds=("$@") names=(A B C D E F G H)
[ ${#builds[@]} -ge 2 ] && [ ${#builds[@]} -le 8 ] || { echo "usage: $0 OUT_DIR BUILD_A BUILD_B [BUILD_C ...] (2 to 8 builds)" >&2; exit 2; }
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
source "$(dirname "$0")/h200_env.sh"
ENVLIBS=$LD_LIBRARY_PATH DTYPES=${DTYPES:-bf16}
cfg=$OUT/probe.json
mkdir -p "$OUT"
python3 - "$DTYPES" "$cfg" <<'PY'
import json, os, sys
d = json.load(open("configs/probes/h200_lmhead_epi3_storers_probe.json"))
d["shapes"]["dtypes"] = sys.argv[1].split()
d["shapes"]["file"] = os.path.abspath("configs/shapes/gemm.json")
json.dump(d, open(sys.argv[2], "w"))
PY
for (( j = ${#builds[@]} - 1; j >= 0; j-- )); do
  v=${names[$j]} b=${builds[$j]}
  D=$OUT/$v; mkdir -p "$D"
  export LD_LIBRARY_PATH=$PWD/$b:$ENVLIBS
  timeout 60 "$b/tests/test_cuda_gemm" --gtest_filter=CudaDevice.SanitizerSampleOfWgmmaStagedStores > "$D/gtest.log" 2>&1
  echo "$v sample exit $?: $(grep -E '^\[  (PASSED|FAILED)' "$D/gtest.log" | head -2 | tr '\n' ' ')"
  timeout 70 "$b/tiletune" tune "$cfg" --backend cuda --no-vendor --db "$D/p.db" > "$D/tune.log" 2>&1
  echo "$v tune exit $?: $(grep -E '^summary' "$D/tune.log")"
  for dt in $DTYPES; do
    PYTHONUNBUFFERED=1 timeout 50 python3 benchmarks/vs_torch.py --lib "$b/libtiletune_runtime.so" --db "$D/p.db" --set shipped \
      --only gemm --names lmhead_odd --dtype "$dt" --rounds 3 --out "$D/vs_torch_$dt.md" --label "EPI 3 build $v ($b), $dt" \
      > "$D/vs_torch_$dt.log" 2>&1
    echo "$v $dt: $(grep -E '^\| gemm' "$D/vs_torch_$dt.md")"
  done
  for id in $("$b/tiletune" db problems "$D/p.db" | awk 'NR > 1 {print $1}'); do "$b/tiletune" db show "$D/p.db" "$id"; done \
    > "$D/db_show.txt" 2>&1
  rm -f "$D"/p.db*
  echo "$v done at +$(( $(date +%s) - s )) s"
done
for (( j = ${#builds[@]} - 1; j >= 1; j-- )); do
  v=${names[$j]} b=${builds[$j]}
  export LD_LIBRARY_PATH=$PWD/$b:$ENVLIBS
  for tool in memcheck racecheck; do
    left=$(( ${BUDGET:-240} - ($(date +%s) - s) ))
    [ $left -gt 30 ] || { echo "no time left for $tool on $v"; continue; }
    timeout $(( left / 2 )) compute-sanitizer --tool $tool --print-limit 5 "$b/tests/test_cuda_gemm" \
      --gtest_filter=CudaDevice.SanitizerSampleOfWgmmaStagedStores > "$OUT/${tool}_$v.log" 2>&1
    echo "$tool ($v) exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/${tool}_$v.log" | tail -1)"
  done
done
