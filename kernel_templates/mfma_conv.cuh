// MFMA (AMD matrix core) implicit-GEMM forward convolution for gfx90a / gfx908, NHWC / KRSC,
// bf16 / fp16 inputs, fp32 accumulation. Compile-verified only (hipRTC): never run on an AMD GPU.
//
// The GEMM is fwd's (M = N*P*Q output pixels, N = K/groups output channels, K = (r, s, channel)),
// computed as in mfma_gemm.cuh (whose MFMA wrappers and mfma_layout.h index math it reuses):
// waves of 64 lanes own WM x WN tiles of MI x MI MFMA blocks, LDS holds both operands k-contiguous
// with a pitch of DU + PAD elements, global loads of the next K tile go to registers while the
// MFMAs of the current one run, then to the other LDS buffer. The im2col gather is mma_conv's
// (mma_conv_index.h): a K tile is one filter tap and DU channels, each thread keeps its rows'
// offsets and tap masks, and channels or taps outside the tensor load as zero.
#include "conv_params.h"
#include "mfma_gemm.cuh"
#include "mma_conv_index.h"

namespace tt_mfma_conv {

using tt_mfma::Vec;

// ROWS x DU tile of one gathered operand in registers: x rows (FILTER false) or filter rows.
template <bool FILTER, int ROWS, int DU, int VW, int THREADS>
struct Gather {
  static constexpr int CPR = DU / VW, RSTEP = THREADS / CPR, NR = ROWS / RSTEP;
  static_assert(DU % VW == 0 && THREADS % CPR == 0 && ROWS % RSTEP == 0 && NR >= 1, "copy spread");
  tt_conv::TapRow row[NR];
  Vec<unsigned short, VW> v[NR];
  const unsigned short* base;
  int col;

  __device__ TT_FORCEINLINE void init(const TtConvParams& p, const void* tensor, int g, int row0, int tid) {
    base = static_cast<const unsigned short*>(tensor);
    col = (tid % CPR) * VW;
    TT_UNROLL
    for (int i = 0; i < NR; ++i) {
      const int m = row0 + tid / CPR + i * RSTEP;
      row[i] = FILTER ? tt_conv::filter_row(p, g, m, col) : tt_conv::gather_row(0, p, m, g * (p.c / p.groups) + col);
    }
  }
  __device__ TT_FORCEINLINE void load(const TtConvParams& p, const tt_conv::Taps& k) {
    const int delta = (FILTER ? tt_conv::filter_delta(p, k.r, k.s) : tt_conv::tap_delta(0, p, k.r, k.s)) + k.chunk * DU;
    const bool chan_ok = k.chunk * DU + col < p.c / p.groups;
    TT_UNROLL
    for (int i = 0; i < NR; ++i) {
      if (chan_ok && tt_conv::tap_ok(row[i].mask, k.r, k.s)) {
        v[i] = *reinterpret_cast<const Vec<unsigned short, VW>*>(base + (row[i].off + delta));
      } else {
        TT_UNROLL
        for (int j = 0; j < VW; ++j) v[i].v[j] = 0;
      }
    }
  }
  __device__ TT_FORCEINLINE void store(unsigned short* s, int tid, int pitch) const {
    TT_UNROLL
    for (int i = 0; i < NR; ++i)
      *reinterpret_cast<Vec<unsigned short, VW>*>(s + tt_mfma::lds_index(tid / CPR + i * RSTEP, col, pitch)) = v[i];
  }
};

}  // namespace tt_mfma_conv

