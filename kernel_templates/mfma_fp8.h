// tiletune's fp8 is OCP: e4m3 (bias 7, 0x7f / 0xff NaN, a negative zero) and e5m2 (bias 15,
// infinities 0x7c / 0xfc, NaNs 0x7d-0x7f / 0xfd-0xff, a negative zero); gfx942's fp8 MFMAs read
// them as FNUZ (fp8 bias 8, bf8 bias 16, 0x80 the only NaN, no infinities, no negative zero). With
// the bits unchanged every finite OCP value reads as exactly half of itself in FNUZ (normals and
// subnormals alike, since only the bias differs), so the MFMA templates convert on load on gfx942:
// the special codes are remapped (OCP NaN and, for e5m2, infinity -> FNUZ NaN 0x80, which has no
// infinity; OCP -0 -> +0) and the epilogue multiplies by 4 (each product of two halves is a
// quarter). Power-of-two scaling is exact in the fp32 accumulators, whose range is far beyond any
// sum of fp8 products.
// Only integer arithmetic, no includes: compiled by hipRTC and the host compiler (the host test
// checks it on every byte).
#ifndef TILETUNE_MFMA_FP8_H
#define TILETUNE_MFMA_FP8_H

namespace tt_mfma {

// The lowest 7-bit magnitude code of an OCP fp8 type with no FNUZ twin: e4m3's NaN, e5m2's infinity
// (its NaNs follow it).
constexpr unsigned kOcpSpecialE4m3 = 0x7f, kOcpSpecialE5m2 = 0x7c;

// Four OCP fp8 bytes of a 32-bit word (SPECIAL: kOcpSpecialE4m3 or kOcpSpecialE5m2) to FNUZ at half
// their value, byte-parallel (no carries cross a byte: every sum below stays within its byte).
template <unsigned SPECIAL>
constexpr unsigned ocp_to_fnuz4(unsigned x) {
  const unsigned low7 = x & 0x7f7f7f7fu;
  const unsigned nan = (low7 + (0x80u - SPECIAL) * 0x01010101u) & 0x80808080u;  // bytes with low 7 bits >= SPECIAL
  const unsigned nonzero = (low7 + 0x7f7f7f7fu) & 0x80808080u;   // bytes with low 7 bits != 0
  const unsigned negzero = x & ~nonzero & 0x80808080u;           // 0x80
  const unsigned clear = ((nan | negzero) >> 7) * 0xffu;         // whole bytes to replace
  return (x & ~clear) | nan;
}

}  // namespace tt_mfma

#endif
