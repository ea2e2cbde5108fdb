// SIMT GEMM (CUDA cores / VALU only, no tensor cores / MFMA), column-major BLAS semantics.
//
// Block tile MT0 x MT1 of C, K consumed DU at a time. Both operand tiles live in shared memory
// k-major (S[k][m] and S[k][n]), so for every k a thread reads its TT0 A values and TT1 B values
// as 16-byte vectors regardless of how A and B are laid out in global memory; the layout
// differences are absorbed once, when a tile is written to shared memory.
//
// Pipeline per K tile: issue the global loads of tile kt+1 into registers, run the DU rank-1
// updates of tile kt out of shared memory (hiding the global latency), then write the registers
// to the other shared buffer. With DB=1 that needs a single barrier per tile; DB=0 halves the
// shared footprint at the cost of a second barrier.
#include "gemm_params.h"
#include "tt_types.h"

namespace tt_simt {

// Vector of N elements with its natural alignment, so that one copy is one wide memory access.
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

constexpr int pick_width(int tt) { return tt % 4 == 0 ? 4 : (tt % 2 == 0 ? 2 : 1); }
constexpr int cmin(int a, int b) { return a < b ? a : b; }

// Global -> register -> shared staging of one operand tile.
// CONT x STRD is the tile as it lies in global memory (CONT along the contiguous dimension).
// CONT_IS_K says whether that contiguous dimension is K (A transposed, B not transposed) or the
// M/N dimension; in the former case the tile is transposed on its way into shared memory.
template <class T, int CONT, int STRD, int VW, int THREADS, bool CONT_IS_K, int SROW>
struct TileStage {
  static constexpr int VPL = CONT / VW;                     // vectors per contiguous line
  static constexpr int TOTAL = CONT * STRD / VW;             // vectors per tile
  static constexpr int NV = (TOTAL + THREADS - 1) / THREADS;  // vectors per thread
  // Small tiles with many threads (e.g. 256x128 / 8x8, DU=8) leave some threads without a vector.
  static constexpr bool EXACT = TOTAL % THREADS == 0;
  static_assert(CONT % VW == 0, "vector width must divide the contiguous tile extent");

  Vec<T, VW> r[NV];

  // (c0, s0): tile origin; cmax/smax: matrix extents. Reads zero outside the matrix. A vector
  // straddling the edge of the contiguous dimension falls back to scalar loads: only vectors that
  // lie fully inside are guaranteed to be aligned.
  __device__ TT_FORCEINLINE void load(const T* TT_RESTRICT base, long long ld, int c0, int s0,
                                      int cmax, int smax, int tid) {
    TT_UNROLL
    for (int i = 0; i < NV; ++i) {
      const int v = tid + i * THREADS;
      if (!EXACT && v >= TOTAL) break;
      const int gc = c0 + (v % VPL) * VW;
      const int gs = s0 + v / VPL;
      const T* ptr = base + gc + (long long)gs * ld;
      if (gs < smax && gc + VW <= cmax) {
        r[i] = *reinterpret_cast<const Vec<T, VW>*>(ptr);
      } else {
        TT_UNROLL
        for (int j = 0; j < VW; ++j)
          r[i].v[j] = (gs < smax && gc + j < cmax) ? ptr[j] : tt_zero<T>();
      }
    }
  }

  // Shared tile is float S[DU][SROW]: row = k, column = m (or n).
  __device__ TT_FORCEINLINE void store(float* TT_RESTRICT s, int tid) const {
    TT_UNROLL
    for (int i = 0; i < NV; ++i) {
      const int v = tid + i * THREADS;
      if (!EXACT && v >= TOTAL) break;
      const int c = (v % VPL) * VW;
      const int st = v / VPL;
      if (CONT_IS_K) {
        TT_UNROLL
        for (int j = 0; j < VW; ++j) s[(c + j) * SROW + st] = tt_to_float(r[i].v[j]);
      } else {
        // Contiguous in shared memory too: write float vectors of up to 16 bytes.
        constexpr int SW = cmin(VW, 4);
        TT_UNROLL
        for (int j = 0; j < VW; j += SW) {
          Vec<float, SW> f;
          TT_UNROLL
          for (int q = 0; q < SW; ++q) f.v[q] = tt_to_float(r[i].v[j + q]);
          *reinterpret_cast<Vec<float, SW>*>(s + st * SROW + c + j) = f;
        }
      }
    }
  }
};

}  // namespace tt_simt

