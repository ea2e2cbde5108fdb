// The host (CPU) backend: kernels are C++ compiled by the system compiler into shared objects and
// run tile by tile on a thread pool. It runs the whole pipeline for real where there is no GPU.
#pragma once
#include <memory>
#include <vector>

#include "gpu/backend.h"

namespace tiletune::gpu::host {

std::unique_ptr<Compiler> make_compiler();
std::vector<DeviceInfo> list_devices();  // always exactly one
std::unique_ptr<Device> open_device(int index);

}  // namespace tiletune::gpu::host
