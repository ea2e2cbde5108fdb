// Shared-memory layout and copy addressing of tap_wgrad (tap_wgrad.cuh), as plain functions so
// that the kernel and a host test (tests/solutions/test_tap_wgrad_index.cpp) run the very same
// code: the test replays every copy and every tap's read and checks the (dy pixel, x pixel) pairs
// they multiply against the convolution's definition.
//
// One pipeline stage holds G consecutive output rows (n, p) of the block's slice, packed along one
// "position" axis with a period of Q + 1: output row g's pixel q is position g * (Q + 1) + q, and
// position g * (Q + 1) + Q is a gap whose dy stays zero. The input rows are packed the same way,
// one shifted by a slot: input pixel w of row g sits in slot g * (Q + 1) + w + 1, so the slots
// g * (Q + 1) (w = -1) and g * (Q + 1) + Q + 1 (w = Q) are one and the same zero slot, the right
// halo of row g - 1 and the left halo of row g. Tap (r, s) then pairs position t of dy with slot
// t + s of input row r: a constant shift, which is what lets one staged input row serve all
// three taps of a filter row, and G short rows share one m16 tile (Q = 7: two rows in 16 positions
// instead of one row padded to 16).
//
// Only 3x3 filters with stride 1, padding 1 and no dilation (tap_wgrad.json), so W == Q and the
// input row of filter row r for output row p is p - 1 + r.
#ifndef TILETUNE_TAP_WGRAD_INDEX_H
#define TILETUNE_TAP_WGRAD_INDEX_H

#include "conv_params.h"

namespace tt_tapw {

// Byte sizes of one stage; the JSON's STAGE_BYTES must agree. Rows of dy positions (KM channels)
// and input slots (CN channels) are padded by 16 bytes: an odd multiple of 16 bytes, so the eight
// rows an ldmatrix phase reads hit distinct banks whatever the shift.
struct Geometry {
  int span;         // Q + 1
  int positions;    // the m16n8k16 reduction per stage: the packed positions rounded up to 16
  int slots;        // input slots per row: positions + 2 (the shift of tap s = 2 reads two past)
  int dy_stride;    // bytes per dy position
  int x_stride;     // bytes per input slot
  int x_row_bytes;  // one input row (all slots)
  int dy_bytes;     // dy's part of a stage, before the three input rows
  int stage_bytes;
};

TT_CONV_FN Geometry geometry(int q, int G, int KM, int CN) {
  Geometry g;
  g.span = q + 1;
  g.positions = ((G - 1) * g.span + q + 15) / 16 * 16;
  g.slots = g.positions + 2;
  g.dy_stride = (KM + 8) * 2;
  g.x_stride = (CN + 8) * 2;
  g.x_row_bytes = g.slots * g.x_stride;
  g.dy_bytes = g.positions * g.dy_stride;
  g.stage_bytes = g.dy_bytes + 3 * g.x_row_bytes;
  return g;
}

// Output rows [begin, end) of split `split` of `splits`: contiguous, lengths differing by at most one.
TT_CONV_FN void row_slice(int rows, int split, int splits, int& begin, int& end) {
  begin = int((long long)split * rows / splits);
  end = int((long long)(split + 1) * rows / splits);
}

// One 16-byte copy into a stage: dst bytes from the stage's start, src elements from the tensor's
// start (meaningful only when ok; !ok copies zeros).
struct Copy {
  int dst;
  long long src;
  bool ok;
};

// Copy i (0 <= i < G * Q * KM / 8) of dy for the stage of output rows row, row + 1, ... (those at
// or past `end` are zeros): channels k0 .. k0 + KM of each pixel.
TT_CONV_FN Copy dy_copy(const Geometry& g, const TtConvParams& p, int row, int end, int k0, int KM, int i) {
  const int vecs = KM / 8, v = i % vecs, pix = i / vecs, gi = pix / p.q, q = pix % p.q;
  const int r = row + gi;
  Copy c;
  c.ok = r < end;
  c.dst = (gi * g.span + q) * g.dy_stride + v * 16;
  c.src = ((long long)(c.ok ? r : 0) * p.q + q) * p.k + k0 + v * 8;
  return c;
}

// Copy i (0 <= i < G * 3 * W * CN / 8) of the input rows: for packed row gi and filter row tr, input
// row p - 1 + tr (zeros in the vertical padding), channels c0 .. c0 + CN.
TT_CONV_FN Copy x_copy(const Geometry& g, const TtConvParams& p, int row, int end, int c0, int CN, int i) {
  const int vecs = CN / 8, v = i % vecs, rest = i / vecs, w = rest % p.w, tr = rest / p.w % 3, gi = rest / p.w / 3;
  const int r = row + gi, n = r / p.p, h = r % p.p - p.pad_h + tr;
  Copy c;
  c.ok = r < end && h >= 0 && h < p.h;
  c.dst = g.dy_bytes + tr * g.x_row_bytes + (gi * g.span + w + 1) * g.x_stride + v * 16;
  c.src = c.ok ? (((long long)n * p.h + h) * p.w + w) * p.c + c0 + v * 8 : 0;
  return c;
}

// Bytes from the stage's start of dy position t, and of the input slot tap (r, s) pairs with it.
TT_CONV_FN int dy_at(const Geometry& g, int t) { return t * g.dy_stride; }
TT_CONV_FN int x_at(const Geometry& g, int r, int s, int t) { return g.dy_bytes + r * g.x_row_bytes + (t + s) * g.x_stride; }

}  // namespace tt_tapw

#endif
