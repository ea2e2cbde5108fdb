// The by-value argument of templates whose JSON says "arguments": "conv_tma" (the Hopper wgmma
// convolution, wgmma_conv.cuh): the convolution's parameters plus the TMA tensor maps built on the
// host by gpu/cuda/tma_arguments.cpp (encode_tma_conv_arguments), passed as a __grid_constant__
// kernel parameter. Compiled by NVRTC and by the host compiler; the host copies a TtConvTmaParams
// byte for byte into the launch argument.
#ifndef TILETUNE_CONV_TMA_PARAMS_H
#define TILETUNE_CONV_TMA_PARAMS_H

#include "conv_params.h"
#include "gemm_tma_params.h"

// map_im2col: im2col map over the activation a direction gathers (x for fwd and wgrad, dy for dgrad;
//   NHWC, dims {C, W, H, N}): bounding box corners {-pad, pad - dil (R - 1)} of the convolution the
//   copies walk (tt_wgconv::im2col_of, im2col_corners), traversal strides {1, stride_w, stride_h, 1},
//   64 channels per pixel (one 128-byte swizzle atom), min(BM, 128) pixels per copy (wgrad: 64),
//   zero fill outside the tensor.
// map_tiled: fwd: the filters as a K x (R*S*C) matrix (KRSC rows), dims {R*S*C, K, 1}, box {64, BN}
//   (C not a multiple of 64: dims {C, R*S, K}, box {64, 1, BN}, so that a tap's last chunk reads zeros);
//   dgrad: the filters as {C, R*S, K}, box {64, 1, 64}; wgrad: dy as {K, N*P*Q, 1}, box {64, 64};
//   128-byte swizzle.
// "conv_rows_tma" templates (wgmma_tap_wgrad.cuh) take the same struct with tiled maps over rows
// of the activations (wgmma_tap_wgrad_index.h): map_im2col over x {C, W, H, N}, box {64, PITCH,
// ROWS, 1} walked with traversal strides {1, stride_w, stride_h, 1} (box dimensions scaled by them);
// map_tiled over dy {K, Q, P, N}, box {64, dy_box_w, ROWS, 1}; 128-byte swizzle, zero fill.
// map_out (wgmma_conv EPI 1; zero otherwise): the output as rows of its contiguous channels or filter
//   elements (fwd y {K, N*P*Q}, dgrad dx {C, N*H*W}, wgrad dW {R*S*C, K}), box {64, 16}: one warp's 16 rows
//   of a 64-column group, 128-byte swizzle.
// (map_out comes last, so that the other members keep the offsets of the kernels built before it.)
struct TtConvTmaParams {
  TtTensorMap map_im2col;
  TtTensorMap map_tiled;
  TtConvParams c;
  TtTensorMap map_out;
};

#endif
