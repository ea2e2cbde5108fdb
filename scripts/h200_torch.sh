#!/usr/bin/env bash
# On the H200: tiletune.torch from this tree (python/ with a carried CUDA build's runtime and
# program), the way a PyTorch user runs it.
#   1. the route's cost on a GEMM against torch.matmul (benchmarks/torch_route_overhead.py);
#   2. GPT-2 small: record a training step, tune what it recorded (bounded), then 200 steps with
#      PyTorch's kernels and through tiletune (steps/s, the losses of both, a profiler table);
#   3. ResNet-50 with no database: by default every call is handed back to PyTorch (nothing tuned
#      beats it), so this is the route's cost at full size (the C++ route, then the Python one);
#      then a recording of its training step.
# Usage: scripts/h200_torch.sh BUILD_DIR OUT_DIR [TUNE_SECONDS] [GPT2_RECORDING]
#   GPT2_RECORDING: a recording made before (examples/torch/recorded/): tuned instead of a new one,
#   and then ResNet-50 is not recorded again either. PERTURBED=1 adds the bf16-noise side to GPT-2.
set -uo pipefail
B=$1 OUT=$2 TUNE_S=${3:-240} RECORDED=${4:-}
mkdir -p "$OUT"
W=/tmp/tt-torch; rm -rf $W; mkdir -p $W  # logs and recordings; $OUT gets the few files worth keeping
source "$(dirname "$0")/h200_env.sh"
export PYTHONPATH=$PWD/python TILETUNE_LIBRARY=$PWD/$B/libtiletune_runtime.so.0 TILETUNE_EXE=$PWD/$B/tiletune
export PYTHONUNBUFFERED=1
python3 -c "import torch, tiletune; print('torch', torch.__version__, 'tiletune', tiletune.version())"
timeout 120 python3 benchmarks/torch_route_overhead.py --sizes 256,1024,4096 > "$OUT/overhead.md" 2>&1
echo "overhead exit $?"; cat "$OUT/overhead.md"
# A handed-back call's host cost, plain / Python route / C++ route (the first enable builds the C++ route).
timeout 300 python3 benchmarks/torch_handback_probe.py > "$OUT/handback.md" 2>&1
echo "handback exit $?"; cat "$OUT/handback.md"
if [ -n "$RECORDED" ]; then
  cp "$RECORDED" $W/gpt2_recorded.json
else
  timeout 120 python3 examples/torch/gpt2.py --sides tiletune --record $W/gpt2_recorded.json --steps 1 --warmup 1 \
    > $W/gpt2_record.log 2>&1
  echo "record exit $?; $(grep -c '"m"' $W/gpt2_recorded.json) problems"; cp $W/gpt2_recorded.json "$OUT/"
fi
timeout "$TUNE_S" "$B/tiletune" tune $W/gpt2_recorded.json --db $W/gpt2.db --search model --budget 12 \
  --budget-seconds 6 > "$OUT/gpt2_tune.log" 2>&1
echo "tune exit $? (124: stopped at ${TUNE_S} s; finished problems keep their winners)"
tail -25 "$OUT/gpt2_tune.log"
timeout 200 python3 examples/torch/gpt2.py --db $W/gpt2.db --steps 200 --warmup 5 --profile "$OUT/gpt2_profile.txt" \
  --sides plain,tiletune${PERTURBED:+,plain-perturbed} --json "$OUT/gpt2_steps.json" > $W/gpt2_train.log 2>&1
echo "gpt2 exit $?"; grep -v Warning $W/gpt2_train.log
timeout 120 python3 examples/torch/resnet50.py --steps 30 --warmup 5 --json "$OUT/resnet50_steps.json" \
  > $W/resnet50_train.log 2>&1
echo "resnet50 exit $?"; tail -8 $W/resnet50_train.log
TILETUNE_TORCH_ROUTE=python timeout 120 python3 examples/torch/resnet50.py --sides tiletune --steps 30 --warmup 5 \
  --json "$OUT/resnet50_steps_python_route.json" > $W/resnet50_python_route.log 2>&1
echo "resnet50 (Python route) exit $?"; tail -4 $W/resnet50_python_route.log
if [ -z "$RECORDED" ]; then
  timeout 60 python3 examples/torch/resnet50.py --sides tiletune --steps 1 --warmup 1 --record $W/resnet50_recorded.json \
    > $W/resnet50_record.log 2>&1
  echo "resnet50 record exit $?; $(grep -c '"kind"' $W/resnet50_recorded.json) convolutions"; cp $W/resnet50_recorded.json "$OUT/"
fi
