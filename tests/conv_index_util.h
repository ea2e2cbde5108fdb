// Convolution shapes and their kernel parameters for the host tests of the templates' index math
// (test_mma_conv_index.cpp, test_mfma_conv_index.cpp): small enough to check every element, odd
// enough to reach every edge (strides, dilation, groups, padding, channel counts off the tiles).
#pragma once
#include <vector>

#include "kernel_templates/conv_params.h"

namespace tiletune::testing {

struct IndexShape {
  int n, c, h, w, k, r, s, u, v, ph, pw, dh, dw, groups;
};

// The kernel argument of direction dir (0 fwd, 1 dgrad, 2 wgrad), with its implicit GEMM's sizes.
inline TtConvParams index_params(const IndexShape& s, int dir) {
  TtConvParams p{};
  p.n = s.n, p.c = s.c, p.h = s.h, p.w = s.w, p.k = s.k, p.r = s.r, p.s = s.s;
  p.stride_h = s.u, p.stride_w = s.v, p.pad_h = s.ph, p.pad_w = s.pw, p.dil_h = s.dh, p.dil_w = s.dw;
  p.groups = s.groups;
  p.p = (s.h + 2 * s.ph - s.dh * (s.r - 1) - 1) / s.u + 1;
  p.q = (s.w + 2 * s.pw - s.dw * (s.s - 1) - 1) / s.v + 1;
  const int cg = s.c / s.groups, kg = s.k / s.groups;
  if (dir == 0) p.gemm_m = s.n * p.p * p.q, p.gemm_n = kg, p.gemm_k = cg * s.r * s.s;
  if (dir == 1) p.gemm_m = s.n * s.h * s.w, p.gemm_n = cg, p.gemm_k = kg * s.r * s.s;
  if (dir == 2) p.gemm_m = kg, p.gemm_n = cg * s.r * s.s, p.gemm_k = s.n * p.p * p.q;
  return p;
}

inline const std::vector<IndexShape>& index_shapes() {
  static const std::vector<IndexShape> s = {
      {2, 16, 9, 7, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1},    // 3x3 same padding
      {2, 24, 11, 10, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1},  // stride 2
      {1, 16, 13, 12, 8, 5, 3, 3, 2, 2, 1, 2, 1, 2},   // stride 3x2, dilation 2, groups 2
      {3, 8, 5, 6, 16, 1, 1, 2, 2, 0, 0, 1, 1, 1},     // 1x1 downsample
      {1, 40, 7, 7, 48, 7, 7, 2, 2, 3, 3, 1, 1, 1},    // 7x7 on a small image, channels not a multiple of BK
      {2, 12, 6, 9, 18, 2, 4, 1, 3, 0, 2, 3, 1, 3},    // asymmetric everything
  };
  return s;
}

}  // namespace tiletune::testing
