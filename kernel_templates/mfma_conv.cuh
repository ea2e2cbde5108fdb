// MFMA (AMD matrix core) implicit-GEMM convolution, all three directions, NHWC / KRSC, bf16 / fp16
// inputs, fp32 accumulation. Compile-verified only (hipRTC and clang): never run on an AMD GPU.
//
// The GEMMs are solutions/conv_problem.h's, per group (blockIdx.z), as in mma_conv.cuh:
//
//            A (M x K)                      B (K x N)                          written, row-major
//   fwd      x gathered, K-contiguous       filters, K-contiguous              y   [N*P*Q][K]
//   dgrad    dy gathered, K-contiguous      filters, N-contiguous              dx  [N*H*W][C]
//   wgrad    dy, M-contiguous               x gathered, N-contiguous           dw  [K][R*S*C]
//
// computed as in mfma_gemm.cuh (whose MFMA wrappers and mfma_layout.h index math it reuses, and its
// per-arch instruction choice: gfx950's doubled-K 32x32x16 / 16x16x32, CDNA2/3's 32x32x8 /
// 16x16x16 elsewhere, as the JSON derives from DEV_MFMA_K16): waves
// of 64 lanes own WM x WN tiles of MI x MI MFMA blocks, LDS holds both operands k-contiguous with a
// pitch of DU + PAD elements, global loads of the next K tile go to registers while the MFMAs of
// the current one run, then to the other LDS buffer. A K-contiguous tile is written to LDS a vector
// at a time; an M- or N-contiguous one element by element into its k column (as mfma_gemm does
// for its non-transposed A), so the fragment reads are the same in every direction.
//
// The index math is mma_conv's (mma_conv_index.h, validated on an H200 through mma_conv and on the
// host by tests/solutions/test_mma_conv_index.cpp). fwd and dgrad walk their reduction as
// (r, s, chunk of DU channels): each thread keeps its gathered rows' offsets and tap masks, and
// channels or taps outside the tensor load as zero. wgrad's block columns are (r, s, chunk of MT1
// channels) and its K tiles DU output pixels, which each thread carries forward. Vectors need the
// base pointers aligned to VW elements, as mfma_gemm's.
//
// Split-K (wgrad's reduction is N*P*Q long while its output is small): blockIdx.z = group * SPLITK
// + split, splits own contiguous ranges of K tiles and meet in tt_splitk::reduce (deterministic;
// leaves the zeroed workspace zeroed).
#include "conv_params.h"
#include "mfma_gemm.cuh"
#include "mma_conv_index.h"
#include "splitk_reduce.h"

namespace tt_mfma_conv {

using tt_mfma::Vec;
typedef unsigned short u16;

template <bool B, class T, class F> struct Pick { typedef T type; };
template <class T, class F> struct Pick<false, T, F> { typedef F type; };

// A thread's share of a ROWS x COLS tile (COLS contiguous in global memory), held in registers
// between the global loads of a K tile and its LDS stores: vectors of VW elements at rows
// row(i) = tid / CPR + i * RSTEP (i < NR), all at column col = (tid % CPR) * VW.
// K_CONT: the rows are m (or n) and the columns k, so a vector is one LDS store; otherwise the rows
// are k and each element goes to the LDS row of its m (or n).
template <int ROWS, int COLS, int VW, int THREADS, bool K_CONT>
struct Staged {
  static constexpr int CPR = COLS / VW, RSTEP = THREADS / CPR, NR = ROWS / RSTEP;
  static_assert(COLS % VW == 0 && THREADS % CPR == 0 && ROWS % RSTEP == 0 && NR >= 1, "copy spread");
  Vec<u16, VW> v[NR];

