// Tensor-core implicit-GEMM convolution for sm_80+ (mma.sync m16n8k16 + ldmatrix + a STAGES-deep
// cp.async ring in XOR-swizzled dynamic shared memory), bf16 / fp16 inputs, fp32 accumulation,
// NHWC activations and KRSC filters (NCHW is simt_conv's), all three directions
// (solutions/conv_problem.h gives each one's GEMM, per group; blockIdx.z = group * SPLITK + split):
//
//            A (M x K)                      B (K x N)                          written, row-major
//   fwd      x gathered, K-major            filters, K-major (rows of KRSC)    y   [N*P*Q][K]
//   dgrad    dy gathered, K-major           filters, N-major (C contiguous)    dx  [N*H*W][C]
//   wgrad    dy, M-major (K contiguous)     x gathered, N-major                dw  [K][R*S*C]
//
// fwd and dgrad walk their reduction as (r, s, channel chunk of BK): within a K tile the filter
// tap is fixed, so a thread's gathered rows keep a precomputed offset and tap mask
// (mma_conv_index.h) and each tile adds one uniform tap offset. wgrad's block columns are
// (r, s, chunk of BN channels) for the same reason, and its reduction runs over output pixels,
// which each thread carries forward BK at a time. With FLAT (fwd), a K tile is instead BK
// consecutive indices of the (r, s, c) reduction: no zero-filled channels when C is small (the
// 3-channel stem would otherwise multiply 29 zeros for every 3 channels of a 32-wide tile), at the
// price of two divisions per thread and tile. Channels past a chunk's end and taps in the
// padding are copied as zeros (cp.async with src-size 0). A copy is VB bytes: 16-byte vectors need
// channel counts divisible by 8 (the JSON's constraints pick the widest VB the channels allow);
// VB == 2, or a base pointer not aligned to VB (the runtime passes callers' pointers through),
// copies element by element with synchronous loads.
//
// PHASE (dgrad with stride u x v > 1): a dx pixel receives only the filter taps whose offset has
// its parity, so gathering all R*S taps per pixel and zero-filling the rest (PHASE 0) multiplies
// zeros for all but 1 / (u*v) of the work (3/4 of it for 3x3 stride 2). PHASE 1 is the sub-pixel
// decomposition: M walks dx phase by phase (y % u, x % v), each M tile lies in one phase (the grid
// holds ceil(pixels / BM) tiles per phase; a block finds its phase once, mma_conv_index.h Phase),
// and the K loop visits that phase's taps only. Gathered rows and the epilogue's output rows are
// the phase's pixels, one division per row at setup and per stored row. A phase that no tap
// reaches (stride > filter) runs no K tile and stores zeros.
//
// Split-K (wgrad's reduction is N*P*Q long while its output is small): splits own contiguous
// ranges of K tiles and meet in tt_mma::splitk_reduce (deterministic; leaves the workspace zeroed).
// Tensors must stay below 2^31 elements (32-bit offsets; a constraint in the JSON).
#include "conv_params.h"
#include "mma_common.h"
#include "mma_conv_index.h"

namespace tt_mma_conv {

using tt_mma::u32;
using tt_mma::swz;
typedef unsigned short u16;

// Copies VB bytes from src to shared dst, or zeros when !ok.
template <int VB>
TT_DEVICE void copy(u32 dst, const u16* src, bool ok, bool vec) {
  if (VB > 2 && vec) {
    tt_mma::cp_async<(VB > 2 ? VB : 4)>(dst, src, ok ? VB : 0);
  } else {
    TT_UNROLL
    for (int j = 0; j < VB / 2; ++j) {
      const u16 v = ok ? src[j] : (u16)0;
      asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(dst + 2 * j), "h"(v));
    }
  }
}

