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

// e4m3 (bias 7, no infinities; 0x7f / 0xff are NaN): subnormals are man * 2^-9.
inline float tt_host_to_float(tt_e4m3 x) {
  const unsigned sign = unsigned(x.bits & 0x80u) << 24, exp = (x.bits >> 3) & 0xfu, man = x.bits & 7u;
  if (exp == 0xf && man == 7) return tt_host_bits_to_float(sign | 0x7fc00000u);
  if (exp == 0) {
    float v = float(man) * (1.0f / 512.0f);
    return sign ? -v : v;
  }
  return tt_host_bits_to_float(sign | ((exp + 120) << 23) | (man << 20));
}
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

// Round to nearest even, saturating at +-448 (the largest finite e4m3, as cuBLASLt's and
// PyTorch's "satfinite" casts); NaN stays NaN.
template <> inline tt_e4m3 tt_host_from_float<tt_e4m3>(float f) {
  const unsigned u = tt_host_float_to_bits(f);
  const unsigned char sign = (unsigned char)((u >> 24) & 0x80u);
  const unsigned absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return tt_e4m3{(unsigned char)(sign | 0x7f)};
  const float a = tt_host_bits_to_float(absu);
  if (a >= 448.0f) return tt_e4m3{(unsigned char)(sign | 0x7e)};
  if (a < 0.015625f) {  // below 2^-6, the smallest normal: multiples of 2^-9, ties to even
    const float q = a * 512.0f;
    unsigned n = (unsigned)q;
    const float rem = q - float(n);
    if (rem > 0.5f || (rem == 0.5f && (n & 1u))) ++n;
    return tt_e4m3{(unsigned char)(sign | n)};  // n == 8 is the smallest normal, 0x08
  }
  // Normal: rebias 127 -> 7 and round the 20 dropped mantissa bits to even (a carry bumps the exponent).
  const unsigned r = absu + 0x7ffffu + ((absu >> 20) & 1u);
  return tt_e4m3{(unsigned char)(sign | ((r - (120u << 23)) >> 20))};
}

// Integer GEMM operands: random inputs are spread over [-127, 127] by the caller; a cast here.
template <> inline signed char tt_host_from_float<signed char>(float f) { return (signed char)f; }

// The accumulator of a host GEMM: fp32 for floating-point inputs, int32 (exact) for int8.
template <typename TA> struct tt_host_acc { typedef float type; };
template <> struct tt_host_acc<signed char> { typedef int type; };

#endif
