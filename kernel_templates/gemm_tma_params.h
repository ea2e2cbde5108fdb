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
// stored, 128-byte swizzle, box {one 128-byte line, rows} for a K-major operand and {one line, BK}
// for an MN-major one (the kernel issues one copy per 64-row box of the latter per stage; a B of 32
// 16-bit columns is one box of 64-byte lines in the 64-byte swizzle); in a
// cluster each box is one CTA's share of that, or for a K-major operand one 8-row atom of it
// (tt_kmajor_share_rows; tma_arguments.cpp says which).
// map_c: the same over C, box {128 / sizeof(C element), tt_wgmma_epilogue_chunk} (a 128-byte
// line per column, one epilogue chunk of columns); encoded only for the TMA-store epilogue (EPI
// 1), else zero.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TT_TMA_FN __host__ __device__ constexpr
#else
#define TT_TMA_FN constexpr
#endif
// The epilogue's chunk of a consumer's `wn` columns: 32, or 24 / 16 where a tile is 72 / 80
// columns wide; the kernel stages that many columns at a time and the host sizes map_c's box by it.
TT_TMA_FN int tt_wgmma_epilogue_chunk(int wn) { return wn % 32 == 0 ? 32 : wn % 24 == 0 ? 24 : 16; }
// The box height (rows) of a K-major operand tile of `rows` rows shared by `shares` CTAs of a
// cluster: each CTA's equal share where that is whole 8-row swizzle atoms, else one atom, the CTAs
// taking the tile's atoms round robin (72 rows over 4 CTAs: 3, 2, 2 and 2 atoms). A share must
// start on the 128-byte swizzle's 1024-byte period, or its lines land swizzled wrongly.
TT_TMA_FN int tt_kmajor_share_rows(int rows, int shares) {
  return rows % shares == 0 && rows / shares % 8 == 0 ? rows / shares : 8;
}

struct TtGemmTmaParams {
  TtTensorMap map_a;
  TtTensorMap map_b;
  TtTensorMap map_c;
  TtGemmParams g;
};

#endif
