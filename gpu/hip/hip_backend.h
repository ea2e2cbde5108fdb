// The HIP (AMD) backend: hipRTC as the Compiler, the HIP runtime's module API as the Device.
// gpu/backend.cpp dispatches BackendKind::Hip here. Nothing in this header needs the HIP headers.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "gpu/backend.h"

namespace tiletune::gpu::hip {

// The gfx targets hipRTC may be asked to compile for. This HIP (5.2) aborts the whole process on
// newer names (gfx942, gfx11xx, ...), so the compiler refuses anything not listed here without
// calling hipRTC. Exact names only (no ":xnack-" style feature suffixes).
const std::vector<std::string>& supported_arches();
bool arch_supported(const std::string& arch);
std::string supported_arches_text();  // "gfx908, gfx90a, gfx1030"

std::unique_ptr<Compiler> make_compiler();
// Empty, quietly, when there is no AMD GPU, no driver or no HIP runtime (/dev/kfd absent,
// libamdhip64 not loadable, hipGetDeviceCount fails).
std::vector<DeviceInfo> list_devices();
std::unique_ptr<Device> open_device(int index);  // throws Error for a bad index or a HIP failure
// gpu::code_object_figures for AMDGPU objects: the metadata of the kernel `code.symbol` and the
// v_mfma instructions of its disassembly.
std::string code_object_figures(const CodeObject& code, const std::string& arch);

}  // namespace tiletune::gpu::hip
