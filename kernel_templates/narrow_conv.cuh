// Weight gradient of convolutions with few input channels (the 3-channel stem of image models),
// on sm_80+ tensor cores (mma.sync m16n8k16, bf16 / fp16 in, fp32 accumulation), NHWC / KRSC.
//
// Why a template of its own: an implicit GEMM that tiles the filter by (tap, channel chunk) wastes
// all but C of every chunk's columns when C is 3, and im2col gathers of 6-byte pixels cannot use
// vector copies or TMA. Here, with unit horizontal dilation, the columns (s, c) of one filter row r
// are contiguous in the flattened input row: for output column q, column j = s*C + c reads
// x_row[q*stride_w*C + j - pad_w*C]. So a block stages whole input rows (16-byte copies of W*C
// contiguous elements, zero margins for the padding) and reads the im2col operand straight out of
// shared memory at a linear offset: no gather, no wasted channels, at most 7 padding columns per
// filter row (S*C rounded up to n8 tiles).
//
// The GEMM: dw[k][r][j] = sum over output pixels (n, p, q) of dy[n, p, q, k] * X_r[(n, p, q)][j].
// Block (split, ky) owns output channels ky*KM .. +KM and a contiguous range of the N*P output rows;
// per row it stages dy's row (Q x KM, padded rows against bank conflicts) and the RT input rows its
// filter rows read (one cp.async stage per output row, STAGES deep). Warp w takes filter row
// w / WK and a 1/WK share of the KM channels; the reduction is q, 16 pixels per mma. Blocks along the
// rows meet in the deterministic split-K reduction (splitk_reduce.h; SPLIT partial tiles summed in
// split order by the last block to finish), which leaves the workspace zeroed.
//
// Smem per stage: QP * (KM + 8) * 2 bytes of dy, RT * XL * 2 bytes of input rows, where QP is Q
// rounded up to 16 and XL = XOFF + (QP - 1) * stride_w * C + NT * 8 rounded to 8 (XOFF: the left
// margin, pad_w * C rounded up to 8 so that the rows' 16-byte copies land aligned). Every stage is
// zeroed once at the start: margins and pixels past Q are never written again, so they stay zero;
// rows in the vertical padding are zero-filled by their copies (src-size 0).
#include "conv_params.h"
#include "mma_common.h"
#include "narrow_conv_index.h"

namespace tt_narrow {

using tt_mma::u32;

// Shared-memory geometry of one pipeline stage; the JSON's SMEM_BYTES must agree.
struct Geometry {
  int qp, dy_stride, xoff, xl, stage_bytes;
  TT_DEVICE Geometry(const TtConvParams& p, int KM, int RT, int NT) {
    qp = (p.q + 15) / 16 * 16;
    dy_stride = (KM + 8) * 2;  // bytes; odd multiple of 16: ldmatrix rows hit distinct banks
    xoff = (p.pad_w * p.c + 7) / 8 * 8;
    xl = (xoff + (qp - 1) * p.stride_w * p.c + NT * 8 + 7) / 8 * 8;
    if (xl < xoff + p.w * p.c) xl = (xoff + p.w * p.c + 7) / 8 * 8;
    stage_bytes = qp * dy_stride + RT * xl * 2;
  }
};

// Eight 16-bit elements from src (zeros where !ok) to the shared byte address dst: one 16-byte
// cp.async where the caller's tensors allow it (vec), else element by element. smem / sbase: the
// block's dynamic shared memory as a pointer and as a shared address.
TT_DEVICE void copy8(u32 dst, const void* src, bool ok, bool vec, unsigned char* smem, u32 sbase) {
  if (vec) {
    tt_mma::cp_async<16>(dst, src, ok ? 16 : 0);
  } else {
    unsigned short* d = reinterpret_cast<unsigned short*>(smem + (dst - sbase));
#pragma unroll 1  // unrolled, ptxas spills around the eight loads
    for (int e = 0; e < 8; ++e) d[e] = ok ? static_cast<const unsigned short*>(src)[e] : (unsigned short)0;
  }
}

}  // namespace tt_narrow

