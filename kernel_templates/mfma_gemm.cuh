// MFMA (AMD matrix core) GEMM for CDNA (gfx908, gfx90a, gfx942, gfx950), column-major BLAS
// semantics (gemm_params.h). HIP only: the MFMA builtins do not exist on NVIDIA, nor on gfx1030
// (RDNA has no MFMA).
//
// Block tile MT0 x MT1 of C, K consumed DU at a time, (MT0/WM) x (MT1/WN) waves of 64 lanes, each
// wave owning a WM x WN tile of C made of (WM/MI) x (WN/MI) MFMA blocks of MI x MI (MI = 32: the
// 32x32x8 instructions, MI = 16: 16x16x16; fp32 inputs: 32x32x2f32 / 16x16x4f32). On gfx950,
// 16-bit inputs take its doubled-K instructions instead (32x32x16, 16x16x32: XK = 2, 8 values per
// lane instead of 4), which the data sheet rates at twice the CDNA3 shapes; the template's JSON
// derives the same XK from the arch table (DEV_MFMA_K16), so that its constraints on DU and PAD
// prune for the instruction this kernel will use.
//
// LDS holds both operand tiles "k-contiguous": A as S[m][k], B as S[n][k], row pitch DU + PAD
// elements, so that a lane's KPL (4 for 16-bit types, 1 for fp32) fragment values are a single
// 8-byte (or 4-byte) LDS read; PAD shifts consecutive rows across banks. The layout differences of
// A and B in global memory are absorbed once, when a tile is written to LDS (vector stores when
// the global tile is k-contiguous too, element stores when it is m/n-contiguous).
//
// Pipeline per K tile: issue the global loads of tile kt+1 into registers (VW-element vectors),
// run the MFMAs of tile kt out of LDS, then write the registers to the other LDS buffer (DB=1:
// one barrier per tile) or to the same buffer after a second barrier (DB=0, half the LDS).
// Edge tiles: out-of-range elements load as zero (M, N and K edges), stores are predicated.
// Index math lives in mfma_layout.h, shared with the host-side emulation test.
#include "gemm_params.h"
#include "tt_types.h"
#include "mfma_layout.h"

namespace tt_mfma {

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef short s16x2 __attribute__((ext_vector_type(2)));
typedef short s16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef short s16x8 __attribute__((ext_vector_type(8)));
typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));

// gfx950's doubled-K 16-bit instructions exist only there: elsewhere the XK = 2 wrappers are not
// defined.
#if defined(__gfx950__)
#define TT_MFMA_DOUBLED_K 1
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));
#else
#define TT_MFMA_DOUBLED_K 0
#endif

// Raw storage of an input element (bits only; tt_half / tt_bf16 are one unsigned short), values
// per lane per instruction (KPL) and the fragment type a lane reads from LDS in one access (8 or
// 16 bytes for 16-bit inputs: XK = 2 doubles both).
template <class TA, int XK = 1> struct Operand;
template <> struct Operand<float> {
  using Raw = float;
  using Frag = float;
  static constexpr int KPL = 1;
};
template <int XK> struct Operand16 {
  using Raw = unsigned short;
  using Frag = short __attribute__((ext_vector_type(4 * XK)));
  static constexpr int KPL = 4 * XK;
};
template <int XK> struct Operand<tt_half, XK> : Operand16<XK> {};
template <int XK> struct Operand<tt_bf16, XK> : Operand16<XK> {};

template <int MI> struct Accum;
template <> struct Accum<32> { using T = f32x16; };
template <> struct Accum<16> { using T = f32x4; };

// One MFMA: acc += A_frag * B_frag for an MI x MI x inst_k block.
template <class TA, int MI, int XK = 1> struct Mfma;

