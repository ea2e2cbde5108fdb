// Hopper (sm_90a) forward pass of convolutions with few input channels (the 3-channel stem), on wgmma: narrow_fwd's
// row staging with the im2col operand read as wgmma's register A. NHWC x and y, KRSC filters, bf16 / fp16 in and
// out, fp32 accumulation, unit horizontal dilation, K in blocks of 64.
//
// Why: narrow_fwd (mma.sync) runs the stem at 105 TFLOP/s, about a third of what its 244 MB of traffic allow, and
// cuDNN's fp16 stem is as fast (99). Per output row (n, p) the GEMM is pixels q (M: MT warpgroups of 64) x 64
// output channels (N) x the filter's columns (K: filter row r's S * C columns, rounded up to even, row after row).
// A register of the A fragment pairs columns j and j + 1 of one pixel, adjacent in the staged input row but at
// any parity, so each staged row is also written as pairs (row[i], row[i + 1]) (narrow_conv_index.h's PairRows
// with pd = 1; pair 2u is word u of the row itself): a register is one 32-bit shared load at an offset fixed per
// thread and k16 step. The filters are staged once per block as wgmma's K-major B (64 output channels x the
// columns, zero past S * C and R * SCP).
//
// A block takes a contiguous range of the N * P output rows (grid_x) and one 64-channel block of K (grid_y); per
// row, one cp.async stage of the R input rows lands STAGES - 1 rows ahead, the next row's pairs are built while
// this row's wgmma run, and each thread stores its accumulators as 16-byte runs of y's row (wgmma_octets.h).
#include "conv_params.h"
#include "mma_common.h"
#include "narrow_pairs.h"
#include "wgmma_octets.h"

