// The by-value argument of templates whose JSON says "arguments": "conv_tma" (the Hopper wgmma
// convolution, wgmma_conv.cuh): the convolution's parameters plus two TMA tensor maps built on the
// host by gpu/cuda/tma_arguments.cpp (encode_tma_conv_arguments), passed as a __grid_constant__
// kernel parameter. Compiled by NVRTC and by the host compiler; the host copies a TtConvTmaParams
// byte for byte into the launch argument.
#ifndef TILETUNE_CONV_TMA_PARAMS_H
#define TILETUNE_CONV_TMA_PARAMS_H

#include "conv_params.h"
#include "gemm_tma_params.h"

// map_x: im2col map over x (NHWC, dims {C, W, H, N}): bounding box lower corner {-pad_w, -pad_h},
//        upper corner {pad_w - dil_w (S - 1), pad_h - dil_h (R - 1)}, traversal strides
//        {1, stride_w, stride_h, 1}, 64 channels per pixel (one 128-byte swizzle atom),
//        min(BM, 128) pixels per copy, zero fill outside x.
// map_w: tiled map over the filters as a K x (R*S*C) matrix (KRSC rows), dims {R*S*C, K, 1},
//        box {64, BN}, 128-byte swizzle.
struct TtConvTmaParams {
  TtTensorMap map_x;
  TtTensorMap map_w;
  TtConvParams c;
};

#endif