template <> struct Mfma<tt_half, 32> {
  static TT_DEVICE void run(f32x16& acc, s16x4 a, s16x4 b) {
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(__builtin_bit_cast(f16x4, a), __builtin_bit_cast(f16x4, b), acc, 0, 0, 0);
  }
};
template <> struct Mfma<tt_half, 16> {
  static TT_DEVICE void run(f32x4& acc, s16x4 a, s16x4 b) {
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(f16x4, a), __builtin_bit_cast(f16x4, b), acc, 0, 0, 0);
  }
};
// bf16: gfx90a has the "_1k" instructions taking 4 values per lane; gfx908 only the 2-value ones,
// issued twice (k slots {0,1} then {2,3} of the same fragment: A and B see the same k order).
template <> struct Mfma<tt_bf16, 32> {
  static TT_DEVICE void run(f32x16& acc, s16x4 a, s16x4 b) {
#if defined(__gfx908__)
    acc = __builtin_amdgcn_mfma_f32_32x32x4bf16(a.xy, b.xy, acc, 0, 0, 0);
    acc = __builtin_amdgcn_mfma_f32_32x32x4bf16(a.zw, b.zw, acc, 0, 0, 0);
#else
    acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, acc, 0, 0, 0);
#endif
  }
};
template <> struct Mfma<tt_bf16, 16> {
  static TT_DEVICE void run(f32x4& acc, s16x4 a, s16x4 b) {
#if defined(__gfx908__)
    acc = __builtin_amdgcn_mfma_f32_16x16x8bf16(a.xy, b.xy, acc, 0, 0, 0);
    acc = __builtin_amdgcn_mfma_f32_16x16x8bf16(a.zw, b.zw, acc, 0, 0, 0);
#else
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, acc, 0, 0, 0);
#endif
  }
};
template <> struct Mfma<float, 32> {
  static TT_DEVICE void run(f32x16& acc, float a, float b) {
    acc = __builtin_amdgcn_mfma_f32_32x32x2f32(a, b, acc, 0, 0, 0);
  }
};
template <> struct Mfma<float, 16> {
  static TT_DEVICE void run(f32x4& acc, float a, float b) {
    acc = __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, acc, 0, 0, 0);
  }
};
#if TT_MFMA_DOUBLED_K
template <> struct Mfma<tt_half, 32, 2> {
  static TT_DEVICE void run(f32x16& acc, s16x8 a, s16x8 b) {
    acc = __builtin_amdgcn_mfma_f32_32x32x16_f16(__builtin_bit_cast(f16x8, a), __builtin_bit_cast(f16x8, b), acc, 0, 0, 0);
  }
};
template <> struct Mfma<tt_half, 16, 2> {
  static TT_DEVICE void run(f32x4& acc, s16x8 a, s16x8 b) {
    acc = __builtin_amdgcn_mfma_f32_16x16x32_f16(__builtin_bit_cast(f16x8, a), __builtin_bit_cast(f16x8, b), acc, 0, 0, 0);
  }
};
template <> struct Mfma<tt_bf16, 32, 2> {
  static TT_DEVICE void run(f32x16& acc, s16x8 a, s16x8 b) {
    acc = __builtin_amdgcn_mfma_f32_32x32x16_bf16(__builtin_bit_cast(bf16x8, a), __builtin_bit_cast(bf16x8, b), acc, 0, 0, 0);
  }
};
template <> struct Mfma<tt_bf16, 16, 2> {
  static TT_DEVICE void run(f32x4& acc, s16x8 a, s16x8 b) {
    acc = __builtin_amdgcn_mfma_f32_16x16x32_bf16(__builtin_bit_cast(bf16x8, a), __builtin_bit_cast(bf16x8, b), acc, 0, 0, 0);
  }
};
#endif

// C conversions. fp16 uses the hardware converts (v_cvt_f32_f16 / v_cvt_f16_f32: round to nearest
// even, fp16 denormals kept, as tt_types.h's portable routines), which keeps the epilogue short.
TT_DEVICE float out_to_float(float x) { return x; }
TT_DEVICE float out_to_float(tt_bf16 x) { return tt_to_float(x); }
TT_DEVICE float out_to_float(tt_half x) { return (float)__builtin_bit_cast(_Float16, x.bits); }
template <class TC> TT_DEVICE TC out_from_float(float f) { return tt_from_float<TC>(f); }
template <> TT_DEVICE tt_half out_from_float<tt_half>(float f) {
  tt_half h;
  h.bits = __builtin_bit_cast(unsigned short, (_Float16)f);
  return h;
}

