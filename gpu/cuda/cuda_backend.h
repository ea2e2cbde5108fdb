// The CUDA backend: NVRTC compiles to cubin, the driver API loads and launches. The driver is
// opened with dlopen at first use, so one binary runs on machines without a GPU (and CI) and
// simply reports no CUDA devices there.
#pragma once
#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "gpu/backend.h"

namespace tiletune::gpu {
class VendorGemm;
class VendorConv;
}

namespace tiletune::gpu::cuda {

std::unique_ptr<Compiler> make_compiler();
std::vector<DeviceInfo> list_devices();
std::unique_ptr<Device> open_device(int index);

// "sm_90a" for compute capability 9.0: the arch-specific target, so wgmma and setmaxnreg are
// available and a cubin is never loaded on another generation.
std::string arch_name(int major, int minor);

// The driver's cuTensorMapEncodeTiled (TMA descriptors for Hopper templates); nullptr without a driver.
decltype(&::cuTensorMapEncodeTiled) tensor_map_encoder();
// The driver's cuTensorMapEncodeIm2col (wgmma_conv's activations); nullptr without a driver.
decltype(&::cuTensorMapEncodeIm2col) im2col_map_encoder();

// cuBLAS as the vendor yardstick (gpu/cuda/cublas_gemm.cpp); nullptr when it cannot be loaded.
std::unique_ptr<VendorGemm> make_cublas_gemm(Device& dev);
// cuDNN likewise (gpu/cuda/cudnn_conv.cpp); nullptr, with the reason in `why_not`, when it cannot be loaded.
std::unique_ptr<VendorConv> make_cudnn_conv(Device& dev, std::string* why_not);
// cuDNN through its graph API (gpu/cuda/cudnn_graph.cpp), the engines PyTorch runs; nullptr, with
// the reason, when it cannot be loaded or was not compiled in.
std::unique_ptr<VendorConv> make_cudnn_graph_conv(Device& dev, std::string* why_not);

}  // namespace tiletune::gpu::cuda
