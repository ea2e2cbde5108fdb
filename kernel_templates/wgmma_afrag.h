// wgmma_gemm's tf32 A from registers (AREG 1): each consumer thread reads its A fragment of
// wgmma m64nNk8 straight out of the MN-major stage that TMA (or cp.async) filled, so that an
// MN-major fp32 A needs no transpose pass: the load does it, one 32-bit element at a time.
//
// The fragment (PTX ISA, wgmma register fragments, A of .tf32 m64nNk8): warp w of the warpgroup
// holds rows 16 w .. 16 w + 15; lane l = 4 g + t holds a0 = (16 w + g, t), a1 = (16 w + g + 8, t),
// a2 = (16 w + g, t + 4), a3 = (16 w + g + 8, t + 4) as (row, k).
// The stage (MN-major fp32, wgmma_transpose.h's landing layout): 32 rows of one k per 128-byte
// line, 128-byte swizzle, so element (r, k) sits in 16-byte column ((r % 32) / 4) ^ (k % 8).
// Loading a0 in every lane at once would hit 16 banks twice: lanes g and g + 4 read columns c ^ t
// and (c + 1) ^ t, the same four columns for t = 0..3. So load p (e = p / 2, q = p % 2) of a
// lane fills register e + 2 (q ^ h), h = g / 4: lanes g < 4 read k = t + 4 q while lanes g >= 4
// read k = t + 4 (1 - q), the other half of the k8 step, whose swizzle columns are the other
// four. 32 lanes on 8 columns x 4 words: no bank conflict; the thread then routes the 4 loaded
// words to a0..a3 by h (two selects per pair). A host test
// (tests/solutions/test_wgmma_afrag.cpp) replays every load against the PTX fragment and counts
// the banks.
#ifndef TILETUNE_WGMMA_AFRAG_H
#define TILETUNE_WGMMA_AFRAG_H

#include "wgmma_transpose.h"

namespace tt_afrag {

// Which fragment register (0..3) load p (0..3) of lane `lane` fills.
TT_XPOSE_FN int load_register(int lane, int p) {
  const int h = (lane >> 4) & 1;
  return (p >> 1) + 2 * ((p & 1) ^ h);
}

// Byte offset of load p of lane `lane` in warp `warp` (0..3 of the warpgroup), within a 64-row
// MN-major fp32 sub-tile (two 32-row boxes of bk lines) at k8 step 0; k8 step kk adds 1024 kk
// (8 lines: the swizzle column stays), the next 64 rows 2 bk 128 bytes.
TT_XPOSE_FN unsigned load_offset(int warp, int lane, int p, int bk) {
  const int reg = load_register(lane, p);
  const int r = 16 * warp + (lane >> 2) + 8 * (reg & 1);
  const int k = (lane & 3) + 4 * (reg >> 1);
  return tt_xpose::landing_offset(r & ~3, k, bk) + 4u * (unsigned)(r & 3);
}

}  // namespace tt_afrag

#endif  // TILETUNE_WGMMA_AFRAG_H
