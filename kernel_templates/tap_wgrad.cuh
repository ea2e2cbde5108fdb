// Weight gradient of 3x3, stride-1, padding-1 convolutions (ResNet's 3x3 layers) on sm_80+ tensor
// cores (mma.sync m16n8k16, bf16 / fp16 in, fp32 accumulation), NHWC / KRSC.
//
// Why a template of its own: the implicit GEMM (wgmma_conv) gathers one im2col copy of x per tap,
// nine loads of nearly the same pixels. One im2col tile cannot simply be shifted per tap either:
// output pixels in N*P*Q order cross image rows, and at a row's end the shifted pixel is padding,
// not the next row's first pixel. Here a block stages whole output rows of dy and the three input
// rows they need, each with a zero halo (tap_wgrad_index.h: the packing), once per row, and every
// tap (r, s) reads input row r at a shift of s slots: ldmatrix row addresses s slots further on.
//
// The GEMM per tap: dw[k][r][s][c] = sum over output pixels of dy[pixel][k] * x_r[pixel + s][c].
// Block (split, tile) owns KM output channels x CN input channels x all nine taps and a contiguous
// slice of the N * P output rows (split-K over rows), G rows per pipeline stage (cp.async, STAGES
// deep). Warp w takes filter row w / (KM/WM * CN/WN) and a WM x WN share of the channels, for its
// three taps: the dy fragments (A, one ldmatrix.trans per m16) serve all three, the input fragments
// (B) are one ldmatrix.trans per 16 channels per tap. Three taps per warp, not nine, because of
// registers: nine 32x32 fp32 tiles are 288 accumulators per thread, three are 96. The JSON caps
// them at 96 and keeps blocks within THREADS * (accumulators + 80) <= 64K registers: a 64x64 block
// of 32x32 warps (384 threads, so at most 168 registers each) spilled under ptxas 12.x. The
// 192-thread 64x32 and 32x64 blocks of 32x32 warps take 174-255 registers (one block per SM) and
// spill when held to 168 (two blocks per SM), so the launch bounds name no minimum of blocks; the
// 384-thread blocks of 48 accumulators per thread fit in 168 without spills. The splits meet in the deterministic split-K reduction
// (splitk_reduce.h), which leaves the workspace zeroed.
//
// Every stage is zeroed once at the start; the gaps, halos and positions past the packed rows are
// never written again, and copies of rows outside the slice or the image write zeros (src-size 0),
// so shifted reads meet zeros, never stale data (0 * NaN would not vanish).
#include "conv_params.h"
#include "mma_common.h"
#include "tap_wgrad_index.h"

namespace tt_tapw {
template <bool B>
struct Flag {
  static constexpr bool value = B;
};
}  // namespace tt_tapw

