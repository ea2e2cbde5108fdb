#!/usr/bin/env bash
# On the H200: the CUDA convolution tests (simt_conv, the device fp64 reference, cuDNN),
# the ResNet-50 sweep of configs/h200/h200_conv_bf16.json (plus mma_conv where this tree has it), and
# every layer through the runtime against cuDNN's fastest algorithm (conv_vs_cudnn). Each stage
# has a time limit (together under 10 minutes); a sweep stopped by its limit keeps what it
# finished and a rerun resumes it; layers it did not reach show as "fallback" rows.
# Usage: scripts/h200_conv_vs_cudnn.sh BUILD_DIR OUT_DIR COMMIT [tests]
set -uo pipefail
B=$1 OUT=$2 COMMIT=$3 TESTS=${4:-}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# The config widened below is written to OUT_DIR, away from configs/shapes/ that its relative path names.
export TILETUNE_SHAPES_DIR=${TILETUNE_SHAPES_DIR:-$PWD/configs/shapes}
DB="$OUT/h200_conv.db"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader

# cuDNN: the system's, else the one inside a Python wheel (PyTorch or nvidia-cudnn).
if [ -z "${TILETUNE_CUDNN_LIB:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcudnn\.so\.9'; then
  for d in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    for lib in "$d/nvidia/cudnn/lib/libcudnn.so.9" "$d/torch/lib/libcudnn.so.9"; do
      [ -z "${TILETUNE_CUDNN_LIB:-}" ] && [ -e "$lib" ] && export TILETUNE_CUDNN_LIB=$lib
    done
  done
  # cuDNN 9 loads its sub-libraries (cnn, ops, engines) from the library path.
  [ -n "${TILETUNE_CUDNN_LIB:-}" ] && export LD_LIBRARY_PATH=$(dirname "$TILETUNE_CUDNN_LIB"):$LD_LIBRARY_PATH
fi
echo "cuDNN: ${TILETUNE_CUDNN_LIB:-system (libcudnn.so.9)}"

if [ -n "$TESTS" ]; then
  # tests/backends/cuda/test_cuda_conv.cpp's suites, in the folder's test program
  timeout 100 "$B/tests/tests_backends_cuda" --gtest_filter='CudaConv*:CudnnConv*' > "$OUT/test_cuda_conv.log" 2>&1
  echo "test_cuda_conv exit $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|inputs and device reference" "$OUT/test_cuda_conv.log"
fi

CONFIG=configs/h200/h200_conv_bf16.json
if [ -e kernel_templates/mma_conv.json ]; then  # the tensor-core template, at its full space
  CONFIG="$OUT/h200_conv_bf16_mma.json"
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["templates"]["mma_conv"]={}; json.dump(c,open(sys.argv[2],"w"),indent=1)' \
    configs/h200/h200_conv_bf16.json "$CONFIG"
fi
timeout 300 "$B/tiletune" tune "$CONFIG" --backend cuda --db "$DB" > "$OUT/tune_conv.log" 2>&1
echo "tune exit $?"; grep -E "^summary|took" "$OUT/tune_conv.log"

timeout 180 "$B/benchmarks/conv_vs_cudnn" --db "$DB" --create-db --config configs/h200/h200_conv_bf16.json --commit "$COMMIT" \
  --rounds 3 --out "$OUT/conv_h200" --label "ResNet-50 layers, batch 128, NHWC, bf16, tuned by $(basename "$CONFIG")"
echo "conv_vs_cudnn exit $?"