template <typename TA, typename TC, int DIR, bool NCHW, int MT, int KS, int STAGES, int OCC>
__global__ void __launch_bounds__(128 * MT, OCC) wgmma_narrow_fwd(const TtConvParams p) {
  using namespace tt_wg;
  using tt_mma::u32;
  constexpr int THREADS = 128 * MT;
  constexpr int ATOMS = (KS + 3) / 4;  // 64-column atoms of the K-major filters
  static_assert(DIR == 0 && !NCHW, "wgmma_narrow_fwd: forward pass, NHWC");
  static_assert(sizeof(TA) == 2 && sizeof(TC) == 2, "16-bit inputs and output");
  static_assert(MT >= 1 && MT <= 2 && KS >= 1 && KS <= 12 && STAGES >= 3, "parameters");
  typedef TtWgmmaRs<64, IsBf16<TA>::value, 0> Mma;  // B (the filters) K-major

  // The filters, then the stages, then the pairs, from the allocation's first 1024-byte boundary.
  extern __shared__ __align__(1024) unsigned char smem_dyn[];
  unsigned char* const smem = smem_dyn + pad_to_1024(smem_addr(smem_dyn));
  const u32 sbase = smem_addr(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = (tid >> 5) & 3, mt = tid >> 7;
  const int sc = p.s * p.c, scp = (sc + 1) / 2 * 2;  // a filter row's columns, rounded up to even
  const tt_narrow::PairRows geo(p.w, p.c, p.q, p.r, scp, p.pad_w, p.stride_w, 1);
  const u32 b_bytes = ATOMS * 8192, stages0 = sbase + b_bytes;
  const u32 pairs0 = stages0 + STAGES * geo.x_bytes;
  const int k0 = blockIdx.y * 64;
  const int rows = p.n * p.p;
  const int row0 = int((long long)blockIdx.x * rows / gridDim.x), row1 = int((long long)(blockIdx.x + 1) * rows / gridDim.x);
  const int nrows = row1 - row0;

  // Zero everything once: the filters' padding columns, the rows' margins and the pairs no build writes stay zero.
  for (u32 i = tid * 16; i < b_bytes + STAGES * geo.x_bytes + geo.pair_bytes; i += THREADS * 16)
    *reinterpret_cast<uint4*>(smem + i) = make_uint4(0, 0, 0, 0);
  __syncthreads();
  // The filters: output channel n's column kd = r * SCP + j (j = s * C + c) in 64-column atoms, K-major with the
  // 128-byte swizzle (chunk cc of row n at (cc ^ n % 8) * 16).
  const unsigned short* wt = static_cast<const unsigned short*>(p.wt);
  for (int i = tid; i < 64 * p.r * sc; i += THREADS) {
    const int n = i / (p.r * sc), rj = i - n * (p.r * sc), r = rj / sc, j = rj - r * sc;
    const int kd = r * scp + j, col = kd & 63;
    reinterpret_cast<unsigned short*>(smem + (kd >> 6) * 8192 + tt_narrow::swizzle128(n, col >> 3))[col & 7] =
        wt[(long long)(k0 + n) * p.r * sc + rj];
  }

  const TA* x = static_cast<const TA*>(p.x);
  TC* y = static_cast<TC*>(p.y);
  const bool vec = ((unsigned long long)p.x & 15) == 0, yvec = ((unsigned long long)p.y & 15) == 0;
  auto load = [&](int stage, int row) {
    const int n = row / p.p, pr = row - n * p.p;
    tt_narrow::stage_input_rows<TA, THREADS>(stages0 + stage * geo.x_bytes, x, p, n, pr, p.dil_h, geo, vec, smem, sbase,
                                             tid);
  };
  auto build = [&](int stage, int buf) {
    tt_narrow::build_pairs<THREADS>(smem + b_bytes + stage * geo.x_bytes,
                                    smem + (pairs0 - sbase) + buf * p.r * geo.xl * 4, geo, tid);
  };

  // This thread's A words: pixel rows (registers 0 / 2 and 1 / 3; rows past Q read pixel 0: finite, never stored)
  // and, per k16 step and half, the filter column's offset r * xl + j (columns past R * SCP read column 0).
  int mbase[2];
  TT_UNROLL
  for (int e = 0; e < 2; ++e) {
    const int q = mt * 64 + tt_narrow::afrag_row(warp, lane, e);
    mbase[e] = geo.pair_index(q < p.q ? q : 0, 0, p.c, p.pad_w);
  }
  int koff[KS][2];
  TT_UNROLL
  for (int kk = 0; kk < KS; ++kk)
    TT_UNROLL
    for (int hh = 0; hh < 2; ++hh) {
      const int kd = tt_narrow::afrag_k(lane, 2 * hh, kk), r = kd / scp, j = kd - r * scp;
      koff[kk][hh] = r < p.r ? r * geo.xl + j : 0;
    }
  const u64 db = desc(sbase, 16, 1024);

  // Row `it`: its A words from its pairs, its wgmma on the staged filters (B), the next row's pairs meanwhile, then
  // y's row (n, p): pixel q's 64 channels from k0, 16 bytes a lane (wgmma_octets.h).
  tt_narrow::row_pipeline<STAGES>(
      nrows, [&](int stage, int i) { load(stage, row0 + i); }, build,
      [&](int it, const auto& next) {
        const u32 pa = pairs0 + (u32)((it & 1) * p.r * geo.xl * 4);
        u32 a[KS][4];
        TT_UNROLL
        for (int kk = 0; kk < KS; ++kk)
          TT_UNROLL
          for (int e = 0; e < 4; ++e)
            asm volatile("ld.shared.b32 %0, [%1];" : "=r"(a[kk][e]) : "r"(pa + (u32)((mbase[e & 1] + koff[kk][e >> 1]) * 4)));
        float acc[32];
        wg_fence();
        TT_UNROLL
        for (int kk = 0; kk < KS; ++kk)
          Mma::mma(acc, a[kk], db + (u64)(((kk >> 2) * 8192 + (kk & 3) * 32) >> 4), kk > 0 ? 1 : 0);
        wg_commit();
        next();
        wg_wait<0>();
        fence_regs<32>(acc);
        TC* yrow = y + (long long)(row0 + it) * p.q * p.k + k0;
        TT_UNROLL
        for (int h = 0; h < 2; ++h)
          TT_UNROLL
          for (int j0 = 0; j0 < 8; j0 += 4) {
            const uint4 o = tt_octets::row_octet<TC>(acc, j0, h, lane);
            const int q = mt * 64 + 16 * warp + (lane >> 2) + 8 * h, col = 8 * (j0 + (lane & 3));
            if (q >= p.q) continue;
            TC* dst = yrow + (long long)q * p.k + col;
            if (yvec) {
              *reinterpret_cast<uint4*>(dst) = o;
            } else {
              const unsigned v[4] = {o.x, o.y, o.z, o.w};
              TT_UNROLL
              for (int e = 0; e < 8; ++e)
                reinterpret_cast<unsigned short*>(dst)[e] = (unsigned short)(v[e >> 1] >> (16 * (e & 1)));
            }
          }
      });
}
