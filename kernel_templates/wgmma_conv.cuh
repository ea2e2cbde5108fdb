// Hopper (sm_90a) convolution in all three directions: implicit GEMM on wgmma, both operands
// loaded by TMA, the activations through the TMA's im2col mode. NHWC activations, KRSC filters,
// bf16 / fp16 in, fp32 accumulation, the output (row-major GEMM: y, dx or dw) in bf16, fp16 or
// fp32; groups == 1. The GEMM view of each direction and the copies' coordinates are in
// wgmma_conv_index.h; the reduction is walked in K steps of 64 (one 128-byte swizzle atom of
// 16-bit elements), so that a stage holds (BM + BN) lines of 128 bytes in every direction:
//   fwd (DIR 0): A = im2col of x (K-major), B = filters (K-major), K step = (tap, 64 channels).
//   dgrad (DIR 1, stride 1): A = im2col of dy (K-major), B = flipped filters read C-contiguous
//     (MN-major, wgmma transposes it), K step = (tap, 64 of K's channels). A strided 1x1 dgrad
//     without padding walks dy's pixels and scatters each row into its s x s block of dx, the
//     block's other pixels written as zeros. PHASE 1 (a strided dgrad, dilation 1, R >= stride):
//     the M tiles walk dx's stride phases in turn, each a stride-1 gather over dy on the phase's
//     pixel grid with only the taps that reach the phase, its rows stored to dx by the stride
//     (wgmma_conv_index.h); so no K step multiplies the zeros a strided dy would be padded with.
//   wgrad (DIR 2): A = dy as an N*P*Q x K matrix read K-contiguous (MN-major), B = im2col of x for
//     64 output pixels at each 64-column box's tap (MN-major), K step = 64 output pixels.
// The convolutions the constraints leave out go to mma_conv.
// The pipeline follows wgmma_gemm.cuh (device helpers shared with it in wgmma_common.h): one
// producer warpgroup (one thread issuing the copies into a STAGES-deep mbarrier ring) and
// CONSUMERS consumer warpgroups (setmaxnreg moves registers from the producer to them), a persistent
// grid walking the work units in grouped raster order, cooperative consumers (each owns
// BM / CONSUMERS rows of a tile) or ping-pong ones (PINGPONG: whole units in turn, one's epilogue
// overlapping the other's main loop).
// PHASE walks the phases heaviest first: a stride phase's tiles cost its taps (1, 2, 2 and 4 of a
// stride-2 3x3), and every SMs-th unit per block then ends most evenly. (Claiming units from a
// counter instead was 2-4% slower on an H100, in
// benchmarks/results/conv/2026-12-05_h200_conv_tables_claim_bn160_stg_648d293.md.)
// Split-K (SPLITK > 1, for grids that would leave multiprocessors idle, above all wgrad, whose
// filter tensor makes few tiles from a long N*P*Q reduction): a unit is one contiguous K range of
// one tile, split-major; the splits meet in the workspace and the last one sums them in split
// order (splitk_reduce.h), so results do not depend on timing.
// Stream-K (SCHED 1, cooperative consumers): the tiles of the last partial wave (all of them where
// there are fewer tiles than multiprocessors: l4_3x3_512's wgrad makes 72 of 256 x 128) are cut
// along their K steps into one even run per block, where split-K's units come in whole waves (72 x 2
// on 132 multiprocessors is two waves of half-tiles, no faster than one of whole ones).
// SWAP (fwd, dgrad): the consumers compute the transposed tile, the channels as wgmma's M and the
// pixels as its N, from the same stages (the filters' stage as A, the im2col stage as B). A 64-channel
// tile (C or K = 64: ResNet's first stage) otherwise runs m64n64 wgmmas, each B read once per m64 of
// pixels: 128 bytes of shared memory a cycle, all of it, at full math rate; as m64nWM one wgmma of 64
// channels reads the pixels once, a quarter less (96 bytes a cycle for WM = 128, 80 for WM = 256).
// Measured 4% faster on ResNet-50's l1_3x3_64 (64 x 256 ping-pong), slower on some other 64-channel
// layers, so the space holds both.
// HALO 1 (fwd, stride-1 dgrad; undilated): the activations come as one patch per tile instead of an
// im2col copy per K step: a tiled TMA box of the padded input rows the tile's pixels and the filter's
// height reach, all of a row's columns and its halo (WB = output width + S - 1 pixels), one
// 128-byte line per pixel and 64 channels. The tile walks an image's pixels on that WB-wide grid (the
// S - 1 halo columns of each row computed and never stored, each tile within one image), so tap
// (r, s)'s A operand is the patch from line r * WB + s on: a descriptor that many lines in, its
// base-offset field 0 (as wgmma_tap_wgrad's SHIFT 1 found right on the H100). Each input pixel is read
// from L2 once a tile rather than once a tap: Inception's 5x5 of 48 channels read 25 im2col copies
// of every pixel per tile and was bound by L2 bandwidth (BM 64 and stream-K no faster). Two patch
// buffers, so that the next tile's loads while this one computes; a patch is freed once every
// wgmma of its tile has retired.
// CLUSTERN (wgrad; 2 or 4): clusters of CLUSTERN CTAs on adjacent tile columns of one tile row, which
// share A (dy's BM output channels): each CTA loads BM / 64 / CLUSTERN of its 64-row boxes and multicasts
// them to the cluster, so that a stage costs each CTA (BM / CLUSTERN + BN) lines from L2 instead of
// BM + BN. A work unit is then a cluster's CLUSTERN tiles, a worker a cluster: the cluster's CTAs walk
// the same units and K steps (the stages must match), rank r taking the unit's r-th tile column; one
// past the last column computes and stores nothing. Stream-K streams units, each rank's parts meeting
// in a workspace region of its own.
// Epilogue: accumulators go through a padded fp32 staging buffer, 32 columns at a time, and are
// written as 16-byte vectors along the output's rows (ld = N, N % 8 == 0 by constraint), or as
// scalars when the output is not 16-byte aligned. EPI 1 (16-bit output, rows of the tile = rows of
// the output): each warp stores its own 16 rows of a 64-column group by TMA, with no barrier
// between the warps (map_out, conv_tma_params.h).
#include "conv_tma_params.h"
#include "splitk_reduce.h"
#include "wgmma_conv_index.h"
#include "wgmma_common.h"
#include "wgmma_sched.h"