// Which vectors of a ROWS x COLS tile (COLS contiguous, VE elements per copy) a thread copies:
// rows tid / CPR + i * RSTEP, i < NR, all at column (tid % CPR) * VE.
template <int ROWS, int COLS, int VE, int THREADS>
struct Spread {
  static constexpr int CPR = COLS / VE, RSTEP = THREADS / CPR, NR = ROWS / RSTEP, RB = COLS * 2;
  static_assert(COLS % VE == 0 && THREADS % CPR == 0 && ROWS % RSTEP == 0 && NR >= 1, "copy spread");
  static TT_DEVICE int row(int tid, int i) { return tid / CPR + i * RSTEP; }
  static TT_DEVICE int col(int tid) { return (tid % CPR) * VE; }
  static TT_DEVICE u32 dst(u32 base, int tid, int i) {
    const int byte = col(tid) * 2;
    return base + swz<RB>(row(tid, i), byte >> 4) + (byte & 15);
  }
};

// Per K tile, the same for every thread: filter tap, first channel of the chunk (fwd / dgrad) or
// first output pixel (wgrad).
struct Step {
  int r, s, c0, k0;
};

// K-major gathered tile, ROWS x BK: fwd's x (KIND 0) and filters (KIND 2), dgrad's dy (KIND 1).
// FLAT (fwd only): K tiles are BK consecutive indices of the (r, s, c) reduction instead of one
// tap's channel chunk; each thread splits its column's index once per tile (tt_conv::flat_tap).
// PHASED (dgrad): row0 and the rows count the phase's pixels, mapped to dx pixels here once.
template <int KIND, int ROWS, int BK, int VE, int THREADS, bool FLAT, bool PHASED>
struct TapGather {
  using S = Spread<ROWS, BK, VE, THREADS>;
  tt_conv::TapRow row[S::NR];
  const u16* base;
  int rc;  // channels of the reduction

  TT_DEVICE void init(const TtConvParams& p, const void* tensor, int g, int row0, const tt_conv::Phase& ph, int tid) {
    const int cg = p.c / p.groups, kg = p.k / p.groups;
    base = static_cast<const u16*>(tensor);
    rc = KIND == 1 ? kg : cg;
    TT_UNROLL
    for (int i = 0; i < S::NR; ++i) {
      const int m = PHASED ? tt_conv::phase_pixel(p, ph, row0 + S::row(tid, i)) : row0 + S::row(tid, i);
      const int col = FLAT ? 0 : S::col(tid);  // FLAT: the column is a reduction index, added per tile
      row[i] = KIND == 2 ? tt_conv::filter_row(p, g, m, col)
                         : tt_conv::gather_row(KIND, p, m, (KIND == 0 ? g * cg : g * kg) + col);
    }
  }
  TT_DEVICE void load(u32 sbase, const TtConvParams& p, const Step& st, bool vec, int tid) const {
    if (FLAT) {
      const int k = st.k0 + S::col(tid);
      const tt_conv::FlatTap t = tt_conv::flat_tap(p, k);
      TT_UNROLL
      for (int i = 0; i < S::NR; ++i) {
        const bool ok = t.ok && tt_conv::tap_ok(row[i].mask, t.r, t.s);
        copy<VE * 2>(S::dst(sbase, tid, i), ok ? base + (row[i].off + (KIND == 2 ? k : t.delta)) : base, ok, vec);
      }
      return;
    }
    const int delta = (KIND == 2 ? tt_conv::filter_delta(p, st.r, st.s) : tt_conv::tap_delta(KIND, p, st.r, st.s)) + st.c0;
    const bool chan_ok = st.c0 + S::col(tid) < rc;
    TT_UNROLL
    for (int i = 0; i < S::NR; ++i) {
      const bool ok = chan_ok && tt_conv::tap_ok(row[i].mask, st.r, st.s);
      copy<VE * 2>(S::dst(sbase, tid, i), ok ? base + (row[i].off + delta) : base, ok, vec);
    }
  }
};

