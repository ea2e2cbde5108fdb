// Host-side twins of tt_types.h: the same 16- and 8-bit storage types, converted with integer
// arithmetic so that results do not depend on the host compiler's _Float16 support.
#ifndef TILETUNE_HOST_TYPES_H
#define TILETUNE_HOST_TYPES_H

#include <cstring>

#ifndef TILETUNE_TT_STORAGE_TYPES
#define TILETUNE_TT_STORAGE_TYPES
struct tt_half { unsigned short bits; };
struct tt_bf16 { unsigned short bits; };
struct tt_e4m3 { unsigned char bits; };
struct tt_e5m2 { unsigned char bits; };
// A GEMM whose A and B differ in type (fp8 e4m3 x e5m2): templates that take a pair name it where
// they name one input type, and read each operand's type through tt_input_a / tt_input_b.
template <class A, class B> struct tt_ab {};
template <class T> struct tt_input_a { typedef T type; };
template <class T> struct tt_input_b { typedef T type; };
template <class A, class B> struct tt_input_a<tt_ab<A, B> > { typedef A type; };
template <class A, class B> struct tt_input_b<tt_ab<A, B> > { typedef B type; };
#endif

inline float tt_host_bits_to_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned tt_host_float_to_bits(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float tt_host_to_float(float x) { return x; }
inline float tt_host_to_float(tt_bf16 x) { return tt_host_bits_to_float(unsigned(x.bits) << 16); }
inline float tt_host_to_float(tt_half x) {
  unsigned sign = unsigned(x.bits & 0x8000u) << 16, exp = (x.bits >> 10) & 0x1f, man = x.bits & 0x3ffu;
  if (exp == 0x1f) return tt_host_bits_to_float(sign | 0x7f800000u | (man << 13));  // inf / nan
  if (exp == 0) {  // zero or subnormal: value = man * 2^-24
    float v = float(man) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return tt_host_bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}

// OCP fp8 with E exponent bits: e4m3 (bias 7, no infinities; 0x7f / 0xff are NaN) and e5m2 (bias 15,
// IEEE-like: exponent 31 is infinity or NaN). Subnormals are man * 2^(1 - bias - mantissa bits).
template <int E> inline float tt_host_fp8_to_float(unsigned char bits) {
  constexpr int M = 7 - E, BIAS = (1 << (E - 1)) - 1, EMAX = (1 << E) - 1;
  const unsigned sign = unsigned(bits & 0x80u) << 24, exp = (bits >> M) & unsigned(EMAX), man = bits & ((1u << M) - 1);
  if (E == 4 && exp == unsigned(EMAX) && man == 7) return tt_host_bits_to_float(sign | 0x7fc00000u);
  if (E == 5 && exp == unsigned(EMAX))  // infinity, or a quiet NaN keeping the payload
    return tt_host_bits_to_float(sign | 0x7f800000u | (man << (23 - M)) | (man ? 0x400000u : 0u));
  if (exp == 0) {
    const float v = float(man) * tt_host_bits_to_float(unsigned(127 + 1 - BIAS - M) << 23);
    return sign ? -v : v;
  }
  return tt_host_bits_to_float(sign | ((exp + 127 - BIAS) << 23) | (man << (23 - M)));
}
inline float tt_host_to_float(tt_e4m3 x) { return tt_host_fp8_to_float<4>(x.bits); }
inline float tt_host_to_float(tt_e5m2 x) { return tt_host_fp8_to_float<5>(x.bits); }
inline float tt_host_to_float(signed char x) { return float(x); }

template <typename T> inline T tt_host_from_float(float f);
template <> inline float tt_host_from_float<float>(float f) { return f; }
template <> inline tt_bf16 tt_host_from_float<tt_bf16>(float f) {
  unsigned u = tt_host_float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return tt_bf16{(unsigned short)((u >> 16) | 0x40)};  // quiet nan
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return tt_bf16{(unsigned short)(u >> 16)};
}
template <> inline tt_half tt_host_from_float<tt_half>(float f) {
  unsigned u = tt_host_float_to_bits(f);
  unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  unsigned absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return tt_half{(unsigned short)(sign | 0x7e00u)};
  if (absu >= 0x477ff000u) return tt_half{(unsigned short)(sign | 0x7c00u)};  // rounds to inf
  if (absu < 0x38800000u) {  // subnormal half: round |f| * 2^24 to an integer, ties to even
    float a = tt_host_bits_to_float(absu) * 16777216.0f;
    unsigned q = (unsigned)a;
    float rem = a - float(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return tt_half{(unsigned short)(sign | q)};
  }
  unsigned mant = absu + 0xfffu + ((absu >> 13) & 1u);  // round to nearest even at bit 13
  return tt_half{(unsigned short)(sign | ((mant - 0x38000000u) >> 13))};
}

// Round to nearest even, saturating at the largest finite value (e4m3 448, e5m2 57344, as cuBLASLt's
// and PyTorch's "satfinite" casts); NaN stays NaN.
template <int E> inline unsigned char tt_host_fp8_from_float(float f) {
  constexpr int M = 7 - E, BIAS = (1 << (E - 1)) - 1;
  constexpr unsigned char MAX_FINITE = E == 4 ? 0x7e : 0x7b, NAN_CODE = E == 4 ? 0x7f : 0x7e;
  const unsigned u = tt_host_float_to_bits(f);
  const unsigned char sign = (unsigned char)((u >> 24) & 0x80u);
  const unsigned absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return (unsigned char)(sign | NAN_CODE);
  const float a = tt_host_bits_to_float(absu);
  if (a >= tt_host_fp8_to_float<E>(MAX_FINITE)) return (unsigned char)(sign | MAX_FINITE);
  if (absu < unsigned(127 + 1 - BIAS) << 23) {  // below the smallest normal: multiples of 2^(1-bias-M), ties to even
    const float q = a * tt_host_bits_to_float(unsigned(127 - 1 + BIAS + M) << 23);
    unsigned n = (unsigned)q;
    const float rem = q - float(n);
    if (rem > 0.5f || (rem == 0.5f && (n & 1u))) ++n;
    return (unsigned char)(sign | n);  // n == 2^M is the smallest normal
  }
  // Normal: rebias 127 -> BIAS and round the dropped mantissa bits to even (a carry bumps the exponent).
  constexpr int DROP = 23 - M;
  const unsigned r = absu + ((1u << (DROP - 1)) - 1) + ((absu >> DROP) & 1u);
  return (unsigned char)(sign | ((r - (unsigned(127 - BIAS) << 23)) >> DROP));
}
template <> inline tt_e4m3 tt_host_from_float<tt_e4m3>(float f) { return tt_e4m3{tt_host_fp8_from_float<4>(f)}; }
template <> inline tt_e5m2 tt_host_from_float<tt_e5m2>(float f) { return tt_e5m2{tt_host_fp8_from_float<5>(f)}; }

// Integer GEMM operands: random inputs are spread over [-127, 127] by the caller; a cast here.
template <> inline signed char tt_host_from_float<signed char>(float f) { return (signed char)f; }

// The accumulator of a host GEMM: fp32 for floating-point inputs, int32 (exact) for int8.
template <typename TA> struct tt_host_acc { typedef float type; };
template <> struct tt_host_acc<signed char> { typedef int type; };

#endif
