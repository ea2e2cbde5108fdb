// The CUDA backend: NVRTC compiles to cubin, the driver API loads and launches. The driver is
// opened with dlopen at first use, so one binary runs on machines without a GPU (and CI) and
// simply reports no CUDA devices there.
#pragma once
#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "gpu/backend.h"

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


}  // namespace tiletune::gpu::cuda
