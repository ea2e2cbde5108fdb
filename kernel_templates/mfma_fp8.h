// tiletune's fp8 is OCP e4m3 (bias 7, 0x7f / 0xff NaN, a negative zero); gfx942's fp8 MFMAs read
// e4m3 as FNUZ (bias 8, 0x80 the only NaN, no negative zero). With the bits unchanged every
// finite OCP value reads as exactly half of itself in FNUZ (normals and subnormals alike, since
// only the bias differs), so the MFMA templates convert on load on gfx942: the two special codes
// are remapped (OCP NaN -> FNUZ NaN 0x80, OCP -0 -> +0) and the epilogue multiplies by 4 (each
// product of two halves is a quarter). Power-of-two scaling is exact in the fp32 accumulators,
// whose range is far beyond any sum of fp8 products.
// Only integer arithmetic, no includes: compiled by hipRTC and the host compiler (the host test
// checks it on every byte).
#ifndef TILETUNE_MFMA_FP8_H
#define TILETUNE_MFMA_FP8_H

namespace tt_mfma {

// Four OCP e4m3 bytes of a 32-bit word to FNUZ at half their value, byte-parallel (no carries
// cross a byte: every sum below stays within its byte).
constexpr unsigned ocp_to_fnuz4(unsigned x) {
  const unsigned low7 = x & 0x7f7f7f7fu;
  const unsigned nan = (low7 + 0x01010101u) & 0x80808080u;       // bytes with low 7 bits 0x7f
  const unsigned nonzero = (low7 + 0x7f7f7f7fu) & 0x80808080u;   // bytes with low 7 bits != 0
  const unsigned negzero = x & ~nonzero & 0x80808080u;           // 0x80
  const unsigned clear = ((nan | negzero) >> 7) * 0xffu;         // whole bytes to replace
  return (x & ~clear) | nan;
}

}  // namespace tt_mfma

#endif
