// The packing of wgmma_tap_wgrad (wgmma_tap_wgrad.cuh) as plain functions, shared by the kernel,
// the host side that encodes its tensor maps (ops/cuda/tma_arguments.cpp) and a host test
// (tests/solutions/test_wgmma_tap_wgrad_index.cpp) that replays every copy and every tap's read
// against the convolution's definition.
//
// A K step is 64 "lines" of 128 bytes (64 channels of one pixel each). It holds ROWS output rows of
// one image, or one segment of QS output columns of one row when a row is too long, at a pitch of
// PITCH = QS + HALO lines, HALO = (S - 1) / v for stride (u, v): line i * PITCH + j of dy is pixel
// (p0 + i, q0 + j) for j < QS, and the HALO lines after a row's QS are zeros (outside the tensor,
// or never written). Filter row r has min(v, S) copies of x at the same pitch, copy c holding the
// columns of residue c: line i * PITCH + j is pixel (u (p0 + i) + r - pad_h, v (q0 + j) + c - pad_w)
// (the copy walks x with traversal strides u and v). Tap (r, s) then pairs dy line t with line
// t + s / v of copy s % v: a constant shift, so one staged copy serves the taps of its residue (the
// descriptor of B starts s / v lines into it), where an im2col copy per tap would read x S times
// over. At a row's last pixel the shift reads at most HALO lines past it: still this row's packed
// columns (PITCH), so a row never reads the next one's pixels. Dilation 1.
//
// Packing 1 (PACK 1, small images): a K step holds `imgs` whole images (up to 128 lines; `kk16`
// k16 slices cover them), and rows share their halo. With stride 1 and "same" padding (2 pad_w =
// S - 1, so Q = W) the lines a row's last pixels read past it are x's columns W.. (zeros), and
// the next row's first pad_w lines are its columns -pad_w..-1 (zeros too): PITCH = Q + pad_w,
// the shift reading into the next row's left padding, or past the last row into lines no copy
// writes. 7x7 images (ResNet's last stage): two images a step, 98 pixels in 112 lines (87.5%),
// where packing 0 holds one, 49 in 64 (77%).
#ifndef TILETUNE_WGMMA_TAP_WGRAD_INDEX_H
#define TILETUNE_WGMMA_TAP_WGRAD_INDEX_H

#include "conv_params.h"

namespace tt_tapr {

struct Packing {
  int imgs;   // images per K step (packing 1; else 1)
  int kk16;   // k16 slices a K step covers (4: 64 lines; packing 1: its images' lines)
  int qseg;   // column segments per output row
  int qs;     // output columns per segment
  int halo;   // lines read past a row's last pixel: (S - 1) / stride_w
  int copies; // copies of x per filter row: min(stride_w, S), one per column residue
  int pitch;  // lines per packed row: qs + halo (packing 1: q + pad_w)
  int rows;   // output rows per K step (1 when a row is cut into segments)
  int groups; // K steps per image row band: ceil(P / rows) bands per image
  int ksteps; // K steps in all: ceil(N / imgs) * groups * qseg
  int dy_box_w;  // dy's box: whole rows (pitch wide, the tail outside the tensor) or one segment
};

// Whether packing 1 applies: stride 1, "same" padding along W, whole images within 128 lines.
TT_CONV_FN bool images_pack(const TtConvParams& p) {
  return p.stride_h == 1 && p.stride_w == 1 && 2 * p.pad_w == p.s - 1 && p.p * (p.q + p.pad_w) <= 128;
}

// Packing 1 where it applies (the kernel's stages then hold 128 lines), else packing 0.
TT_CONV_FN Packing packing(const TtConvParams& p, int pack = 0) {
  Packing k;
  k.halo = (p.s - 1) / p.stride_w;
  if (pack == 1 && images_pack(p)) {
    k.copies = 1, k.qseg = 1, k.qs = p.q, k.pitch = p.q + p.pad_w, k.rows = p.p;
    k.imgs = 128 / (p.p * k.pitch);
    k.kk16 = (k.imgs * k.rows * k.pitch + 15) / 16;
    k.groups = 1;
    k.ksteps = (p.n + k.imgs - 1) / k.imgs;
    k.dy_box_w = k.pitch;
    return k;
  }
  k.imgs = 1, k.kk16 = 4;
  k.copies = p.s < p.stride_w ? p.s : p.stride_w;
  const int span = 64 - k.halo;  // output columns one K step holds with a row's halo lines
  k.qseg = (p.q + span - 1) / span;
  k.qs = (p.q + k.qseg - 1) / k.qseg;
  k.pitch = k.qs + k.halo;
  k.rows = 1;
  if (k.qseg == 1) {
    k.rows = 64 / k.pitch;
    if (k.rows > p.p) k.rows = p.p;
  }
  k.groups = (p.p + k.rows - 1) / k.rows;
  k.ksteps = p.n * k.groups * k.qseg;
  // One segment per row: a box pitch wide from column 0 leaves zeros (outside the tensor) after
  // the row's Q pixels. Several: a box of the segment's columns alone (the next segment's pixels
  // must not be read twice); the lines after it stay as zeroed at the start.
  k.dy_box_w = k.qseg == 1 ? k.pitch : k.qs;
  return k;
}

// Where K step kt starts: (first) image n, first output row p0, first output column q0.
struct Step {
  int n, p0, q0;
};
TT_CONV_FN Step step(const TtConvParams& p, const Packing& k, int kt) {
  const int seg = kt % k.qseg, band = kt / k.qseg;
  Step s = {band / k.groups * k.imgs, (band % k.groups) * k.rows, seg * k.qs};
  return s;
}

// Where the copy of x for filter row r and column residue c (the tap itself for SHIFT 0) starts,
// {w, h}: the copy then walks x with traversal strides (stride_w, stride_h).
TT_CONV_FN int x_copy_h(const TtConvParams& p, const Step& st, int r) { return p.stride_h * st.p0 + r - p.pad_h; }
TT_CONV_FN int x_copy_w(const TtConvParams& p, const Step& st, int c) { return p.stride_w * st.q0 + c - p.pad_w; }
// Tap s reads the copy of its column residue s % stride_w, s / stride_w lines on.
TT_CONV_FN int tap_copy(int s, int stride_w) { return s % stride_w; }
TT_CONV_FN int tap_shift(int s, int stride_w) { return s / stride_w; }

}  // namespace tt_tapr

#endif
