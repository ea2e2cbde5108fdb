#!/usr/bin/env bash
# Here (no GPU needed): main's build with a kernel patch applied, copied into a folder that a device call carries,
# e.g. for scripts/h200_ab_lmhead.sh. Kernel templates are embedded at build time, so the patch is applied to this
# tree, BUILD_DIR rebuilt (only the embedded sources and the links), tiletune, libtiletune_runtime.so and
# tests/test_cuda_gemm copied into DEST, and the patch reverted and BUILD_DIR rebuilt, also when a step fails.
# Refuses a tree whose files the patch touches have uncommitted changes.
# Usage: scripts/build_patched.sh BUILD_DIR PATCH DEST   (e.g. build-h200 benchmarks/results/gemm/X.patch scratch/B)
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 BUILD_DIR PATCH DEST" >&2; exit 2; }
B=$1 PATCH=$2 DEST=$3
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
[ -f "$B/build.ninja" ] || { echo "$0: $B is not a configured Ninja build directory" >&2; exit 2; }
files=$(git apply --numstat "$PATCH" 2>/dev/null | awk '{print $3}') || true
[ -n "$files" ] || { echo "$0: $PATCH is not a patch that changes files" >&2; exit 2; }
if [ -n "$(git status --porcelain -- $files)" ]; then
  echo "$0: uncommitted changes in files the patch touches:" >&2; git status --short -- $files >&2; exit 2
fi
git apply --check "$PATCH" || { echo "$0: $PATCH does not apply to this tree" >&2; exit 2; }
targets="tiletune tiletune_runtime test_cuda_gemm"
restore() {
  git apply -R "$PATCH" && ninja -C "$B" $targets > /dev/null || echo "$0: could not restore $B (revert the patch by hand)" >&2
}
git apply "$PATCH"
trap restore EXIT
ninja -C "$B" $targets | tail -1
mkdir -p "$DEST/tests"
cp "$B/tiletune" "$DEST/"
cp "$B/tests/test_cuda_gemm" "$DEST/tests/"
cp -L "$B/libtiletune_runtime.so" "$DEST/"  # what vs_torch.py loads; the programs link the runtime statically
echo "$DEST: $(git rev-parse --short HEAD) with $PATCH"
