#include "gpu/arguments.h"

#include <cstring>

#include "common/error.h"
#ifdef TILETUNE_WITH_TMA
#include "gpu/cuda/tma_arguments.h"
#endif

namespace tiletune::gpu {

std::vector<std::uint8_t> kernel_arguments(const KernelTemplate& t, const TtGemmParams& p, const GemmProblem& problem,
                                           const Variables& vars) {
  if (t.arguments() == "gemm") {
    std::vector<std::uint8_t> bytes(sizeof p);
    std::memcpy(bytes.data(), &p, sizeof p);
    return bytes;
  }
#ifdef TILETUNE_WITH_TMA
  if (t.arguments() == "gemm_tma") return cuda::make_tma_gemm_arguments(p, problem, vars);
#endif
  (void)problem;
  (void)vars;
  throw Error("template " + t.name() + ": arguments '" + t.arguments() + "' are not available in this build");
}

}  // namespace tiletune::gpu