// MN-major tile read as a plain strided matrix, BK rows x COLS: dgrad's filters (KIND 0: row =
// output channel of the chunk, at tap (r, s)) and wgrad's dy (KIND 1: row = output pixel).
template <int KIND, int BK, int COLS, int VE, int THREADS>
struct Strided {
  using S = Spread<BK, COLS, VE, THREADS>;
  const u16* base;  // this thread's column of the tile's first row at k = 0
  int ld, rows, tap;
  bool col_ok;

  TT_DEVICE void init(const TtConvParams& p, const void* tensor, int g, int col0, int tid) {
    const int cg = p.c / p.groups, kg = p.k / p.groups, col = col0 + S::col(tid);
    if (KIND == 0) {
      ld = p.r * p.s * cg, rows = kg, tap = cg, col_ok = col < cg;
      base = static_cast<const u16*>(tensor) + (g * kg * ld + col);
    } else {
      ld = p.k, rows = p.gemm_k, tap = 0, col_ok = col < kg;
      base = static_cast<const u16*>(tensor) + (g * kg + col);
    }
  }
  TT_DEVICE void load(u32 sbase, const TtConvParams& p, const Step& st, bool vec, int tid) const {
    const int k0 = KIND == 0 ? st.c0 : st.k0;
    const u16* b = base + (k0 * ld + (st.r * p.s + st.s) * tap);
    TT_UNROLL
    for (int i = 0; i < S::NR; ++i) {
      const int rr = S::row(tid, i);
      const bool ok = col_ok && k0 + rr < rows;
      copy<VE * 2>(S::dst(sbase, tid, i), ok ? b + rr * ld : base, ok, vec);
    }
  }
};

// wgrad's B, BK output pixels x BN channels of x under the block's filter tap (r, s).
template <int BK, int BN, int VE, int THREADS>
struct PixelGather {
  using S = Spread<BK, BN, VE, THREADS>;
  tt_conv::Pixel px[S::NR];
  const u16* base;
  int chan, step_y, step_x, r, s;
  bool col_ok;

  TT_DEVICE void init(const TtConvParams& p, const void* tensor, int g, int c0, int tap_r, int tap_s, int k_first,
                      int tid) {
    const int cg = p.c / p.groups;
    base = static_cast<const u16*>(tensor);
    chan = g * cg + c0 + S::col(tid);
    col_ok = c0 + S::col(tid) < cg;
    r = tap_r, s = tap_s;
    step_y = BK / p.q, step_x = BK % p.q;
    TT_UNROLL
    for (int i = 0; i < S::NR; ++i) px[i] = tt_conv::pixel_of(k_first + S::row(tid, i), p.p, p.q);
  }
  // Not const: each call moves the thread's pixels on to the next K tile (tiles load in order).
  TT_DEVICE void load(u32 sbase, const TtConvParams& p, const Step&, bool vec, int tid) {
    TT_UNROLL
    for (int i = 0; i < S::NR; ++i) {
      int off;
      const bool ok = tt_conv::wgrad_x_offset(p, px[i], r, s, chan, off) && col_ok;
      copy<VE * 2>(S::dst(sbase, tid, i), ok ? base + off : base, ok, vec);
      tt_conv::advance(px[i], step_y, step_x, p.p, p.q);
    }
  }
};

TT_DEVICE bool aligned(const void* a, const void* b, int bytes) {
  return (((unsigned long long)a | (unsigned long long)b) % (unsigned long long)bytes) == 0;
}

template <class TC>
TT_DEVICE void store_pair(TC* q, float a, float b, bool second, bool pair) {
  if (second)
    tt_store_pair(q, a, b, pair);
  else
    q[0] = tt_from_float<TC>(a);
}

