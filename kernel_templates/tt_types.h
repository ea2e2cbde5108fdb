// Storage types for 16-bit operands and their conversions to/from the fp32 used for
// accumulation. Kernels only ever do arithmetic in fp32; the 16-bit types are opaque bit
// containers so that NVRTC and hipRTC (neither of which may have cuda_fp16.h / hip_fp16.h at
// hand) compile the same source.
#ifndef TILETUNE_TT_TYPES_H
#define TILETUNE_TT_TYPES_H

#if !defined(TT_CUDA) && !defined(TT_HIP)
#error "include prelude_cuda.h or prelude_hip.h first"
#endif

struct tt_half { unsigned short bits; };  // IEEE 754 binary16
struct tt_bf16 { unsigned short bits; };  // bfloat16: the upper half of an fp32
struct tt_e4m3 { unsigned char bits; };   // fp8 e4m3 (bias 7, no infinities, 0x7f NaN): GEMM inputs only
struct tt_e5m2 { unsigned char bits; };   // fp8 e5m2 (bias 15, infinities and NaNs): GEMM inputs only
// A GEMM whose A and B differ in type (fp8 e4m3 x e5m2) names the pair where a template takes its
// input type (TA); tt_input_a / tt_input_b give each operand's type, a single type for both.
template <class A, class B> struct tt_ab {};
template <class T> struct tt_input_a { typedef T type; };
template <class T> struct tt_input_b { typedef T type; };
template <class A, class B> struct tt_input_a<tt_ab<A, B> > { typedef A type; };
template <class A, class B> struct tt_input_b<tt_ab<A, B> > { typedef B type; };
// int8 GEMMs read signed char and write int: plain C types.

