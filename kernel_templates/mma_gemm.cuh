// Tensor-core GEMM for sm_80+ (Ampere-style: mma.sync + ldmatrix + multi-stage cp.async),
// column-major BLAS semantics: C = alpha * op(A) * op(B) + beta * C, fp32 accumulation.
//
//   TA = tt_bf16 / tt_half : mma.sync.m16n8k16 (bf16 / f16 inputs)
//   TA = float             : mma.sync.m16n8k8 tf32 (inputs rounded to tf32 with cvt.rna)
//
// Block tile BM x BN of C, K consumed BK at a time through a STAGES-deep cp.async ring in dynamic
// shared memory; (BM/WM) x (BN/WN) warps, each owning a WM x WN warp tile of m16n8 accumulators.
//
// Shared layout: every operand tile is stored the way it lies in global memory (rows along the
// strided dimension, the contiguous dimension inside a row), so a 16-byte global vector is one
// 16-byte cp.async. An operand whose contiguous dimension is K ("K-major": A transposed, B not
// transposed) is fed to the mma with plain ldmatrix; an MN-major one with ldmatrix.trans (16-bit)
// or with 32-bit shared loads (tf32, where .trans would split the elements). Rows are XOR-swizzled
// in 16-byte chunks so that the 8 rows one 8x8 ldmatrix reads (and the 4 k-rows of a tf32 scalar
// fragment load) hit 8 different bank groups.
//
// Loads are predicated: a vector that lies partly outside the matrix copies only its valid bytes
// (cp.async src-size, the rest zero-filled); one fully outside copies nothing. VB is the vector
// size in BYTES (one value serves every element type, which lets one default config cover all
// types). When the leading dimension, the batch stride or the base pointer is not a multiple of VB
// (checked at run time, block-uniform) the loader falls back to one element per copy:
// cp.async of 4 bytes for fp32, a synchronous 2-byte load/store for 16-bit types.
//
// Rasterisation: blockIdx.x walks the tiles in groups of GROUP_M tile rows (column-major inside
// a group), so that concurrently running blocks share A and B panels in L2.
//
// Split-K (SPLITK > 1): blockIdx.z = batch * SPLITK + split; split s owns a contiguous range of K
// tiles. Every split stores its fp32 partial tile into its own slot in p.workspace, then bumps the
// tile's counter; the block that arrives last sums the slots in split order (deterministic,
// whatever the arrival order), zeroes them and the counter again (the workspace contract), and runs
// the epilogue. No block ever waits for another, so this cannot deadlock.
// Workspace layout: int counters[BATCH * TILES] padded to 256 bytes, then
// float slots[BATCH * TILES][SPLITK][BM * BN].
#include "gemm_params.h"
#include "mma_common.h"

namespace tt_mma {

TT_DEVICE u32 lds32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

TT_DEVICE u32 to_tf32(u32 x) {
  u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(x)));
  return r;
}

// Copies a ROWS x COLS tile into swizzled shared memory at sbase. Tile element (r, c) is global
// g[(col0 + c) + (row0 + r) * ld]; rows >= rmax and columns >= cmax read as zero.
// CB = bytes per copy (a multiple of the element size, at most 16).
template <class T, int ROWS, int COLS, int THREADS, int CB>
TT_DEVICE void load_tile(u32 sbase, const T* g, long long ld, int row0, int col0, int rmax, int cmax, int tid) {
  constexpr int ES = sizeof(T);
  constexpr int VE = CB / ES;  // elements per copy
  constexpr int RB = COLS * ES;
  constexpr int CPR = COLS / VE;
  constexpr int TOTAL = ROWS * CPR;
  constexpr int NL = (TOTAL + THREADS - 1) / THREADS;
  static_assert(COLS % VE == 0, "copy width must divide the tile row");
  auto one = [&](int i) {
    const int v = tid + i * THREADS;
    if (TOTAL % THREADS != 0 && v >= TOTAL) return;
    const int r = v / CPR;
    const int c = (v % CPR) * VE;
    const int gr = row0 + r, gc = col0 + c;
    int n = cmax - gc;
    n = n < 0 ? 0 : (n > VE ? VE : n);
    if (gr >= rmax) n = 0;
    const T* src = n > 0 ? g + (long long)gr * ld + gc : g;
    const int byte = c * ES;
    const u32 dst = sbase + swz<RB>(r, byte >> 4) + (byte & 15);
    if (CB >= 4) {
      cp_async<CB>(dst, src, n * ES);
    } else {
      const unsigned short x = n > 0 ? *reinterpret_cast<const unsigned short*>(src) : (unsigned short)0;
      asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(dst), "h"(x));
    }
  };
  if (NL <= 8) {
    TT_UNROLL
    for (int i = 0; i < NL; ++i) one(i);
  } else {
    // Narrow copies (the unaligned fallback): a rolled loop keeps the per-copy addresses out of
    // the registers the main loop needs.
#pragma unroll 1
    for (int i = 0; i < NL; ++i) one(i);
  }
}