  static TT_DEVICE int row(int tid, int i) { return tid / CPR + i * RSTEP; }
  static TT_DEVICE int col(int tid) { return (tid % CPR) * VW; }
  TT_DEVICE void fetch(int i, const u16* src, bool ok) {
    if (ok) {
      v[i] = *reinterpret_cast<const Vec<u16, VW>*>(src);
    } else {
      TT_UNROLL
      for (int j = 0; j < VW; ++j) v[i].v[j] = 0;
    }
  }
  TT_DEVICE void store(u16* s, int tid, int pitch) const {
    TT_UNROLL
    for (int i = 0; i < NR; ++i) {
      if (K_CONT) {
        *reinterpret_cast<Vec<u16, VW>*>(s + tt_mfma::lds_index(row(tid, i), col(tid), pitch)) = v[i];
      } else {
        TT_UNROLL
        for (int j = 0; j < VW; ++j) s[tt_mfma::lds_index(col(tid) + j, row(tid, i), pitch)] = v[i].v[j];
      }
    }
  }
};

// Every loader: init(p, tensor, g, first row or column of the block, the block column's filter
// tap (wgrad), the first K tile, tid), then load(p, taps of the K tile, its index) for the tiles
// in order.

// ROWS x DU, K-contiguous, one filter tap and DU channels per K tile: fwd's x (KIND 0), dgrad's
// dy (KIND 1), fwd's filters (KIND 2).
template <int KIND, int ROWS, int DU, int VW, int THREADS>
struct TapGather : Staged<ROWS, DU, VW, THREADS, true> {
  using S = Staged<ROWS, DU, VW, THREADS, true>;
  tt_conv::TapRow row[S::NR];
  const u16* base;
  int col, rc;  // this thread's channel within a chunk; the reduction's channels

  TT_DEVICE void init(const TtConvParams& p, const void* tensor, int g, int row0, const tt_conv::Taps&, int, int tid) {
    const int cg = p.c / p.groups, kg = p.k / p.groups;
    base = static_cast<const u16*>(tensor);
    col = S::col(tid);
    rc = KIND == 1 ? kg : cg;
    TT_UNROLL
    for (int i = 0; i < S::NR; ++i) {
      const int m = row0 + S::row(tid, i);
      row[i] = KIND == 2 ? tt_conv::filter_row(p, g, m, col)
                         : tt_conv::gather_row(KIND, p, m, (KIND == 0 ? g * cg : g * kg) + col);
    }
  }
  TT_DEVICE void load(const TtConvParams& p, const tt_conv::Taps& k, int) {
    const int delta =
        (KIND == 2 ? tt_conv::filter_delta(p, k.r, k.s) : tt_conv::tap_delta(KIND, p, k.r, k.s)) + k.chunk * DU;
    const bool chan_ok = k.chunk * DU + col < rc;
    TT_UNROLL
    for (int i = 0; i < S::NR; ++i) S::fetch(i, base + (row[i].off + delta), chan_ok && tt_conv::tap_ok(row[i].mask, k.r, k.s));
  }
};

// DU x COLS, M- or N-contiguous, read as a row-major matrix (tt_conv::strided_operand): dgrad's
// filters (DIR 1: DU output channels of the chunk at the tile's tap) and wgrad's dy (DIR 2: DU
// output pixels).
template <int DIR, int DU, int COLS, int VW, int THREADS>
struct StridedLoad : Staged<DU, COLS, VW, THREADS, false> {
  using S = Staged<DU, COLS, VW, THREADS, false>;
  const u16* base;  // this thread's column, row 0
  int ld, rows, row0;
  bool col_ok;

  TT_DEVICE void init(const TtConvParams& p, const void* tensor, int g, int col0, const tt_conv::Taps&, int, int tid) {
    const tt_conv::StridedOperand o = tt_conv::strided_operand(DIR, p, g, col0 + S::col(tid));
    base = static_cast<const u16*>(tensor) + o.col_off;
    ld = o.ld, rows = o.rows, col_ok = col0 + S::col(tid) < o.cols;
    row0 = S::row(tid, 0);
  }
  TT_DEVICE void load(const TtConvParams& p, const tt_conv::Taps& k, int kt) {
    const int k0 = (DIR == 1 ? k.chunk : kt) * DU;
    const u16* b = base + ((k0 + row0) * ld + tt_conv::strided_tap(DIR, p, k.r, k.s));
    TT_UNROLL
    for (int i = 0; i < S::NR; ++i) S::fetch(i, b + i * S::RSTEP * ld, col_ok && k0 + row0 + i * S::RSTEP < rows);
  }
};

// wgrad's x, DU output pixels x COLS channels under the block column's filter tap.
template <int DU, int COLS, int VW, int THREADS>
struct PixelGather : Staged<DU, COLS, VW, THREADS, false> {
  using S = Staged<DU, COLS, VW, THREADS, false>;
  tt_conv::Pixel px[S::NR];
  const u16* base;
  int chan, step_y, step_x, r, s;
  bool col_ok;

