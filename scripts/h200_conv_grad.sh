#!/usr/bin/env bash
# On the H200: the convolution gradients of the generated kernels alone. Tunes configs/h200/h200_conv_grad.json
# without the vendor as a candidate (--no-vendor), then times the winners through the C API against
# PyTorch's cuDNN in benchmark mode on the same tensors (benchmarks/vs_torch.py, ResNet-50 layers).
# Usage: scripts/h200_conv_grad.sh BUILD_DIR OUT_DIR LABEL [TUNE_LIMIT_S] [CONFIG]
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 LIMIT=${4:-300} CONFIG=${5:-configs/h200/h200_conv_grad.json}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
start=$(date +%s)
timeout "$LIMIT" "$B/tiletune" tune "$CONFIG" --backend cuda --no-vendor --db "$OUT/grad.db" > "$OUT/tune.log" 2>&1
echo "tune exit $? after $(( $(date +%s) - start )) s"; tail -4 "$OUT/tune.log"
PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$OUT/grad.db" \
  --set shipped --only conv --rounds 2 --out "$OUT/vs_torch.md" --label "$LABEL" > "$OUT/vs_torch.log" 2>&1
echo "vs_torch exit $?"; tail -6 "$OUT/vs_torch.md"
