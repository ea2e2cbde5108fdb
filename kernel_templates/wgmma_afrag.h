// wgmma's register-A form fed from an MN-major stage that TMA (or cp.async) filled: wgmma_gemm's
// tf32 A (AREG 1), where the load transposes one 32-bit element at a time, and below it the 16-bit
// fragment wgmma_tap_wgrad's AREG reads with ldmatrix.trans.
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

// 16-bit inputs (bf16, f16), m64nNk16: per warp the A fragment of mma.sync m16n8k16 for its rows
// 16 w .. 16 w + 15 (PTX ISA: lane l = 4 g + t holds register 0 = (g, 2t .. 2t + 1), 1 = (g + 8,
// 2t ..), 2 = (g, 2t + 8 ..), 3 = (g + 8, 2t + 8 ..) as (row, k)). The stage: MN-major, one 128-byte
// line per k (64 rows, 8 chunks of 16 bytes), TMA's 128-byte swizzle on a 1024-byte-aligned stage
// (chunk c of line L at ((c ^ L % 8) * 16)). One ldmatrix.x4.trans a k16 step: lane l gives row
// l % 8 of matrix l / 8, matrix i = lines (i / 2) * 8 .. + 7 of the step, rows (i % 2) * 8 .. + 7 of
// the warp's, delivered transposed as register i. The byte offset of lane l's row at k16 step kk;
// step kk + 1 is 2048 bytes on (16 lines: the swizzle key stays). The 8 lanes of a matrix read 8
// lines of one chunk, which the swizzle spreads over the 8 bank groups: no conflict.
TT_XPOSE_FN unsigned ldsm16_offset(int warp, int lane, int kk) {
  const int line = 16 * kk + (lane & 7) + 8 * (lane >> 4);
  const int chunk = 2 * warp + ((lane >> 3) & 1);
  return (unsigned)(line * 128 + ((chunk ^ (line & 7)) << 4));
}

}  // namespace tt_afrag

#endif  // TILETUNE_WGMMA_AFRAG_H
