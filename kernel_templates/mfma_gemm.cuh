// MFMA (AMD matrix core) GEMM for CDNA (gfx908, gfx90a, gfx942, gfx950), column-major BLAS
// semantics (gemm_params.h). HIP only: the MFMA builtins do not exist on NVIDIA, nor on gfx1030
// (RDNA has no MFMA).
//
// Block tile MT0 x MT1 of C, K consumed DU at a time, (MT0/WM) x (MT1/WN) waves of 64 lanes, each
// wave owning a WM x WN tile of C made of (WM/MI) x (WN/MI) MFMA blocks of MI x MI. The instruction
// K follows the input type and the arch (KPL values per lane, ArchKpl below; the JSON derives the
// same from the arch table): fp32 32x32x2 / 16x16x4; fp16 and bf16 32x32x8 / 16x16x16, on gfx950
// its doubled-K 32x32x16 / 16x16x32; fp8 (e4m3, inputs TN, fp32 accumulators, bf16 / fp16 / fp32
// C) on gfx942 32x32x16 / 16x16x32, on gfx950 the f8f6f4 32x32x64 / 16x16x128; int8 (TN, int32
// accumulators and C) 32x32x8 / 16x16x16 on gfx90a, 32x32x16 / 16x16x32 on gfx942, 32x32x32 /
// 16x16x64 on gfx950.
//
// LDS holds both operand tiles "k-contiguous": A as S[m][k], B as S[n][k], row pitch DU + PAD
// elements, so that a lane's KPL fragment values are a single LDS read of 4 to 16 bytes (two of 16
// for gfx950's fp8); PAD shifts consecutive rows across banks. The layout differences of
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
#include "mfma_fp8.h"

namespace tt_mfma {

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef int i32x2 __attribute__((ext_vector_type(2)));
typedef int i32x4 __attribute__((ext_vector_type(4)));
typedef int i32x8 __attribute__((ext_vector_type(8)));
typedef int i32x16 __attribute__((ext_vector_type(16)));
typedef short s16x2 __attribute__((ext_vector_type(2)));
typedef short s16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef short s16x8 __attribute__((ext_vector_type(8)));
typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));

// Values per lane (KPL) of the MFMA each input type takes on the arch being compiled: the arch
// table's K of its 32x32 shape over 2 (gpu/hip/arch_table.h; the JSON derives the same KPL from
// DEV_MFMA_K16 / DEV_MFMA_K_FP8 / DEV_MFMA_K_INT8, so that its constraints prune for the
// instruction this kernel issues; the offline compile tests check the two agree). 16-bit: gfx950's
// doubled-K 32x32x16 / 16x16x32, 4 values elsewhere (gfx908's bf16 as two 2-value halves). fp8:
// gfx942's 32x32x16 / 16x16x32 (read as FNUZ: mfma_fp8.h), gfx950's 32x32x64 / 16x16x128 f8f6f4
// (OCP), none before CDNA3. int8: 32x32x8 / 16x16x16 on gfx908 and gfx90a, 32x32x16 / 16x16x32 on
// gfx942, 32x32x32 / 16x16x64 on gfx950. A wrapper exists only where its builtin does.
#if defined(__gfx950__)
#define TT_MFMA_KPL16 8
#define TT_MFMA_KPL_FP8 32
#define TT_MFMA_KPL_INT8 16
#define TT_MFMA_FP8_FNUZ 0
#elif defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define TT_MFMA_KPL16 4
#define TT_MFMA_KPL_FP8 8
#define TT_MFMA_KPL_INT8 8
#define TT_MFMA_FP8_FNUZ 1
#else
#define TT_MFMA_KPL16 4
#define TT_MFMA_KPL_FP8 0
#define TT_MFMA_KPL_INT8 4
#define TT_MFMA_FP8_FNUZ 0
#endif
#define TT_MFMA_DOUBLED_K (TT_MFMA_KPL16 == 8)
#if TT_MFMA_DOUBLED_K
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));
#endif

