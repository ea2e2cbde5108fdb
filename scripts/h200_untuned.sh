#!/usr/bin/env bash
# On the H200: the shipped spaces on problems no config names (benchmarks/vs_torch.py's untuned set).
#   conv: issue 22's "layers of other nets" (VGG, U-Net, Inception, MobileNet / EfficientNet 1x1 with
#         channel counts that are not multiples of 64; all three directions) on
#         configs/h200/h200_conv_resnet50.json's templates, tuned without the vendor as a candidate
#         (--no-vendor: the generated kernels alone);
#   gemm: issue 23's untuned GEMMs (BERT, ViT, Llama, GPT-J projections at 512 and 4096 tokens,
#         misaligned, odd K, small, skinny, the LM head at 2048 tokens) on
#         configs/h200/h200_gemm_DTYPE.json's templates, the vendor's algorithms timed as candidates as
#         that config's sweep does.
# The config is made here from the shipped one's templates and benchmark settings and the untuned
# problems; it is tuned by model search (BUDGET a problem: by default the shipped config's own budget, as a
# user tuning with it gets; 16 where it names none), then timed through the C API against
# PyTorch (vs_torch.py --set untuned --only OP). Prints the tuning seconds per problem.
# ONLY=REGEX keeps the problems whose name matches (conv: "DIRECTION_LAYER", e.g. ONLY='^dgrad_'), and
# vs_torch times their layers (all three directions of each; the untuned ones on their rung).
# SHIPPED=CONFIG (conv): the templates and benchmark settings of another config than the ResNet one.
# ROUNDS=N: vs_torch rounds, alternating the sides (default 5).
# VENDOR_ALGOS=N (gemm): time N of cuBLASLt's other algorithms beside its default (0: the default alone).
# FLUSH_L2=1: every timing of the sweep as do_bench times (benchmark.flush_l2), as scripts/h200_gemm_dtypes.sh.
# Usage: [ONLY=REGEX] [SHIPPED=CONFIG] scripts/h200_untuned.sh conv|gemm BUILD_DIR OUT_DIR LABEL [TUNE_LIMIT_S] [DTYPE bf16|fp16] [BUDGET]
set -uo pipefail
OP=$1 B=$2 OUT=$3 LABEL=$4 LIMIT=${5:-300} DTYPE=${6:-bf16} BUDGET=${7:-}
case "$OP" in
  conv) SHIPPED=${SHIPPED:-configs/h200/h200_conv_resnet50.json} VENDOR=--no-vendor DFLAG=--conv-dtype ;;
  gemm) SHIPPED=configs/h200/h200_gemm_$DTYPE.json VENDOR=${VENDOR_ALGOS:+--vendor-algorithms $VENDOR_ALGOS} DFLAG=--dtype ;;
  *) echo "usage: $0 conv|gemm BUILD_DIR OUT_DIR LABEL [TUNE_LIMIT_S] [DTYPE] [BUDGET]" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
[ -n "$BUDGET" ] || BUDGET=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1])).get('search', {}).get('budget', 16))" "$SHIPPED") \
  || { echo "$0: cannot read the search budget of $SHIPPED" >&2; exit 2; }
source "$(dirname "$0")/h200_env.sh"
count=$(python3 - "$OP" "$SHIPPED" "$OUT/untuned.json" "$DTYPE" "${ONLY:-}" "$OUT/names.txt" "${FLUSH_L2:-0}" <<'PY'
import json, re, sys
sys.path.insert(0, "benchmarks")
import vs_torch
op, shipped, out, dtype, only, names = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
if sys.argv[7] == "1":
    shipped["benchmark"]["flush_l2"] = True
if op == "conv":
    problems = [{"kind": "conv", "name": f"{d}_{name}", "direction": d, "dtype": dtype, "layout": "NHWC",
                 "n": n, "c": c, "h": h, "w": w, "k": k, "r": r, "s": s, "stride": st, "pad": pad}
                for d, name, n, c, h, w, k, r, s, st, pad in vs_torch.untuned_convs()]
else:
    problems = [{"name": name, "dtype": dt, "transA": ta, "transB": tb, "m": m, "n": n, "k": k}
                for name, ta, tb, m, n, k, dt in vs_torch.untuned_gemms(dtype)]
problems = [p for p in problems if re.search(only, p["name"])]
# vs_torch's names: the layer (a convolution's name without its direction) or the GEMM
open(names, "w").write(",".join(sorted({p["name"].split("_", 1)[1] if op == "conv" else p["name"] for p in problems})))
json.dump({"name": f"untuned-{op}", "problems": problems, "templates": shipped["templates"],
           "benchmark": shipped["benchmark"]}, open(out, "w"), indent=1)
print(len(problems))
PY
)
echo "$count problems on the templates of $SHIPPED"
start=$(date +%s)
timeout "$LIMIT" "$B/tiletune" tune "$OUT/untuned.json" --backend cuda $VENDOR --search model --budget "$BUDGET" \
  --db "$OUT/untuned.db" > "$OUT/tune.log" 2>&1
rc=$? took=$(( $(date +%s) - start ))
echo "tune exit $rc after $took s ($(python3 -c "print(round($took / max(1, ${count:-0}), 1))") s a problem)"; tail -4 "$OUT/tune.log"
PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$OUT/untuned.db" \
  --set untuned --only "$OP" "$DFLAG" "$DTYPE" ${ONLY:+--names "$(cat "$OUT/names.txt")"} --rounds "${ROUNDS:-5}" --out "$OUT/untuned.md" --label "$LABEL" > "$OUT/vs_torch.log" 2>&1
echo "vs_torch exit $?"; grep -E "^\| $OP|geometric" "$OUT/untuned.md"
# Which kernel won each problem: the table's rows say how fast, this says what ran.
"$B/tiletune" db winners "$OUT/untuned.db" > "$OUT/winners.txt" 2>&1
rm -f "$OUT"/*.db-wal "$OUT"/*.db-shm
