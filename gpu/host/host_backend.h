// The host (CPU) backend: kernels are C++ compiled by the system compiler into shared objects and
// run tile by tile on a thread pool. It runs the whole pipeline for real where there is no GPU.
#pragma once
#include <memory>
#include <vector>

#include "gpu/backend.h"
#include "gpu/vendor_gemm.h"

namespace tiletune::gpu::host {

std::unique_ptr<Compiler> make_compiler();
std::vector<DeviceInfo> list_devices();  // always exactly one
std::unique_ptr<Device> open_device(int index);
// OpenBLAS's sgemm (gpu/host/openblas_gemm.cpp); nullptr, with the reason in `why_not`, when it
// cannot be loaded.
std::unique_ptr<VendorGemm> make_openblas_gemm(std::string* why_not = nullptr);

}  // namespace tiletune::gpu::host
