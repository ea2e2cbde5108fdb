#include "ops/arguments.h"

#include <cstring>

#include "common/error.h"
#ifdef TILETUNE_WITH_TMA
#include "ops/cuda/tma_arguments.h"
#endif

namespace tiletune::gpu {

namespace {
template <class T>
std::vector<std::uint8_t> bytes_of(const T& p) {
  std::vector<std::uint8_t> bytes(sizeof p);
  std::memcpy(bytes.data(), &p, sizeof p);
  return bytes;
}
}  // namespace

std::vector<std::uint8_t> kernel_arguments(const KernelTemplate& t, const TtGemmParams& p, const GemmProblem& problem,
                                           const Variables& vars) {
  if (t.arguments() == KernelTemplate::Arguments::Params) return bytes_of(p);
#ifdef TILETUNE_WITH_TMA
  return cuda::make_tma_gemm_arguments(p, problem, vars);
#else
  (void)problem;
  (void)vars;
  throw Error("template " + t.name() + ": arguments '" + t.arguments_name() + "' are not available in this build");
#endif
}

TtConvParams conv_arguments(const ConvProblem& p, void* x, void* wt, void* y) {
  const ImplicitGemm g = p.implicit_gemm();
  TtConvParams a{};
  a.x = x;
  a.wt = wt;
  a.y = y;
  a.n = int(p.n), a.c = int(p.c), a.h = int(p.h), a.w = int(p.w), a.k = int(p.k), a.r = int(p.r), a.s = int(p.s);
  a.p = int(p.p()), a.q = int(p.q());
  a.stride_h = int(p.stride_h), a.stride_w = int(p.stride_w), a.pad_h = int(p.pad_h), a.pad_w = int(p.pad_w);
  a.dil_h = int(p.dil_h), a.dil_w = int(p.dil_w), a.groups = int(p.groups);
  a.gemm_m = int(g.m), a.gemm_n = int(g.n), a.gemm_k = int(g.k);
  return a;
}

std::vector<std::uint8_t> conv_kernel_arguments(const KernelTemplate& t, const TtConvParams& p,
                                                const ConvProblem& problem, const Variables& vars) {
  if (t.arguments() == KernelTemplate::Arguments::Params) return bytes_of(p);
#ifdef TILETUNE_WITH_TMA
  return cuda::make_tma_conv_arguments(p, problem, vars);
#else
  (void)problem;
  (void)vars;
  throw Error("template " + t.name() + ": arguments '" + t.arguments_name() + "' are not available in this build");
#endif
}

}  // namespace tiletune::gpu