template <typename TA, typename TC, int DIR, bool NCHW, int MT0, int MT1, int DU, int WM, int WN, int MI, int VW, int PAD>
__global__ void __launch_bounds__((MT0 / WM) * (MT1 / WN) * 64) mfma_conv(const TtConvParams p) {
  using namespace tt_mfma;
  using namespace tt_mfma_conv;
  using Op = Operand<TA>;
  using Frag = typename Op::Frag;
  using Acc = typename Accum<MI>::T;
  constexpr int KPL = Op::KPL, KI = inst_k(MI, KPL);
  constexpr int THREADS = (MT0 / WM) * (MT1 / WN) * 64;
  constexpr int FM = WM / MI, FN = WN / MI, NR = acc_regs(MI), SP = DU + PAD;
  static_assert(DIR == 0 && !NCHW, "forward NHWC only");
  static_assert(sizeof(TA) == 2, "bf16 or fp16 inputs");
  static_assert(DU % KI == 0 && SP % VW == 0 && SP % KPL == 0, "depth and pitch");

  alignas(16) __shared__ unsigned short As[2 * MT0 * SP];
  alignas(16) __shared__ unsigned short Bs[2 * MT1 * SP];

  const int tid = threadIdx.x, lane = tid % 64;
  const int wave = __builtin_amdgcn_readfirstlane(tid / 64);
  const int wm0 = wave_m0(wave, MT0, WM), wn0 = wave_n0(wave, MT0, WM, WN);
  const int g = blockIdx.z, m0 = blockIdx.x * MT0, n0 = blockIdx.y * MT1;
  const int cg = p.c / p.groups, kg = p.k / p.groups;
  const int chunks = (cg + DU - 1) / DU, ktiles = p.r * p.s * chunks;

  Gather<false, MT0, DU, VW, THREADS> ga;
  Gather<true, MT1, DU, VW, THREADS> gb;
  ga.init(p, p.x, g, m0, tid);
  gb.init(p, p.wt, g, n0, tid);

  Acc acc[FM][FN];
  zero_acc<NR>(acc);

  const int a_off = lds_index(wm0 + frag_mn(lane, MI), frag_k(lane, 0, MI, KPL), SP);
  const int b_off = lds_index(wn0 + frag_mn(lane, MI), frag_k(lane, 0, MI, KPL), SP);

  tt_conv::Taps k = {0, 0, 0};
  ga.load(p, k);
  gb.load(p, k);
  ga.store(As, tid, SP);
  gb.store(Bs, tid, SP);
  __syncthreads();

  for (int kt = 0; kt < ktiles; ++kt) {
    const int cur = kt & 1;
    const bool more = kt + 1 < ktiles;
    if (more) {
      tt_conv::next_tile(k, chunks, p.s);
      ga.load(p, k);
      gb.load(p, k);
    }
    const unsigned short* a_s = As + cur * (MT0 * SP) + a_off;
    const unsigned short* b_s = Bs + cur * (MT1 * SP) + b_off;
    TT_UNROLL
    for (int kk = 0; kk < DU / KI; ++kk) {
      Frag a[FM], b[FN];
      TT_UNROLL
      for (int i = 0; i < FM; ++i) a[i] = *reinterpret_cast<const Frag*>(a_s + lds_index(i * MI, kk * KI, SP));
      TT_UNROLL
      for (int j = 0; j < FN; ++j) b[j] = *reinterpret_cast<const Frag*>(b_s + lds_index(j * MI, kk * KI, SP));
      TT_UNROLL
      for (int i = 0; i < FM; ++i)
        TT_UNROLL
        for (int j = 0; j < FN; ++j) Mfma<TA, MI>::run(acc[i][j], a[i], b[j]);
    }
    if (more) {
      ga.store(As + (cur ^ 1) * (MT0 * SP), tid, SP);
      gb.store(Bs + (cur ^ 1) * (MT1 * SP), tid, SP);
      __syncthreads();
    }
  }

  // Accumulator r of a lane is row acc_row(lane, r) (an output pixel), column acc_col (an output
  // channel): y is [N*P*Q][K], so a lane's four consecutive rows are K elements apart.
  TC* y = static_cast<TC*>(p.y) + g * kg;
  TT_UNROLL
  for (int j = 0; j < FN; ++j) {
    const int n = n0 + wn0 + j * MI + acc_col(lane, MI);
    if (n >= kg) continue;
    TT_UNROLL
    for (int i = 0; i < FM; ++i)
      TT_UNROLL
      for (int r = 0; r < NR; ++r) {
        const int m = m0 + wm0 + i * MI + acc_row(lane, 4 * (r / 4), MI) + r % 4;
        if (m < p.gemm_m) y[(long long)m * p.k + n] = out_from_float<TC>(acc[i][j][r]);
      }
  }
}