template <int NR, class Acc, int FM, int FN>
TT_DEVICE void zero_acc(Acc (&acc)[FM][FN]) {
  TT_UNROLL
  for (int i = 0; i < FM; ++i)
    TT_UNROLL
    for (int j = 0; j < FN; ++j)
      TT_UNROLL
      for (int r = 0; r < NR; ++r) acc[i][j][r] = 0.0f;
}

// Global -> register -> LDS staging of one operand tile, CONT x STRD as it lies in global memory.
// CONT_IS_K: the contiguous dimension is k (A transposed, B not transposed): rows of the LDS tile
// are then written as vectors; otherwise each element goes to its own (mn, k) slot.
template <class Raw, int CONT, int STRD, int VW, int THREADS, bool CONT_IS_K, int SP>
struct Stage {
  static constexpr int VPL = CONT / VW;
  static constexpr int TOTAL = CONT * STRD / VW;
  static constexpr int NV = (TOTAL + THREADS - 1) / THREADS;
  static constexpr bool EXACT = TOTAL % THREADS == 0;
  // LDS vector store width: divides VW and the pitch, so every store stays naturally aligned.
  static constexpr int SW = common_pow2(VW, SP);
  static_assert(CONT % VW == 0, "vector width must divide the contiguous tile extent");

  Vec<Raw, VW> r[NV];

  // (c0, s0): tile origin in global memory; cmax/smax: matrix extents. Zero outside the matrix;
  // a vector straddling the contiguous edge is loaded element by element.
  __device__ TT_FORCEINLINE void load(const Raw* TT_RESTRICT base, long long ld, int c0, int s0,
                                      int cmax, int smax, int tid) {
    TT_UNROLL
    for (int i = 0; i < NV; ++i) {
      const int v = tid + i * THREADS;
      if (!EXACT && v >= TOTAL) break;
      const int gc = c0 + stage_cont(v, 0, CONT, VW);
      const int gs = s0 + stage_strd(v, CONT, VW);
      const Raw* ptr = base + gc + (long long)gs * ld;
      if (gs < smax && gc + VW <= cmax) {
        r[i] = *reinterpret_cast<const Vec<Raw, VW>*>(ptr);
      } else {
        TT_UNROLL
        for (int j = 0; j < VW; ++j) r[i].v[j] = (gs < smax && gc + j < cmax) ? ptr[j] : Raw(0);
      }
    }
  }

  __device__ TT_FORCEINLINE void store(Raw* TT_RESTRICT s, int tid) const {
    TT_UNROLL
    for (int i = 0; i < NV; ++i) {
      const int v = tid + i * THREADS;
      if (!EXACT && v >= TOTAL) break;
      const int st = stage_strd(v, CONT, VW);
      if (CONT_IS_K) {
        TT_UNROLL
        for (int j = 0; j < VW; j += SW) {
          Vec<Raw, SW> w;
          TT_UNROLL
          for (int q = 0; q < SW; ++q) w.v[q] = r[i].v[j + q];
          *reinterpret_cast<Vec<Raw, SW>*>(s + lds_index(st, stage_cont(v, j, CONT, VW), SP)) = w;
        }
      } else {
        TT_UNROLL
        for (int j = 0; j < VW; ++j) s[lds_index(stage_cont(v, j, CONT, VW), st, SP)] = r[i].v[j];
      }
    }
  }
};

}  // namespace tt_mfma

template <typename TA, typename TC, bool TRANSA, bool TRANSB, int MT0, int MT1, int DU, int WM, int WN,
          int MI, int VW, int PAD, int DB>
