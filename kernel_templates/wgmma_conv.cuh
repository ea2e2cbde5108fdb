// Hopper (sm_90a) forward convolution: implicit GEMM on wgmma, both operands loaded by TMA, the
// activations through the TMA's im2col mode. NHWC x, KRSC filters, bf16 / fp16 in, fp32
// accumulation, y (N*P*Q x K, row-major: NHWC) in bf16, fp16 or fp32; groups == 1, C % 64 == 0.
//
// GEMM view (wgmma_conv_index.h): row m = output pixel, column = output channel, reduction walked
// in K steps of one filter tap (r, s) and 64 channels, i.e. one 128-byte swizzle atom of K. Both
// operands are K-major in memory (x's channels and the filters' (r, s, c) are contiguous), which
// is the layout wgmma reads without transposes.
//   A (BM pixels x 64 channels per stage): one im2col copy per box of min(BM, 128) pixels; the
//     copy starts at the box's first output pixel mapped into x (q * stride - pad, ...) and carries
//     the tap as im2col offsets (s * dil_w, r * dil_h). Stride is the map's traversal stride,
//     padding the bounding box's corners; the TMA zero-fills taps outside x and pixels past the
//     last image, so edge tiles need no special case.
//   B (BN filters x 64): a tiled copy of the K x (R*S*C) filter matrix at column 64 kt.
// The pipeline follows wgmma_gemm.cuh (device helpers shared with it in wgmma_common.h): one
// producer warpgroup (one thread issuing the copies into a STAGES-deep mbarrier ring) and
// CONSUMERS consumer warpgroups (setmaxnreg moves registers from the producer to them), a persistent
// grid walking the tiles in grouped raster order, cooperative consumers (each owns BM / CONSUMERS
// rows of a tile) or ping-pong ones (PINGPONG: whole tiles in turn, one's epilogue overlapping the
// other's main loop).
// Epilogue: accumulators go through a padded fp32 staging buffer, 32 columns at a time, and are
// written as 16-byte vectors along the rows of y (ld = K; K % 8 == 0 by constraint), or as scalars
// when y is not 16-byte aligned.
#include "conv_tma_params.h"
#include "wgmma_conv_index.h"
#include "wgmma_common.h"

namespace tt_wgconv {

// One im2col copy of a 4-D (NHWC) tensor: start coordinates {c, w, h, n}, offsets {w, h}.
TT_DEVICE void tma_im2col_4d(unsigned dst, const TtTensorMap* map, unsigned bar, int c, int w, int h, int n,
                             unsigned short off_w, unsigned short off_h) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(n), "h"(off_w), "h"(off_h)
      : "memory");
}

}  // namespace tt_wgconv

