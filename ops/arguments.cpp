#include "ops/arguments.h"

namespace tiletune::ops {

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

}  // namespace tiletune::ops
