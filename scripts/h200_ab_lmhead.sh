#!/usr/bin/env bash
# On the H200 (or H100): two or more builds of wgmma_gemm's EPI 3 timed on the GPT-2 LM head in one call, the
# last first: each build's GPU sample of EPI 3 (CudaDevice.SanitizerSampleOfWgmmaStagedStores), configs/probes/h200_lmhead_epi3_storers_probe.json
# tuned (EPI 3 alone, without the vendor; DTYPES, default bf16), vs_torch on lmhead_odd (3 rounds), every timing kept
# (OUT/{A,B,...}/db_show.txt, packed into OUT/runs.tgz at exit); then the fastest build named, and the sample of each build but A under memcheck and
# racecheck (the fastest first) while BUDGET seconds from the start last; with TABLES="bf16 ...", then the gemm.json
# tables (scripts/h200_gemm_dtypes.sh, budget 64) on the fastest build while LIMIT seconds (default 580) last.
# A build: a folder with tiletune, libtiletune_runtime.so and tests/test_cuda_gemm (a build directory, or a copy of
# those three files: scripts/build_patched.sh makes one from main and a patch, in an ignored folder the call carries).
# Usage: [DTYPES="bf16 fp16"] [BUDGET=S] [TABLES="bf16 fp16" [LIMIT=S]] scripts/h200_ab_lmhead.sh OUT_DIR BUILD_A BUILD_B [BUILD_C ...]
set -uo pipefail
OUT=$1; shift; s=$(date +%s)
builds=("$@") names=(A B C D E F G H)
[ ${#builds[@]} -ge 2 ] && [ ${#builds[@]} -le 8 ] || { echo "usage: $0 OUT_DIR BUILD_A BUILD_B [BUILD_C ...] (2 to 8 builds)" >&2; exit 2; }
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
source "$(dirname "$0")/h200_env.sh"
ENVLIBS=$LD_LIBRARY_PATH DTYPES=${DTYPES:-bf16}
cfg=$OUT/probe.json
mkdir -p "$OUT"
# The device tool brings back 8 files at most: the builds' folders come back as one archive, runs.tgz.
pack() { (cd "$OUT" && d=$(ls -d [A-H] tables 2>/dev/null; true) && [ -n "$d" ] && tar czf runs.tgz --remove-files $d); }
trap pack EXIT
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
    rm -f "$D/vs_torch_$dt.md"
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
# The fastest build: the geometric mean of its tiletune TFLOP/s over DTYPES on the head.
best=0 bestv=0
for (( j = 0; j < ${#builds[@]}; j++ )); do
  g=$(python3 - "$OUT/${names[$j]}" $DTYPES <<'PY'
import math, sys
v = []
for dt in sys.argv[2:]:
    try:
        row = next(l for l in open(f"{sys.argv[1]}/vs_torch_{dt}.md") if l.startswith("| gemm"))
        v.append(float(row.split("|")[5]))
    except Exception:
        v.append(0.0)
print(f"{math.prod(v) ** (1 / len(v)):.1f}" if all(v) else 0)
PY
)
  echo "${names[$j]} (${builds[$j]}): head ${g} TFLOP/s (geometric mean over $DTYPES)"
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)" "$g" "$bestv" && best=$j bestv=$g
done
echo "fastest: ${names[$best]} (${builds[$best]})"
# Sanitizers on each build but A, the fastest first, while BUDGET lasts.
order=$best; for (( j = ${#builds[@]} - 1; j >= 1; j-- )); do [ $j = $best ] || order="$order $j"; done
for j in $order; do
  [ $j -ge 1 ] || continue
  v=${names[$j]} b=${builds[$j]}
  export LD_LIBRARY_PATH=$PWD/$b:$ENVLIBS
  for tool in memcheck racecheck; do
    left=$(( ${BUDGET:-240} - ($(date +%s) - s) ))
    [ $left -gt 30 ] || { echo "no time left for $tool on $v"; continue; }
    sanitize $tool $(( left / 2 )) "$b/tests/test_cuda_gemm" CudaDevice.SanitizerSampleOfWgmmaStagedStores "$OUT/${tool}_$v.log" $v
  done
done
# TABLES="bf16 ...": then the gemm.json tables on the fastest build while LIMIT seconds (from the start) last.
if [ -n "${TABLES:-}" ]; then
  left=$(( ${LIMIT:-580} - ($(date +%s) - s) ))
  if [ $left -lt 200 ]; then echo "no time left for the tables ($left s)"; exit 0; fi
  n=$(echo $TABLES | wc -w) b=${builds[$best]}
  export LD_LIBRARY_PATH=$PWD/$b:$ENVLIBS
  T_TUNE=150 T_BENCH=$(( left / n - 160 > 60 ? left / n - 160 : 60 )) "$(dirname "$0")/h200_gemm_dtypes.sh" "$b" "$OUT/tables" \
    "build ${names[$best]} ($b)" 64 $TABLES
fi