namespace tt_wgconv {

// HALO: a consumer's K steps [kb, ke) as mma_k_tiles (wgmma_common.h) runs them, A from the
// tile's patch at a_base (this consumer's first pixel line; chunk c of the channels chunk_bytes on)
// instead of the ring, B from the ring. Returns the stage of the last group (-1 for none).
template <class Mma, bool B_K, int MI, int NACC, class R>
TT_DEVICE int halo_k_tiles(const R& ring, float (&acc)[MI][NACC], tt_wg::u32 a_base, tt_wg::u32 chunk_bytes, int wb, int kb,
                           int ke, int chunks, int S, int& s, tt_wg::u32& ph, int lane) {
  using namespace tt_wg;
  a_base = __shfl_sync(0xffffffffu, a_base, 0);  // uniform, as mma_k_tiles' offsets
  constexpr u32 KSTEP_B = B_K ? 32 : 2048;
  const u64 db0 = B_K ? desc(ring.b(0), 16, 1024) : desc(ring.b(0), 64 * 128, 1024);
  tt_conv::Taps k = tt_conv::taps_of_tile(kb, chunks, S);
  int prev = -1;
  for (int kt = kb; kt < ke; ++kt) {
    const u64 da = desc(a_base + (u32)k.chunk * chunk_bytes + (u32)(k.r * wb + k.s) * 128u, 16, 1024);
    mbar_wait(ring.full(s), ph);
    const u64 db = db0 + (u64)((u32)s * (R::B_BYTES >> 4));
    wg_fence();
    TT_UNROLL
    for (int kk = 0; kk < 4; ++kk) {
      TT_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        Mma::mma(acc[mi], da + (mi * 64 * 128 + kk * 32) / 16, db + kk * KSTEP_B / 16, (kt > kb || kk > 0) ? 1 : 0);
    }
    wg_commit();
    if (prev >= 0) {
      wg_wait<1>();
      ring.release(prev, lane);
    }
    prev = s;
    R::advance(s, ph);
    tt_conv::next_tile(k, chunks, S);
  }
  return prev;
}

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

template <typename TA, typename TC, int DIR, int BM, int BN, int STAGES, int CONSUMERS, int RASTER, int GROUP,
          int PINGPONG, int SPLITK, int PHASE = 0, int SWAP = 0, int SCHED = 0, int EPI = 0, int HALO = 0,
          int CLUSTERN = 1>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    wgmma_conv(const __grid_constant__ TtConvTmaParams p) {
  using namespace tt_wg;
  static_assert(sizeof(TA) == 2, "wgmma_conv: bf16 or fp16 inputs");
  static_assert(DIR >= 0 && DIR <= 2, "DIR: 0 fwd, 1 dgrad, 2 wgrad");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "1 or 2 consumer warpgroups");
  static_assert(PINGPONG == 0 || CONSUMERS == 2, "ping-pong needs two consumers");
  static_assert(SPLITK >= 1, "SPLITK: K splits per tile");
  static_assert(PHASE == 0 || DIR == 1, "PHASE: strided input gradients");
  static_assert(SCHED == 0 || (SCHED == 1 && SPLITK == 1 && PINGPONG == 0 && PHASE == 0),
                "SCHED 1: stream-K instead of split-K, cooperative consumers, no phases");
  static_assert(EPI == 0 || (EPI == 1 && sizeof(TC) == 2 && SWAP == 0 && PHASE == 0) ||
                    (EPI == 2 && sizeof(TC) == 2 && SWAP == 0),
                "EPI 1: 16-bit output, SWAP 0, no phases (the rows of a tile are rows of the output); "
                "EPI 2: 16-bit output, SWAP 0");
  static_assert(HALO == 0 || (HALO == 1 && DIR != 2 && PHASE == 0 && SPLITK == 1 && SCHED == 0 && EPI == 0 && SWAP == 0),
                "HALO 1: fwd or stride-1 dgrad, whole tiles, the staged epilogue, SWAP 0");
  static_assert(CLUSTERN == 1 || ((CLUSTERN == 2 || CLUSTERN == 4) && DIR == 2 && (BM / 64) % CLUSTERN == 0),
                "CLUSTERN 2 or 4: weight gradients, each CTA a whole number of dy's 64-row boxes");
  constexpr bool PH = PHASE != 0;
  constexpr bool HL = HALO != 0;
  constexpr int CL = CLUSTERN;
  constexpr bool PP = PINGPONG != 0;
  constexpr bool SW = SWAP != 0;     // channels as wgmma's M (above)
  constexpr bool SW2 = SWAP == 2;    // ... with a chunk of the epilogue written by all four warps
  constexpr int WM = PP ? BM : BM / CONSUMERS;  // rows per consumer warpgroup
  constexpr int MI = SW ? BN / 64 : WM / 64;    // m64 sub-tiles per consumer
  constexpr int NACC = SW ? WM / 2 : BN / 2;    // accumulators per m64 and thread
  static_assert(SWAP >= 0 && SWAP <= 2, "SWAP: 0, 1 or 2");
  static_assert(SWAP == 0 || (DIR != 2 && (BN == 64 || BN == 128) && (WM == 64 || WM == 128 || WM == 256)),
                "SWAP: fwd or dgrad, 64 or 128 channels, 64, 128 or 256 pixels per consumer");
  static_assert(WM % 64 == 0 && ((MI >= 1 && MI <= 2) || SW), "BM / CONSUMERS must be 64 or 128");
  // BN 160 (fwd, dgrad): a tile of all the channels of a layer of 144-160 (MobileNet's 1x1 of 144), where
  // 192 leaves a quarter of each tile empty; dgrad's MN-major filters still come in 64-channel boxes, so its
  // stage holds three (the last one's channels past the tile are loaded and never read).
  static_assert((BN % 64 == 0 || (BN == 160 && DIR != 2 && !SW)) && BN <= 256, "BN is 64, 128, 160, 192 or 256");
  constexpr bool A_K = DIR != 2, B_K = DIR == 0;  // operands K-major (else MN-major, 64-line boxes)
  constexpr int B_LINES = B_K ? BN : (BN + 63) / 64 * 64;
  // 128-byte lines of 64 K elements or 64 rows; HALO: A from the patches, not the ring
  constexpr u32 A_STAGE = HL ? 0 : BM * 128, B_STAGE = B_LINES * 128;
  constexpr u32 STAGE_BYTES = A_STAGE + B_STAGE;
  constexpr int BOXP = DIR == 2 ? 64 : (BM < 128 ? BM : 128);  // pixels per im2col copy
  constexpr int BOXES = DIR == 2 ? BN / 64 : BM / BOXP;         // im2col copies per stage
  constexpr int EN = 32;  // epilogue chunk (columns), staged as tt_wgconv::staged_float lays it out
  // SWAP: the filters' stage is wgmma's A (K-major for fwd, C-contiguous for dgrad), the im2col stage its B.
  typedef typename Pick<SW, TtWgmma<WM, IsBf16<TA>::value, B_K ? 0 : 1, 0>,
                        TtWgmma<BN, IsBf16<TA>::value, A_K ? 0 : 1, B_K ? 0 : 1>>::type Mma;

