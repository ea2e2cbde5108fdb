#!/usr/bin/env bash
# On the H200: the convolution gradients of the generated kernels alone. Tunes configs/h200/h200_conv_grad.json
# without the vendor as a candidate (--no-vendor), then times the winners through the C API against
# PyTorch's cuDNN in benchmark mode on the same tensors (benchmarks/vs_torch.py, ResNet-50 layers).
# Usage: scripts/h200_conv_grad.sh BUILD_DIR OUT_DIR LABEL [TUNE_LIMIT_S] [CONFIG] [DTYPE]
#   DTYPE: bf16 (the config's) or fp16 (the config tuned with its dtypes replaced).
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 LIMIT=${4:-300} CONFIG=${5:-configs/h200/h200_conv_grad.json} DTYPE=${6:-bf16}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
if [ "$DTYPE" != bf16 ]; then  # the same config in another dtype; its shapes found beside the original
  python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['shapes']['dtypes']=[sys.argv[2]]; json.dump(c,open(sys.argv[3],'w'))" \
    "$CONFIG" "$DTYPE" "$OUT/config_$DTYPE.json"
  export TILETUNE_SHAPES_DIR=$(cd "$(dirname "$CONFIG")/../shapes" && pwd)
  CONFIG=$OUT/config_$DTYPE.json
fi
start=$(date +%s)
timeout "$LIMIT" "$B/tiletune" tune "$CONFIG" --backend cuda --no-vendor --db "$OUT/grad.db" > "$OUT/tune.log" 2>&1
echo "tune exit $? after $(( $(date +%s) - start )) s"; tail -4 "$OUT/tune.log"
PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$OUT/grad.db" \
  --set shipped --only conv --conv-dtype "$DTYPE" --rounds 2 --out "$OUT/vs_torch.md" --label "$LABEL" > "$OUT/vs_torch.log" 2>&1
echo "vs_torch exit $?"; tail -6 "$OUT/vs_torch.md"
"$B/tiletune" db winners "$OUT/grad.db" > "$OUT/winners.txt" 2>&1  # what ran, beside how fast
for id in $("$B/tiletune" db problems "$OUT/grad.db" | awk 'NR > 1 {print $1}'); do  # every candidate's time, a problem each
  "$B/tiletune" db show "$OUT/grad.db" "$id"; done > "$OUT/db_show.txt" 2>&1