namespace tt_detail {

#if defined(TT_CUDA)
__device__ __forceinline__ unsigned f2u(float f) { return __float_as_uint(f); }
__device__ __forceinline__ float u2f(unsigned u) { return __uint_as_float(u); }
#else
// A union keeps this independent of which bit-cast intrinsics a given HIP version ships.
union tt_fu { float f; unsigned u; };
__device__ inline __attribute__((always_inline)) unsigned f2u(float f) { tt_fu x; x.f = f; return x.u; }
__device__ inline __attribute__((always_inline)) float u2f(unsigned u) { tt_fu x; x.u = u; return x.f; }
#endif

// Portable binary16 -> fp32 (exact). Used on HIP, and as the reference the CUDA path must match.
__device__ inline float half_bits_to_float(unsigned short h) {
  const unsigned sign = (unsigned)(h & 0x8000u) << 16;
  const unsigned exp = (h >> 10) & 0x1fu;
  const unsigned man = h & 0x3ffu;
  if (exp == 0) {
    // Subnormal (or zero): value = man * 2^-24, exactly representable as a normal fp32.
    const float mag = (float)man * 5.9604644775390625e-8f;
    return u2f(f2u(mag) | sign);
  }
  if (exp == 31) return u2f(sign | 0x7f800000u | (man << 13));  // inf / nan (payload kept)
  return u2f(sign | ((exp + 112u) << 23) | (man << 13));         // rebias 15 -> 127
}

// Portable fp32 -> binary16 with round-to-nearest-even, overflow to inf, NaN kept quiet.
__device__ inline unsigned short float_to_half_bits(float f) {
  const unsigned x = f2u(f);
  const unsigned sign = (x >> 16) & 0x8000u;
  const unsigned ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (unsigned short)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {
    // Below the smallest normal half (2^-14): adding 0.5 puts the binary point at 2^-24, the
    // half subnormal ulp, so the fp32 adder performs the round-to-nearest-even for us.
    const float t = u2f(ax) + 0.5f;
    return (unsigned short)(sign | (f2u(t) - 0x3f000000u));
  }
  // Normal: rebias the exponent (-112 << 23), then round the 13 dropped mantissa bits to even.
  const unsigned odd = (ax >> 13) & 1u;
  return (unsigned short)(sign | ((ax + 0xc8000fffu + odd) >> 13));
}

__device__ inline unsigned short float_to_bf16_bits(float f) {
  const unsigned x = f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);  // quiet NaN
  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace tt_detail

__device__ inline float tt_to_float(float x) { return x; }

__device__ inline float tt_to_float(tt_half x) {
#if defined(TT_CUDA)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
#else
  return tt_detail::half_bits_to_float(x.bits);
#endif
}

__device__ inline float tt_to_float(tt_bf16 x) { return tt_detail::u2f((unsigned)x.bits << 16); }

// Exact: every fp8 value is an fp32. Integer arithmetic, so the reference kernels need no fp8
// conversion instructions (sm_89+) and compile for every target. E exponent bits: e4m3 (NaN at
// 0x7f / 0xff only) or e5m2 (exponent 31: infinity or NaN); subnormals man * 2^(1 - bias - M).
template <int E> __device__ inline float tt_fp8_to_float(unsigned char bits) {
  const int M = 7 - E, BIAS = (1 << (E - 1)) - 1, EMAX = (1 << E) - 1;
  const unsigned sign = (unsigned)(bits & 0x80u) << 24, exp = (bits >> M) & (unsigned)EMAX;
  const unsigned man = bits & ((1u << M) - 1u);
  if (E == 4 && exp == (unsigned)EMAX && man == 7u) return tt_detail::u2f(sign | 0x7fc00000u);
  if (E == 5 && exp == (unsigned)EMAX)  // infinity, or a quiet NaN keeping the payload
    return tt_detail::u2f(sign | 0x7f800000u | (man << (23 - M)) | (man ? 0x400000u : 0u));
  if (exp == 0)
    return tt_detail::u2f(tt_detail::f2u((float)man * tt_detail::u2f((unsigned)(127 + 1 - BIAS - M) << 23)) | sign);
  return tt_detail::u2f(sign | ((exp + 127u - BIAS) << 23) | (man << (23 - M)));
}
__device__ inline float tt_to_float(tt_e4m3 x) { return tt_fp8_to_float<4>(x.bits); }
__device__ inline float tt_to_float(tt_e5m2 x) { return tt_fp8_to_float<5>(x.bits); }
__device__ inline float tt_to_float(signed char x) { return (float)x; }

template <class T> __device__ inline T tt_from_float(float f);

template <> __device__ inline float tt_from_float<float>(float f) { return f; }

template <> __device__ inline tt_half tt_from_float<tt_half>(float f) {
  tt_half h;
#if defined(TT_CUDA)
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
  h.bits = tt_detail::float_to_half_bits(f);
#endif
  return h;
}

template <> __device__ inline tt_bf16 tt_from_float<tt_bf16>(float f) {
  tt_bf16 h;
#if defined(TT_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
  h.bits = tt_detail::float_to_bf16_bits(f);
#endif
  return h;
}

// Zero of each storage type, for predicated-off loads.
template <class T> __device__ inline T tt_zero() { T z; z.bits = 0; return z; }

// Two adjacent outputs a, b at p: one store where `pair` says p is aligned to two elements,
// else one store each.
template <class T> __device__ inline void tt_store_pair(T* p, float a, float b, bool pair) {
  struct alignas(2 * sizeof(T)) Two { T v[2]; };
  if (pair) {
    Two t;
    t.v[0] = tt_from_float<T>(a);
    t.v[1] = tt_from_float<T>(b);
    *reinterpret_cast<Two*>(p) = t;
  } else {
    p[0] = tt_from_float<T>(a);
    p[1] = tt_from_float<T>(b);
  }
}
template <> __device__ inline float tt_zero<float>() { return 0.0f; }
template <> __device__ inline signed char tt_zero<signed char>() { return 0; }
template <> __device__ inline int tt_zero<int>() { return 0; }

#endif