template <typename TA, typename TC, int DIR, bool NCHW, int KM, int RT, int NT, int WK, int STAGES, int SPLIT>
__global__ void __launch_bounds__(RT * WK * 32) narrow_wgrad(const TtConvParams p) {
  using namespace tt_mma;
  using tt_narrow::Geometry;
  constexpr int THREADS = RT * WK * 32;
  constexpr int MI = KM / 16 / WK;  // m16 tiles per warp
  static_assert(DIR == 2 && !NCHW, "narrow_wgrad: weight gradient, NHWC");
  static_assert(sizeof(TA) == 2, "bf16 or fp16 inputs");
  static_assert(KM % (16 * WK) == 0 && NT >= 1 && NT <= 8 && STAGES >= 2 && SPLIT >= 1, "parameters");

  extern __shared__ __align__(128) unsigned char tt_narrow_smem[];
  const u32 sbase = smem_addr(tt_narrow_smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int r = warp / WK, wk = warp % WK;
  const Geometry geo(p, KM, RT, NT);
  const int k0 = blockIdx.y * KM;
  const int rows = p.n * p.p;  // output rows (n, p)
  const int row0 = int((long long)blockIdx.x * rows / SPLIT), row1 = int((long long)(blockIdx.x + 1) * rows / SPLIT);

  // Zero every stage once: margins and pixels past Q stay zero for good.
  for (int i = tid * 16; i < STAGES * geo.stage_bytes; i += THREADS * 16)
    *reinterpret_cast<uint4*>(tt_narrow_smem + i) = make_uint4(0, 0, 0, 0);
  __syncthreads();

  const TA* x = static_cast<const TA*>(p.x);
  const TA* dy = static_cast<const TA*>(p.y);
  const int row_vecs = p.w * p.c / 8, dy_vecs = KM / 8;
  // Copies output row `row`'s operands into `stage`: dy's row (Q pixels x KM channels from k0), and
  // for each filter row the input row it reads (zeros in the vertical padding).
  // Callers' pointers reach the kernel as given: 16-byte copies only where both tensors allow them.
  const bool vec = (((unsigned long long)p.x | (unsigned long long)p.y) & 15) == 0;
  auto copy = [&](u32 dst, const TA* src, bool ok) { tt_narrow::copy8(dst, src, ok, vec, tt_narrow_smem, sbase); };
  auto load = [&](int stage, int row) {
    const u32 s = sbase + stage * geo.stage_bytes;
    const int n = row / p.p, pr = row % p.p;
    const TA* dyrow = dy + ((long long)row * p.q) * p.k + k0;
    for (int i = tid; i < p.q * dy_vecs; i += THREADS) {
      const int q = i / dy_vecs, v = i % dy_vecs;
      copy(s + q * geo.dy_stride + v * 16, dyrow + (long long)q * p.k + v * 8, true);
    }
    const u32 xs = s + geo.qp * geo.dy_stride;
    for (int i = tid; i < RT * row_vecs; i += THREADS) {
      const int rr = i / row_vecs, v = i % row_vecs;
      const int h = pr * p.stride_h - p.pad_h + rr * p.dil_h;
      const bool ok = h >= 0 && h < p.h;
      const TA* src = x + (((long long)n * p.h + (ok ? h : 0)) * p.w) * p.c + v * 8;
      copy(xs + (rr * geo.xl + geo.xoff) * 2 + v * 16, src, ok);
    }
  };

  float acc[MI][NT][4];
  zero(acc);
  const int nrows = row1 - row0;
  TT_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nrows) load(s, row0 + s);
    cp_async_commit();
  }
  // Per thread, the B fragment's element (pixel 2*t4 (+1, +8, +9), column nt*8 + g4) of filter row r
  // sits at xcol + pixel * SWC (+ nt * 8) halves into the row: one linear offset per pixel.
  const int g4 = lane >> 2, t4 = lane & 3;
  const int swc = p.stride_w * p.c;
  const int xcol = geo.xoff - p.pad_w * p.c + g4 + 2 * t4 * swc;
  for (int it = 0; it < nrows; ++it) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (it + STAGES - 1 < nrows) load((it + STAGES - 1) % STAGES, row0 + it + STAGES - 1);
    cp_async_commit();
    const u32 s = sbase + (it % STAGES) * geo.stage_bytes;
    const unsigned short* xr =
        reinterpret_cast<const unsigned short*>(tt_narrow_smem + (it % STAGES) * geo.stage_bytes + geo.qp * geo.dy_stride) +
        r * geo.xl + xcol;
    for (int ks = 0; ks < geo.qp / 16; ++ks) {
      u32 af[MI][4];
      TT_UNROLL
      for (int mi = 0; mi < MI; ++mi) {
        // A (m = channel, k = pixel) from dy's rows S[q][channel]: ldmatrix.trans, lanes -> (a0..a3).
        const int q = ks * 16 + (lane & 7) + ((lane >> 4) << 3);
        const int chunk = (wk * MI + mi) * 2 + ((lane >> 3) & 1);
        ldsm_x4<true>(af[mi], s + q * geo.dy_stride + chunk * 16);
      }
      const unsigned short* xq = xr + ks * 16 * swc;
      TT_UNROLL
      for (int nt = 0; nt < NT; ++nt) {
        const unsigned short* e = xq + nt * 8;
        u32 bf[2];
        bf[0] = u32(e[0]) | (u32(e[swc]) << 16);
        bf[1] = u32(e[8 * swc]) | (u32(e[9 * swc]) << 16);
        TT_UNROLL
        for (int mi = 0; mi < MI; ++mi) mma<TA>(acc[mi][nt], af[mi], bf);
      }
    }
  }
  cp_async_wait<0>();

  if (SPLIT > 1 && !splitk_reduce<MI, NT, THREADS, SPLIT, THREADS * MI * NT * 4>(acc, p.workspace, blockIdx.y,
                                                                                   gridDim.y, blockIdx.x, tid))
    return;

  // dw[k][r][s][c]: column j = s * C + c of filter row r; columns past S * C are the n8 padding.
  const int sc = p.s * p.c;
  TC* out = static_cast<TC*>(p.wt);
  TT_UNROLL
  for (int mi = 0; mi < MI; ++mi)
    TT_UNROLL
    for (int nt = 0; nt < NT; ++nt)
      TT_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int k = k0 + (wk * MI + mi) * 16 + g4 + (e >> 1) * 8;
        const int j = nt * 8 + 2 * t4 + (e & 1);
        if (j < sc && r < p.r) out[((long long)k * p.r + r) * sc + j] = tt_from_float<TC>(acc[mi][nt][e]);
      }
}

