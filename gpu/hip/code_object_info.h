// Inspection of AMDGPU code objects (what hipRTC returns) with the LLVM binutils: per-kernel
// register and LDS usage from the AMDGPU metadata note, and a disassembly listing. Needs no GPU
// and no HIP runtime; it runs `llvm-readelf` / `llvm-objdump` / `llvm-nm` (the versioned `-22`,
// then `-14` names first: LLVM 14 cannot disassemble gfx940 and newer).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tiletune::gpu::hip {

struct AmdKernelInfo {
  std::string name;   // the kernel's (mangled) symbol name, as CodeObject::symbol
  int vgpr_count = 0;
  int sgpr_count = 0;
  int lds_bytes = 0;  // .group_segment_fixed_size: static LDS (shared memory) per work-group
  // Further metadata, 0 when the code object does not state it.
  int agpr_count = 0;             // gfx908/gfx90a accumulation registers (on gfx90a vgpr_count
                                  // already includes them: unified 512-entry register file)
  int vgpr_spill_count = 0;       // > 0: the kernel spills to scratch (usually a bad variant)
  int sgpr_spill_count = 0;
  int private_bytes = 0;          // .private_segment_fixed_size: scratch per work-item
  int wavefront_size = 0;         // 64 (gfx9) or 32 (gfx10+ default)
  int max_workgroup_size = 0;     // .max_flat_workgroup_size (from __launch_bounds__)
};

// The ELF image inside `bytes`: `bytes` itself when it is an ELF, the amdgcn entry when it is a
// clang offload bundle ("__CLANG_OFFLOAD_BUNDLE__"). Throws Error when there is no ELF inside.
std::vector<std::uint8_t> extract_amd_elf(const std::vector<std::uint8_t>& bytes);

// The kernels described by the code object's AMDGPU metadata (amdhsa.kernels), via
// `llvm-readelf --notes`. Throws Error when the tool is missing or fails, or the metadata is absent.
std::vector<AmdKernelInfo> read_amd_code_object(const std::vector<std::uint8_t>& bytes);

// The names of the symbols the code object defines (kernels, their .kd descriptors, variables),
// mangled, via `llvm-nm --defined-only`. Throws Error when the tool is missing or fails.
std::vector<std::string> amd_defined_symbols(const std::vector<std::uint8_t>& bytes);

// `llvm-objdump -d --mcpu=<arch>` of the code object. Throws Error when the tool is missing or fails.
std::string disassemble_amd(const std::vector<std::uint8_t>& bytes, const std::string& arch);

}  // namespace tiletune::gpu::hip
