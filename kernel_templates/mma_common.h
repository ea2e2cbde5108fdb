// sm_80-style tensor-core building blocks shared by mma_gemm.cuh and mma_conv.cuh: cp.async,
// ldmatrix, mma.sync, the XOR swizzle of shared tiles, the fragment addressing of 16-bit operands
// and the deterministic split-K reduction. Both templates store an operand tile the way it lies in
// global memory (rows along the strided dimension, the contiguous one inside a row); "K-major"
// means the contiguous dimension is K.
#ifndef TILETUNE_MMA_COMMON_H
#define TILETUNE_MMA_COMMON_H

#include "splitk_reduce.h"
#include "tt_types.h"

namespace tt_mma {

typedef unsigned int u32;

template <class T> struct IsBf16 { static constexpr bool value = false; };
template <> struct IsBf16<tt_bf16> { static constexpr bool value = true; };

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile with RB bytes per row.
// RB == 64: two rows share a 128-byte bank line, so the XOR key is taken from row / 2.
template <int RB>
TT_DEVICE int swz(int row, int chunk) {
  static_assert(RB == 64 || RB % 128 == 0, "swizzle needs 64-byte or 128*n-byte rows");
  const int key = RB >= 128 ? (row & 7) : ((row >> 1) & 3);
  return row * RB + ((chunk ^ key) << 4);
}

TT_DEVICE u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }

template <int BYTES>
TT_DEVICE void cp_async(u32 dst, const void* src, int src_bytes) {
  if (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(BYTES), "r"(src_bytes));
}
TT_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
TT_DEVICE void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

template <bool TRANS>
TT_DEVICE void ldsm_x4(u32 (&r)[4], u32 addr) {
  if (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

template <class TA>
TT_DEVICE void mma(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  if (sizeof(TA) == 4) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if (IsBf16<TA>::value) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

template <int MI, int NI>
TT_DEVICE void zero(float (&acc)[MI][NI][4]) {
  TT_UNROLL
  for (int i = 0; i < MI; ++i)
    TT_UNROLL
    for (int j = 0; j < NI; ++j)
      TT_UNROLL
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
}

// The A fragment (rows mb..mb+15, k 16*ks..16*ks+15) of an m16n8k16 from a swizzled 16-bit tile
// with RB bytes per row: K-major tiles are S[m][k] (plain ldmatrix), MN-major ones S[k][m]
// (ldmatrix.trans). The lane -> row mapping puts the four 8x8 matrices in the mma's a0..a3 order.
template <bool KMAJOR, int RB>
TT_DEVICE void frag_a(u32 (&a)[4], u32 base, int mb, int ks, int lane) {
  if (KMAJOR)
    ldsm_x4<false>(a, base + swz<RB>(mb + (lane & 15), ks * 2 + (lane >> 4)));
  else
    ldsm_x4<true>(a, base + swz<RB>(ks * 16 + (lane & 7) + ((lane >> 4) << 3), (mb >> 3) + ((lane >> 3) & 1)));
}

// B fragments of two n8 blocks (columns nb..nb+7 into b0, nb+8..nb+15 into b1) for k 16*ks..+15,
// from S[n][k] (K-major) or S[k][n] (MN-major, ldmatrix.trans).
template <bool KMAJOR, int RB>
TT_DEVICE void frag_b(u32 (&r)[4], u32 base, int nb, int ks, int lane) {
  if (KMAJOR)
    ldsm_x4<false>(r, base + swz<RB>(nb + (lane & 7) + ((lane >> 4) << 3), ks * 2 + ((lane >> 3) & 1)));
  else
    ldsm_x4<true>(r, base + swz<RB>(ks * 16 + (lane & 15), (nb >> 3) + (lane >> 4)));
}

// Deterministic split-K (splitk_reduce.h: workspace layout and contract) for a whole block whose
// threads hold MI x NI fragments of 4 accumulators each.
template <int MI, int NI, int THREADS, int SPLITK, int TILE>
TT_DEVICE bool splitk_reduce(float (&acc)[MI][NI][4], void* workspace, long long tile_id, long long all_tiles,
                             int split, int tid) {
  return tt_splitk::reduce<MI * NI * 4, THREADS, SPLITK, TILE>(&acc[0][0][0], workspace, tile_id, all_tiles, split, tid,
                                                              tt_splitk::BlockGroup());
}

}  // namespace tt_mma

#endif