template <class T, int ROWS, int COLS, int THREADS, int VB>
TT_DEVICE void load_operand(bool vec_ok, u32 sbase, const T* g, long long ld, int row0, int col0, int rmax, int cmax,
                            int tid) {
  if (VB == (int)sizeof(T) || vec_ok)
    load_tile<T, ROWS, COLS, THREADS, VB>(sbase, g, ld, row0, col0, rmax, cmax, tid);
  else
    load_tile<T, ROWS, COLS, THREADS, (int)sizeof(T)>(sbase, g, ld, row0, col0, rmax, cmax, tid);
}

TT_DEVICE bool vector_ok(const void* base, long long ld, long long stride, int batch, int vbytes, int es) {
  const long long ve = vbytes / es;
  return ((unsigned long long)base % (unsigned long long)vbytes) == 0 && ld % ve == 0 && (batch <= 1 || stride % ve == 0);
}

}  // namespace tt_mma

template <typename TA, typename TC, bool TRANSA, bool TRANSB, int BM, int BN, int BK, int WM, int WN, int STAGES,
          int GROUP_M, int SPLITK, int VB>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32) mma_gemm(TtGemmParams p) {
  using namespace tt_mma;
  constexpr int ES = sizeof(TA);
  constexpr bool TF32 = ES == 4;
  constexpr int KS = TF32 ? 8 : 16;  // K per mma instruction (32 bytes of K either way)
  constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  constexpr int MI = WM / 16, NI = WN / 8;
  // Shared tiles as they lie in global memory: rows x contiguous columns.
  constexpr int A_ROWS = TRANSA ? BM : BK, A_COLS = TRANSA ? BK : BM;
  constexpr int B_ROWS = TRANSB ? BK : BN, B_COLS = TRANSB ? BN : BK;
  constexpr int A_RB = A_COLS * ES, B_RB = B_COLS * ES;
  constexpr int A_TILE = BM * BK * ES, B_TILE = BN * BK * ES;
  constexpr int STAGE_BYTES = A_TILE + B_TILE;
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0, "warp tiling");
  static_assert(BK % KS == 0 && STAGES >= 2 && SPLITK >= 1 && GROUP_M >= 1, "parameters");
  static_assert(VB % ES == 0 && VB <= 16 && (VB >= 4 || ES == 2), "vector bytes");

  extern __shared__ __align__(128) unsigned char tt_mma_smem[];
  const u32 sbase = smem_addr(tt_mma_smem);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % WARPS_M, wn = warp / WARPS_M;

  // Grouped rasterisation of the linear tile index.
  const int gm = (p.m + BM - 1) / BM, gn = (p.n + BN - 1) / BN;
  const int pid = blockIdx.x;
  const int per_group = GROUP_M * gn;
  const int first_m = (pid / per_group) * GROUP_M;
  const int gsize = min(gm - first_m, GROUP_M);
  const int in_group = pid % per_group;
  const int tm = first_m + in_group % gsize, tn = in_group / gsize;
  const int m0 = tm * BM, n0 = tn * BN;
  const int batch = blockIdx.z / SPLITK, split = blockIdx.z % SPLITK;

  const TA* A = static_cast<const TA*>(p.a) + (long long)batch * p.stride_a;
  const TA* B = static_cast<const TA*>(p.b) + (long long)batch * p.stride_b;
  const bool vec_a = vector_ok(p.a, p.lda, p.stride_a, p.batch, VB, ES);
  const bool vec_b = vector_ok(p.b, p.ldb, p.stride_b, p.batch, VB, ES);

  const int KT = (p.k + BK - 1) / BK;
  const int kper = (KT + SPLITK - 1) / SPLITK;
  const int kt0 = split * kper;
  const int nkt = max(min(KT, kt0 + kper) - kt0, 0);

  auto load_stage = [&](int stage, int kt) {
    const u32 sa = sbase + stage * STAGE_BYTES, sb = sa + A_TILE;
    const int k0 = kt * BK;
    if (TRANSA)
      load_operand<TA, A_ROWS, A_COLS, THREADS, VB>(vec_a, sa, A, p.lda, m0, k0, p.m, p.k, tid);
    else
      load_operand<TA, A_ROWS, A_COLS, THREADS, VB>(vec_a, sa, A, p.lda, k0, m0, p.k, p.m, tid);
    if (TRANSB)
      load_operand<TA, B_ROWS, B_COLS, THREADS, VB>(vec_b, sb, B, p.ldb, k0, n0, p.k, p.n, tid);
    else
      load_operand<TA, B_ROWS, B_COLS, THREADS, VB>(vec_b, sb, B, p.ldb, n0, k0, p.n, p.k, tid);
  };

  float acc[MI][NI][4];
  zero(acc);

  // Prologue: STAGES-1 tiles in flight (empty groups past the end keep the group count uniform).
  TT_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nkt) load_stage(s, kt0 + s);
    cp_async_commit();
  }

  const int g = lane >> 2, t4 = lane & 3;
  for (int it = 0; it < nkt; ++it) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile `it` visible to all; the stage read in iteration it-1 is free again
    {
      const int nxt = it + STAGES - 1;
      if (nxt < nkt) load_stage(nxt % STAGES, kt0 + nxt);
      cp_async_commit();
    }
    const u32 sa = sbase + (it % STAGES) * STAGE_BYTES, sb = sa + A_TILE;
    TT_UNROLL
    for (int ks = 0; ks < BK / KS; ++ks) {
      u32 af[MI][4], bf[NI][2];
      TT_UNROLL
      for (int mi = 0; mi < MI; ++mi) {
        const int mb = wm * WM + mi * 16;
        if (TRANSA) {  // K-major
          frag_a<true, A_RB>(af[mi], sa, mb, ks, lane);
          if (TF32) {
            TT_UNROLL
            for (int e = 0; e < 4; ++e) af[mi][e] = to_tf32(af[mi][e]);
          }
        } else if (!TF32) {  // MN-major, 16-bit
          frag_a<false, A_RB>(af[mi], sa, mb, ks, lane);
        } else {  // MN-major tf32: S[k][m]
          const int m = mb + g, k = ks * 8 + t4;
          af[mi][0] = to_tf32(lds32(sa + swz<A_RB>(k, m >> 2) + (m & 3) * 4));
          af[mi][1] = to_tf32(lds32(sa + swz<A_RB>(k, (m + 8) >> 2) + (m & 3) * 4));
          af[mi][2] = to_tf32(lds32(sa + swz<A_RB>(k + 4, m >> 2) + (m & 3) * 4));
          af[mi][3] = to_tf32(lds32(sa + swz<A_RB>(k + 4, (m + 8) >> 2) + (m & 3) * 4));
        }
      }
      TT_UNROLL
      for (int nj = 0; nj < NI / 2; ++nj) {
        const int nb = wn * WN + nj * 16;
        if (!TRANSB || !TF32) {
          u32 r[4];
          if (!TRANSB) {  // K-major: S[n][k]
            frag_b<true, B_RB>(r, sb, nb, ks, lane);
            if (TF32) {
              TT_UNROLL
              for (int e = 0; e < 4; ++e) r[e] = to_tf32(r[e]);
            }
          } else {  // MN-major, 16-bit: S[k][n]
            frag_b<false, B_RB>(r, sb, nb, ks, lane);
          }
          bf[2 * nj][0] = r[0];
          bf[2 * nj][1] = r[1];
          bf[2 * nj + 1][0] = r[2];
          bf[2 * nj + 1][1] = r[3];
        } else {  // MN-major tf32: S[k][n]
          const int k = ks * 8 + t4;
          TT_UNROLL
          for (int h = 0; h < 2; ++h) {
            const int n = nb + h * 8 + g;
            bf[2 * nj + h][0] = to_tf32(lds32(sb + swz<B_RB>(k, n >> 2) + (n & 3) * 4));
            bf[2 * nj + h][1] = to_tf32(lds32(sb + swz<B_RB>(k + 4, n >> 2) + (n & 3) * 4));
          }
        }
      }
      TT_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        TT_UNROLL
        for (int ni = 0; ni < NI; ++ni) mma<TA>(acc[mi][ni], af[mi], bf[ni]);
    }
  }
  cp_async_wait<0>();

  if (SPLITK > 1 && !splitk_reduce<MI, NI, THREADS, SPLITK, BM * BN>(acc, p.workspace, (long long)batch * (gm * gn) + pid,
                                                                     (long long)p.batch * (gm * gn), split, tid))
    return;

  // Epilogue: fragment (mi, ni) element e sits at row g + 8*(e/2), column 2*t4 + e%2.
  TC* C = static_cast<TC*>(p.c) + (long long)batch * p.stride_c;
  const float alpha = p.alpha, beta = p.beta;
  TT_UNROLL
  for (int mi = 0; mi < MI; ++mi)
    TT_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      TT_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int m = m0 + wm * WM + mi * 16 + g + (e >> 1) * 8;
        const int n = n0 + wn * WN + ni * 8 + t4 * 2 + (e & 1);
        if (m < p.m && n < p.n) {
          TC* q = C + m + (long long)n * p.ldc;
          float v = alpha * acc[mi][ni][e];
          if (beta != 0.0f) v += beta * tt_to_float(*q);
          *q = tt_from_float<TC>(v);
        }
      }
}
