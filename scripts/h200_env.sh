# Sourced by the H200 scripts: NVRTC, cuBLAS and cuDNN from the toolkit, else from PyTorch's wheels.
site=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
libs=/usr/local/cuda/lib64
for d in $site; do
  for sub in nvidia/cu13/lib nvidia/cublas/lib nvidia/cuda_nvrtc/lib nvidia/cudnn/lib torch/lib; do
    [ -d "$d/$sub" ] && libs="$libs:$d/$sub"
  done
  [ -z "${TILETUNE_CUDNN_LIB:-}" ] && [ -e "$d/nvidia/cudnn/lib/libcudnn.so.9" ] && export TILETUNE_CUDNN_LIB=$d/nvidia/cudnn/lib/libcudnn.so.9
done
export LD_LIBRARY_PATH=$libs:${LD_LIBRARY_PATH:-}
# sanitize TOOL SECONDS BINARY FILTER LOG [LABEL]: the gtest FILTER of BINARY under compute-sanitizer's TOOL
# (memcheck, racecheck, ...) for at most SECONDS, its output in LOG; prints the exit status and the summary line.
sanitize() {
  timeout "$2" compute-sanitizer --tool "$1" --print-limit 5 "$3" --gtest_filter="$4" > "$5" 2>&1
  local rc=$?
  echo "$1${6:+ ($6)} exit $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$5" | tail -1)"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
