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
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