template <class TA> struct ArchKpl;
template <> struct ArchKpl<float> { static constexpr int value = 1; };
template <> struct ArchKpl<tt_half> { static constexpr int value = TT_MFMA_KPL16; };
template <> struct ArchKpl<tt_bf16> { static constexpr int value = TT_MFMA_KPL16; };
template <> struct ArchKpl<tt_e4m3> { static constexpr int value = TT_MFMA_KPL_FP8; };
template <> struct ArchKpl<tt_e5m2> { static constexpr int value = TT_MFMA_KPL_FP8; };
template <> struct ArchKpl<signed char> { static constexpr int value = TT_MFMA_KPL_INT8; };

template <int N> struct IntFrag { typedef int T __attribute__((ext_vector_type(N))); };
template <> struct IntFrag<1> { typedef int T; };

// Raw storage of an input element (bits only; tt_half / tt_bf16 are one unsigned short, tt_e4m3
// one byte), the fragment type a lane reads from LDS (KPL values: 4 to 32 bytes) and the
// accumulator element (int for int8).
template <class TA, int KPL> struct Operand;
template <> struct Operand<float, 1> {
  using Raw = float;
  using Frag = float;
  using AccE = float;
  static constexpr bool INTEGER = false;
};
template <int KPL> struct Operand16 {
  using Raw = unsigned short;
  using Frag = short __attribute__((ext_vector_type(KPL)));
  using AccE = float;
  static constexpr bool INTEGER = false;
};
template <int KPL> struct Operand<tt_half, KPL> : Operand16<KPL> {};
template <int KPL> struct Operand<tt_bf16, KPL> : Operand16<KPL> {};
template <int KPL> struct Operand8 {
  using Raw = unsigned char;
  using Frag = typename IntFrag<KPL / 4>::T;
  using AccE = float;
  static constexpr bool INTEGER = false;
};
template <int KPL> struct Operand<tt_e4m3, KPL> : Operand8<KPL> {};
template <int KPL> struct Operand<tt_e5m2, KPL> : Operand8<KPL> {};
template <int KPL> struct Operand<signed char, KPL> {
  using Raw = unsigned char;
  using Frag = typename IntFrag<KPL / 4>::T;
  using AccE = int;
  static constexpr bool INTEGER = true;
};

template <int MI, class E = float> struct Accum { typedef E T __attribute__((ext_vector_type(MI * MI / 64))); };

// A lane's fragment from LDS: one read of up to 16 bytes (the widest LDS read), two for gfx950's
// 32-byte fp8 fragments (the pitch keeps every 16-byte half aligned).
template <class Frag, int BYTES = sizeof(Frag)> struct FragRead {
  template <class Raw> static TT_DEVICE Frag at(const Raw* p) { return *reinterpret_cast<const Frag*>(p); }
};
template <class Frag> struct FragRead<Frag, 32> {
  template <class Raw> static TT_DEVICE Frag at(const Raw* p) {
    const i32x4* q = reinterpret_cast<const i32x4*>(p);
    return __builtin_shufflevector(q[0], q[1], 0, 1, 2, 3, 4, 5, 6, 7);
  }
};

// One MFMA: acc += A_frag * B_frag for an MI x MI x inst_k block.
template <class TA, int MI, int KPL> struct Mfma;

