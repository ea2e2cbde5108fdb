// Coordinates of the Hopper convolution's TMA copies (wgmma_conv.cuh), as plain functions shared by
// the kernel, the host side that encodes the tensor maps (gpu/cuda/tma_arguments.cpp) and a host
// test (tests/test_wgmma_conv_index.cpp) that replays the TMA im2col traversal against the
// convolution's definition.
//
// Forward convolution, NHWC x, KRSC filters, as an implicit GEMM: row m = output pixel (n, p, q),
// column = output channel, reduction index (r, s, c) with c fastest. The reduction is walked in K
// steps of 64 channels of one filter tap: step kt = (r, s, chunk), kt = (r * S + s) * CHUNKS + chunk,
// CHUNKS = C / 64. So the filter tile of step kt is columns [64 kt, 64 kt + 64) of the K x (R*S*C)
// filter matrix, and the activation tile is one im2col copy per box of pixels:
//   start {c, w, h, n} = {64 chunk, q * stride_w - pad_w, p * stride_h - pad_h, n} of the box's
//   first pixel, im2col offsets {s * dil_w, r * dil_h}.
// The TMA walks the box's pixels from the start through the bounding box (x's H x W grown by the
// lower / upper corners below), W fastest then H then N, in steps of the traversal strides, which
// visits exactly the output pixels in order; it reads x at the pixel plus the offsets, zeros
// outside x (padding, and pixels past the last image).
#ifndef TILETUNE_WGMMA_CONV_INDEX_H
#define TILETUNE_WGMMA_CONV_INDEX_H

#include "conv_params.h"
#include "mma_conv_index.h"

namespace tt_wgconv {

// First pixel of a box: the TMA start coordinates of output pixel m (h, w include the padding).
struct BoxStart {
  int n, h, w;
};
TT_CONV_FN BoxStart box_start(const TtConvParams& p, int m) {
  const int pq = p.p * p.q;
  const int img = m / pq, rem = m - img * pq, y = rem / p.q, x = rem - y * p.q;
  BoxStart b = {img, y * p.stride_h - p.pad_h, x * p.stride_w - p.pad_w};
  return b;
}

// The bounding box corners of the im2col tensor map, {W, H} (the order of the map's dimensions):
// the box is [lower, extent - 1 + upper] in each spatial dimension.
TT_CONV_FN void im2col_corners(const TtConvParams& p, int* lower, int* upper) {
  lower[0] = -p.pad_w;
  lower[1] = -p.pad_h;
  upper[0] = p.pad_w - p.dil_w * (p.s - 1);
  upper[1] = p.pad_h - p.dil_h * (p.r - 1);
}

// K step kt: filter tap (r, s) and channel chunk, advanced in the reduction's (r, s, c) order by
// tt_conv::next_tile (mma_conv_index.h walks fwd's (tap, chunk) tiles the same way).
typedef tt_conv::Taps KStep;

}  // namespace tt_wgconv

#endif