// EPI 1: writes the block's BM x BN tile (warp (wm, wn) holds WM x WN of it as mma.sync
// fragments) to the row-major output through shared memory, so that global stores are 16-byte row
// segments instead of one 2-element pair per thread and fragment row (a warp's direct store
// touches 8 rows x 16 bytes); memory-bound layers (1x1, few channels) are limited by those stores.
// smem (the pipeline's, no longer read: callers sync first) holds BM rows of BN + 16 / sizeof(TC)
// elements; the padding staggers the rows across banks.
// out_row(row) is the output row of the tile's row (row < m_lim).
template <class TC, int BM, int BN, int WM, int WN, int THREADS, class OutRow>
TT_DEVICE void store_staged(const float (&acc)[WM / 16][WN / 8][4], unsigned char* smem, TC* out, int ld, int m_lim,
                            int n_lim, bool vec_ok, int tid, OutRow out_row) {
  constexpr int VEC = 16 / sizeof(TC), RS = BN + VEC, CPR = BN / VEC;
  TC* t = reinterpret_cast<TC*>(smem);
  const int lane = tid & 31, warp = tid >> 5, wm = warp % (BM / WM), wn = warp / (BM / WM);
  const int g4 = lane >> 2, t4 = lane & 3;
  TT_UNROLL
  for (int mi = 0; mi < WM / 16; ++mi)
    TT_UNROLL
    for (int ni = 0; ni < WN / 8; ++ni)
      TT_UNROLL
      for (int h = 0; h < 2; ++h) {
        TC* q = t + (wm * WM + mi * 16 + g4 + h * 8) * RS + wn * WN + ni * 8 + t4 * 2;
        q[0] = tt_from_float<TC>(acc[mi][ni][2 * h]);
        q[1] = tt_from_float<TC>(acc[mi][ni][2 * h + 1]);
      }
  __syncthreads();
  for (int i = tid; i < BM * CPR; i += THREADS) {
    const int row = i / CPR, col = (i - row * CPR) * VEC;
    if (row >= m_lim || col >= n_lim) continue;
    TC* dst = out + ((long long)out_row(row) * ld + col);
    const TC* src = t + row * RS + col;
    if (vec_ok && col + VEC <= n_lim) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    } else {
      for (int j = 0; j < VEC && col + j < n_lim; ++j) dst[j] = src[j];
    }
  }
}

}  // namespace tt_mma_conv