  typedef Ring<STAGES, A_STAGE, B_STAGE, CL> RingT;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Staging: CONSUMERS x WM x EN floats; EPI 1 and 2: two 2 KB boxes a warp (16 rows x 64 columns of 16 bits).
  constexpr int STG_FLOATS = EPI != 0 ? 4 * 2 * 2048 / 4 : WM * EN;  // per consumer
  const RingT ring(smem_raw, CONSUMERS * STG_FLOATS * 4);
  const u32 sA = ring.sA, sB = ring.sB, bars = ring.bars;

  const TtConvParams& cv = p.c;
  // PHASE: the M tiles walk the stride phases in turn, tpp tiles of one phase's grid each, and M
  // is a phase's pixels (wgmma_conv_index.h).
  const tt_wgconv::PhaseGrid pg = PH ? tt_wgconv::phase_grid(cv) : tt_wgconv::PhaseGrid{0, 0, 0, 0};
  const tt_wgconv::Im2col view = PH ? tt_wgconv::im2col_phase(cv, pg) : tt_wgconv::im2col_of(cv, DIR);
  const bool scatter = !PH && DIR == 1 && tt_wgconv::dgrad_scatters(cv);
  // HALO: the patch's width (a row of the output and its halo) and rows, an image's pixels on that
  // grid (the last row's halo left out; M: tpp tiles an image), the bytes of a 64-channel patch: S
  // lines more than the box, which a halo column's last taps read past the last row (never stored).
  const int hwb = view.grid_w + cv.s - 1, hpr = (BM + hwb - 2) / hwb + cv.r;
  const u32 hch_bytes = (u32)((128 * (hwb * hpr + cv.s) + 1023) / 1024 * 1024);
  const int M = PH ? cv.n * pg.rows * pg.cols : HL ? view.grid_h * hwb - (cv.s - 1)
                : scatter ? cv.n * cv.p * cv.q : cv.gemm_m, N = cv.gemm_n;
  const int tpp = (M + BM - 1) / BM;
  const int tiles_m = PH ? cv.stride_h * cv.stride_w * tpp : HL ? cv.n * tpp : tpp, tiles_n = (N + BN - 1) / BN;
  const int tiles = tiles_m * tiles_n;
  // Work units (CLUSTERN: a cluster's tiles, CL adjacent tile columns) and workers (blocks, or clusters).
  const int tiles_ng = (tiles_n + CL - 1) / CL, units = tiles_m * tiles_ng;
  const int total = units * SPLITK;
  const int worker = (int)blockIdx.x / CL, workers = (int)gridDim.x / CL;
  // The same, read where SCHED 0's loops start (with CLUSTERN 1 the machine code is then what it was before it).
  auto first_unit = [] { return (int)blockIdx.x / CL; };
  auto unit_step = [] { return (int)gridDim.x / CL; };
  const int rank = CL > 1 ? (int)cluster_rank() : 0;
  // fwd, dgrad: K steps per filter tap, the last one's channels past C (K) read as the copies' zero fill.
  const int chunks = ((DIR == 1 ? cv.k : cv.c) + 63) / 64;
  const bool whole_chunks = (DIR == 1 ? cv.k : cv.c) % 64 == 0;
  const int KT = DIR == 2 ? (cv.gemm_k + 63) / 64 : cv.r * cv.s * chunks;  // PHASE: per phase, below
  // Work unit u -> tile (mb, nb) and its K steps [kb, ke). Split-major, so that the units running
  // at once read the same K range of neighbouring tiles' operands.
  auto unit_tile = [&](int u, int& mb, int& nb, int& kb, int& ke) {
    int split = 0, b;
    if (SPLITK > 1) split = u / units, u -= split * units;
    tile_coords<RASTER, GROUP>(u, tiles_m, tiles_ng, mb, nb, b);
    nb = nb * CL + rank;
    int kt_all = KT;
    if (PH) {
      const tt_conv::Phase x = tt_wgconv::phase_of(cv, pg, mb / tpp);
      kt_all = x.nr * x.ns * chunks;
    }
    tt_splitk::k_range<SPLITK>(kt_all, split, kb, ke);
  };
  // SCHED 1 (wgmma_sched.h): the units past the last full wave streamed along the K steps over all
  // workers, so that fewer tiles than multiprocessors (a wgrad's filter tensor) still keep every one
  // busy; the loops walk this worker's items 0, 1, ... instead of units (SCHED 0's loops walk the
  // units from `worker` by `workers`).
  const bool streams = SCHED == 1 && tt_sched::sched_streams(units, workers, KT);
  const int sk_first = streams ? 0 : worker, sk_step = streams ? 1 : workers;
  const int sk_total = streams ? tt_sched::items(1, units, workers, KT, worker) : total;
  // Unit (SCHED 1: item) u as unit_tile gives it; `it`: a streamed tile's part (parts 1 otherwise).
  auto unit_of = [&](int u, int& mb, int& nb, int& kb, int& ke, tt_sched::Item& it) {
    it.parts = 1;
    if (SCHED == 1 && streams) {
      it = tt_sched::item(1, units, workers, KT, worker, u);
      int b;
      tile_coords<RASTER, GROUP>(it.t, tiles_m, tiles_ng, mb, nb, b);
      nb = nb * CL + rank;
      kb = it.kb, ke = it.ke;
    } else {
      unit_tile(u, mb, nb, kb, ke);
    }
  };

