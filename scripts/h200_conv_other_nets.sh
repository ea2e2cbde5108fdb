#!/usr/bin/env bash
# On the H200: the shipped convolution spaces on layers no config names (issue 22's "layers of other
# nets"). The config is made here from configs/h200/h200_conv_resnet50.json's templates and the
# untuned convolutions of benchmarks/vs_torch.py (VGG, U-Net, Inception, MobileNet / EfficientNet 1x1
# with channel counts that are not multiples of 64; all three directions), tuned without the vendor
# as a candidate (--no-vendor: the generated kernels alone), then timed through the C API against
# cuDNN in benchmark mode (vs_torch.py --set untuned --only conv). Prints the tuning seconds per layer.
# Usage: scripts/h200_conv_other_nets.sh BUILD_DIR OUT_DIR LABEL [TUNE_LIMIT_S] [DTYPE bf16|fp16] [BUDGET]
set -uo pipefail
B=$1 OUT=$2 LABEL=$3 LIMIT=${4:-300} DTYPE=${5:-bf16} BUDGET=${6:-16}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
python3 - "$OUT/other_nets.json" "$DTYPE" <<'PY'
import json, sys
sys.path.insert(0, "benchmarks")
import vs_torch
shipped = json.load(open("configs/h200/h200_conv_resnet50.json"))
problems = [{"kind": "conv", "name": f"{d}_{name}", "direction": d, "dtype": sys.argv[2], "layout": "NHWC",
             "n": n, "c": c, "h": h, "w": w, "k": k, "r": r, "s": s, "stride": st, "pad": pad}
            for d, name, n, c, h, w, k, r, s, st, pad in vs_torch.untuned_convs()]
json.dump({"name": "other-nets-conv", "problems": problems, "templates": shipped["templates"],
           "benchmark": shipped["benchmark"]}, open(sys.argv[1], "w"), indent=1)
print(f"{len(problems)} problems on {len(shipped['templates'])} templates")
PY
start=$(date +%s)
timeout "$LIMIT" "$B/tiletune" tune "$OUT/other_nets.json" --backend cuda --no-vendor --search model --budget "$BUDGET" \
  --db "$OUT/other_nets.db" > "$OUT/tune.log" 2>&1
took=$(( $(date +%s) - start ))
echo "tune exit $? after $took s ($(python3 -c "print(round($took / 21, 1))") s per layer and direction)"; tail -4 "$OUT/tune.log"
PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/vs_torch.py --lib "$B/libtiletune_runtime.so" --db "$OUT/other_nets.db" \
  --set untuned --only conv --conv-dtype "$DTYPE" --rounds 2 --out "$OUT/other_nets.md" --label "$LABEL" > "$OUT/vs_torch.log" 2>&1
echo "vs_torch exit $?"; grep -E "^\| conv|geometric" "$OUT/other_nets.md"
rm -f "$OUT"/*.db-wal "$OUT"/*.db-shm