template <> struct Mfma<tt_half, 32, 4> {
  static TT_DEVICE void run(f32x16& acc, s16x4 a, s16x4 b) {
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(__builtin_bit_cast(f16x4, a), __builtin_bit_cast(f16x4, b), acc, 0, 0, 0);
  }
};
template <> struct Mfma<tt_half, 16, 4> {
  static TT_DEVICE void run(f32x4& acc, s16x4 a, s16x4 b) {
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(f16x4, a), __builtin_bit_cast(f16x4, b), acc, 0, 0, 0);
  }
};
// bf16: gfx90a has the "_1k" instructions taking 4 values per lane; gfx908 only the 2-value ones,
// issued twice (k slots {0,1} then {2,3} of the same fragment: A and B see the same k order).
template <> struct Mfma<tt_bf16, 32, 4> {
  static TT_DEVICE void run(f32x16& acc, s16x4 a, s16x4 b) {
#if defined(__gfx908__)
    acc = __builtin_amdgcn_mfma_f32_32x32x4bf16(a.xy, b.xy, acc, 0, 0, 0);
    acc = __builtin_amdgcn_mfma_f32_32x32x4bf16(a.zw, b.zw, acc, 0, 0, 0);
#else
    acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, acc, 0, 0, 0);
#endif
  }
};
template <> struct Mfma<tt_bf16, 16, 4> {
  static TT_DEVICE void run(f32x4& acc, s16x4 a, s16x4 b) {
#if defined(__gfx908__)
    acc = __builtin_amdgcn_mfma_f32_16x16x8bf16(a.xy, b.xy, acc, 0, 0, 0);
    acc = __builtin_amdgcn_mfma_f32_16x16x8bf16(a.zw, b.zw, acc, 0, 0, 0);
#else
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, acc, 0, 0, 0);
#endif
  }
};
template <> struct Mfma<float, 32, 1> {
  static TT_DEVICE void run(f32x16& acc, float a, float b) {
    acc = __builtin_amdgcn_mfma_f32_32x32x2f32(a, b, acc, 0, 0, 0);
  }
};
template <> struct Mfma<float, 16, 1> {
  static TT_DEVICE void run(f32x4& acc, float a, float b) {
    acc = __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, acc, 0, 0, 0);
  }
};
#if TT_MFMA_DOUBLED_K
template <> struct Mfma<tt_half, 32, 8> {
  static TT_DEVICE void run(f32x16& acc, s16x8 a, s16x8 b) {
    acc = __builtin_amdgcn_mfma_f32_32x32x16_f16(__builtin_bit_cast(f16x8, a), __builtin_bit_cast(f16x8, b), acc, 0, 0, 0);
  }
};
template <> struct Mfma<tt_half, 16, 8> {
  static TT_DEVICE void run(f32x4& acc, s16x8 a, s16x8 b) {
    acc = __builtin_amdgcn_mfma_f32_16x16x32_f16(__builtin_bit_cast(f16x8, a), __builtin_bit_cast(f16x8, b), acc, 0, 0, 0);
  }
};
template <> struct Mfma<tt_bf16, 32, 8> {
  static TT_DEVICE void run(f32x16& acc, s16x8 a, s16x8 b) {
    acc = __builtin_amdgcn_mfma_f32_32x32x16_bf16(__builtin_bit_cast(bf16x8, a), __builtin_bit_cast(bf16x8, b), acc, 0, 0, 0);
  }
};
template <> struct Mfma<tt_bf16, 16, 8> {
  static TT_DEVICE void run(f32x4& acc, s16x8 a, s16x8 b) {
    acc = __builtin_amdgcn_mfma_f32_16x16x32_bf16(__builtin_bit_cast(bf16x8, a), __builtin_bit_cast(bf16x8, b), acc, 0, 0, 0);
  }
};
#endif
// fp8: TAB is one OCP type or tt_ab<A's, B's>; both operands e4m3 or e5m2 (bf8) in any pair.
#if TT_MFMA_KPL_FP8 == 8
// gfx942: one builtin per pair of operand formats (fp8 = e4m3, bf8 = e5m2, both read as FNUZ).
#define TT_MFMA_FP8_PAIR(TAB, AB)                                                           \
  template <> struct Mfma<TAB, 32, 8> {                                                    \
    static TT_DEVICE void run(f32x16& acc, i32x2 a, i32x2 b) {                             \
      acc = __builtin_amdgcn_mfma_f32_32x32x16_##AB(__builtin_bit_cast(long, a),           \
                                                    __builtin_bit_cast(long, b), acc, 0, 0, 0); \
    }                                                                                      \
  };                                                                                       \
  template <> struct Mfma<TAB, 16, 8> {                                                    \
    static TT_DEVICE void run(f32x4& acc, i32x2 a, i32x2 b) {                              \
      acc = __builtin_amdgcn_mfma_f32_16x16x32_##AB(__builtin_bit_cast(long, a),           \
                                                    __builtin_bit_cast(long, b), acc, 0, 0, 0); \
    }                                                                                      \
  };
