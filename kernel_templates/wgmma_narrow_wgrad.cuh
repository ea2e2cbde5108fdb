// Hopper (sm_90a) weight gradient of convolutions with few input channels (the 3-channel stem), on wgmma:
// narrow_wgrad's row staging with the im2col operand read as wgmma's register A. NHWC x and dy, KRSC dw,
// bf16 / fp16 in, fp32 accumulation, unit horizontal dilation, K in blocks of 64.
//
// Why: narrow_wgrad (mma.sync) reads each dy fragment once per filter row and each im2col element with a
// 16-bit shared load, and ran the stem at 113 TFLOP/s on the H100 and the H200, a third of mma.sync's rate and
// under half of what its 244 MB of traffic allow. Here the GEMM is transposed: dw^T[(r, s, c)][k] = sum over
// pixels of X[pixel][(r, s, c)] * dy[pixel][k], with the R * S * C filter columns as wgmma's M (MT warpgroups
// of 64 rows, dense: row m = r * S * C + j) and 64 output channels as N, so dy is the B operand that the tensor
// cores read from shared memory (once a warpgroup) and the im2col rows come from registers. A register of the
// A fragment pairs pixels q and q + 1, whose elements sit D = stride_w * C apart in the staged input row, so
// every staged row is also written as pairs (narrow_conv_index.h, PairRows): a fragment register is one 32-bit
// shared load at a per-thread offset fixed for the whole kernel.
//
// A block owns a contiguous range of the output rows in groups of ROWS consecutive rows of one image (SPLIT blocks
// along them, summed by the deterministic split-K reduction of splitk_reduce.h) and one 64-channel block of K
// (grid_y). Per group, one cp.async stage (dy's ROWS rows, the input rows they read) lands STAGES - 1 groups ahead;
// the pairs of group it + 1 are built from its landed stage while the warpgroups' wgmma on group it run. A group
// of ROWS rows stages (ROWS - 1) * stride_h + R input rows where ROWS single rows stage ROWS * R (the stem: 9
// against 14), and pays one barrier, one pair build and one pipeline step for ROWS rows' wgmma. Rows of a group
// past P read zeros from dy and add nothing.
#include "conv_params.h"
#include "mma_common.h"
#include "narrow_pairs.h"
#include "splitk_reduce.h"

