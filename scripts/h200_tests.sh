#!/usr/bin/env bash
# On the H200: the CUDA test binaries of BIN_DIR (a CUDA-only build's tests/, carried), each under
# a time limit, logs in OUT_DIR. The tests read configs through the source path they were built
# with; where that path is missing here it is made to point at this tree.
# Usage: scripts/h200_tests.sh BIN_DIR OUT_DIR SOURCE_DIR_AT_BUILD [LIMIT_S]
set -uo pipefail
BIN=$1 OUT=$2 SRC=$3 LIMIT=${4:-120}
mkdir -p "$OUT"
source "$(dirname "$0")/h200_env.sh"
[ -e "$SRC" ] || { mkdir -p "$(dirname "$SRC")" && ln -s "$PWD" "$SRC"; }
for t in "$BIN"/test_*; do
  name=$(basename "$t")
  timeout "$LIMIT" "$t" > "$OUT/$name.log" 2>&1
  echo "$name exit $?: $(grep -cE '^\[       OK \]' "$OUT/$name.log") ok, $(grep -cE '^\[  SKIPPED \]' "$OUT/$name.log") skipped"
  grep -E '^\[  FAILED  \]' "$OUT/$name.log" | sort -u | head -10
done