template <typename TA, typename TC, bool TRANSA, bool TRANSB, int MT0, int MT1, int DU, int TT0,
          int TT1, int VW, int PAD, int DB>
__global__ void __launch_bounds__((MT0 / TT0) * (MT1 / TT1)) simt_gemm(TtGemmParams p) {
  using namespace tt_simt;
  constexpr int TX = MT0 / TT0;  // threads along m
  constexpr int TY = MT1 / TT1;  // threads along n
  constexpr int THREADS = TX * TY;
  static_assert(MT0 % TT0 == 0 && MT1 % TT1 == 0, "thread tile must divide macro tile");
  static_assert(VW * sizeof(TA) <= 16, "global vectors are at most 16 bytes");
  static_assert(DB == 0 || DB == 1, "DB is 0 or 1");

  // A thread's TT0 rows are CH0 chunks of W0 consecutive rows, the chunks MT0/CH0 apart: each
  // chunk is one 16-byte shared read, and the lanes of a warp read consecutive 16-byte words,
  // which is conflict free (the same holds for columns).
  constexpr int W0 = pick_width(TT0), CH0 = TT0 / W0;
  constexpr int W1 = pick_width(TT1), CH1 = TT1 / W1;
  constexpr int SA = MT0 + PAD;  // shared row pitch in floats
  constexpr int SB = MT1 + PAD;
  static_assert(SA % 4 == 0 && SB % 4 == 0, "shared rows must keep 16-byte alignment");

  alignas(16) __shared__ float As[DB + 1][DU * SA];
  alignas(16) __shared__ float Bs[DB + 1][DU * SB];

  const int tid = threadIdx.x;

  // Arrange each 32-lane warp as an 8 x 4 patch of thread tiles: per k, a warp then touches
  // 8 distinct A vectors and 4 distinct B vectors (one 128-byte wavefront each) instead of
  // e.g. 16 + 2 with a plain row-major thread order.
  int tx, ty;
  constexpr int WM = TX >= 8 ? 8 : TX;
  constexpr int WN = 32 / WM;
  if constexpr (THREADS % 32 == 0 && TX % WM == 0 && TY % WN == 0 && WM * WN == 32) {
    const int lane = tid % 32, warp = tid / 32;
    constexpr int WARPS_M = TX / WM;
    tx = (warp % WARPS_M) * WM + lane % WM;
    ty = (warp / WARPS_M) * WN + lane / WM;
  } else {
    tx = tid % TX;
    ty = tid / TX;
  }

  const int m0 = blockIdx.x * MT0;
  const int n0 = blockIdx.y * MT1;
  const long long bz = blockIdx.z;
  const TA* A = static_cast<const TA*>(p.a) + bz * p.stride_a;
  const TA* B = static_cast<const TA*>(p.b) + bz * p.stride_b;
  TC* C = static_cast<TC*>(p.c) + bz * p.stride_c;
  const int M = p.m, N = p.n, K = p.k;

  // A: op(A) is M x K. Not transposed: stored M x K, contiguous along m.
  //    Transposed: stored K x M, contiguous along k.
  // B: op(B) is K x N. Not transposed: stored K x N, contiguous along k.
  //    Transposed: stored N x K, contiguous along n.
  using StageA = TileStage<TA, TRANSA ? DU : MT0, TRANSA ? MT0 : DU, VW, THREADS, TRANSA, SA>;
  using StageB = TileStage<TA, TRANSB ? MT1 : DU, TRANSB ? DU : MT1, VW, THREADS, !TRANSB, SB>;
  StageA sa;
  StageB sb;

  auto load_tiles = [&](int k0) {
    if (TRANSA) sa.load(A, p.lda, k0, m0, K, M, tid);
    else        sa.load(A, p.lda, m0, k0, M, K, tid);
    if (TRANSB) sb.load(B, p.ldb, n0, k0, N, K, tid);
    else        sb.load(B, p.ldb, k0, n0, K, N, tid);
  };

  float acc[TT0][TT1];
  TT_UNROLL
  for (int i = 0; i < TT0; ++i)
    TT_UNROLL
    for (int j = 0; j < TT1; ++j) acc[i][j] = 0.0f;

  const int ktiles = (K + DU - 1) / DU;

  load_tiles(0);
  sa.store(As[0], tid);
  sb.store(Bs[0], tid);
  __syncthreads();

  for (int kt = 0; kt < ktiles; ++kt) {
    const int cur = DB ? (kt & 1) : 0;
    const bool more = kt + 1 < ktiles;
    if (more) load_tiles((kt + 1) * DU);

    const float* a_s = As[cur] + tx * W0;
    const float* b_s = Bs[cur] + ty * W1;
    TT_UNROLL
    for (int k = 0; k < DU; ++k) {
      float a[TT0], b[TT1];
      TT_UNROLL
      for (int c = 0; c < CH0; ++c) {
        const Vec<float, W0> v = *reinterpret_cast<const Vec<float, W0>*>(a_s + k * SA + c * TX * W0);
        TT_UNROLL
        for (int q = 0; q < W0; ++q) a[c * W0 + q] = v.v[q];
      }
      TT_UNROLL
      for (int c = 0; c < CH1; ++c) {
        const Vec<float, W1> v = *reinterpret_cast<const Vec<float, W1>*>(b_s + k * SB + c * TY * W1);
        TT_UNROLL
        for (int q = 0; q < W1; ++q) b[c * W1 + q] = v.v[q];
      }
      TT_UNROLL
      for (int i = 0; i < TT0; ++i)
        TT_UNROLL
        for (int j = 0; j < TT1; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }

    if (more) {
      if (!DB) __syncthreads();  // single buffer: everyone must be done reading it
      sa.store(As[cur ^ DB], tid);
      sb.store(Bs[cur ^ DB], tid);
      __syncthreads();
    }
  }

  // Epilogue. Rows of a chunk are W0 consecutive elements of a C column, written as one vector
  // when the caller's C layout keeps such vectors aligned (checked at run time, uniform branch).
  const float alpha = p.alpha, beta = p.beta;
  const long long ldc = p.ldc;
  const bool c_vec = W0 > 1 && ldc % W0 == 0 && p.stride_c % W0 == 0 &&
                     ((unsigned long long)p.c % (W0 * sizeof(TC))) == 0;
  // beta == 0 means C is output only: it may hold garbage (NaN) and must not be read.
  const bool read_c = beta != 0.0f;

  TT_UNROLL
  for (int cj = 0; cj < CH1; ++cj) {
    TT_UNROLL
    for (int q1 = 0; q1 < W1; ++q1) {
      const int col = n0 + cj * TY * W1 + ty * W1 + q1;
      if (col >= N) continue;
      TT_UNROLL
      for (int ci = 0; ci < CH0; ++ci) {
        const int row = m0 + ci * TX * W0 + tx * W0;
        TC* cp = C + row + (long long)col * ldc;
        const int j = cj * W1 + q1;
        if (c_vec && row + W0 <= M) {
          Vec<TC, W0> out;
          if (read_c) {
            const Vec<TC, W0> old = *reinterpret_cast<const Vec<TC, W0>*>(cp);
            TT_UNROLL
            for (int q = 0; q < W0; ++q)
              out.v[q] = tt_from_float<TC>(alpha * acc[ci * W0 + q][j] + beta * tt_to_float(old.v[q]));
          } else {
            TT_UNROLL
            for (int q = 0; q < W0; ++q) out.v[q] = tt_from_float<TC>(alpha * acc[ci * W0 + q][j]);
          }
          *reinterpret_cast<Vec<TC, W0>*>(cp) = out;
        } else {
          TT_UNROLL
          for (int q = 0; q < W0; ++q) {
            if (row + q < M) {
              float v = alpha * acc[ci * W0 + q][j];
              if (read_c) v += beta * tt_to_float(cp[q]);
              cp[q] = tt_from_float<TC>(v);
            }
          }
        }
      }
    }
  }
}