// Input gradient of the same convolutions (few input channels, unit dilation): a block owns dx
// rows (n, h), RB of them one after another, and writes each whole (W pixels x C channels). With
// the output column w = u * stride_w + rho - pad_w (rho: its residue class), the taps that reach it
// are s = rho + i * stride_w from dy column q = u - i, so for one filter row r and one class the
// input gradient is a GEMM over (i, k): A[u][(i, k)] = dy_row[u - i][k], a row of dy shifted by i
// (ldmatrix reads shifted rows as easily as aligned ones; rows outside 0..Q-1 are zero rows kept
// in shared memory), B[(i, k)][c] = wt[k][r][s][c], the C channels padded to one n8 tile. The
// filters are staged once per block as [r][s][c8][k] (k contiguous: a B fragment register is one
// 32-bit load); the dy rows a dx row needs (filter rows r = (h + pad_h) % stride_h + j * stride_h,
// NR = ceil(R / stride_h) of them) are staged per dx row, two stages deep.
// Warps take MT m16 tiles of one class at a time, of the STRIDE_W * UT tiles of a row (UT: tiles
// of u per class, rounded up to MT); K = 16 * KC is a compile-time constant so that a warp loads
// every fragment of a tap before its MMAs.
template <typename TA, typename TC, int DIR, bool NCHW, int WARPS, int MT, int RB, int KC>
__global__ void __launch_bounds__(WARPS * 32) narrow_dgrad(const TtConvParams p) {
  using namespace tt_mma;
  constexpr int THREADS = WARPS * 32;
  static_assert(DIR == 1 && !NCHW, "narrow_dgrad: input gradient, NHWC");
  static_assert(sizeof(TA) == 2, "bf16 or fp16 inputs");
  static_assert(MT >= 1 && RB >= 1 && KC >= 1, "parameters");

  extern __shared__ __align__(128) unsigned char tt_narrow_smem[];
  const u32 sbase = smem_addr(tt_narrow_smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int C = p.c, R = p.r, S = p.s, sw = p.stride_w, sh = p.stride_h;
  constexpr int K = KC * 16;  // the JSON admits K == 16 * KC only
  // Geometry (the JSON's SMEM_BYTES must agree): filter rows of K + 8 halves, dy rows likewise.
  const int kst = (K + 8) * 2;  // bytes; odd multiple of 16: conflict-free ldmatrix and B loads
  const int ut = (((p.w - 1 + p.pad_w) / sw + 1 + 15) / 16 + MT - 1) / MT * MT;  // tiles of u per class
  const int pf = (S - 1) / sw;  // zero rows before dy's first column: q = u - i down to -pf
  const int qr = ut * 16 + pf;  // rows of one staged dy row
  const int nr = (R + sh - 1) / sh;
  const int filt_bytes = R * S * 8 * kst, stage_bytes = nr * qr * kst;

  for (int i = tid * 16; i < filt_bytes + 2 * stage_bytes; i += THREADS * 16)
    *reinterpret_cast<uint4*>(tt_narrow_smem + i) = make_uint4(0, 0, 0, 0);
  __syncthreads();
  // Filters KRSC -> [r][s][c][k]; channels C..7 stay zero.
  const TA* wt = static_cast<const TA*>(p.wt);
  unsigned short* fs = reinterpret_cast<unsigned short*>(tt_narrow_smem);
  for (int e = tid; e < K * R * S * C; e += THREADS) {
    const int k = e / (R * S * C), rsc = e % (R * S * C);
    const int c = rsc % C, rs = rsc / C;
    fs[(rs * 8 + c) * (kst / 2) + k] = reinterpret_cast<const unsigned short*>(wt)[e];
  }

  const TA* dy = static_cast<const TA*>(p.y);
  const bool vec = (((unsigned long long)p.y) & 15) == 0;
  const int rows = p.n * p.h;
  const int row0 = blockIdx.x * RB, row1 = min(rows, row0 + RB);
  const int kv = K / 8;
  // Stages the dy rows dx row `row` needs into `stage` (a filter row whose dy row falls outside
  // 0..P-1 is skipped by the compute, its slot left as it was).
  auto load = [&](int stage, int row) {
    const int n = row / p.h, h = row % p.h;
    const int rfirst = (h + p.pad_h) % sh;
    const u32 s0 = sbase + filt_bytes + stage * stage_bytes;
    for (int i = tid; i < nr * p.q * kv; i += THREADS) {
      const int j = i / (p.q * kv), qk = i % (p.q * kv), q = qk / kv, v = qk % kv;
      const int r = rfirst + j * sh, pr = (h + p.pad_h - r) / sh;
      if (r >= R || pr < 0 || pr >= p.p) continue;
      const TA* src = dy + (((long long)n * p.p + pr) * p.q + q) * K + v * 8;
      tt_narrow::copy8(s0 + (j * qr + pf + q) * kst + v * 16, src, true, vec, tt_narrow_smem, sbase);
    }
  };
  if (row0 < row1) load(0, row0);
  cp_async_commit();

  const int g4 = lane >> 2, t4 = lane & 3;
  TC* dx = static_cast<TC*>(p.x);
  const int tiles = sw * ut;
  for (int row = row0; row < row1; ++row) {
    const int it = row - row0, st = it & 1;
    if (row + 1 < row1) load(st ^ 1, row + 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const int n = row / p.h, h = row % p.h;
    const int rfirst = (h + p.pad_h) % sh;
    const u32 s0 = sbase + filt_bytes + st * stage_bytes;
    for (int t0 = warp * MT; t0 < tiles; t0 += WARPS * MT) {
      float acc[MT][4];
      TT_UNROLL
      for (int m = 0; m < MT; ++m) acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.f;
      // The warp's MT tiles are consecutive tiles of one residue class (ut is a multiple of MT).
      const int rho = t0 / ut, ub = (t0 % ut) * 16;
      for (int j = 0; j < nr; ++j) {
        const int r = rfirst + j * sh, pr = (h + p.pad_h - r) / sh;
        if (r >= R || pr < 0 || pr >= p.p) continue;  // the same for the whole block
        const u32 dyr = s0 + j * qr * kst;
        for (int i = 0; rho + i * sw < S; ++i) {
          const int s = rho + i * sw;
          // All fragments of this tap first, then the MMAs: the loads are in flight together.
          const u32 brow = sbase + ((r * S + s) * 8 + g4) * kst + t4 * 4;
          u32 bf[KC][2], af[MT][KC][4];
          TT_UNROLL
          for (int kc = 0; kc < KC; ++kc) {
            asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(bf[kc][0]) : "r"(brow + kc * 32));
            asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(bf[kc][1]) : "r"(brow + kc * 32 + 16));
          }
          const u32 arow = dyr + (ub - i + pf + (lane & 15)) * kst + (lane >> 4) * 16;
          TT_UNROLL
          for (int m = 0; m < MT; ++m)
            TT_UNROLL
            for (int kc = 0; kc < KC; ++kc) ldsm_x4<false>(af[m][kc], arow + m * 16 * kst + kc * 32);
          TT_UNROLL
          for (int kc = 0; kc < KC; ++kc)
            TT_UNROLL
            for (int m = 0; m < MT; ++m) mma<TA>(acc[m], af[m][kc], bf[kc]);
        }
      }
      // Fragment element e: u = u0 + g4 + 8 * (e / 2), channel 2 * t4 + e % 2.
      TT_UNROLL
      for (int m = 0; m < MT; ++m) {
        const int t = t0 + m;
        const int rho = t / ut, u0 = (t % ut) * 16;
        TT_UNROLL
        for (int e = 0; e < 4; ++e) {
          const int w = (u0 + g4 + 8 * (e >> 1)) * sw + rho - p.pad_w, c = 2 * t4 + (e & 1);
          if (t < tiles && w >= 0 && w < p.w && c < C)
            dx[(((long long)n * p.h + h) * p.w + w) * C + c] = tt_from_float<TC>(acc[m][e]);
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before the next iteration refills it
  }
  cp_async_wait<0>();
}

// Forward pass of the same convolutions (few input channels, the 3-channel stem; unit horizontal
// dilation). As in narrow_wgrad, the columns (s, c) of filter row r are contiguous in the flattened
// input row, so output pixel q of filter row r reads j = s * C + c at x_row[q * stride_w * C + j -
// pad_w * C]: per output row (n, p) the forward pass is, for each filter row, a GEMM whose A operand
// (pixel x j) is the staged input row read at a linear offset per pixel (no gather, no channel
// padding: 7 x 3 = 21 columns of a 7x7 stem filter row take two k16 steps) and whose B operand is
// the filter row [k][j], staged once per block (columns past S * C are zero, so whatever A holds
// there adds nothing). A block owns RB consecutive output rows; its warps take MT m16 tiles of the
// row's pixels at a time, all K output channels each (K = 16 * KC, compile-time). Input rows are
// staged per output row (R of them, 16-byte copies, STAGES deep; rows in the vertical padding are
// zero-filled). Shared memory: R * K * JST bytes of filters (JST = (JP + 8) * 2, JP = S * C rounded
// up to 16: an odd multiple of 16, conflict-free B loads), then STAGES * R * XL * 2 bytes of input
// rows (narrow_conv_index.h: their layout and the element each pixel reads).
template <typename TA, typename TC, int DIR, bool NCHW, int WARPS, int MT, int RB, int KC, int STAGES>
__global__ void __launch_bounds__(WARPS * 32) narrow_fwd(const TtConvParams p) {
  using namespace tt_mma;
  constexpr int THREADS = WARPS * 32, K = KC * 16, NK = K / 8;
  static_assert(DIR == 0 && !NCHW, "narrow_fwd: forward, NHWC");
  static_assert(sizeof(TA) == 2, "bf16 or fp16 inputs");
  static_assert(MT >= 1 && RB >= 1 && KC >= 1 && STAGES >= 2, "parameters");

  extern __shared__ __align__(128) unsigned char tt_narrow_smem[];
  const u32 sbase = smem_addr(tt_narrow_smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int C = p.c, R = p.r, S = p.s, sw = p.stride_w;
  const tt_narrow::FwdRow geo(p.w, C, p.q, S, p.pad_w, sw);
  const int J = S * C, jp = geo.jp, jst = (jp + 8) * 2, xoff = geo.xoff, xl = geo.elems;
  const int filt_bytes = R * K * jst, stage_bytes = R * xl * 2;

  for (int i = tid * 16; i < filt_bytes + STAGES * stage_bytes; i += THREADS * 16)
    *reinterpret_cast<uint4*>(tt_narrow_smem + i) = make_uint4(0, 0, 0, 0);
  __syncthreads();
  // Filters KRSC -> [r][k][j] (j = s * C + c contiguous; columns J..jp stay zero), read in the
  // global order.
  const unsigned short* wt = static_cast<const unsigned short*>(p.wt);
  for (int e = tid; e < K * R * J; e += THREADS) {
    const int k = e / (R * J), rj = e % (R * J), r = rj / J, j = rj % J;
    *reinterpret_cast<unsigned short*>(tt_narrow_smem + (r * K + k) * jst + 2 * j) = wt[e];
  }

  const TA* x = static_cast<const TA*>(p.x);
  const bool vec = (((unsigned long long)p.x) & 15) == 0;
  const int row_vecs = p.w * C / 8;  // the JSON admits W * C % 8 == 0 only
  const int rows = p.n * p.p;
  const int row0 = blockIdx.x * RB, row1 = min(rows, row0 + RB);
  // Stages the R input rows output row `row` reads (zeros in the vertical padding).
  auto load = [&](int stage, int row) {
    const int n = row / p.p, pr = row % p.p;
    const u32 xs = sbase + filt_bytes + stage * stage_bytes;
    for (int i = tid; i < R * row_vecs; i += THREADS) {
      const int r = i / row_vecs, v = i % row_vecs;
      const int h = pr * p.stride_h - p.pad_h + r;
      const bool ok = h >= 0 && h < p.h;
      const TA* src = x + (((long long)n * p.h + (ok ? h : 0)) * p.w) * C + v * 8;
      tt_narrow::copy8(xs + (r * xl + xoff) * 2 + v * 16, src, ok, vec, tt_narrow_smem, sbase);
    }
  };
  TT_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (row0 + s < row1) load(s, row0 + s);
    cp_async_commit();
  }

  const int g4 = lane >> 2, t4 = lane & 3;
  const int swc = sw * C;
  const int tiles = (p.q + 15) / 16;
  TC* y = static_cast<TC*>(p.y);
  const bool pair_ok = (unsigned long long)y % (2 * sizeof(TC)) == 0;  // channel pairs (K even)
  for (int row = row0; row < row1; ++row) {
    const int it = row - row0;
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // this row's stage is in; every warp is done with the stage refilled next
    if (row + STAGES - 1 < row1) load((it + STAGES - 1) % STAGES, row + STAGES - 1);
    cp_async_commit();
    const unsigned short* xs =
        reinterpret_cast<const unsigned short*>(tt_narrow_smem + filt_bytes + (it % STAGES) * stage_bytes);
    for (int t0 = warp * MT; t0 < tiles; t0 += WARPS * MT) {
      float acc[MT][NK][4];
      zero(acc);
      // Pixel q, column j of filter row r: element(q, j) of its staged row. A tile past the row's
      // last (MT > 1) reads the last one again and stores nothing.
      int at[MT];
      TT_UNROLL
      for (int m = 0; m < MT; ++m) at[m] = geo.element(min(t0 + m, tiles - 1) * 16 + g4, 2 * t4, C, p.pad_w, sw);
      for (int r = 0; r < R; ++r) {
        const unsigned short* xr = xs + r * xl;
        const u32 brow = sbase + (r * K + g4) * jst + t4 * 4;
        for (int ks = 0; ks < jp / 16; ++ks) {
          // A: (pixel g4 (+8), columns 2 t4 (+1) (+8)) of each m16 tile, two halves per register.
          u32 af[MT][4];
          TT_UNROLL
          for (int m = 0; m < MT; ++m) {
            const unsigned short* e = xr + at[m] + ks * 16;
            af[m][0] = u32(e[0]) | (u32(e[1]) << 16);
            af[m][1] = u32(e[8 * swc]) | (u32(e[8 * swc + 1]) << 16);
            af[m][2] = u32(e[8]) | (u32(e[9]) << 16);
            af[m][3] = u32(e[8 * swc + 8]) | (u32(e[8 * swc + 9]) << 16);
          }
          TT_UNROLL
          for (int nt = 0; nt < NK; ++nt) {
            // B: (columns 2 t4 (+1) (+8), output channel nt * 8 + g4) of filter row r.
            u32 bf[2];
            const u32 b = brow + nt * 8 * jst + ks * 32;
            asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(bf[0]) : "r"(b));
            asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(bf[1]) : "r"(b + 16));
            TT_UNROLL
            for (int m = 0; m < MT; ++m) mma<TA>(acc[m][nt], af[m], bf);
          }
        }
      }
      // Fragment element e of n8 tile nt: pixel q0 + g4 + 8 * (e / 2), channel nt * 8 + 2 * t4 + e % 2.
      TT_UNROLL
      for (int m = 0; m < MT; ++m)
        TT_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int q = (t0 + m) * 16 + g4 + 8 * h;
          if (q >= p.q) continue;
          TC* out = y + ((long long)row * p.q + q) * K + 2 * t4;  // row = n * P + p
          TT_UNROLL
          for (int nt = 0; nt < NK; ++nt) {
            tt_store_pair(out + nt * 8, acc[m][nt][2 * h], acc[m][nt][2 * h + 1], pair_ok);
          }
        }
    }
  }
  cp_async_wait<0>();
}

