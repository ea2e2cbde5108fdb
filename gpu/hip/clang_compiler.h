// The offline AMD compiler: upstream clang (Debian's clang-22) compiling a HIP translation unit the
// way hipRTC would, for the targets Debian's hipRTC 5.2 cannot take (gfx942, gfx950: it aborts on
// gfx940 and newer) or where hipRTC is absent. It needs three things outside this program:
//   - clang:  $TILETUNE_HIP_CLANG, else clang-22 on PATH;
//   - hipRTC's builtin header (hiprtc_runtime.h: threadIdx, __syncthreads, ... without the HIP
//     headers): $TILETUNE_HIPRTC_HEADER, else where scripts/install-deps.sh puts it;
//   - ROCm's device-library bitcode (ocml, ockl, oclc_*): $TILETUNE_ROCM_DEVICE_LIBS, else
//     Debian's rocm-device-libs folder.
// Its code objects are plain AMDGPU ELF images, as hipModuleLoadData takes them. Its register
// allocation is upstream LLVM's, close to but not the same as ROCm's (AGPR use differs), so the
// figures read from its objects estimate a ROCm build's; they are not a ROCm build's.
#pragma once
#include <memory>
#include <string>

#include "gpu/backend.h"

namespace tiletune::gpu::hip {

struct ClangToolchain {
  std::string clang, header, bitcode_dir;  // full paths
  std::string missing;                     // why it cannot be used; "" when it can
};

// Looked up once per process.
const ClangToolchain& clang_toolchain();

// Name expression lookup without hipRTC: the translation unit also instantiates a variable
// template on the address of the expression's kernel (a symbol kept in the object), so that the
// kernel meant is the one whose demangled name the probe's demangled name holds. Exposed for tests:
// returns the mangled kernel name among `symbols` (as llvm-nm lists them), "" when none matches.
std::string probe_source(const std::string& name_expression);
std::string kernel_for_probe(const std::vector<std::string>& symbols);

// A Compiler for any gfx arch clang knows. When the toolchain is incomplete it is still made, and
// each compile fails saying what is missing.
std::unique_ptr<Compiler> make_clang_compiler();

}  // namespace tiletune::gpu::hip
