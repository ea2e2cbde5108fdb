// Device side of the wgmma narrow templates' staged rows (narrow_conv_index.h's PairRows; wgmma_narrow_wgrad.cuh,
// wgmma_narrow_fwd.cuh): the R input rows an output row reads, staged by 16-byte copies, and their pairs.
#ifndef TILETUNE_NARROW_PAIRS_H
#define TILETUNE_NARROW_PAIRS_H

#include "conv_tma_params.h"  // wgmma_common.h's TMA helpers name its tensor map
#include "narrow_conv.cuh"
#include "narrow_conv_index.h"
#include "wgmma_common.h"

namespace tt_narrow {

// geo.rows input rows from output row (n, pr)'s first, `step` apart, into the staged rows at shared address xs (row rr's
// elements at xs + (rr * xl + xoff) * 2; rows in the vertical padding zero-filled): its R filter rows (step dil_h),
// or the rows of several consecutive output rows (step 1). smem / sbase: the block's shared memory as a pointer and
// as an address (copy8's element path when !vec). BY_WARP: a warp a row, its lanes along it; else the block's
// threads over all the rows' 16-byte chunks at once (a division a chunk).
template <typename TA, int THREADS, bool BY_WARP = false>
TT_DEVICE void stage_input_rows(tt_mma::u32 xs, const TA* x, const TtConvParams& p, int n, int pr, int step,
                                const PairRows& geo, bool vec, unsigned char* smem, tt_mma::u32 sbase, int tid) {
  const int row_vecs = p.w * p.c / 8, rows = geo.rows;
  if (BY_WARP) {
    for (int rr = tid >> 5; rr < rows; rr += THREADS / 32) {
      const int h = pr * p.stride_h - p.pad_h + rr * step;
      const bool ok = h >= 0 && h < p.h;
      const TA* src = x + (((long long)n * p.h + (ok ? h : 0)) * p.w) * p.c;
      const tt_mma::u32 dst = xs + (rr * geo.xl + geo.xoff) * 2;
      for (int v = tid & 31; v < row_vecs; v += 32) copy8(dst + v * 16, src + v * 8, ok, vec, smem, sbase);
    }
  } else {
    for (int i = tid; i < rows * row_vecs; i += THREADS) {
      const int rr = i / row_vecs, v = i - rr * row_vecs;
      const int h = pr * p.stride_h - p.pad_h + rr * step;
      const bool ok = h >= 0 && h < p.h;
      const TA* src = x + (((long long)n * p.h + (ok ? h : 0)) * p.w) * p.c + v * 8;
      copy8(xs + (rr * geo.xl + geo.xoff) * 2 + v * 16, src, ok, vec, smem, sbase);
    }
  }
}

// The pairs of geo.rows staged rows at xs (xl halves apart) into pb (xl words apart): pair[i] = (row[i], row[i + pd])
// for i < pairs(). Row by row, no division: all the block's threads along each row in turn (a row's pairs are about
// one a thread), or (BY_WARP) a warp a row, its lanes along it, which spends a row's loop once per warp, not per
// thread.
template <int THREADS, bool BY_WARP = false>
TT_DEVICE void build_pairs(const unsigned char* xs, unsigned char* pb, const PairRows& geo, int tid) {
  using tt_mma::u32;
  const int np = geo.pairs(), pd = geo.pd, rows = geo.rows;
  const int r0 = BY_WARP ? tid >> 5 : 0, rstep = BY_WARP ? THREADS / 32 : 1;  // this thread's rows
  const int u0 = BY_WARP ? tid & 31 : tid, ustep = BY_WARP ? 32 : THREADS;    // and its place along each
  for (int rr = r0; rr < rows; rr += rstep) {
    const u32* row = reinterpret_cast<const u32*>(xs + rr * geo.xl * 2);
    unsigned char* prow = pb + rr * geo.xl * 4;
    if (pd == 1) {  // pair 2u is word u itself, pair 2u + 1 straddles words u and u + 1
      for (int u = u0; u < (np >> 1); u += ustep) {
        const u32 w0 = row[u], w1 = row[u + 1];
        *reinterpret_cast<uint2*>(prow + u * 8) = make_uint2(w0, __byte_perm(w0, w1, 0x5432));
      }
    } else if ((pd & 1) == 0) {  // pairs 2u and 2u + 1 from words u and u + pd / 2
      for (int u = u0; u < (np >> 1); u += ustep) {
        const u32 w0 = row[u], w1 = row[u + (pd >> 1)];
        *reinterpret_cast<uint2*>(prow + u * 8) = make_uint2(__byte_perm(w0, w1, 0x5410), __byte_perm(w0, w1, 0x7632));
      }
    } else {
      const unsigned short* h = reinterpret_cast<const unsigned short*>(row);
      for (int u = u0; u < np; u += ustep) reinterpret_cast<u32*>(prow)[u] = u32(h[u]) | (u32(h[u + pd]) << 16);
    }
  }
}

// The per-row pipeline of both kernels over their nrows output rows: row i's operands land in stage i % STAGES,
// STAGES - 1 rows ahead (load(stage, i)); its pairs are built into buffer i % 2 (build(stage, buffer)) while row
// i - 1's wgmma run: compute(i, next) issues row i's wgmma, calls next() (row i + 1's pairs) and retires them before
// it returns. At the top of row i (STAGES >= 3) rows up to i + 1 have landed and are visible to wgmma's proxy.
template <int STAGES, class Load, class Build, class Compute>
TT_DEVICE void row_pipeline(int nrows, const Load& load, const Build& build, const Compute& compute) {
  static_assert(STAGES >= 3, "a row's pairs are built from the stage after it");
  TT_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nrows) load(s, s);
    tt_mma::cp_async_commit();
  }
  tt_mma::cp_async_wait<STAGES - 2>();
  __syncthreads();
  if (nrows > 0) build(0, 0);
  for (int it = 0; it < nrows; ++it) {
    tt_mma::cp_async_wait<STAGES - 3>();
    tt_wg::fence_async_smem();  // the generic proxy's writes (cp.async, zeros, staged filters) before wgmma's reads
    __syncthreads();            // and every thread's: row it's pairs built, row it - 1's wgmma retired
    if (it + STAGES - 1 < nrows) load((it + STAGES - 1) % STAGES, it + STAGES - 1);
    tt_mma::cp_async_commit();
    compute(it, [&] {
      if (it + 1 < nrows) build((it + 1) % STAGES, (it + 1) & 1);
    });
  }
  tt_mma::cp_async_wait<0>();
}

}  // namespace tt_narrow

#endif  // TILETUNE_NARROW_PAIRS_H
