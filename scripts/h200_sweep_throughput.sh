#!/usr/bin/env bash
# On one or more H200s: end-to-end candidates per second of a fresh sweep (compile and
# measure overlapped, candidates in worker processes), once per device list given.
# Usage: scripts/h200_sweep_throughput.sh BUILD_DIR OUT_DIR CONFIG DEVICES...
#   e.g. scripts/h200_sweep_throughput.sh build /tmp/out configs/h200/h200_simt_sgemm.json 0 0,1
# Each run uses a fresh database (nothing cached) and is stopped after LIMIT seconds (default 280);
# BACKEND=host runs the same on the CPU (logical workers), to try the script without a GPU.
# WARM=1: first one sweep to compile everything (seed database), then each run starts from a copy
# of it without measurements, so that it times the measuring side alone (needs python3).
# TUNE_ARGS: more options for the timed runs' tune command, e.g. TUNE_ARGS=--compile-servers.
set -uo pipefail
B=$1 OUT=$2 CONFIG=$3
shift 3
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
name=$(basename "$CONFIG" .json)
seed="$OUT/${name}_seed.db"
if [ "${WARM:-0}" = 1 ]; then
  rm -f "$seed" "$seed-wal" "$seed-shm"
  timeout "${LIMIT:-280}" "$B/tiletune" tune "$CONFIG" --backend "${BACKEND:-cuda}" --devices "$1" --db "$seed" \
    > "$OUT/${name}_seed.log" 2>&1
  echo "seed sweep exit $?"; grep -E "took" "$OUT/${name}_seed.log"
fi
for devices in "$@"; do
  tag="${name}_devices_${devices//,/-}"
  rm -f "$OUT/$tag.db" "$OUT/$tag.db-wal" "$OUT/$tag.db-shm"
  if [ "${WARM:-0}" = 1 ]; then
    python3 - "$seed" "$OUT/$tag.db" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1])
dst = sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.executescript("DELETE FROM winners; DELETE FROM provenance; DELETE FROM measurements;")
dst.commit()
PY
  fi
  start=$(date +%s.%N)
  timeout "${LIMIT:-280}" "$B/tiletune" tune "$CONFIG" --backend "${BACKEND:-cuda}" --devices "$devices" --db "$OUT/$tag.db" ${TUNE_ARGS:-} \
    > "$OUT/$tag.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  # "summary: T enumerated, P pruned, A already measured, C compiled (...), N benchmarked, F failed"
  read -r bench failed < <(sed -n 's/^summary:.* \([0-9]*\) benchmarked, \([0-9]*\) failed$/\1 \2/p' "$OUT/$tag.log")
  measured=$(( ${bench:-0} + ${failed:-0} ))
  # awk, not bc: the GPU machines need not have bc.
  awk -v d="$devices" -v rc="$rc" -v n="$measured" -v a="$start" -v b="$end" \
    'BEGIN { t = b - a; printf "devices %s: exit %s, %d candidates measured in %.1f s: %.1f candidates/s end to end\n", d, rc, n, t, n / t }'

  grep -E "took|^per device|^failed by reason|^not tuned" "$OUT/$tag.log"
done