__global__ void __launch_bounds__((MT0 / WM) * (MT1 / WN) * 64) mfma_gemm(TtGemmParams p) {
  using namespace tt_mfma;
  constexpr int XK = sizeof(TA) == 2 && TT_MFMA_DOUBLED_K ? 2 : 1;  // as the JSON's derived XK
  using Op = Operand<TA, XK>;
  using Raw = typename Op::Raw;
  using Frag = typename Op::Frag;
  using Acc = typename Accum<MI>::T;
  constexpr int KPL = Op::KPL;
  constexpr int KI = inst_k(MI, KPL);
  constexpr int WAVES = (MT0 / WM) * (MT1 / WN);
  constexpr int THREADS = WAVES * 64;
  constexpr int FM = WM / MI;  // MFMA blocks per wave along m
  constexpr int FN = WN / MI;  // ... along n
  constexpr int NR = acc_regs(MI);
  constexpr int SP = DU + PAD;  // LDS row pitch in elements
  static_assert(MI == 16 || MI == 32, "MI is 16 or 32");
  static_assert(MT0 % WM == 0 && MT1 % WN == 0, "wave tile must divide macro tile");
  static_assert(WM % MI == 0 && WN % MI == 0, "instruction must divide wave tile");
  static_assert(DU % KI == 0, "DU must be a multiple of the instruction's K");
  static_assert(SP % KPL == 0, "LDS pitch must keep fragment reads aligned");
  static_assert(VW * sizeof(TA) <= 16, "global vectors are at most 16 bytes");
  static_assert(DB == 0 || DB == 1, "DB is 0 or 1");
  static_assert(sizeof(TA) == sizeof(Raw), "raw storage must match the input type");

  alignas(16) __shared__ Raw As[(DB + 1) * MT0 * SP];
  alignas(16) __shared__ Raw Bs[(DB + 1) * MT1 * SP];

  const int tid = threadIdx.x;
  const int lane = tid % 64;
  const int wave = __builtin_amdgcn_readfirstlane(tid / 64);  // uniform: keep it scalar
  const int wm0 = wave_m0(wave, MT0, WM);
  const int wn0 = wave_n0(wave, MT0, WM, WN);

  const int m0 = blockIdx.x * MT0;
  const int n0 = blockIdx.y * MT1;
  const long long bz = blockIdx.z;
  const Raw* A = static_cast<const Raw*>(p.a) + bz * p.stride_a;
  const Raw* B = static_cast<const Raw*>(p.b) + bz * p.stride_b;
  TC* C = static_cast<TC*>(p.c) + bz * p.stride_c;
  const int M = p.m, N = p.n, K = p.k;

  // A: op(A) is M x K; not transposed it is stored M x K (contiguous along m), transposed K x M.
  // B: op(B) is K x N; not transposed stored K x N (contiguous along k), transposed N x K.
  using StageA = Stage<Raw, TRANSA ? DU : MT0, TRANSA ? MT0 : DU, VW, THREADS, TRANSA, SP>;
  using StageB = Stage<Raw, TRANSB ? MT1 : DU, TRANSB ? DU : MT1, VW, THREADS, !TRANSB, SP>;
  StageA sa;
  StageB sb;

  auto load_tiles = [&](int k0) {
    if (TRANSA) sa.load(A, p.lda, k0, m0, K, M, tid);
    else        sa.load(A, p.lda, m0, k0, M, K, tid);
    if (TRANSB) sb.load(B, p.ldb, n0, k0, N, K, tid);
    else        sb.load(B, p.ldb, k0, n0, K, N, tid);
  };

  Acc acc[FM][FN];
  zero_acc<NR>(acc);

  const int ktiles = (K + DU - 1) / DU;
  // Per-lane LDS offsets of the fragments (k offset of the lane's group included).
  const int a_off = lds_index(wm0 + frag_mn(lane, MI), frag_k(lane, 0, MI, KPL), SP);
  const int b_off = lds_index(wn0 + frag_mn(lane, MI), frag_k(lane, 0, MI, KPL), SP);

  load_tiles(0);
  sa.store(As, tid);
  sb.store(Bs, tid);
  __syncthreads();

  for (int kt = 0; kt < ktiles; ++kt) {
    const int cur = DB ? (kt & 1) : 0;
    const bool more = kt + 1 < ktiles;
    if (more) load_tiles((kt + 1) * DU);

    const Raw* a_s = As + cur * (MT0 * SP) + a_off;
    const Raw* b_s = Bs + cur * (MT1 * SP) + b_off;
    TT_UNROLL
    for (int kk = 0; kk < DU / KI; ++kk) {
      Frag a[FM], b[FN];
      TT_UNROLL
      for (int i = 0; i < FM; ++i)
        a[i] = *reinterpret_cast<const Frag*>(a_s + lds_index(i * MI, kk * KI, SP));
      TT_UNROLL
      for (int j = 0; j < FN; ++j)
        b[j] = *reinterpret_cast<const Frag*>(b_s + lds_index(j * MI, kk * KI, SP));
      TT_UNROLL
      for (int i = 0; i < FM; ++i)
        TT_UNROLL
        for (int j = 0; j < FN; ++j) Mfma<TA, MI, XK>::run(acc[i][j], a[i], b[j]);
    }

    if (more) {
      if (!DB) __syncthreads();  // single buffer: every wave must be done reading it
      sa.store(As + (cur ^ DB) * (MT0 * SP), tid);
      sb.store(Bs + (cur ^ DB) * (MT1 * SP), tid);
      __syncthreads();
    }
  }

  // Epilogue: accumulators r = 4q .. 4q+3 of a lane are 4 consecutive rows of one C column,
  // read and written as one vector where the C layout keeps such vectors aligned (uniform
  // run-time check). One conversion per element and no duplicated paths: the body stays small
  // enough for the compiler to unroll fully, so that acc is never indexed dynamically (which would
  // put the accumulators in scratch memory).
  const float alpha = p.alpha, beta = p.beta;
  const long long ldc = p.ldc;
  const bool c_vec = ldc % 4 == 0 && p.stride_c % 4 == 0 && ((unsigned long long)p.c % (4 * sizeof(TC))) == 0;
  const bool read_c = beta != 0.0f;  // beta == 0: C is output only and may hold NaN

  TT_UNROLL
  for (int j = 0; j < FN; ++j) {
    const int col = n0 + wn0 + j * MI + acc_col(lane, MI);
    if (col >= N) continue;
    TT_UNROLL
    for (int i = 0; i < FM; ++i) {
      TT_UNROLL
      for (int q = 0; q < NR / 4; ++q) {
        const int row = m0 + wm0 + i * MI + acc_row(lane, 4 * q, MI);
        TC* cp = C + row + (long long)col * ldc;
        const bool whole = c_vec && row + 4 <= M;
        float v[4];
        TT_UNROLL
        for (int t = 0; t < 4; ++t) v[t] = alpha * acc[i][j][4 * q + t];
        if (read_c) {
          Vec<TC, 4> old;
          if (whole) {
            old = *reinterpret_cast<const Vec<TC, 4>*>(cp);
          } else {
            TT_UNROLL
            for (int t = 0; t < 4; ++t) old.v[t] = row + t < M ? cp[t] : tt_from_float<TC>(0.0f);
          }
          TT_UNROLL
          for (int t = 0; t < 4; ++t) v[t] += beta * out_to_float(old.v[t]);
        }
        Vec<TC, 4> out;
        TT_UNROLL
        for (int t = 0; t < 4; ++t) out.v[t] = out_from_float<TC>(v[t]);
        if (whole) {
          *reinterpret_cast<Vec<TC, 4>*>(cp) = out;
        } else {
          TT_UNROLL
          for (int t = 0; t < 4; ++t)
            if (row + t < M) cp[t] = out.v[t];
        }
      }
    }
  }
}