typedef tt_ab<tt_e4m3, tt_e5m2> tt_e4m3_e5m2;  // the macro's argument holds no comma
typedef tt_ab<tt_e5m2, tt_e4m3> tt_e5m2_e4m3;
TT_MFMA_FP8_PAIR(tt_e4m3, fp8_fp8)
TT_MFMA_FP8_PAIR(tt_e5m2, bf8_bf8)
TT_MFMA_FP8_PAIR(tt_e4m3_e5m2, fp8_bf8)
TT_MFMA_FP8_PAIR(tt_e5m2_e4m3, bf8_fp8)
#undef TT_MFMA_FP8_PAIR
#elif TT_MFMA_KPL_FP8 == 32
// gfx950's f8f6f4 instructions through the scaled builtin: the operand formats are fields (cbsz
// for A, blgp for B: 0 = fp8 e4m3, 1 = bf8 e5m2, both OCP), scales 0, which clang selects as the
// unscaled v_mfma_f32_*_f8f6f4. Only fp8 has 32 values per lane here.
template <class T> struct F8f6f4Format;
template <> struct F8f6f4Format<tt_e4m3> { static constexpr int value = 0; };
template <> struct F8f6f4Format<tt_e5m2> { static constexpr int value = 1; };
template <class TAB> struct Mfma<TAB, 32, 32> {
  static constexpr int FA = F8f6f4Format<typename tt_input_a<TAB>::type>::value;
  static constexpr int FB = F8f6f4Format<typename tt_input_b<TAB>::type>::value;
  static TT_DEVICE void run(f32x16& acc, i32x8 a, i32x8 b) {
    acc = __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(a, b, acc, FA, FB, 0, 0, 0, 0);
  }
};
template <class TAB> struct Mfma<TAB, 16, 32> {
  static constexpr int FA = F8f6f4Format<typename tt_input_a<TAB>::type>::value;
  static constexpr int FB = F8f6f4Format<typename tt_input_b<TAB>::type>::value;
  static TT_DEVICE void run(f32x4& acc, i32x8 a, i32x8 b) {
    acc = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a, b, acc, FA, FB, 0, 0, 0, 0);
  }
};
#endif
#if TT_MFMA_KPL_INT8 == 4
template <> struct Mfma<signed char, 32, 4> {
  static TT_DEVICE void run(i32x16& acc, int a, int b) { acc = __builtin_amdgcn_mfma_i32_32x32x8i8(a, b, acc, 0, 0, 0); }
};
template <> struct Mfma<signed char, 16, 4> {
  static TT_DEVICE void run(i32x4& acc, int a, int b) { acc = __builtin_amdgcn_mfma_i32_16x16x16i8(a, b, acc, 0, 0, 0); }
};
#elif TT_MFMA_KPL_INT8 == 8
template <> struct Mfma<signed char, 32, 8> {
  static TT_DEVICE void run(i32x16& acc, i32x2 a, i32x2 b) {
    acc = __builtin_amdgcn_mfma_i32_32x32x16_i8(__builtin_bit_cast(long, a), __builtin_bit_cast(long, b), acc, 0, 0, 0);
  }
};
template <> struct Mfma<signed char, 16, 8> {
  static TT_DEVICE void run(i32x4& acc, i32x2 a, i32x2 b) {
    acc = __builtin_amdgcn_mfma_i32_16x16x32_i8(__builtin_bit_cast(long, a), __builtin_bit_cast(long, b), acc, 0, 0, 0);
  }
};
#elif TT_MFMA_KPL_INT8 == 16
template <> struct Mfma<signed char, 32, 16> {
  static TT_DEVICE void run(i32x16& acc, i32x4 a, i32x4 b) { acc = __builtin_amdgcn_mfma_i32_32x32x32_i8(a, b, acc, 0, 0, 0); }
};
template <> struct Mfma<signed char, 16, 16> {
  static TT_DEVICE void run(i32x4& acc, i32x4 a, i32x4 b) { acc = __builtin_amdgcn_mfma_i32_16x16x64_i8(a, b, acc, 0, 0, 0); }
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

// The epilogue's arithmetic, C = alpha * acc + beta * C: in fp32 for float accumulators; for
// int8's int32 C with the integer alpha and beta the runtime admits, in wrapping 32-bit integer
// arithmetic (as the host reference and the CUDA int8 kernels).
template <class TC> struct OutMath {
  typedef float V;
  static TT_DEVICE V scale(float alpha, float acc) { return alpha * acc; }
  static TT_DEVICE V add_c(V v, float beta, TC old) { return v + beta * out_to_float(old); }
  static TT_DEVICE TC out(V v) { return out_from_float<TC>(v); }
};
template <> struct OutMath<int> {
  typedef unsigned V;
  static TT_DEVICE V scale(float alpha, int acc) { return (unsigned)(int)alpha * (unsigned)acc; }
  static TT_DEVICE V add_c(V v, float beta, int old) { return v + (unsigned)(int)beta * (unsigned)old; }
  static TT_DEVICE int out(V v) { return (int)v; }
};

// gfx942 reads fp8 as FNUZ: remap a staged vector's OCP special codes (mfma_fp8.h).
template <unsigned SPECIAL, int VW> TT_DEVICE void ocp_to_fnuz(Vec<unsigned char, VW>& r) {
  TT_UNROLL
  for (int w = 0; w < (VW + 3) / 4; ++w) {
    unsigned x = 0;
    TT_UNROLL
    for (int q = 0; q < 4 && 4 * w + q < VW; ++q) x |= (unsigned)r.v[4 * w + q] << (8 * q);
    x = ocp_to_fnuz4<SPECIAL>(x);
    TT_UNROLL
    for (int q = 0; q < 4 && 4 * w + q < VW; ++q) r.v[4 * w + q] = (unsigned char)(x >> (8 * q));
  }
}

template <int NR, class Acc, int FM, int FN>
TT_DEVICE void zero_acc(Acc (&acc)[FM][FN]) {
  TT_UNROLL
  for (int i = 0; i < FM; ++i)
    TT_UNROLL
    for (int j = 0; j < FN; ++j)
      TT_UNROLL
      for (int r = 0; r < NR; ++r) acc[i][j][r] = 0;
}

// FNUZ: 0 (no conversion) or the OCP type's first code without an FNUZ twin (mfma_fp8.h).
template <unsigned FNUZ> struct Fp8Load {
  template <int VW> static TT_DEVICE void fix(Vec<unsigned char, VW>& r) { ocp_to_fnuz<FNUZ>(r); }
};
template <> struct Fp8Load<0> {
  template <class V> static TT_DEVICE void fix(V&) {}
};
// What an operand of type T staged for gfx942's FNUZ MFMAs converts (Fp8Load); 0 elsewhere.
template <class T> struct FnuzSpecial { static constexpr unsigned value = 0; };
template <> struct FnuzSpecial<tt_e4m3> { static constexpr unsigned value = TT_MFMA_FP8_FNUZ ? kOcpSpecialE4m3 : 0; };
template <> struct FnuzSpecial<tt_e5m2> { static constexpr unsigned value = TT_MFMA_FP8_FNUZ ? kOcpSpecialE5m2 : 0; };

// Global -> register -> LDS staging of one operand tile, CONT x STRD as it lies in global memory.
// CONT_IS_K: the contiguous dimension is k (A transposed, B not transposed): rows of the LDS tile
// are then written as vectors; otherwise each element goes to its own (mn, k) slot. FNUZ: fp8
// loaded for gfx942's FNUZ MFMAs (FnuzSpecial).
template <class Raw, int CONT, int STRD, int VW, int THREADS, bool CONT_IS_K, int SP, unsigned FNUZ = 0>
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
      Fp8Load<FNUZ>::fix(r[i]);
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

// TAB: the input type, or tt_ab<A's, B's> for fp8 A and B of two types (tt_types.h).
template <typename TAB, typename TC, bool TRANSA, bool TRANSB, int MT0, int MT1, int DU, int WM, int WN,
          int MI, int VW, int PAD, int DB>
__global__ void __launch_bounds__((MT0 / WM) * (MT1 / WN) * 64) mfma_gemm(TtGemmParams p) {
  using namespace tt_mfma;
  typedef typename tt_input_a<TAB>::type TA;
  typedef typename tt_input_b<TAB>::type TB;
  static_assert(sizeof(TB) == sizeof(TA), "mfma_gemm: A and B of one width");
  constexpr int KPL = ArchKpl<TA>::value;  // as the JSON's derived KPL
  static_assert(KPL > 0, "this arch has no MFMA for the input type");
  using Op = Operand<TA, KPL>;
  using Raw = typename Op::Raw;
  using Frag = typename Op::Frag;
  using Acc = typename Accum<MI, typename Op::AccE>::T;
  using Out = OutMath<TC>;
  constexpr bool FNUZ = TT_MFMA_FP8_FNUZ && sizeof(TA) == 1 && !Op::INTEGER;
  constexpr int KI = inst_k(MI, KPL);
  constexpr int WAVES = (MT0 / WM) * (MT1 / WN);
  constexpr int THREADS = WAVES * 64;
  constexpr int FM = WM / MI;  // MFMA blocks per wave along m
  constexpr int FN = WN / MI;  // ... along n
  constexpr int NR = acc_regs(MI);
  constexpr int SP = DU + PAD;  // LDS row pitch in elements
  constexpr int FRAG_ALIGN = KPL * sizeof(TA) < 16 ? KPL * sizeof(TA) : 16;  // bytes per LDS read
  static_assert(MI == 16 || MI == 32, "MI is 16 or 32");
  static_assert(MT0 % WM == 0 && MT1 % WN == 0, "wave tile must divide macro tile");
  static_assert(WM % MI == 0 && WN % MI == 0, "instruction must divide wave tile");
  static_assert(DU % KI == 0, "DU must be a multiple of the instruction's K");
  static_assert(SP * sizeof(TA) % FRAG_ALIGN == 0, "LDS pitch must keep fragment reads aligned");
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
  using StageA = Stage<Raw, TRANSA ? DU : MT0, TRANSA ? MT0 : DU, VW, THREADS, TRANSA, SP, FnuzSpecial<TA>::value>;
  using StageB = Stage<Raw, TRANSB ? MT1 : DU, TRANSB ? DU : MT1, VW, THREADS, !TRANSB, SP, FnuzSpecial<TB>::value>;
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
        a[i] = FragRead<Frag>::at(a_s + lds_index(i * MI, kk * KI, SP));
      TT_UNROLL
      for (int j = 0; j < FN; ++j)
        b[j] = FragRead<Frag>::at(b_s + lds_index(j * MI, kk * KI, SP));
      TT_UNROLL
      for (int i = 0; i < FM; ++i)
        TT_UNROLL
        for (int j = 0; j < FN; ++j) Mfma<TAB, MI, KPL>::run(acc[i][j], a[i], b[j]);
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
  // FNUZ: each product came out a quarter of its OCP value (mfma_fp8.h); exact in fp32.
  const float alpha = FNUZ ? 4.0f * p.alpha : p.alpha, beta = p.beta;
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
        typename Out::V v[4];
        TT_UNROLL
        for (int t = 0; t < 4; ++t) v[t] = Out::scale(alpha, acc[i][j][4 * q + t]);
        if (read_c) {
          Vec<TC, 4> old;
          if (whole) {
            old = *reinterpret_cast<const Vec<TC, 4>*>(cp);
          } else {
            TT_UNROLL
            for (int t = 0; t < 4; ++t) old.v[t] = row + t < M ? cp[t] : tt_zero<TC>();
          }
          TT_UNROLL
          for (int t = 0; t < 4; ++t) v[t] = Out::add_c(v[t], beta, old.v[t]);
        }
        Vec<TC, 4> out;
        TT_UNROLL
        for (int t = 0; t < 4; ++t) out.v[t] = Out::out(v[t]);
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