// Input gradient of the same convolutions as col2im: a GEMM whose N is every (tap, channel) of the filter, then a
// gather. With few channels, narrow_dgrad's reduction over (tap, output channel) leaves all but C of each n8 tile's
// columns idle and reads every dy fragment once per tap; here Z[m][(r, s, c)] = sum over k of dy[m][k] *
// wt[k][r][s][c] uses R * S * C columns (the stem's 147 in 19 n8 tiles), each dy fragment read once per group of NB
// n8 tiles, and dx[h][w][c] is the sum of Z over the taps that reach (h, w) (in a fixed order: deterministic).
// A persistent block takes tiles of BH x BW dx pixels (narrow_conv_index.h, Col2imTile): it stages the MP x MQ dy
// pixels they need (16-byte copies, two stages: the next tile's are in flight while this one computes), its warps
// take (m16 tile, NB n8 tiles) units with the filters staged once per block as [n = (r, s, c)][k], Z goes to shared
// memory as fp32, and the block sums each dx pixel's taps out of it. The halo (MP * MQ against TP * TQ pixels) is
// computed by each tile that needs it rather than exchanged. K = 16 * KC: a warp holds a unit's dy fragments (KC * 4
// registers) across its NB n8 tiles.
template <typename TA, typename TC, int DIR, bool NCHW, int WARPS, int TP, int TQ, int NB, int KC>
__global__ void __launch_bounds__(WARPS * 32) narrow_col2im(const TtConvParams p) {
  using namespace tt_mma;
  constexpr int THREADS = WARPS * 32, K = KC * 16, KV = K / 8;
  static_assert(DIR == 1 && !NCHW, "narrow_col2im: input gradient, NHWC");
  static_assert(sizeof(TA) == 2, "bf16 or fp16 inputs");
  static_assert(TP >= 1 && TQ >= 1 && NB >= 1 && KC >= 1, "parameters");

  extern __shared__ __align__(128) unsigned char tt_narrow_smem[];
  const u32 sbase = smem_addr(tt_narrow_smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int C = p.c, R = p.r, S = p.s, sh = p.stride_h, sw = p.stride_w;
  const tt_narrow::Col2imTile geo(TP, TQ, R, S, sh, sw);
  const int rsc = R * S * C, nt8 = (rsc + 7) / 8;
  // Geometry (the JSON's SMEM_BYTES must agree): filter and dy rows of K + 8 halves, then Z.
  const int kst = (K + 8) * 2;  // bytes; odd multiple of 16: conflict-free ldmatrix and B loads
  const int filt_bytes = nt8 * 8 * kst, stage_bytes = geo.m16 * 16 * kst;
  float* z = reinterpret_cast<float*>(tt_narrow_smem + filt_bytes + 2 * stage_bytes);

  // Filter columns past R * S * C and staged pixels past MP * MQ stay zero.
  for (int i = tid * 16; i < filt_bytes + 2 * stage_bytes; i += THREADS * 16)
    *reinterpret_cast<uint4*>(tt_narrow_smem + i) = make_uint4(0, 0, 0, 0);
  __syncthreads();
  // Filters KRSC ([k][n], n = (r * S + s) * C + c) -> [n][k].
  const unsigned short* wt = static_cast<const unsigned short*>(p.wt);
  unsigned short* fs = reinterpret_cast<unsigned short*>(tt_narrow_smem);
  for (int e = tid; e < K * rsc; e += THREADS) fs[(e % rsc) * (kst / 2) + e / rsc] = wt[e];

  const int tiles_h = (p.h + geo.bh - 1) / geo.bh, tiles_w = (p.w + geo.bw - 1) / geo.bw;
  const int tiles = p.n * tiles_h * tiles_w;
  struct Tile {
    int n, h0, w0, p0, q0;
  };
  auto tile = [&](int t) {
    Tile o;
    o.n = t / (tiles_h * tiles_w);
    const int rem = t % (tiles_h * tiles_w);
    o.h0 = rem / tiles_w * geo.bh;
    o.w0 = rem % tiles_w * geo.bw;
    o.p0 = tt_narrow::Col2imTile::first(o.h0, p.pad_h, R, sh);
    o.q0 = tt_narrow::Col2imTile::first(o.w0, p.pad_w, S, sw);
    return o;
  };
  const TA* dy = static_cast<const TA*>(p.y);
  const bool vec = (((unsigned long long)p.y) & 15) == 0;
  // Stages tile t's MP x MQ dy pixels (zeros outside dy).
  auto load = [&](int stage, int t) {
    const Tile o = tile(t);
    const u32 s0 = sbase + filt_bytes + stage * stage_bytes;
    for (int i = tid; i < geo.mp * geo.mq * KV; i += THREADS) {
      const int m = i / KV, v = i % KV;
      const int pp = o.p0 + m / geo.mq, qq = o.q0 + m % geo.mq;
      const bool ok = pp >= 0 && pp < p.p && qq >= 0 && qq < p.q;
      const TA* src = dy + (((long long)o.n * p.p + (ok ? pp : 0)) * p.q + (ok ? qq : 0)) * K + v * 8;
      tt_narrow::copy8(s0 + m * kst + v * 16, src, ok, vec, tt_narrow_smem, sbase);
    }
  };

  const int g4 = lane >> 2, t4 = lane & 3;
  const int groups = (nt8 + NB - 1) / NB, units = geo.m16 * groups;
  TC* dx = static_cast<TC*>(p.x);
  int t = blockIdx.x;
  if (t < tiles) load(0, t);
  cp_async_commit();
  for (int it = 0; t < tiles; ++it, t += gridDim.x) {
    if (t + (int)gridDim.x < tiles) load((it + 1) & 1, t + gridDim.x);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();  // this tile's pixels are in; every thread is done with the last tile's Z
    const u32 st = sbase + filt_bytes + (it & 1) * stage_bytes;
    for (int u = warp; u < units; u += WARPS) {
      const int mt = u / groups, g = u % groups;
      u32 af[KC][4], bf[NB][KC][2];
      const u32 arow = st + (mt * 16 + (lane & 15)) * kst + (lane >> 4) * 16;
      TT_UNROLL
      for (int kc = 0; kc < KC; ++kc) ldsm_x4<false>(af[kc], arow + kc * 32);
      TT_UNROLL
      for (int nb = 0; nb < NB; ++nb) {
        const int nt = min(g * NB + nb, nt8 - 1);  // a group's tiles past the last compute it again, unstored
        const u32 brow = sbase + (nt * 8 + g4) * kst + t4 * 4;
        TT_UNROLL
        for (int kc = 0; kc < KC; ++kc) {
          asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(bf[nb][kc][0]) : "r"(brow + kc * 32));
          asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(bf[nb][kc][1]) : "r"(brow + kc * 32 + 16));
        }
      }
      float acc[NB][4];
      TT_UNROLL
      for (int nb = 0; nb < NB; ++nb) acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.f;
      TT_UNROLL
      for (int kc = 0; kc < KC; ++kc)
        TT_UNROLL
        for (int nb = 0; nb < NB; ++nb) mma<TA>(acc[nb], af[kc], bf[nb][kc]);
      // Fragment element e of n8 tile nt: pixel mt * 16 + g4 + 8 * (e / 2), column nt * 8 + 2 * t4 + e % 2.
      TT_UNROLL
      for (int nb = 0; nb < NB; ++nb) {
        const int nt = g * NB + nb;
        if (nt >= nt8) break;
        float* zc = z + (nt * 8 + 2 * t4) * geo.zm + mt * 16 + g4;
        zc[0] = acc[nb][0];
        zc[geo.zm] = acc[nb][1];
        zc[8] = acc[nb][2];
        zc[geo.zm + 8] = acc[nb][3];
      }
    }
    __syncthreads();  // Z complete
    const Tile o = tile(t);
    for (int i = tid; i < geo.bh * geo.bw; i += THREADS) {
      const int h = o.h0 + i / geo.bw, w = o.w0 + i % geo.bw;
      if (h >= p.h || w >= p.w) continue;
      float sum[8];
      TT_UNROLL
      for (int c = 0; c < 8; ++c) sum[c] = 0.f;
      for (int r = (h + p.pad_h) % sh; r < R; r += sh) {
        const int lp = (h + p.pad_h - r) / sh - o.p0;
        for (int s = (w + p.pad_w) % sw; s < S; s += sw) {
          const float* zc = z + (r * S + s) * C * geo.zm + lp * geo.mq + (w + p.pad_w - s) / sw - o.q0;
          TT_UNROLL
          for (int c = 0; c < 8; ++c)
            if (c < C) sum[c] += zc[c * geo.zm];
        }
      }
      TC* out = dx + (((long long)o.n * p.h + h) * p.w + w) * C;
      TT_UNROLL
      for (int c = 0; c < 8; ++c)
        if (c < C) out[c] = tt_from_float<TC>(sum[c]);
    }
  }
  cp_async_wait<0>();
}