template <typename TA, typename TC, int DIR, bool NCHW, int MT, int KQ, int STAGES, int SPLIT, int ROWS>
__global__ void __launch_bounds__(128 * MT, 1) wgmma_narrow_wgrad(const TtConvParams p) {
  using namespace tt_wg;
  using tt_mma::u32;
  constexpr int THREADS = 128 * MT;
  static_assert(DIR == 2 && !NCHW, "wgmma_narrow_wgrad: weight gradient, NHWC");
  static_assert(sizeof(TA) == 2, "bf16 or fp16 inputs");
  static_assert(MT >= 1 && MT <= 4 && KQ >= 1 && STAGES >= 3 && SPLIT >= 1 && ROWS >= 1, "parameters");
  typedef TtWgmmaRs<64, IsBf16<TA>::value, 1> Mma;  // B (dy) MN-major: channels contiguous

  // The stages from the allocation's first 1024-byte boundary (the 128-byte swizzle's period).
  extern __shared__ __align__(1024) unsigned char smem_dyn[];
  unsigned char* const smem_raw = smem_dyn + pad_to_1024(smem_addr(smem_dyn));
  const u32 sbase = smem_addr(smem_raw);
  const int tid = threadIdx.x, lane = tid & 31, warp = (tid >> 5) & 3, mt = tid >> 7;
  // Staged input rows a group: a single row's R filter rows (dil_h apart), or the (ROWS - 1) * stride_h + R
  // consecutive rows of ROWS output rows (unit dilation); row g * stride_h + r is filter row r of the group's row g.
  const int xrows = ROWS == 1 ? p.r : (ROWS - 1) * p.stride_h + p.r;
  const tt_narrow::PairRows geo(p.w, p.c, p.q, xrows, p.s * p.c, p.pad_w, p.stride_w, p.stride_w * p.c);
  const int line_bytes = geo.qp * 128, dy_bytes = ROWS * line_bytes;  // dy's lines a row, a group
  const int stage_bytes = dy_bytes + geo.x_bytes;                       // dy's lines, then the input rows
  const u32 pairs0 = sbase + STAGES * stage_bytes;  // two buffers of xrows rows of xl words
  const int k0 = blockIdx.y * 64;
  const int groups = (p.p + ROWS - 1) / ROWS;  // an image's row groups
  const int units = p.n * groups;
  const int row0 = int((long long)blockIdx.x * units / SPLIT), row1 = int((long long)(blockIdx.x + 1) * units / SPLIT);
  const int nrows = row1 - row0;  // groups, of ROWS rows each
  const int sc = p.s * p.c, rsc = p.r * sc;

  // Zero the stages and pairs once: dy's lines past Q, the rows' margins and the pairs no build writes stay
  // zero (the A rows past R * S * C and pixels past Q must meet finite values).
  for (int i = tid * 16; i < STAGES * stage_bytes + geo.pair_bytes; i += THREADS * 16)
    *reinterpret_cast<uint4*>(smem_raw + i) = make_uint4(0, 0, 0, 0);
  __syncthreads();

  const TA* x = static_cast<const TA*>(p.x);
  const TA* dy = static_cast<const TA*>(p.y);
  const bool vec = (((unsigned long long)p.x | (unsigned long long)p.y) & 15) == 0;
  // Row group `group`'s operands into `stage`: each row's dy, Q pixels x 64 channels from k0 as swizzled lines
  // (chunk v of line q at (v ^ q % 8) * 16; rows past P as zeros), then the input rows. A thread copies one chunk
  // v = tid % 8 of every THREADS / 8-th line from tid / 8 (THREADS / 8 a multiple of 8, so its swizzled place is the
  // same on each), and the input rows go a warp a row: fewer instructions a step than a walk over all chunks (a
  // division a chunk), which ran the stem 13-15% slower (H100, 2026-12-07).
  auto load = [&](int stage, int group) {
    const u32 s = sbase + stage * stage_bytes;
    const int n = group / groups, pr = (group - n * groups) * ROWS;
    const TA* dyrow = dy + ((long long)n * p.p + pr) * p.q * p.k + k0;
    const int v = tid & 7, q0 = tid >> 3;
    TT_UNROLL
    for (int g = 0; g < ROWS; ++g) {
      const bool ok = ROWS == 1 || pr + g < p.p;
      const TA* src = dyrow + ((long long)(ok ? g : 0) * p.q + q0) * p.k + v * 8;
      u32 dst = s + g * line_bytes + tt_narrow::swizzle128(q0, v);
      for (int q = q0; q < p.q; q += THREADS / 8, src += (long long)(THREADS / 8) * p.k, dst += THREADS / 8 * 128)
        tt_narrow::copy8(dst, src, ok, vec, smem_raw, sbase);
    }
    tt_narrow::stage_input_rows<TA, THREADS, true>(s + dy_bytes, x, p, n, pr, ROWS == 1 ? p.dil_h : 1, geo, vec,
                                                   smem_raw, sbase, tid);
  };
  // The pairs of `stage`'s input rows into pair buffer `buf`: pair[i] = (row[i], row[i + D]).
  auto build = [&](int stage, int buf) {
    tt_narrow::build_pairs<THREADS, true>(smem_raw + stage * stage_bytes + dy_bytes,
                                         smem_raw + STAGES * stage_bytes + buf * xrows * geo.xl * 4, geo, tid);
  };

  // This thread's A rows (registers 0 / 2 and 1 / 3): filter row and column, as byte offsets into a pair
  // buffer at pixel 2t; rows past R * S * C read row 0's pairs (finite; their sums are never stored).
  u32 aoff[2];
  TT_UNROLL
  for (int e = 0; e < 2; ++e) {
    const int m = mt * 64 + tt_narrow::afrag_row(warp, lane, e);
    const int r = m < rsc ? m / sc : 0, j = m < rsc ? m - r * sc : 0;
    aoff[e] = (u32)((r * geo.xl + geo.pair_index(tt_narrow::afrag_k(lane, e, 0), j, p.c, p.pad_w)) * 4);
  }
  const u32 kstep = 16u * geo.d * 4, khalf = 8u * geo.d * 4;  // bytes of a k16 step, of its second half

  float acc[32];
  TT_UNROLL
  for (int i = 0; i < 32; ++i) acc[i] = 0.0f;

  // Group `it`: its rows' A words from its pairs (row g's filter rows start g * stride_h rows in), their wgmma on
  // their staged dy (B), the next group's pairs meanwhile.
  const u32 grow = (u32)(p.stride_h * geo.xl * 4);  // bytes from a group's row to the next in a pair buffer
  tt_narrow::row_pipeline<STAGES>(
      nrows, [&](int stage, int i) { load(stage, row0 + i); }, build,
      [&](int it, const auto& next) {
        const u32 pa = pairs0 + (u32)((it & 1) * xrows * geo.xl * 4);
        u32 a[ROWS][KQ][4];
        TT_UNROLL
        for (int g = 0; g < ROWS; ++g)
          TT_UNROLL
          for (int kk = 0; kk < KQ; ++kk)
            TT_UNROLL
            for (int e = 0; e < 4; ++e) {
              const u32 addr = pa + g * grow + aoff[e & 1] + kk * kstep + (e >> 1) * khalf;
              asm volatile("ld.shared.b32 %0, [%1];" : "=r"(a[g][kk][e]) : "r"(addr));
            }
        const u32 sb = sbase + (it % STAGES) * stage_bytes;
        wg_fence();
        TT_UNROLL
        for (int g = 0; g < ROWS; ++g) {
          const u64 db = desc(sb + g * line_bytes, 64 * 128, 1024);
          TT_UNROLL
          for (int kk = 0; kk < KQ; ++kk) Mma::mma(acc, a[g][kk], db + kk * (2048 / 16), 1);
        }
        wg_commit();
        next();
        wg_wait<0>();
      });
  fence_regs<32>(acc);

  if (SPLIT > 1 && !tt_splitk::reduce<32, THREADS, SPLIT, 32 * THREADS>(acc, p.workspace, blockIdx.y, gridDim.y,
                                                                        blockIdx.x, tid, tt_splitk::BlockGroup()))
    return;

  // Fragment j of the m64n64 accumulators: rows 16 warp + g (+ 8), columns 8 j + 2 t (+ 1); row m of the block
  // is dw's column m = r * S * C + s * C + c of output channel k0 + column.
  TC* out = static_cast<TC*>(p.wt);
  TT_UNROLL
  for (int j = 0; j < 8; ++j)
    TT_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int m = mt * 64 + 16 * warp + (lane >> 2) + 8 * h;
      if (m >= rsc) continue;
      TT_UNROLL
      for (int e = 0; e < 2; ++e) {
        const int k = k0 + 8 * j + 2 * (lane & 3) + e;
        out[(long long)k * rsc + m] = tt_from_float<TC>(acc[4 * j + 2 * h + e]);
      }
    }
}
