// The staged-row geometry of narrow_fwd (narrow_conv.cuh) as plain functions, so that the kernel
// and a host test (tests/solutions/test_narrow_conv_index.cpp) run the same code: the test stages
// rows as the kernel does and checks every element the kernel reads against the convolution's
// definition. A staged input row holds XOFF zeros (pad_w * C rounded up to 8: the row's 16-byte
// copies land aligned), the W * C elements of the row, then zeros up to row_elems; output pixel q
// of filter row r reads its (s, c) column j = s * C + c (unit horizontal dilation) at
// element(q, j) = XOFF - pad_w * C + q * stride_w * C + j, for every q of its m16 tiles (Q rounded
// up to 16) and j < JP (S * C rounded up to 16; the filter's columns past S * C are zero).
#ifndef TILETUNE_NARROW_CONV_INDEX_H
#define TILETUNE_NARROW_CONV_INDEX_H

#include "conv_params.h"

namespace tt_narrow {

struct FwdRow {
  int jp;    // S * C rounded up to 16: k16 steps per filter row
  int xoff;  // zeros ahead of the row
  int elems; // elements of a staged row (a multiple of 8)
  TT_CONV_FN FwdRow(int w, int c, int q, int s, int pad_w, int stride_w) {
    jp = (s * c + 15) / 16 * 16;
    xoff = (pad_w * c + 7) / 8 * 8;
    const int qp = (q + 15) / 16 * 16;
    const int reach = xoff - pad_w * c + (qp - 1) * stride_w * c + jp, row = xoff + w * c;
    elems = ((reach > row ? reach : row) + 7) / 8 * 8;
  }
  // The staged element pixel q reads for column j (the same for every filter row).
  TT_CONV_FN int element(int q, int j, int c, int pad_w, int stride_w) const {
    return xoff - pad_w * c + q * stride_w * c + j;
  }
};

// narrow_col2im's tiles: a tile is BH x BW input-gradient pixels (BH = TP * stride_h, BW = TQ * stride_w) of one
// image, and stages every dy pixel whose taps reach them, MP x MQ of them (out-of-range ones as zeros). Pixel
// (h, w) takes tap (r, s) from dy pixel ((h + pad_h - r) / stride_h, (w + pad_w - s) / stride_w) where those
// divide evenly, and that pixel lies within the MP x MQ block that starts at first(h0, pad_h, R, stride_h),
// first(w0, pad_w, S, stride_w) for the tile at (h0, w0). The block's pixels, m = lp * MQ + lq, are the rows of
// Z = dy_block * filters (m16 tiles of them); Z is kept as [R * S * C columns][ZM] floats (ZM = M16 * 16 + 4:
// the accumulator stores of a warp hit distinct banks).
struct Col2imTile {
  int bh, bw, mp, mq, m16, zm;
  TT_CONV_FN Col2imTile(int tp, int tq, int r, int s, int stride_h, int stride_w) {
    bh = tp * stride_h;
    bw = tq * stride_w;
    mp = (bh + r - 2) / stride_h + 1;
    mq = (bw + s - 2) / stride_w + 1;
    m16 = (mp * mq + 15) / 16;
    zm = m16 * 16 + 4;
  }
  // The first dy row (column) staged for a tile whose first dx row (column) is x0: the smallest p with
  // p * stride + taps - 1 - pad >= x0, ceil((x0 + pad - taps + 1) / stride), negative near the padding.
  TT_CONV_FN static int first(int x0, int pad, int taps, int stride) {
    const int a = x0 + pad - taps + 1 + stride - 1;
    return a >= 0 ? a / stride : -((-a + stride - 1) / stride);
  }
};

// The wgmma narrow templates' staged rows (wgmma_narrow_wgrad.cuh, wgmma_narrow_fwd.cuh). An output row reads R
// input rows, each staged as FwdRow stages a row (xoff zeros, the W * C elements, zeros up to xl, a multiple of 8);
// filter row r's im2col element at (pixel q, column j = s * C + c) is staged element xoff - pad_w * C + q * D + j
// (D = stride_w * C). wgmma's register A holds two elements of one row of A per 32-bit word, so every staged row
// is also written as pairs: pair[i] = (row[i], row[i + pd]), pd = D where a word pairs pixels q and q + 1 of one
// filter column (the weight gradient: pixels are the GEMM's K), pd = 1 where it pairs columns j and j + 1 of one
// pixel (the forward pass: columns are K). `cols`: the columns a row's GEMM reads (S * C, or that rounded up to
// even); word pair_index(q, j) holds both elements, and every index a kernel reads is below pairs().
struct PairRows {
  int rows, qp, d, pd, xoff, xl, x_bytes, pair_bytes;
  // r: the input rows staged a step (an output row's R filter rows, or those of a group of output rows).
  TT_CONV_FN PairRows(int w, int c, int q, int r, int cols, int pad_w, int stride_w, int pair_d) {
    rows = r;
    qp = (q + 15) / 16 * 16;
    d = stride_w * c;
    pd = pair_d;
    xoff = (pad_w * c + 7) / 8 * 8;
    const int reach = xoff + (qp - 1) * d + cols + pd, row = xoff + w * c;
    xl = ((reach > row ? reach : row) + 7) / 8 * 8;
    x_bytes = (r * xl * 2 + 1023) / 1024 * 1024;  // a stage's input rows, 1024-aligned for what follows
    pair_bytes = 2 * r * xl * 4;                   // two buffers of R rows of xl words
  }
  TT_CONV_FN int pair_index(int q, int j, int c, int pad_w) const { return xoff - pad_w * c + q * d + j; }
  // Pairs a row holds (i + pd stays within the staged row for each; even where pd is 1 or even, as build_pairs
  // writes those two at a time).
  TT_CONV_FN int pairs() const { return xl - (pd > 2 ? pd : 2); }
};

// Byte offset of 16-byte chunk `chunk` of 128-byte line `line` in a stage laid out as TMA's 128-byte swizzle (a
// 1024-aligned stage; chunk c of line L at (c ^ L % 8) * 16): how the wgmma kernels written by cp.async and plain
// stores (wgmma_narrow_wgrad, wgmma_narrow_fwd, wgmma_rows1x1) place what wgmma reads through a swizzled descriptor.
TT_CONV_FN unsigned swizzle128(int line, int chunk) { return (unsigned)(line * 128 + ((chunk ^ (line & 7)) << 4)); }

// Where register e (0..3) of lane `lane` in warp `warp` of a warpgroup takes its (row, pixel) of wgmma's m64k16
// A fragment at k16 step kk (PTX ISA: lane 4 g + t holds (g, 2t), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8) as
// (row, k) pairs, k and k + 1 in the low and high halves).
TT_CONV_FN int afrag_row(int warp, int lane, int e) { return 16 * warp + (lane >> 2) + 8 * (e & 1); }
TT_CONV_FN int afrag_k(int lane, int e, int kk) { return 16 * kk + 2 * (lane & 3) + 8 * (e >> 1); }

}  // namespace tt_narrow

#endif  // TILETUNE_NARROW_CONV_INDEX_H
