#include "solutions/conv_gemm.h"

namespace tiletune {

std::optional<std::string> conv_gemm_refusal(const ConvProblem& p) {
  if (p.layout != ConvLayout::NHWC) return "NCHW: the channels of a pixel are not contiguous";
  if (p.r != 1 || p.s != 1) return "a " + std::to_string(p.r) + "x" + std::to_string(p.s) + " filter, not 1x1";
  if (p.pad_h != 0 || p.pad_w != 0) return "padding: the output has pixels that read no input";
  if (p.groups != 1) return "groups " + std::to_string(p.groups) + ": a batch of GEMMs whose operands interleave";
  if (p.stride_h != 1 || p.stride_w != 1)
    return "stride " + std::to_string(p.stride_h) + "x" + std::to_string(p.stride_w) +
           ": the pixels read are not one matrix";
  return std::nullopt;
}

ConvGemm conv_as_gemm(const ConvProblem& p) {
  const ImplicitGemm ig = p.implicit_gemm();
  ConvGemm g;
  GemmProblem& m = g.gemm;
  m.a_type = p.in_type;
  m.c_type = p.out_type;
  // The implicit GEMM's N is what the output holds contiguously (fwd K, dgrad and wgrad C): the
  // column-major GEMM's M.
  m.m = ig.n, m.n = ig.m, m.k = ig.k;
  switch (p.direction) {
    case ConvDirection::Forward:
      m.trans_a = true, m.trans_b = false;
      g.a = ConvTensor::W, g.b = ConvTensor::X, g.c = ConvTensor::Y;
      break;
    case ConvDirection::BackwardData:
      m.trans_a = false, m.trans_b = false;
      g.a = ConvTensor::W, g.b = ConvTensor::Y, g.c = ConvTensor::X;
      break;
    case ConvDirection::BackwardFilter:
      m.trans_a = false, m.trans_b = true;
      g.a = ConvTensor::X, g.b = ConvTensor::Y, g.c = ConvTensor::W;
      break;
  }
  m = m.canonical();
  return g;
}

TtGemmParams conv_gemm_params(const ConvGemm& g, const TtConvParams& a) {
  void* const tensors[3] = {a.x, a.wt, a.y};  // ConvTensor order
  const GemmProblem& m = g.gemm;
  TtGemmParams p{};
  p.a = tensors[int(g.a)];
  p.b = tensors[int(g.b)];
  p.c = tensors[int(g.c)];
  p.lda = m.lda, p.ldb = m.ldb, p.ldc = m.ldc;
  p.stride_a = m.stride_a, p.stride_b = m.stride_b, p.stride_c = m.stride_c;
  p.m = int(m.m), p.n = int(m.n), p.k = int(m.k), p.batch = int(m.batch);
  p.alpha = 1.0f, p.beta = 0.0f;
  p.workspace = a.workspace;
  return p;
}

}  // namespace tiletune