  // HALO: after the ring's barriers, full[2] and empty[2] of the two patch buffers, then the buffers.
  const u32 pbars = bars + 16 * STAGES, patches = (pbars + 32 + 1023) & ~1023u;
  const u32 patch_bytes = HL ? (u32)chunks * hch_bytes : 0;
  // HALO: the units so far, the producer's of this block (buffer nunit % 2, its use nunit / 2) or a
  // consumer's: cooperative ones see every unit; ping-pong consumer cw every other one, all in buffer cw.
  int nunit = 0;
  if (HL && threadIdx.x == 0) {
    for (int b = 0; b < 2; ++b) {
      mbar_init(pbars + 8 * b, 1);
      mbar_init(pbars + 16 + 8 * b, PP ? 4 : CONSUMERS * 4);  // the warps of the consumer(s) reading it
    }
  }
  // empty: one arrival per consuming warp of the cluster
  if (threadIdx.x == 0) ring.init(1, (PP ? 4 : CONSUMERS * 4) * CL);
  __syncthreads();
  if (CL > 1) cluster_sync_after_init();  // the peers' barriers exist before any multicast or remote arrive

  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    // ------------------------------------------------------------------ producer
    if (CONSUMERS == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) {
      prefetch_map(&p.map_im2col);
      prefetch_map(&p.map_tiled);
      int s = 0;
      u32 ph = 0;
      for (int u = SCHED ? sk_first : first_unit(); u < (SCHED ? sk_total : total); u += SCHED ? sk_step : unit_step()) {
        int mb, nb, kb, ke;
        tt_sched::Item it;
        unit_of(u, mb, nb, kb, ke, it);
        const int m0 = mb * BM, n0 = nb * BN;
        if (DIR == 2) {
          for (int kt = kb; kt < ke; ++kt) {
            const u32 full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
            mbar_wait(empty, ph ^ 1);
            mbar_arrive_expect_tx(full, STAGE_BYTES);
            TT_UNROLL
            for (int i = 0; i < BM / 64; ++i) {  // CLUSTERN: box i by rank i % CL, to the whole cluster
              if (CL == 1) tma_load_3d(sA + s * A_STAGE + i * 64 * 128, &p.map_tiled, full, m0 + 64 * i, kt * 64, 0);
              else if (i % CL == rank)
                tma_load_3d_multicast(sA + s * A_STAGE + i * 64 * 128, &p.map_tiled, full, m0 + 64 * i, kt * 64, 0,
                                      (unsigned short)((1u << CL) - 1u));
            }
            const tt_wgconv::BoxStart box = tt_wgconv::box_start(view, kt * 64);
            TT_UNROLL
            for (int i = 0; i < BOXES; ++i) {  // a box past R*S*C (never stored) reloads the last one's tap
              const tt_wgconv::TapColumn tc = tt_wgconv::tap_column(cv, min(n0 + 64 * i, N - 64));
              tt_wgconv::tma_im2col_4d(sB + s * B_STAGE + i * 64 * 128, &p.map_im2col, full, tc.c, box.w, box.h,
                                       box.n, (unsigned short)(tc.s * cv.dil_w), (unsigned short)(tc.r * cv.dil_h));
            }
            if (++s == STAGES) { s = 0; ph ^= 1; }
          }
        } else {
          const tt_conv::Phase x = tt_wgconv::phase_of(cv, pg, PH ? mb / tpp : 0);
          const int mp = PH ? (mb % tpp) * BM : m0;  // the tile's first pixel of its grid
          tt_wgconv::BoxStart box[BOXES];
          TT_UNROLL
          for (int i = 0; i < BOXES; ++i) box[i] = tt_wgconv::box_start(view, mp + i * BOXP);
          if (HL) {  // the tile's patch: padded rows row0.. of its image, every column and the halo
            const int img = mb / tpp, row0 = (mb - img * tpp) * BM / hwb;
            const u32 b = (u32)nunit & 1u, patch = patches + b * patch_bytes;
            mbar_wait(pbars + 16 + 8 * b, (((u32)nunit >> 1) & 1u) ^ 1u);
            mbar_arrive_expect_tx(pbars + 8 * b, (u32)chunks * 128u * (u32)(hwb * hpr));
            for (int c = 0; c < chunks; ++c)
              tma_load_4d(patch + (u32)c * hch_bytes, &p.map_im2col, pbars + 8 * b, c * 64, -view.pad_w,
                          row0 - view.pad_h, img);
            ++nunit;
          }
          tt_wgconv::KStep k =
              PH ? tt_conv::phase_taps_of_tile(kb, chunks, x) : tt_conv::taps_of_tile(kb, chunks, cv.s);
          for (int kt = kb; kt < ke; ++kt) {
            const u32 full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
            mbar_wait(empty, ph ^ 1);
            mbar_arrive_expect_tx(full, STAGE_BYTES);
            const u32 a = sA + s * A_STAGE;
            const unsigned short off_w = (unsigned short)(PH ? tt_wgconv::phase_off_w(cv, pg, x, k.s) : k.s * cv.dil_w);
            const unsigned short off_h = (unsigned short)(PH ? tt_wgconv::phase_off_h(cv, pg, x, k.r) : k.r * cv.dil_h);
            TT_UNROLL
            for (int i = 0; i < BOXES; ++i)
              if (!HL)
                tt_wgconv::tma_im2col_4d(a + i * BOXP * 128, &p.map_im2col, full, k.chunk * 64, box[i].w, box[i].h,
                                         box[i].n, off_w, off_h);
            if (DIR == 0) {
              // The filters as K x (R*S*C) rows, or, where C is not whole chunks, as {C, R*S, K} so that
              // a chunk past C reads zeros, not the next tap's channels (conv_tma_params.h).
              if (whole_chunks) tma_load_3d(sB + s * B_STAGE, &p.map_tiled, full, kt * 64, n0, 0);
              else tma_load_3d(sB + s * B_STAGE, &p.map_tiled, full, k.chunk * 64, k.r * cv.s + k.s, n0);
            } else {
              const int tap = PH ? k.r * cv.s + k.s : tt_wgconv::flipped_tap(cv, k.r, k.s);
              TT_UNROLL
              for (int i = 0; i < B_LINES / 64; ++i)
                tma_load_3d(sB + s * B_STAGE + i * 64 * 128, &p.map_tiled, full, n0 + 64 * i, tap, k.chunk * 64);
            }
            if (PH) tt_conv::next_phase_tile(k, chunks, x);
            else tt_conv::next_tile(k, chunks, cv.s);
            if (++s == STAGES) { s = 0; ph ^= 1; }
          }
        }
      }
      if (CL > 1) ring.drain(s, ph);  // no CTA of a cluster leaves while a peer may still use it
    }
  } else {
    // ------------------------------------------------------------------ consumers
    if (CONSUMERS == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int cw = wg - 1;
    const int tid = threadIdx.x - 128 * wg;
    const int warp = tid / 32, lane = tid % 32;
    float* stg = ring.staging + cw * STG_FLOATS;
    int boxes_stored = 0;  // EPI 1: this warp's boxes so far, whose parity picks its buffer
    constexpr int V = 16 / (int)sizeof(TC);  // elements per 16-byte vector of the output
    constexpr int TPR = EN / V;              // threads per row of a chunk
    constexpr int RPP = 128 / TPR;           // rows per pass
    TC* Y = reinterpret_cast<TC*>(DIR == 0 ? cv.y : DIR == 1 ? cv.x : cv.wt);
    const long long ldy = N;
    const bool vec_ok = (unsigned long long)Y % 16 == 0;

    float acc[MI][NACC];
    int s = 0;
    u32 ph = 0;
    // Ping-pong: the consumers take turns, unit by unit; each skips the K steps of the other's
    // units in the ring.
    auto skip_unit = [&](int u) {
      if (u >= total) return;
      int mb, nb, kb, ke;
      unit_tile(u, mb, nb, kb, ke);
      RingT::skip(s, ph, ke - kb);
    };
    const int first = first_unit(), step = unit_step();
    if (PP && cw == 1) skip_unit(first);
    const int u_step = PP ? 2 * step : step;
    for (int u = SCHED ? sk_first : first + (PP ? cw * step : 0); u < (SCHED ? sk_total : total);
         u += SCHED ? sk_step : u_step) {
      int mb, nb, kb, ke;
      tt_sched::Item it;
      unit_of(u, mb, nb, kb, ke, it);
      if (PP && u != first) pingpong_wait(cw);
      // The constraints keep KT >= SPLITK, so every unit has a K step and leaves a stage to release.
      int prev;
      u32 hbuf = 0;  // HALO: the tile's patch buffer
      if constexpr (HL) {
        const int img = mb / tpp, e0 = (mb - img * tpp) * BM;
        hbuf = PP ? (u32)cw : (u32)nunit & 1u;
        mbar_wait(pbars + 8 * hbuf, PP ? (u32)nunit & 1u : ((u32)nunit >> 1) & 1u);
        ++nunit;
        const u32 a_base = patches + hbuf * patch_bytes + (u32)(e0 - e0 / hwb * hwb + (PP ? 0 : cw * WM)) * 128u;
        prev = tt_wgconv::halo_k_tiles<Mma, B_K>(ring, acc, a_base, hch_bytes, hwb, kb, ke, chunks, cv.s, s, ph, lane);
      } else if constexpr (SW)
        prev = mma_k_tiles<Mma, B_K, true, 64>(SwappedRing<RingT>{ring}, acc, 0, kb, ke, s, ph, lane, PP ? 0 : cw * WM * 128);
      else
        prev = mma_k_tiles<Mma, A_K, B_K, 64>(ring, acc, PP ? 0 : cw * MI * 64 * 128, kb, ke, s, ph, lane);
      if (PP && u + step < total) pingpong_pass(cw);
      finish_k_tiles<false>(ring, acc, prev, lane);
      if (HL && lane == 0) mbar_arrive(pbars + 16 + 8 * hbuf);  // every wgmma reading the patch has retired
      if (PP) skip_unit(u + step);
      if (CL > 1 && nb >= tiles_n) continue;  // a cluster's tile past the last column: its loads were for the peers

      // SCHED 1: a streamed tile's parts meet in the workspace (a counter per streamed tile, then a
      // slot per part), the last to arrive summing them in K order; it then stores the tile whole.
      if constexpr (SCHED == 1) {
        if (it.parts > 1) {
          constexpr int GT = 128 * CONSUMERS;
          const NamedGroup group{CONSUMERS == 1 ? 1 : 5, GT};
          // CLUSTERN: rank r's parts in region r of the workspace.
          void* ws = static_cast<char*>(cv.workspace) + (CL > 1 ? rank * tt_sched::workspace_bytes(workers, units, BM * BN) : 0);
          float4* slots = reinterpret_cast<float4*>(tt_sched::part_slots(ws, workers, it, BM * BN));
          if (!tt_splitk::reduce_slots<MI * NACC, GT, BM * BN, 1, false, 4>(&acc[0][0], tt_sched::part_counter(ws, it),
                                                                           slots, it.part, it.parts, threadIdx.x - 128, group))
            continue;
        }
      }
      if (SPLITK > 1) {
        constexpr int GT = PP ? 128 : 128 * CONSUMERS;  // threads holding the tile
        const NamedGroup group{(PP || CONSUMERS == 1) ? 1 + cw : 5, GT};
        if (!tt_splitk::reduce<MI * NACC, GT, SPLITK, BM * BN, tt_splitk::loads_beside(MI * NACC, 0)>(
                &acc[0][0], cv.workspace, (long long)mb * tiles_n + nb, tiles, u / units, PP ? tid : threadIdx.x - 128,
                group))
          continue;
      }

      // ---------------------------------------------------------------- epilogue
      const int m_base = (PH || HL ? mb % tpp : mb) * BM + (PP ? 0 : cw * WM);
      // HALO: pixel gm of the image's WB-wide grid -> its output row, -1 for a halo column.
      auto halo_row = [&](int gm) -> long long {
        const int img = mb / tpp, y = gm / hwb, xq = gm - y * hwb;
        return xq < view.grid_w ? ((long long)img * view.grid_h + y) * view.grid_w + xq : -1;
      };
      const tt_conv::Phase xo = tt_wgconv::phase_of(cv, pg, PH ? mb / tpp : 0);
      if constexpr (EPI != 0) {
        // Each warp stores its own 16 rows of a 64-column group: stmatrix into one of its two 2 KB
        // buffers (the 128-byte swizzle of EPI 1's map), then EPI 1: fenced, one box stored by lane 0
        // by TMA, which clips rows past M and columns past N; EPI 2: read back as 16-byte vectors,
        // each lane storing rows lane / 8 + 4 i (4 rows of 128 bytes a warp instruction), checked
        // against M and N here, a phase's rows scattered to dx as the staged epilogue does. No barrier
        // between the warps (cuDNN's kernel for MobileNet's 1x1 input gradient stores so; the staged
        // epilogue below waited at a warpgroup barrier per chunk for a third of its time); EPI 2 waits
        // on no bulk store either. A group past N or a slice past M is skipped by the whole warp.
        int erow[MI][4];  // EPI 2: the output row of each of the lane's rows (-1: none)
        if constexpr (EPI == 2) {
          TT_UNROLL
          for (int mi = 0; mi < MI; ++mi) {
            TT_UNROLL
            for (int i = 0; i < 4; ++i) {
              const int gm = m_base + mi * 64 + warp * 16 + lane / 8 + 4 * i;
              erow[mi][i] = gm >= M ? -1 : PH ? (int)tt_wgconv::phase_dx_row(cv, pg, xo, gm) : gm;
            }
          }
        }
        const u32 wbuf = smem_addr(stg) + (u32)warp * 4096u;
        TT_UNROLL
        for (int g = 0; g < (BN + 63) / 64; ++g) {
          const int n0 = nb * BN + g * 64;
          if (n0 >= N) break;
          TT_UNROLL
          for (int mi = 0; mi < MI; ++mi) {
            const int row0 = m_base + mi * 64 + warp * 16;
            if (row0 >= M) continue;
            const u32 buf = wbuf + (u32)(boxes_stored & 1) * 2048u;
            if (EPI == 1 && lane == 0) bulk_wait_read<1>();  // the buffer's store before last has read it
            __syncwarp();  // EPI 2: the lanes' reads of the buffer two boxes ago are done
            TT_UNROLL
            for (int q = 0; q < 4; ++q) {  // fixed trips, so that acc is indexed by constants
              if (g * 64 + q * 16 >= BN) break;    // BN 160's last group: 32 columns
              const int j = (g * 64 + q * 16) / 8;  // the 8-column block of the accumulators
              const float* f0 = &acc[mi][j * 4];
              const float* f1 = &acc[mi][(j + 1) * 4];
              const u32 r0 = (u32)tt_from_float<TC>(f0[0]).bits | ((u32)tt_from_float<TC>(f0[1]).bits << 16);
              const u32 r1 = (u32)tt_from_float<TC>(f0[2]).bits | ((u32)tt_from_float<TC>(f0[3]).bits << 16);
              const u32 r2 = (u32)tt_from_float<TC>(f1[0]).bits | ((u32)tt_from_float<TC>(f1[1]).bits << 16);
              const u32 r3 = (u32)tt_from_float<TC>(f1[2]).bits | ((u32)tt_from_float<TC>(f1[3]).bits << 16);
              // Tiles: rows 0-7 / 8-15 of columns 0-7, then of columns 8-15; lane 8 t + i: tile t's row i.
              const int t = lane >> 3, r = (t & 1) * 8 + (lane & 7), c16 = 2 * q + (t >> 1);
              stmatrix_x4(buf + (u32)(r * 128 + ((c16 ^ (r & 7)) << 4)), r0, r1, r2, r3);
            }
            if constexpr (EPI == 1) {
              fence_async_smem();
              __syncwarp();
              if (lane == 0) {
                tma_store_3d(&p.map_out, buf, n0, row0, 0);
                bulk_commit();
              }
            } else {
              __syncwarp();
              const int c16 = lane & 7, col = g * 64 + c16 * 8;
              TT_UNROLL
              for (int i = 0; i < 4; ++i) {
                const int r = lane / 8 + 4 * i;
                if (col < BN && n0 + c16 * 8 < N && erow[mi][i] >= 0) {
                  const uint4 v = lds_v4(buf + (u32)(r * 128 + ((c16 ^ (r & 7)) << 4)));
                  *reinterpret_cast<uint4*>(Y + (long long)erow[mi][i] * ldy + n0 + c16 * 8) = v;
                }
              }
            }
            ++boxes_stored;
          }
        }
        continue;
      }
      const int n_tile = nb * BN;
      // The rows of Y this thread stores (vector path, not scattered; -1: none), found once a tile
      // rather than once a chunk: a phase's pixel -> dx row costs two divisions.
      constexpr int RPT = WM / RPP;
      long long dst[RPT];
      TT_UNROLL
      for (int k = 0; k < RPT; ++k) {
        const int gm = m_base + tid / TPR + k * RPP;
        dst[k] = gm >= M ? -1 : PH ? tt_wgconv::phase_dx_row(cv, pg, xo, gm) : HL ? halo_row(gm) : gm;
      }
      TT_UNROLL
      for (int ch = 0; ch < BN / EN; ++ch) {
        // A chunk wholly past N (a 192-column tile of MobileNet's 144 channels: the last of six) is
        // neither staged nor stored; the same for every thread of the group, so no barrier is missed.
        if (!SW && !SW2 && n_tile + ch * EN >= N) break;
        named_sync(1 + cw, 128);  // the previous chunk's staging reads finished
        // SWAP 2: chunk ch is half h of the pixels by the 64 channels of m64 mi2, all four warps writing
        // (swap2_row); scalar writes as SWAP 1's below.
        const int mi2 = ch / 2, h = ch % 2;
        if constexpr (SW2) {
          const int c = (warp % 2) * 16 + (lane >> 2);
          TT_UNROLL
          for (int j = 0; j < WM / 16; ++j) {
            const float* f = &acc[mi2][(h * (WM / 16) + j) * 4];
            const int row = tt_wgconv::swap2_staged_row(WM, warp, j, lane);
            stg[tt_wgconv::staged_float(row, c)] = f[0];
            stg[tt_wgconv::staged_float(row + 1, c)] = f[1];
            stg[tt_wgconv::staged_float(row, c + 8)] = f[2];
            stg[tt_wgconv::staged_float(row + 1, c + 8)] = f[3];
          }
        } else if (SW) {
          // The chunk's 32 channels are rows of one m64 held by two of the four warps (16 each), each
          // thread's values in pairs of pixels: scalar writes, every bank once a warp.
          if (warp / 2 == ch % 2) {
            const int c = (warp % 2) * 16 + (lane >> 2);
            TT_UNROLL
            for (int j = 0; j < WM / 8; ++j) {
              const float* f = &acc[(ch * EN) / 64][j * 4];
              const int row = j * 8 + 2 * (lane & 3);
              stg[tt_wgconv::staged_float(row, c)] = f[0];
              stg[tt_wgconv::staged_float(row + 1, c)] = f[1];
              stg[tt_wgconv::staged_float(row, c + 8)] = f[2];
              stg[tt_wgconv::staged_float(row + 1, c + 8)] = f[3];
            }
          }
        } else {
          TT_UNROLL
          for (int mi = 0; mi < MI; ++mi) {
            TT_UNROLL
            for (int j = 0; j < EN / 8; ++j) {
              const float* f = &acc[mi][(ch * EN / 8 + j) * 4];
              const int col = j * 8 + 2 * (lane & 3);
              const int row = mi * 64 + warp * 16 + (lane >> 2);
              *reinterpret_cast<float2*>(stg + tt_wgconv::staged_float(row, col)) = make_float2(f[0], f[1]);
              *reinterpret_cast<float2*>(stg + tt_wgconv::staged_float(row + 8, col)) = make_float2(f[2], f[3]);
            }
          }
        }
        named_sync(1 + cw, 128);
        const int c = (tid % TPR) * V;
        const int gn = n_tile + ch * EN + c;
        if (vec_ok) {
          TT_UNROLL
          for (int k = 0; k < RPT; ++k) {
            // SWAP 2: staging row r is the pixel of the thread's row kk (swap2_row), whose dst is found.
            const int r = tid / TPR + k * RPP, kk = SW2 ? h * (RPT / 2) + k % (RPT / 2) : k;
            const tt_wgconv::Swap2Row x2 = tt_wgconv::swap2_row(WM, h, r);
            const int gm = m_base + (SW2 ? x2.pixel : r);
            const int gnk = SW2 ? n_tile + mi2 * 64 + x2.channel + c : gn;
            if (gm < M && gnk < N) {  // N % V == 0: a vector is all in or all out
              float v[V];
              TT_UNROLL
              for (int q = 0; q < V / 4; ++q) {
                const float4 x = *reinterpret_cast<const float4*>(stg + tt_wgconv::staged_float(r, c + 4 * q));
                v[4 * q] = x.x; v[4 * q + 1] = x.y; v[4 * q + 2] = x.z; v[4 * q + 3] = x.w;
              }
              if (DIR == 1 && scatter) {
                const tt_wgconv::Pixel b = tt_wgconv::dgrad_block(cv, gm);
                for (int dh = 0; dh < cv.stride_h && b.h + dh < cv.h; ++dh)
                  for (int dw = 0; dw < cv.stride_w && b.w + dw < cv.w; ++dw) {
                    if (dh > 0 || dw > 0) {
                      TT_UNROLL
                      for (int i = 0; i < V; ++i) v[i] = 0.0f;
                    }
                    CVec<TC, V>::store(Y + (((long long)b.n * cv.h + b.h + dh) * cv.w + b.w + dw) * ldy + gnk, v);
                  }
              } else if (dst[kk] >= 0) {
                CVec<TC, V>::store(Y + dst[kk] * ldy + gnk, v);
              }
            }
          }
        } else {
          // dx not 16-byte aligned (rare): kept rolled, since unrolled this path was most of the
          // kernel's machine code and instruction fetch stalled the warps of every instance.
#pragma unroll 1
          for (int i = tid; i < WM * EN; i += 128) {
            const int r = i / EN, cc = i % EN;
            const tt_wgconv::Swap2Row x2 = tt_wgconv::swap2_row(WM, h, r);
            const int gm = m_base + (SW2 ? x2.pixel : r);
            const int g = SW2 ? n_tile + mi2 * 64 + x2.channel + cc : n_tile + ch * EN + cc;
            if (gm < M && g < N) {
              const TC v = tt_from_float<TC>(stg[tt_wgconv::staged_float(r, cc)]);
              if (DIR == 1 && scatter) {
                const tt_wgconv::Pixel b = tt_wgconv::dgrad_block(cv, gm);
                for (int dh = 0; dh < cv.stride_h && b.h + dh < cv.h; ++dh)
                  for (int dw = 0; dw < cv.stride_w && b.w + dw < cv.w; ++dw)
                    Y[(((long long)b.n * cv.h + b.h + dh) * cv.w + b.w + dw) * ldy + g] =
                        (dh > 0 || dw > 0) ? tt_from_float<TC>(0.0f) : v;
              } else {
                const long long row = PH ? tt_wgconv::phase_dx_row(cv, pg, xo, gm) : HL ? halo_row(gm) : gm;
                if (row >= 0) Y[row * ldy + g] = v;
              }
            }
          }
        }
      }
    }
    // The CTA's shared memory must outlive the TMA stores' reads of it.
    if (EPI == 1 && lane == 0) bulk_wait_read<0>();
  }
}