  TT_DEVICE void init(const TtConvParams& p, const void* tensor, int g, int c0, const tt_conv::Taps& tap, int kt0,
                      int tid) {
    const int cg = p.c / p.groups;
    base = static_cast<const u16*>(tensor);
    chan = g * cg + c0 + S::col(tid);
    col_ok = c0 + S::col(tid) < cg;
    r = tap.r, s = tap.s;
    step_y = DU / p.q, step_x = DU % p.q;
    TT_UNROLL
    for (int i = 0; i < S::NR; ++i) px[i] = tt_conv::pixel_of(kt0 * DU + S::row(tid, i), p.p, p.q);
  }
  // Moves the thread's pixels on to the next K tile.
  TT_DEVICE void load(const TtConvParams& p, const tt_conv::Taps&, int) {
    TT_UNROLL
    for (int i = 0; i < S::NR; ++i) {
      int off = 0;
      const bool ok = tt_conv::wgrad_x_offset(p, px[i], r, s, chan, off) && col_ok;
      S::fetch(i, base + off, ok);
      tt_conv::advance(px[i], step_y, step_x, p.p, p.q);
    }
  }
};

// The group of tt_splitk::reduce: the whole block, with any() through a flag in LDS instead of
// __syncthreads_or, whose work-group reduction (ockl) needs an ISA-version device library that
// Debian's ROCm 5.2 libraries lack for gfx942 and gfx950. The flag is 0 before the first any(),
// and every any() leaves it 0 again: split-K of 16 parts and more asks twice (splitk_tree.h).
struct LdsFlagGroup {
  int* flag;
  TT_DEVICE void sync() const { __syncthreads(); }
  TT_DEVICE bool any(bool pred) const {
    if (pred) *flag = 1;
    __syncthreads();
    const bool r = *flag != 0;
    __syncthreads();  // every thread has read it before it is cleared
    if (threadIdx.x == 0) *flag = 0;
    __syncthreads();  // cleared before any thread's next any() can set it
    return r;
  }
};

}  // namespace tt_mfma_conv

template <typename TA, typename TC, int DIR, bool NCHW, int MT0, int MT1, int DU, int WM, int WN, int MI, int VW, int PAD,
          int SPLITK>
