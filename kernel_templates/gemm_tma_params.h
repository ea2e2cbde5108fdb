// The by-value argument of templates whose JSON says "arguments": "gemm_tma" (the Hopper wgmma
// template): the plain GEMM parameters plus one TMA tensor map per operand, built on the host by
// gpu/cuda/tma_arguments.cpp (cuTensorMapEncodeTiled) and passed as a __grid_constant__ kernel
// parameter. Compiled by NVRTC and by the host compiler: fundamental types only, no includes
// beyond gemm_params.h. The host copies a TtGemmTmaParams byte for byte into the launch argument,
// so the layout (64-byte aligned maps first) must read the same on both sides.
#ifndef TILETUNE_GEMM_TMA_PARAMS_H
#define TILETUNE_GEMM_TMA_PARAMS_H

#include "gemm_params.h"

// Opaque CUtensorMap (128 bytes, 64-byte aligned), without needing cuda.h.
struct alignas(64) TtTensorMap {
  unsigned long long opaque[16];
};

// map_a / map_b: 3-D tiled maps (contiguous dimension, other dimension, batch) over A and B as
// stored, 128-byte swizzle, box {64, rows} for a K-major operand and {64, BK} for an MN-major one
// (the kernel issues BM/64 or BN/64 copies of the latter per stage).
// map_c: the same over C, box {128 / sizeof(C element), 32} (a 128-byte line per column, 32
// columns: one epilogue chunk); encoded only for the TMA-store epilogue (EPI 1), else zero.
struct TtGemmTmaParams {
  TtTensorMap map_a;
  TtTensorMap map_b;
  TtTensorMap map_c;
  TtGemmParams g;
};

#endif
