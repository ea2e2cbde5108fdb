// Coordinates of the Hopper convolution's TMA copies (wgmma_conv.cuh), as plain functions shared by
// the kernel, the host side that encodes the tensor maps (ops/cuda/tma_arguments.cpp) and a host
// test (tests/solutions/test_wgmma_conv_index.cpp) that replays the TMA im2col traversal against
// the convolution's definition, in all three directions.
//
// Each direction is an implicit GEMM whose activation operand is one TMA im2col copy per box of
// pixels: start {c, w, h, n} = {first channel, x * stride_w - pad_w, y * stride_h - pad_h, n} of the
// box's first pixel (n, y, x) on the copy's pixel grid, im2col offsets {s * dil_w, r * dil_h} for
// filter tap (r, s). The TMA walks the box's pixels from the start through the bounding box (the
// read tensor's H x W grown by the corners below), W fastest then H then N, in steps of the
// traversal strides, which visits the grid's pixels in order; it reads at the pixel plus the
// offsets and fills zeros outside the tensor (padding, and pixels past the last image).
//   fwd:   rows = output pixels (P x Q grid), reads x; reduction (r, s, 64 channels of C);
//          the filters are a tiled K x (R*S*C) matrix (K-major B).
//   dgrad: stride 1 (a strided one by its phases: the end of this file); dx is the stride-1
//          convolution of dy with the filters flipped in R and S and transposed (C outputs, K
//          inputs), padding dil (R - 1) - pad: rows = x's pixels (H x W grid), reads dy;
//          reduction (r', s', 64 channels of K). Filter tap (r', s') of the flipped filters is
//          tap (R-1-r', S-1-s') of wt, whose [K][C] slice is C-contiguous, so B comes as MN-major
//          boxes of 64 channels of C x 64 of K.
//   dgrad, 1x1 with stride s and no padding: dx is zero but at pixels (s p, s q), where it is the
//          1x1 stride-1 dgrad of dy: rows = dy's pixels (P x Q grid), and the epilogue scatters
//          row (n, p, q) to dx pixel (n, s p, s q) and writes zeros over the rest of its s x s
//          block (dgrad_block), which covers dx exactly once.
//   wgrad: rows = output channels K (dy, a tiled N*P*Q x K matrix, MN-major A), columns = the
//          R*S*C filter elements in KRSC order, 64 at a time (C % 64 == 0, so 64 columns are 64
//          channels of one tap: tap_column); reduction over the output pixels 64 at a time: the
//          im2col copy of 64 pixels of the P x Q grid, reading x at a box's tap, is an MN-major B
//          box of 64 pixels x 64 channels of C.
#ifndef TILETUNE_WGMMA_CONV_INDEX_H
#define TILETUNE_WGMMA_CONV_INDEX_H

#include "conv_params.h"
#include "mma_conv_index.h"