__global__ void __launch_bounds__((MT0 / WM) * (MT1 / WN) * 64) mfma_conv(const TtConvParams p) {
  using namespace tt_mfma;
  using namespace tt_mfma_conv;
  constexpr int KPL = ArchKpl<TA>::value, KI = inst_k(MI, KPL);  // gfx950: the doubled-K shapes
  using Op = Operand<TA, KPL>;
  using Frag = typename Op::Frag;
  using Acc = typename Accum<MI>::T;
  constexpr int THREADS = (MT0 / WM) * (MT1 / WN) * 64;
  constexpr int FM = WM / MI, FN = WN / MI, NR = acc_regs(MI), SP = DU + PAD;
  static_assert(DIR >= 0 && DIR <= 2 && !NCHW, "NHWC, fwd / dgrad / wgrad");
  static_assert(sizeof(TA) == 2, "bf16 or fp16 inputs");
  static_assert(DU % KI == 0 && SP % VW == 0 && SP % KPL == 0, "depth and pitch");
  static_assert(SPLITK >= 1, "splits");

  // This direction's loaders (see the table above).
  typedef typename Pick<DIR == 2, StridedLoad<2, DU, MT0, VW, THREADS>, TapGather<DIR, MT0, DU, VW, THREADS>>::type LoadA;
  typedef typename Pick<DIR == 0, TapGather<2, MT1, DU, VW, THREADS>,
                        typename Pick<DIR == 1, StridedLoad<1, DU, MT1, VW, THREADS>, PixelGather<DU, MT1, VW, THREADS>>::type>::type
      LoadB;

  alignas(16) __shared__ unsigned short As[2 * MT0 * SP];
  alignas(16) __shared__ unsigned short Bs[2 * MT1 * SP];

  const int tid = threadIdx.x, lane = tid % 64;
  const int wave = __builtin_amdgcn_readfirstlane(tid / 64);
  const int wm0 = wave_m0(wave, MT0, WM), wn0 = wave_n0(wave, MT0, WM, WN);
  const int g = blockIdx.z / SPLITK, split = blockIdx.z % SPLITK, m0 = blockIdx.x * MT0;
  const int cg = p.c / p.groups, kg = p.k / p.groups;
  // fwd / dgrad: K tiles are (r, s, chunk of DU channels); wgrad: block columns are (r, s, chunk of
  // MT1 channels) and K tiles DU output pixels.
  const int chunks = ((DIR == 1 ? kg : cg) + DU - 1) / DU;
  tt_conv::Taps col_tap = {0, 0, int(blockIdx.y)};
  if (DIR == 2) col_tap = tt_conv::taps_of_tile(blockIdx.y, (cg + MT1 - 1) / MT1, p.s);
  const int n0 = col_tap.chunk * MT1;
  const int ktiles = DIR == 2 ? (p.gemm_k + DU - 1) / DU : p.r * p.s * chunks;
  // Split-K: this block's contiguous range of K tiles, [kt0, kt1).
  int kt0 = 0, kt1 = ktiles;
  if (SPLITK > 1) tt_splitk::k_range<SPLITK>(ktiles, split, kt0, kt1);

  LoadA la;
  LoadB lb;
  la.init(p, DIR == 0 ? p.x : p.y, g, m0, col_tap, kt0, tid);
  lb.init(p, DIR == 2 ? p.x : p.wt, g, n0, col_tap, kt0, tid);

  Acc acc[FM][FN];
  zero_acc<NR>(acc);

  const int a_off = lds_index(wm0 + frag_mn(lane, MI), frag_k(lane, 0, MI, KPL), SP);
  const int b_off = lds_index(wn0 + frag_mn(lane, MI), frag_k(lane, 0, MI, KPL), SP);

  tt_conv::Taps k = {0, 0, 0};
  if (DIR != 2) k = tt_conv::taps_of_tile(kt0, chunks, p.s);
  la.load(p, k, kt0);
  lb.load(p, k, kt0);
  la.store(As, tid, SP);
  lb.store(Bs, tid, SP);
  __syncthreads();

  for (int kt = kt0; kt < kt1; ++kt) {
    const int cur = (kt - kt0) & 1;
    const bool more = kt + 1 < kt1;
    if (more) {
      if (DIR != 2) tt_conv::next_tile(k, chunks, p.s);
      la.load(p, k, kt + 1);
      lb.load(p, k, kt + 1);
    }
    const unsigned short* a_s = As + cur * (MT0 * SP) + a_off;
    const unsigned short* b_s = Bs + cur * (MT1 * SP) + b_off;
    TT_UNROLL
    for (int kk = 0; kk < DU / KI; ++kk) {
      Frag a[FM], b[FN];
      TT_UNROLL
      for (int i = 0; i < FM; ++i) a[i] = FragRead<Frag>::at(a_s + lds_index(i * MI, kk * KI, SP));
      TT_UNROLL
      for (int j = 0; j < FN; ++j) b[j] = FragRead<Frag>::at(b_s + lds_index(j * MI, kk * KI, SP));
      TT_UNROLL
      for (int i = 0; i < FM; ++i)
        TT_UNROLL
        for (int j = 0; j < FN; ++j) Mfma<TA, MI, KPL>::run(acc[i][j], a[i], b[j]);
    }
    if (more) {
      la.store(As + (cur ^ 1) * (MT0 * SP), tid, SP);
      lb.store(Bs + (cur ^ 1) * (MT1 * SP), tid, SP);
      __syncthreads();
    }
  }

  if (SPLITK > 1) {
    // The splits of a tile meet in the workspace; the last to arrive writes the tile.
    __shared__ int last_flag;
    if (tid == 0) last_flag = 0;  // reduce() syncs the block before its any()
    const long long tiles = (long long)gridDim.x * gridDim.y;
    if (!tt_splitk::reduce<FM * FN * NR, THREADS, SPLITK, MT0 * MT1>(
            reinterpret_cast<float*>(acc), p.workspace, g * tiles + blockIdx.y * gridDim.x + blockIdx.x,
            p.groups * tiles, split, tid, LdsFlagGroup{&last_flag}))
      return;
  }

  // Accumulator r of a lane is row acc_row(lane, r), column acc_col of its MFMA block: the output
  // is row-major, so a lane's four consecutive rows are ld elements apart and the lanes of a row
  // write consecutive elements.
  const tt_conv::OutputTile o = tt_conv::output_tile(DIR, p, g, col_tap.r, col_tap.s);
  TC* out = static_cast<TC*>(DIR == 0 ? p.y : DIR == 1 ? p.x : p.wt) + o.base;
  TT_UNROLL
  for (int j = 0; j < FN; ++j) {
    const int n = n0 + wn0 + j * MI + acc_col(lane, MI);
    if (n >= o.cols) continue;
    TT_UNROLL
    for (int i = 0; i < FM; ++i)
      TT_UNROLL
      for (int r = 0; r < NR; ++r) {
        const int m = m0 + wm0 + i * MI + acc_row(lane, 4 * (r / 4), MI) + r % 4;
        if (m < p.gemm_m) out[(long long)m * o.ld + n] = out_from_float<TC>(acc[i][j][r]);
      }
  }
}