template <typename TA, typename TC, int BM, int BN, int STAGES, int CONSUMERS, int RASTER, int GROUP, int PINGPONG>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    wgmma_conv(const __grid_constant__ TtConvTmaParams p) {
  using namespace tt_wg;
  static_assert(sizeof(TA) == 2, "wgmma_conv: bf16 or fp16 inputs");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "1 or 2 consumer warpgroups");
  static_assert(PINGPONG == 0 || CONSUMERS == 2, "ping-pong needs two consumers");
  constexpr bool PP = PINGPONG != 0;
  constexpr int WM = PP ? BM : BM / CONSUMERS;  // rows per consumer warpgroup
  constexpr int MI = WM / 64;                   // m64 sub-tiles per consumer
  static_assert(WM % 64 == 0 && MI >= 1 && MI <= 2, "BM / CONSUMERS must be 64 or 128");
  static_assert(BN % 64 == 0 && BN <= 256, "BN is 64, 128, 192 or 256");
  constexpr u32 A_STAGE = BM * 128, B_STAGE = BN * 128;  // 128-byte lines: 64 channels per row
  constexpr u32 STAGE_BYTES = A_STAGE + B_STAGE;
  constexpr int BOXP = BM < 128 ? BM : 128;  // pixels per im2col copy
  constexpr int BOXES = BM / BOXP;
  constexpr int EN = 32;      // epilogue chunk (columns)
  constexpr int EP = EN + 4;  // staging pitch (floats), rows of the tile in the staging buffer
  typedef TtWgmma<BN, IsBf16<TA>::value, 0, 0> Mma;

  typedef Ring<STAGES, A_STAGE, B_STAGE> RingT;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const RingT ring(smem_raw, CONSUMERS * WM * EP * 4);  // staging: CONSUMERS x WM x EP floats
  const u32 sA = ring.sA, sB = ring.sB, bars = ring.bars;

  const TtConvParams& cv = p.c;
  const int M = cv.gemm_m, N = cv.gemm_n;
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int total = tiles_m * tiles_n;
  const int chunks = cv.c / 64;
  const int KT = cv.r * cv.s * chunks;

  if (threadIdx.x == 0) ring.init(1, PP ? 4 : CONSUMERS * 4);  // empty: one arrival per consuming warp
  __syncthreads();

  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    // ------------------------------------------------------------------ producer
    if (CONSUMERS == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) {
      prefetch_map(&p.map_x);
      prefetch_map(&p.map_w);
      int s = 0;
      u32 ph = 0;
      for (int t = blockIdx.x; t < total; t += gridDim.x) {
        int mb, nb, b;
        tile_coords<RASTER, GROUP>(t, tiles_m, tiles_n, mb, nb, b);
        tt_wgconv::BoxStart box[BOXES];
        TT_UNROLL
        for (int i = 0; i < BOXES; ++i) box[i] = tt_wgconv::box_start(cv, mb * BM + i * BOXP);
        const int n0 = nb * BN;
        tt_wgconv::KStep k = {0, 0, 0};
        for (int kt = 0; kt < KT; ++kt) {
          const u32 full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
          mbar_wait(empty, ph ^ 1);
          mbar_arrive_expect_tx(full, STAGE_BYTES);
          const u32 a = sA + s * A_STAGE;
          const unsigned short off_w = (unsigned short)(k.s * cv.dil_w), off_h = (unsigned short)(k.r * cv.dil_h);
          TT_UNROLL
          for (int i = 0; i < BOXES; ++i)
            tt_wgconv::tma_im2col_4d(a + i * BOXP * 128, &p.map_x, full, k.chunk * 64, box[i].w, box[i].h, box[i].n,
                                     off_w, off_h);
          tma_load_3d(sB + s * B_STAGE, &p.map_w, full, kt * 64, n0, 0);
          tt_conv::next_tile(k, chunks, cv.s);
          if (++s == STAGES) { s = 0; ph ^= 1; }
        }
      }
    }
  } else {
    // ------------------------------------------------------------------ consumers
    if (CONSUMERS == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int cw = wg - 1;
    const int tid = threadIdx.x - 128 * wg;
    const int warp = tid / 32, lane = tid % 32;
    float* stg = ring.staging + cw * WM * EP;
    constexpr int V = 16 / (int)sizeof(TC);  // elements per 16-byte vector of y
    constexpr int TPR = EN / V;              // threads per row of a chunk
    constexpr int RPP = 128 / TPR;           // rows per pass
    TC* Y = reinterpret_cast<TC*>(cv.y);
    const long long ldy = N;
    const bool vec_ok = (unsigned long long)cv.y % 16 == 0;

    float acc[MI][BN / 2];
    int s = 0;
    u32 ph = 0;
    // Ping-pong: the consumers take turns, tile by tile; each skips the other's K steps in the ring.
    if (PP && cw == 1) RingT::skip(s, ph, KT);
    const int first = blockIdx.x, step = gridDim.x;
    const int t_step = PP ? 2 * step : step;
    for (int t = first + (PP ? cw * step : 0); t < total; t += t_step) {
      int mb, nb, b;
      tile_coords<RASTER, GROUP>(t, tiles_m, tiles_n, mb, nb, b);
      if (PP && t != first) pingpong_wait(cw);
      // Both operands K-major; KT >= 1, so the loop leaves a stage to release.
      const int prev = mma_k_tiles<Mma, true, true, 64>(ring, acc, PP ? 0 : cw * MI * 64 * 128, 0, KT, s, ph, lane);
      if (PP && t + step < total) pingpong_pass(cw);
      finish_k_tiles<false>(ring, acc, prev, lane);
      if (PP) RingT::skip(s, ph, KT);

      // ---------------------------------------------------------------- epilogue
      const int m_base = mb * BM + (PP ? 0 : cw * WM);
      const int n_tile = nb * BN;
      TT_UNROLL
      for (int ch = 0; ch < BN / EN; ++ch) {
        named_sync(1 + cw, 128);  // the previous chunk's staging reads finished
        TT_UNROLL
        for (int mi = 0; mi < MI; ++mi) {
          TT_UNROLL
          for (int j = 0; j < EN / 8; ++j) {
            const float* f = &acc[mi][(ch * EN / 8 + j) * 4];
            const int col = j * 8 + 2 * (lane & 3);
            const int row = mi * 64 + warp * 16 + (lane >> 2);
            *reinterpret_cast<float2*>(stg + row * EP + col) = make_float2(f[0], f[1]);
            *reinterpret_cast<float2*>(stg + (row + 8) * EP + col) = make_float2(f[2], f[3]);
          }
        }
        named_sync(1 + cw, 128);
        const int c = (tid % TPR) * V;
        const int gn = n_tile + ch * EN + c;
        if (vec_ok) {
          TT_UNROLL
          for (int r = tid / TPR; r < WM; r += RPP) {
            const int gm = m_base + r;
            if (gm < M && gn < N) {  // N % V == 0: a vector is all in or all out
              float v[V];
              const float4* src = reinterpret_cast<const float4*>(stg + r * EP + c);
              TT_UNROLL
              for (int q = 0; q < V / 4; ++q) {
                const float4 x = src[q];
                v[4 * q] = x.x; v[4 * q + 1] = x.y; v[4 * q + 2] = x.z; v[4 * q + 3] = x.w;
              }
              CVec<TC, V>::store(Y + (long long)gm * ldy + gn, v);
            }
          }
        } else {
          TT_UNROLL
          for (int i = tid; i < WM * EN; i += 128) {
            const int r = i / EN, cc = i % EN;
            const int gm = m_base + r, g = n_tile + ch * EN + cc;
            if (gm < M && g < N) Y[(long long)gm * ldy + g] = tt_from_float<TC>(stg[r * EP + cc]);
          }
        }
      }
    }
  }
}