template <typename TA, typename TC, int DIR, bool NCHW, int KM, int CN, int WM, int WN, int G, int STAGES, int SPLIT>
__global__ void __launch_bounds__(3 * (KM / WM) * (CN / WN) * 32) tap_wgrad(const TtConvParams p) {
  using namespace tt_mma;
  constexpr int WMS = KM / WM, WNS = CN / WN, THREADS = 3 * WMS * WNS * 32;
  constexpr int MI = WM / 16, NI = WN / 8;  // m16 and n8 tiles per warp and tap
  static_assert(DIR == 2 && !NCHW, "tap_wgrad: weight gradient, NHWC");
  static_assert(sizeof(TA) == 2, "bf16 or fp16 inputs");
  static_assert(KM % WM == 0 && CN % WN == 0 && WM % 16 == 0 && WN % 16 == 0, "warp tiles");
  static_assert(G >= 1 && STAGES >= 2 && SPLIT >= 1, "parameters");

  extern __shared__ __align__(128) unsigned char tt_tapw_smem[];
  const u32 sbase = smem_addr(tt_tapw_smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int tr = warp / (WMS * WNS), wm = warp % (WMS * WNS) / WNS, wn = warp % WNS;
  const tt_tapw::Geometry geo = tt_tapw::geometry(p.q, G, KM, CN);
  const int ctiles = p.c / CN;
  const int k0 = blockIdx.y / ctiles * KM, c0 = blockIdx.y % ctiles * CN;
  int row0, row1;
  tt_tapw::row_slice(p.n * p.p, blockIdx.x, SPLIT, row0, row1);

  for (int i = tid * 16; i < STAGES * geo.stage_bytes; i += THREADS * 16)
    *reinterpret_cast<uint4*>(tt_tapw_smem + i) = make_uint4(0, 0, 0, 0);
  __syncthreads();

  const TA* x = static_cast<const TA*>(p.x);
  const TA* dy = static_cast<const TA*>(p.y);
  // Callers' pointers reach the kernel as given: 16-byte copies only where both tensors allow them,
  // else element copies. The choice is made once, between two copies of the main loop (run below):
  // with a run-time branch per stage, or per copy, ptxas spilled in the 16-byte path too.
  const bool vec = (((unsigned long long)p.x | (unsigned long long)p.y) & 15) == 0;
  const int dy_copies = G * p.q * (KM / 8), x_copies = G * 3 * p.w * (CN / 8);
  auto load = [&](auto vec_tag, int stage, int row) {
    const u32 s = sbase + stage * geo.stage_bytes;
    if (decltype(vec_tag)::value) {
      for (int i = tid; i < dy_copies; i += THREADS) {
        const tt_tapw::Copy c = tt_tapw::dy_copy(geo, p, row, row1, k0, KM, i);
        cp_async<16>(s + c.dst, dy + c.src, c.ok ? 16 : 0);
      }
      for (int i = tid; i < x_copies; i += THREADS) {
        const tt_tapw::Copy c = tt_tapw::x_copy(geo, p, row, row1, c0, CN, i);
        cp_async<16>(s + c.dst, x + c.src, c.ok ? 16 : 0);
      }
    } else {
      unsigned short* d = reinterpret_cast<unsigned short*>(tt_tapw_smem + stage * geo.stage_bytes);
      const unsigned short* dys = reinterpret_cast<const unsigned short*>(dy);
      const unsigned short* xs = reinterpret_cast<const unsigned short*>(x);
#pragma unroll 1
      for (int e = tid; e < (dy_copies + x_copies) * 8; e += THREADS) {
        const int i = e / 8, j = e % 8;
        const tt_tapw::Copy c = i < dy_copies ? tt_tapw::dy_copy(geo, p, row, row1, k0, KM, i)
                                              : tt_tapw::x_copy(geo, p, row, row1, c0, CN, i - dy_copies);
        d[c.dst / 2 + j] = c.ok ? (i < dy_copies ? dys : xs)[c.src + j] : (unsigned short)0;
      }
    }
  };

  auto run = [&](auto vec_tag) {
    float acc[3 * MI][NI][4];  // [s * MI + mi]: the warp's three taps
    zero(acc);
    const int steps = (row1 - row0 + G - 1) / G;
    TT_UNROLL
    for (int st = 0; st < STAGES - 1; ++st) {
      if (st < steps) load(vec_tag, st, row0 + st * G);
      cp_async_commit();
    }
    // ldmatrix.trans lane addressing: A (m = channel, k = position) from dy's S[position][channel],
    // lanes 0-7 / 8-15 / 16-23 / 24-31 -> (k 0-7, m 0-7), (k 0-7, m 8-15), (k 8-15, m 0-7), (k 8-15,
    // m 8-15); B (k = position, n = channel) from the input's S[slot][channel], lanes -> (k 0-7, n
    // 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15): b0 b1 of two n8 tiles.
    const int a_pos = (lane & 7) + ((lane >> 4) << 3), a_chunk = wm * WM / 8 + ((lane >> 3) & 1);
    const int b_pos = lane & 15, b_chunk = wn * WN / 8 + (lane >> 4);
    for (int it = 0; it < steps; ++it) {
      cp_async_wait<STAGES - 2>();
      __syncthreads();
      if (it + STAGES - 1 < steps) load(vec_tag, (it + STAGES - 1) % STAGES, row0 + (it + STAGES - 1) * G);
      cp_async_commit();
      const u32 s0 = sbase + (it % STAGES) * geo.stage_bytes;
      for (int t = 0; t < geo.positions; t += 16) {
        u32 af[MI][4];
        TT_UNROLL
        for (int mi = 0; mi < MI; ++mi) ldsm_x4<true>(af[mi], s0 + tt_tapw::dy_at(geo, t + a_pos) + (a_chunk + 2 * mi) * 16);
        TT_UNROLL
        for (int s = 0; s < 3; ++s) {
          const u32 xb = s0 + tt_tapw::x_at(geo, tr, s, t + b_pos) + b_chunk * 16;
          TT_UNROLL
          for (int nj = 0; nj < NI / 2; ++nj) {
            u32 b4[4];
            ldsm_x4<true>(b4, xb + nj * 32);
            const u32 b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};
            TT_UNROLL
            for (int mi = 0; mi < MI; ++mi) {
              mma<TA>(acc[s * MI + mi][2 * nj], af[mi], b0);
              mma<TA>(acc[s * MI + mi][2 * nj + 1], af[mi], b1);
            }
          }
        }
      }
    }
    cp_async_wait<0>();

    if (SPLIT > 1 && !splitk_reduce<3 * MI, NI, THREADS, SPLIT, THREADS * 3 * MI * NI * 4>(acc, p.workspace, blockIdx.y,
                                                                                           gridDim.y, blockIdx.x, tid))
      return;

    // Fragment element e: output channel g4 + 8 * (e / 2) of the m16 tile, input channel 2 * t4 + e % 2
    // of the n8 tile; dw[k][r][s][c] with the thread's first (k, r, 0, c) as the base.
    const int g4 = lane >> 2, t4 = lane & 3;
    TC* out = static_cast<TC*>(p.wt) + ((long long)(k0 + wm * WM + g4) * 9 + tr * 3) * p.c + c0 + wn * WN + 2 * t4;
    TT_UNROLL
    for (int s = 0; s < 3; ++s)
      TT_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        TT_UNROLL
        for (int ni = 0; ni < NI; ++ni)
          TT_UNROLL
          for (int e = 0; e < 4; ++e)
            out[((mi * 16 + (e >> 1) * 8) * 9 + s) * p.c + ni * 8 + (e & 1)] = tt_from_float<TC>(acc[s * MI + mi][ni][e]);
  };
  if (vec)
    run(tt_tapw::Flag<true>());
  else
    run(tt_tapw::Flag<false>());
}