template <typename TA, typename TC, int DIR, bool NCHW, int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK,
          int VB, int FLAT, int EPI, int PHASE>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32) mma_conv(const TtConvParams p) {
  using namespace tt_mma;
  using namespace tt_mma_conv;
  constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  constexpr int MI = WM / 16, NI = WN / 8;
  constexpr int VE = VB / 2;
  constexpr bool A_KM = DIR != 2, B_KM = DIR == 0;  // K-major operand tiles
  constexpr int A_RB = (A_KM ? BK : BM) * 2, B_RB = (B_KM ? BK : BN) * 2;
  constexpr int A_TILE = BM * BK * 2, B_TILE = BN * BK * 2, STAGE_BYTES = A_TILE + B_TILE;
  static_assert(!NCHW, "mma_conv reads NHWC / KRSC only");
  static_assert(sizeof(TA) == 2, "bf16 or fp16 inputs");
  static_assert(DIR >= 0 && DIR <= 2, "direction");
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0, "warp tiling");
  static_assert(BK % 16 == 0 && STAGES >= 2 && SPLITK >= 1, "parameters");
  static_assert(VB == 2 || VB == 4 || VB == 8 || VB == 16, "copy bytes");
  static_assert(FLAT == 0 || DIR == 0, "the flat reduction walk is the forward convolution's");
  static_assert(PHASE == 0 || DIR == 1, "the phase split is the strided input gradient's");

  // Operand loaders of this direction (mma_conv_index.h has the index math).
  typedef TapGather<DIR, BM, BK, VE, THREADS, FLAT != 0, PHASE != 0> GatherA;  // fwd: x, dgrad: dy
  typedef Strided<1, BK, BM, VE, THREADS> StridedA;     // wgrad: dy
  typedef TapGather<2, BN, BK, VE, THREADS, FLAT != 0, false> FilterB;    // fwd
  typedef Strided<0, BK, BN, VE, THREADS> StridedB;     // dgrad
  typedef PixelGather<BK, BN, VE, THREADS> PixelB;      // wgrad

  extern __shared__ __align__(128) unsigned char tt_mma_conv_smem[];
  const u32 sbase = smem_addr(tt_mma_conv_smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % WARPS_M, wn = warp / WARPS_M;

  const int g = blockIdx.z / SPLITK, split = blockIdx.z % SPLITK;
  const int cg = p.c / p.groups, kg = p.k / p.groups;
  // PHASE: blockIdx.x is a tile of one phase; m0 and the M rows count that phase's pixels.
  tt_conv::Phase ph = {};
  if (PHASE) ph = tt_conv::phase_of_tile(p, blockIdx.x, BM);
  const int m0 = (blockIdx.x - (PHASE ? ph.tile0 : 0)) * BM;
  // fwd / dgrad: K tiles are (r, s, chunk of BK channels); wgrad: block columns are (r, s, chunk
  // of BN channels) and K tiles BK output pixels.
  const int chunks = DIR == 2 ? 0 : ((DIR == 0 ? cg : kg) + BK - 1) / BK;
  tt_conv::Taps col_tap = {0, 0, int(blockIdx.y)};
  if (DIR == 2) col_tap = tt_conv::taps_of_tile(blockIdx.y, (cg + BN - 1) / BN, p.s);
  const int n0 = col_tap.chunk * BN;
  // A phase with no tap has KT = 0 and writes zeros.
  const int KT = DIR == 2 || FLAT ? (p.gemm_k + BK - 1) / BK : (PHASE ? ph.nr * ph.ns : p.r * p.s) * chunks;
  const int kper = (KT + SPLITK - 1) / SPLITK;
  const int kt0 = split * kper;
  const int nkt = max(min(KT, kt0 + kper) - kt0, 0);

  // Only the two tensors read decide whether 16-byte copies are possible.
  const bool vec = VB > 2 && aligned(DIR == 1 ? p.y : p.x, DIR == 0 ? p.wt : DIR == 1 ? p.wt : p.y, VB);

  GatherA ga;
  StridedA sa_ld;
  FilterB fb;
  StridedB sb_ld;
  PixelB pb;
  if (DIR != 2) ga.init(p, DIR == 0 ? p.x : p.y, g, m0, ph, tid);
  else sa_ld.init(p, p.y, g, m0, tid);
  if (DIR == 0) fb.init(p, p.wt, g, n0, ph, tid);
  else if (DIR == 1) sb_ld.init(p, p.wt, g, n0, tid);
  else pb.init(p, p.x, g, n0, col_tap.r, col_tap.s, kt0 * BK, tid);

  tt_conv::Taps cur = DIR == 2  ? col_tap
                       : PHASE ? tt_conv::phase_taps_of_tile(kt0, chunks > 0 ? chunks : 1, ph)
                               : tt_conv::taps_of_tile(kt0, chunks > 0 ? chunks : 1, p.s);
  int next_kt = kt0;
  // Loads K tile next_kt (tiles are loaded strictly in order) into `stage`.
  auto load_stage = [&](int stage) {
    const u32 a = sbase + stage * STAGE_BYTES, b = a + A_TILE;
    const Step st = {cur.r, cur.s, DIR == 2 ? 0 : cur.chunk * BK, next_kt * BK};
    if (DIR != 2) ga.load(a, p, st, vec, tid);
    else sa_ld.load(a, p, st, vec, tid);
    if (DIR == 0) fb.load(b, p, st, vec, tid);
    else if (DIR == 1) sb_ld.load(b, p, st, vec, tid);
    else pb.load(b, p, st, vec, tid);
    if (PHASE) tt_conv::next_phase_tile(cur, chunks, ph);
    else if (DIR != 2) tt_conv::next_tile(cur, chunks, p.s);
    ++next_kt;
  };

  float acc[MI][NI][4];
  zero(acc);

  TT_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nkt) load_stage(s);
    cp_async_commit();
  }
  for (int it = 0; it < nkt; ++it) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile `it` visible to all; the stage read in iteration it-1 is free again
    if (it + STAGES - 1 < nkt) load_stage((it + STAGES - 1) % STAGES);
    cp_async_commit();
    const u32 sa = sbase + (it % STAGES) * STAGE_BYTES, sb = sa + A_TILE;
    TT_UNROLL
    for (int ks = 0; ks < BK / 16; ++ks) {
      u32 af[MI][4], bf[NI][2];
      TT_UNROLL
      for (int mi = 0; mi < MI; ++mi) frag_a<A_KM, A_RB>(af[mi], sa, wm * WM + mi * 16, ks, lane);
      TT_UNROLL
      for (int nj = 0; nj < NI / 2; ++nj) {
        u32 r[4];
        frag_b<B_KM, B_RB>(r, sb, wn * WN + nj * 16, ks, lane);
        bf[2 * nj][0] = r[0];
        bf[2 * nj][1] = r[1];
        bf[2 * nj + 1][0] = r[2];
        bf[2 * nj + 1][1] = r[3];
      }
      TT_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        TT_UNROLL
        for (int ni = 0; ni < NI; ++ni) mma<TA>(acc[mi][ni], af[mi], bf[ni]);
    }
  }
  cp_async_wait<0>();

  if (SPLITK > 1) {
    const long long tiles = (long long)gridDim.x * gridDim.y;
    if (!splitk_reduce<MI, NI, THREADS, SPLITK, BM * BN>(acc, p.workspace, g * tiles + blockIdx.y * gridDim.x + blockIdx.x,
                                                          p.groups * tiles, split, tid))
      return;
  }

  // Epilogue: every direction writes a row-major tile; fragment (mi, ni) element e sits at row
  // g4 + 8*(e/2), column 2*t4 + e%2, so a thread's two columns are adjacent.
  const int ld = DIR == 0 ? p.k : DIR == 1 ? p.c : p.r * p.s * cg;
  TC* out = static_cast<TC*>(DIR == 0 ? p.y : DIR == 1 ? p.x : p.wt) +
            (DIR == 0 ? g * kg + n0 : DIR == 1 ? g * cg + n0 : g * kg * ld + (col_tap.r * p.s + col_tap.s) * cg + n0);
  // Output row of the tile's row m: linear, or (PHASE) the phase's pixel, a division per row.
  auto out_row = [&](int m) { return PHASE ? tt_conv::phase_pixel(p, ph, m0 + m) : m0 + m; };
  const int m_lim = (PHASE ? tt_conv::phase_pixels(p, ph) : p.gemm_m) - m0, n_lim = (DIR == 0 ? kg : cg) - n0;
  if (EPI) {
    __syncthreads();  // every warp is done with the pipeline's shared memory
    auto tile_row = [&](int m) { return PHASE ? out_row(m) : m; };  // rows of out + m0 * ld unless PHASE
    store_staged<TC, BM, BN, WM, WN, THREADS>(acc, tt_mma_conv_smem, PHASE ? out : out + (long long)m0 * ld, ld, m_lim,
                                             n_lim, ld % (16 / sizeof(TC)) == 0 && aligned(out, out, 16), tid, tile_row);
    return;
  }
  const bool pair = ld % 2 == 0 && aligned(out, out, 2 * sizeof(TC));
  const int g4 = lane >> 2, t4 = lane & 3;
  TT_UNROLL
  for (int mi = 0; mi < MI; ++mi)
    TT_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      TT_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int m = wm * WM + mi * 16 + g4 + h * 8;
        const int n = wn * WN + ni * 8 + t4 * 2;
        if (m < m_lim && n < n_lim)
          store_pair<TC>(out + ((long long)out_row(m) * ld + n), acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1],
                         n + 1 < n_lim, pair);
      }
}
