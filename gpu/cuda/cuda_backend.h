// The CUDA backend: NVRTC compiles to cubin, the driver API loads and launches. The driver is
// opened with dlopen at first use, so one binary runs on machines without a GPU (and CI) and
// simply reports no CUDA devices there.
#pragma once
#include <cuda.h>

#include <memory>
#include <vector>

#include "gpu/backend.h"

namespace tiletune::gpu {
class VendorGemm;
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

// cuBLAS as the vendor yardstick (gpu/cuda/cublas_gemm.cpp); nullptr when it cannot be loaded.
std::unique_ptr<VendorGemm> make_cublas_gemm();

}  // namespace tiletune::gpu::cuda
