// Host-side twins of tt_types.h: the same 16-bit storage types, converted with integer arithmetic
// so that results do not depend on the host compiler's _Float16 support.
#ifndef TILETUNE_HOST_TYPES_H
#define TILETUNE_HOST_TYPES_H

#include <cstring>

#ifndef TILETUNE_TT_STORAGE_TYPES
#define TILETUNE_TT_STORAGE_TYPES
struct tt_half { unsigned short bits; };
struct tt_bf16 { unsigned short bits; };
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

#endif
