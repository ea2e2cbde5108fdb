#!/usr/bin/env bash
# On the H200: for each GEMM type named, a database tuned on its shipped config
# (configs/h200/h200_gemm_TYPE.json: the shapes of configs/shapes/gemm.json, model search, the
# vendor's algorithms timed as candidates), then those shapes through the C API against
# torch.matmul and an autotuned Triton matmul (benchmarks/vs_torch.py --set shipped --dtype TYPE).
# Each stage has a time limit (T_TUNE, T_BENCH seconds); a sweep stopped by it keeps what it finished.
# NO_VENDOR=1: tuned without the vendor (--no-vendor), so that every shape runs a generated kernel: how far
# they stand from torch.matmul under do_bench, where the shipped database serves cuBLAS.
# VENDOR_ALGOS=N: time N of cuBLASLt's other algorithms beside its default (the tuner's --vendor-algorithms; 0: the
# default alone, the kernel torch.matmul runs), so that a served vendor row runs what PyTorch runs.
# ROUNDS=N: vs_torch rounds, alternating the sides (default 5: with 2, kernels of a few microseconds spread by
# several percent between two timings of one database; results/gemm/2026-12-07_h100_lmhead_ncu_vendor_noise_b023579.md).
# FLUSH_L2=1: every timing of the sweep as do_bench times (benchmark.flush_l2: each run alone behind an overwrite of
# twice the L2), through a copy of the config in OUT_DIR; on an H100 no better than without
# (results/gemm/2026-12-08_h100_bulk_stores_flush_l2_vendor_source_b847675.md).
# KERNELS=1: vs_torch also names the GPU kernels each side launches (--kernels).
# Usage: [T_TUNE=120] [T_BENCH=150] [NO_VENDOR=1 | VENDOR_ALGOS=N] [FLUSH_L2=1] [KERNELS=1] scripts/h200_gemm_dtypes.sh BUILD_DIR OUT_DIR LABEL BUDGET TYPE...
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 BUDGET=$4
shift 4
T_TUNE=${T_TUNE:-120} T_BENCH=${T_BENCH:-150}
VENDOR= WHAT="the vendor's algorithms as candidates"
[ "${NO_VENDOR:-0}" = 1 ] && VENDOR=--no-vendor WHAT="generated kernels only"
[ -n "${VENDOR_ALGOS:-}" ] && VENDOR="--vendor-algorithms $VENDOR_ALGOS" WHAT="the vendor's default and $VENDOR_ALGOS of its other algorithms"
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
for t in "$@"; do
  db="$OUT/gemm_$t.db" cfg="configs/h200/h200_gemm_$t.json"
  if [ "${FLUSH_L2:-0}" = 1 ]; then
    python3 - "$cfg" "$OUT/h200_gemm_${t}_flush_l2.json" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
d["shapes"]["file"] = os.path.abspath(os.path.join(os.path.dirname(sys.argv[1]), d["shapes"]["file"]))
d["benchmark"]["flush_l2"] = True
d["name"] = d.get("name", "gemm") + "-flush-l2"
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
    cfg="$OUT/h200_gemm_${t}_flush_l2.json" WHAT="$WHAT, every run timed behind an L2 overwrite"
  fi
  timeout "$T_TUNE" "$B/tiletune" tune "$cfg" --backend cuda $VENDOR --db "$db" --search model \
    --budget "$BUDGET" > "$OUT/tune_$t.log" 2>&1
  echo "tune $t exit $?"; grep -E "^summary|took|no candidate" "$OUT/tune_$t.log" | tail -3
  PYTHONUNBUFFERED=1 timeout "$T_BENCH" python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$db" \
    --set shipped --only gemm --dtype "$t" --rounds "${ROUNDS:-5}" $([ "${KERNELS:-0}" = 1 ] && echo --kernels) --out "$OUT/gemm_$t.md" \
    --label "$LABEL, $t, database tuned on configs/h200/h200_gemm_$t.json (model search, budget $BUDGET, $WHAT)" \
    > "$OUT/vs_torch_$t.log" 2>&1
  echo "vs_torch $t exit $?"; grep -E "^\| gemm|geometric" "$OUT/gemm_$t.md"
done
rm -f "$OUT"/*.db-wal "$OUT"/*.db-shm
