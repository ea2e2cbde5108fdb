#!/usr/bin/env bash
# On the H200, one command per model: record its training step's GEMMs and convolutions through
# tiletune.torch, tune them (model search with a budget; the vendor library timed too, so that where
# a winner is not faster than the vendor's default, tiletune.torch hands the call back to PyTorch),
# then train with PyTorch's kernels and through tiletune on the C++ route, and print steps/s both
# ways, tiletune's stats (routed_cpp: calls served from C++) and a profiled step's device time split
# into tiletune's kernels, the vendor libraries' and aten's, with its top kernels.
# Usage: scripts/h200_torch_tuned.sh BUILD_DIR OUT_DIR resnet50|gpt2 [TUNE_SECONDS]
#   BUILD_DIR: a CUDA build's runtime library and program; TUNE_SECONDS bounds the tune (resnet50:
#   400, gpt2: 240; problems finished by then keep their winners; on the H200 ResNet-50 measured 143 of
#   its 568 candidates in 340 s): each model stays under 10 minutes.
#   RECORDED=FILE: tune that recording instead of recording one (examples/torch/recorded/ has both).
#   DB=FILE: train with that tuned database (one this script wrote before): no record, no tune.
#   SIDES=plain,tiletune,plain-perturbed adds PyTorch with its initial weights scaled by 1 +- 2^-9 (the
#   loss difference bf16 noise alone makes; default: plain,tiletune).
# Writes OUT_DIR/MODEL_profile.txt (the profiler's tables), OUT_DIR/MODEL_run.json (losses, step
# times, stats) and OUT_DIR/MODEL_tuned.db (the database, before training); logs stay in /tmp/tt-torch-MODEL.
set -uo pipefail
if [ $# -lt 3 ]; then echo "usage: $0 BUILD_DIR OUT_DIR resnet50|gpt2 [TUNE_SECONDS]" >&2; exit 64; fi
B=$1 OUT=$2 MODEL=$3
case $MODEL in
  resnet50) TUNE_S=${4:-400} BUDGET="--budget 8 --budget-seconds 3" TRAIN="--steps 200 --warmup 5"
            SAVED=examples/torch/recorded/resnet50_h200.json ;;
  gpt2) TUNE_S=${4:-240} BUDGET="--budget 12 --budget-seconds 6" TRAIN="--steps 200 --warmup 5"
        SAVED=examples/torch/recorded/gpt2_small_h200.json ;;
  *) echo "$0: MODEL must be resnet50 or gpt2, not $MODEL" >&2; exit 64 ;;
esac
mkdir -p "$OUT"
W=/tmp/tt-torch-$MODEL; rm -rf "$W"; mkdir -p "$W"
source "$(dirname "$0")/h200_env.sh"
export PYTHONPATH=$PWD/python TILETUNE_LIBRARY=$PWD/$B/libtiletune_runtime.so.0 TILETUNE_EXE=$PWD/$B/tiletune
export PYTHONUNBUFFERED=1 TILETUNE_TORCH_ROUTE=cpp
python3 - <<'PY' 2>&1 | grep -v Warning
import torch, tiletune
from tiletune import _route
try:
    ok = _route.load()
except RuntimeError as e:  # TILETUNE_TORCH_ROUTE=cpp and no build: the training below fails the same way
    ok = False
    print(e)
print("torch", torch.__version__, "tiletune", tiletune.version(), "| C++ route:", ok, f"(built/loaded in {_route.build_seconds} s)",
      "| serves CUDA calls from C++:", bool(ok and torch.ops.tiletune_route.cuda_plans()))
PY
echo "== a served call's host cost (tiny problems: the route, not the kernel)"
timeout 120 python3 benchmarks/torch_handback_probe.py --served --calls 1000 2>&1 | grep -E "^\||served" | grep -v -- "---"

if [ -n "${DB:-}" ]; then
  cp "$DB" "$W/tuned.db"
else
  echo "== record $MODEL's training step"
  if [ -n "${RECORDED:-}" ]; then
    cp "$RECORDED" "$W/recorded.json"
  elif ! timeout 180 python3 "examples/torch/$MODEL.py" --sides tiletune --record "$W/recorded.json" --steps 1 --warmup 1 \
       > "$W/record.log" 2>&1 || [ ! -s "$W/recorded.json" ]; then
    echo "recording failed (tail of $W/record.log below); tuning $SAVED instead"; tail -5 "$W/record.log"
    cp "$SAVED" "$W/recorded.json"
  fi
  echo "$(grep -c '"kind"' "$W/recorded.json") convolutions, $(grep -c '"m"' "$W/recorded.json") GEMMs recorded"

  echo "== tune (at most $TUNE_S s)"
  t0=$(date +%s)
  timeout "$TUNE_S" "$B/tiletune" tune "$W/recorded.json" --db "$W/tuned.db" --search model $BUDGET > "$W/tune.log" 2>&1
  echo "tune exit $? after $(( $(date +%s) - t0 )) s (124: stopped at the bound; finished problems keep their winners)"
  tail -12 "$W/tune.log"
  cp "$W/tuned.db" "$OUT/${MODEL}_tuned.db"
fi

echo "== train: PyTorch, then tiletune (C++ route)"
rm -f "$OUT/${MODEL}_profile.txt"
timeout 300 python3 "examples/torch/$MODEL.py" --db "$W/tuned.db" $TRAIN --sides "${SIDES:-plain,tiletune}" --profile "$OUT/${MODEL}_profile.txt" \
  --json "$OUT/${MODEL}_run.json" > "$W/train.log" 2>&1
echo "train exit $?"; grep -v Warning "$W/train.log" | tail -40
