#!/usr/bin/env bash
# On the H200 (or H100): several steps in one device call, each started only if its estimate still fits before the
# call's deadline (LIMIT seconds from the start, default 585: a call is cut at 600), so that what ran comes back packed.
# Steps: any scripts/h200_next_checks.sh step (stem, warp_vector, flush_grads, conv_samples, ...; PROBE_SANITIZE=0
# leaves a probe step's sanitizers out) and tables / tables_fp16 (scripts/h200_conv_session.sh: ResNet-50 and the other
# nets' layers tuned on configs/h200/h200_conv_resnet50.json and timed against cuDNN, about 6 minutes a dtype on the
# H200; CONFIG=FILE tunes another config than the shipped ResNet one, e.g. a copy with candidate templates added).
# STEP:SECONDS gives a step's estimate (default 240).
# Outputs: OUT_DIR/*.tgz, one a step.
# Usage: [LIMIT=S] [SOURCE_DIR=DIR] scripts/h200_steps.sh BUILD_DIR OUT_DIR LABEL STEP[:SECONDS] ...
# (the test binaries in BUILD_DIR/tests; the program and the runtime library in BUILD_DIR, on LD_LIBRARY_PATH here.
# The tests read the templates from the tree they were built in: SOURCE_DIR, that tree's path where it was built
# (e.g. /work/main), is linked to this one where it does not exist.)
set -uo pipefail
B=$1 OUT=$2 LABEL=$3; shift 3
here=$(dirname "$0")
if [ -n "${SOURCE_DIR:-}" ] && [ ! -e "$SOURCE_DIR" ]; then mkdir -p "$(dirname "$SOURCE_DIR")" && ln -s "$PWD" "$SOURCE_DIR"; fi
export LD_LIBRARY_PATH=$PWD/$B:${LD_LIBRARY_PATH:-}
T=$B/tests/tests_backends_cuda
start=$(date +%s); deadline=$(( start + ${LIMIT:-585} ))
for spec in "$@"; do
  step=${spec%%:*} est=${spec#*:}; [ "$est" = "$spec" ] && est=240
  now=$(date +%s)
  if [ $(( now + est )) -gt $deadline ]; then echo "== skip $step (estimate $est s, $(( deadline - now )) s left)"; continue; fi
  echo "== $step at +$(( now - start )) s"
  case "$step" in
    tables|tables_fp16)  # ResNet-50 and the other nets in one dtype; h200_conv_session.sh packs OUT/STEP.tgz without databases
      "$here/h200_conv_session.sh" "$step" "$B" "$T" "$OUT" "$LABEL" ;;
    *) "$here/h200_next_checks.sh" "$step" "$B" "$T" "$OUT" "$LABEL" ;;
  esac
  echo "== $step done at +$(( $(date +%s) - start )) s"
done
ls -la "$OUT"