namespace tt_wgconv {

// The im2col side of a direction: the pixel grid the copies walk and the tensor they read.
struct Im2col {
  int grid_h, grid_w;  // pixels per image the GEMM walks (P x Q, or H x W for dgrad)
  int src_h, src_w;    // the tensor read (x: H x W; dgrad: dy, P x Q)
  int src_c;           // its channels
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
};
// dgrad of a 1x1 convolution with stride > 1 and no padding: the scattered form (above).
TT_CONV_FN bool dgrad_scatters(const TtConvParams& p) {
  return p.r == 1 && p.s == 1 && p.pad_h == 0 && p.pad_w == 0 && (p.stride_h > 1 || p.stride_w > 1);
}
TT_CONV_FN Im2col im2col_of(const TtConvParams& p, int dir) {
  if (dir == 1 && dgrad_scatters(p)) {
    Im2col v = {p.p, p.q, p.p, p.q, p.k, 1, 1, 0, 0, 1, 1};
    return v;
  }
  if (dir == 1) {
    Im2col v = {p.h, p.w, p.p, p.q, p.k, 1, 1, p.dil_h * (p.r - 1) - p.pad_h, p.dil_w * (p.s - 1) - p.pad_w,
                p.dil_h, p.dil_w};
    return v;
  }
  Im2col v = {p.p, p.q, p.h, p.w, p.c, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dil_h, p.dil_w};
  return v;
}

// First pixel of a box: the TMA start coordinates of grid pixel m (h, w include the padding).
struct BoxStart {
  int n, h, w;
};
TT_CONV_FN BoxStart box_start(const Im2col& v, int m) {
  const int per_image = v.grid_h * v.grid_w;
  const int img = m / per_image, rem = m - img * per_image, y = rem / v.grid_w, x = rem - y * v.grid_w;
  BoxStart b = {img, y * v.stride_h - v.pad_h, x * v.stride_w - v.pad_w};
  return b;
}

// The bounding box corners of the im2col tensor map, {W, H} (the order of the map's dimensions):
// the box is [lower, extent - 1 + upper] in each spatial dimension. r, s: the filter's extent.
TT_CONV_FN void im2col_corners(const Im2col& v, int r, int s, int* lower, int* upper) {
  lower[0] = -v.pad_w;
  lower[1] = -v.pad_h;
  upper[0] = v.pad_w - v.dil_w * (s - 1);
  upper[1] = v.pad_h - v.dil_h * (r - 1);
}

// K step kt of fwd and dgrad: filter tap (r, s) and channel chunk, advanced in the reduction's
// (r, s, c) order by tt_conv::next_tile (mma_conv_index.h walks fwd's (tap, chunk) tiles the same
// way); a split of the reduction starts at tt_conv::taps_of_tile(kb, chunks, S).
typedef tt_conv::Taps KStep;

// dgrad: the tap of wt (r * S + s) that flipped tap (r', s') reads.
TT_CONV_FN int flipped_tap(const TtConvParams& p, int r, int s) { return (p.r - 1 - r) * p.s + (p.s - 1 - s); }

// Scattered dgrad: the first dx pixel (n, s p, s q) of GEMM row m = (n, p, q) of dy's grid.
struct Pixel {
  int n, h, w;
};
TT_CONV_FN Pixel dgrad_block(const TtConvParams& p, int m) {
  const int pq = p.p * p.q;
  const int img = m / pq, rem = m - img * pq, y = rem / p.q, x = rem - y * p.q;
  Pixel px = {img, y * p.stride_h, x * p.stride_w};
  return px;
}

// wgrad: the filter tap and first channel of column n0, a multiple of 64 (C % 64 == 0, so the 64
// columns from n0 on are channels of one tap).
struct TapColumn {
  int r, s, c;
};
TT_CONV_FN TapColumn tap_column(const TtConvParams& p, int n0) {
  const int tap = n0 / p.c;
  TapColumn t = {tap / p.s, tap - (tap / p.s) * p.s, n0 - tap * p.c};
  return t;
}

// dgrad with a stride (PHASE 1): dx splits into u * v phases (a, b) of pixels (a + i u, b + j v),
// and phase (a, b) receives only the taps with (a + pad_h - r) % u == 0 and (b + pad_w - s) % v == 0
// (tt_conv::Phase's masks), from dy pixel (i + (a + pad_h - r) / u, j + (b + pad_w - s) / v): a
// stride-1 gather over dy, whose copies walk the phase's grid of i x j pixels and read at per-tap
// offsets. Every phase gets the grid of phase (0, 0), ceil(H / u) x ceil(W / v), so that one
// im2col map serves all of them (bounding box {lower, grid - P + lower} in each dimension, lower the
// smallest offset of any tap of any phase, at most 0); a pixel of a smaller phase's grid that lies
// past dx is computed and not stored. Dilation 1, and R >= u, S >= v, so that every phase has taps.
struct PhaseGrid {
  int rows, cols;          // pixels of a phase's grid per image
  int lower_h, lower_w;    // the map's lower corner: the smallest dy offset of any tap of any phase
};
TT_CONV_FN int phase_dy_offset(int residue, int pad, int tap, int stride) { return (residue + pad - tap) / stride; }
TT_CONV_FN bool phase_has_tap(int residue, int pad, int tap, int stride) {
  return ((residue + pad - tap) % stride + stride) % stride == 0;
}
TT_CONV_FN PhaseGrid phase_grid(const TtConvParams& p) {
  PhaseGrid g = {(p.h + p.stride_h - 1) / p.stride_h, (p.w + p.stride_w - 1) / p.stride_w, 0, 0};
  for (int a = 0; a < p.stride_h; ++a)
    for (int r = 0; r < p.r; ++r)
      if (phase_has_tap(a, p.pad_h, r, p.stride_h) && phase_dy_offset(a, p.pad_h, r, p.stride_h) < g.lower_h)
        g.lower_h = phase_dy_offset(a, p.pad_h, r, p.stride_h);
  for (int b = 0; b < p.stride_w; ++b)
    for (int s = 0; s < p.s; ++s)
      if (phase_has_tap(b, p.pad_w, s, p.stride_w) && phase_dy_offset(b, p.pad_w, s, p.stride_w) < g.lower_w)
        g.lower_w = phase_dy_offset(b, p.pad_w, s, p.stride_w);
  return g;
}
// The copies' view of a phase's grid (the same for every phase): dy read at stride 1 from
// (i + lower_h, j + lower_w) on.
TT_CONV_FN Im2col im2col_phase(const TtConvParams& p, const PhaseGrid& g) {
  Im2col v = {g.rows, g.cols, p.p, p.q, p.k, 1, 1, -g.lower_h, -g.lower_w, 1, 1};
  return v;
}
// The im2col map's corners, {W, H}: a walk of grid pixels per row and rows per image.
TT_CONV_FN void phase_corners(const TtConvParams& p, const PhaseGrid& g, int* lower, int* upper) {
  lower[0] = g.lower_w;
  lower[1] = g.lower_h;
  upper[0] = g.cols - p.q + g.lower_w;
  upper[1] = g.rows - p.p + g.lower_h;
}
// Phase ph of the walk with its taps (tt_conv::Phase's masks; rows, cols: its grid), heaviest
// first (a persistent grid then ends evenly): rank ph / v of the rows' residues and ph % v of the
// columns'. Residue a of a dimension meets the taps r = (a + pad) mod stride, + stride, ..., so in
// order of (a + pad) mod stride the residues' tap counts do not grow: rank i is residue
// (i - pad) mod stride.
TT_CONV_FN int heavy_residue(int rank, int pad, int stride) { return ((rank - pad) % stride + stride) % stride; }
TT_CONV_FN tt_conv::Phase phase_of(const TtConvParams& p, const PhaseGrid& g, int ph) {
  tt_conv::Phase x = {heavy_residue(ph / p.stride_w, p.pad_h, p.stride_h), heavy_residue(ph % p.stride_w, p.pad_w, p.stride_w),
                      g.rows, g.cols, 0, 0u, 0u, 0, 0};
  x.rmask = tt_conv::phase_taps(p.r, 1, p.stride_h, (x.a + p.pad_h) % p.stride_h, x.nr);
  x.smask = tt_conv::phase_taps(p.s, 1, p.stride_w, (x.b + p.pad_w) % p.stride_w, x.ns);
  return x;
}
// The im2col offsets {w, h} of tap (r, s) in phase x: its dy offset less the map's lower corner.
TT_CONV_FN int phase_off_h(const TtConvParams& p, const PhaseGrid& g, const tt_conv::Phase& x, int r) {
  return phase_dy_offset(x.a, p.pad_h, r, p.stride_h) - g.lower_h;
}
TT_CONV_FN int phase_off_w(const TtConvParams& p, const PhaseGrid& g, const tt_conv::Phase& x, int s) {
  return phase_dy_offset(x.b, p.pad_w, s, p.stride_w) - g.lower_w;
}
// The dx pixel (row of dx, [N*H*W]) of pixel m of phase x's grid, or -1 where it lies past dx.
TT_CONV_FN long long phase_dx_row(const TtConvParams& p, const PhaseGrid& g, const tt_conv::Phase& x, int m) {
  const int per = g.rows * g.cols, img = m / per, rem = m - img * per, i = rem / g.cols, j = rem - i * g.cols;
  const int h = x.a + i * p.stride_h, w = x.b + j * p.stride_w;
  if (img >= p.n || h >= p.h || w >= p.w) return -1;
  return ((long long)img * p.h + h) * p.w + w;
}

// The epilogue's staging (a consumer's tile, EN = 32 fp32 columns a chunk, one row of 32 floats
// per tile row): float c of row r. Each row's 16-byte groups are permuted by (5 r) mod 8, so that
// the accumulators' float2 writes (4 rows of 4 lanes a half-warp) and the 16-byte reads (2 rows of
// 4 lanes a quarter-warp; for fp32 output one row of 8) meet each bank once (a padded pitch of 36
// floats left the writes 2-way conflicted).
TT_CONV_FN int staged_float(int r, int c) { return r * 32 + ((((c >> 2) ^ (5 * r)) & 7) << 2) + (c & 3); }

// SWAP's transposed accumulators (channel rows, pixel columns: lane l of warp w holds channels
// 16 w + l / 4 (+ 8) and, per n8 block j, pixels 8 j + 2 (l % 4) (+ 1)). SWAP 2 stages a chunk as half
// h of a consumer's wm pixels by the 64 channels of one m64: staging rows [0, wm / 2) hold channels
// 0-31 of the half's pixels, rows [wm / 2, wm) channels 32-63, so that all four warps write.
// The staging row of warp w's n8 block j (of the half) for lane l, at column 16 (w % 2) + l / 4:
TT_CONV_FN int swap2_staged_row(int wm, int w, int j, int l) { return (w / 2) * (wm / 2) + j * 8 + 2 * (l & 3); }
// Staging row r of half h: the consumer tile's pixel row and the first of its 32 channels.
struct Swap2Row {
  int pixel, channel;
};
TT_CONV_FN Swap2Row swap2_row(int wm, int h, int r) {
  const int half = r / (wm / 2);
  return {h * (wm / 2) + r - half * (wm / 2), 32 * half};
}

}  // namespace tt_wgconv

#endif
