// im2col index math of the tensor-core convolution (mma_conv.cuh), NHWC / KRSC only, as plain
// functions so that the kernel and a host test (tests/test_cuda_conv.cpp, MmaConvIndex.*) run the
// very same code: the test checks every gathered address against the convolution's definition.
//
// The reduction of fwd and dgrad is walked as (r, s, channel chunk): one K tile holds one filter
// tap and up to BK consecutive channels, so a thread's 16-byte vector stays inside one pixel and
// the address of a GEMM row splits into a per-row part, computed once per thread, and a per-tap
// part, the same for every row of the block:
//   element = base[row.off + tap_delta(r, s) + chunk * BK + c],  read iff tap_ok(row.mask, r, s)
// row.mask holds bit r (r < 16) when tap row r lands inside the tensor, bit 16 + s likewise, and
// is 0 for rows past the GEMM's M. A channel past the reduction's channel count reads as zero too
// (the kernel predicates it), so channel counts need not divide BK.
//
// dgrad with stride u: input row h receives output row oh = (h + pad - r*dil) / u only when the
// division is exact. With h + pad = u*a + b and r*dil = u*t_r + v_r this is oh = a - t_r iff
// b == v_r, so the exactness goes into the mask and the per-tap part stays uniform: -t_r rows.
//
// Offsets are 32-bit (the template's JSON restricts tensors to < 2^31 elements); row.off may point
// outside the tensor (padding) and is only dereferenced with a set mask bit.
#ifndef TILETUNE_MMA_CONV_INDEX_H
#define TILETUNE_MMA_CONV_INDEX_H

#include "conv_params.h"

namespace tt_conv {

struct TapRow {
  int off;
  unsigned mask;
};

TT_CONV_FN bool tap_ok(unsigned mask, int r, int s) { return ((mask >> r) & (mask >> (16 + s)) & 1u) != 0; }

// Row m of the gathered operand A of fwd (m = output pixel, reads x) or dgrad (m = input pixel,
// reads dy); chan = the group's first channel plus this thread's channel within the chunk.
TT_CONV_FN TapRow gather_row(int dir, const TtConvParams& p, int m, int chan) {
  TapRow row = {0, 0u};
  if (m >= p.gemm_m) return row;
  const int rows = dir == 0 ? p.p : p.h, cols = dir == 0 ? p.q : p.w;
  const int img = m / (rows * cols), rem = m - img * rows * cols, y = rem / cols, x = rem - y * cols;
  if (dir == 0) {
    const int h0 = y * p.stride_h - p.pad_h, w0 = x * p.stride_w - p.pad_w;
    for (int r = 0; r < p.r; ++r) {
      const int h = h0 + r * p.dil_h;
      if (h >= 0 && h < p.h) row.mask |= 1u << r;
    }
    for (int s = 0; s < p.s; ++s) {
      const int w = w0 + s * p.dil_w;
      if (w >= 0 && w < p.w) row.mask |= 1u << (16 + s);
    }
    row.off = ((img * p.h + h0) * p.w + w0) * p.c + chan;
  } else {
    const int th = y + p.pad_h, tw = x + p.pad_w;
    const int ah = th / p.stride_h, bh = th - ah * p.stride_h;
    const int aw = tw / p.stride_w, bw = tw - aw * p.stride_w;
    for (int r = 0; r < p.r; ++r) {
      const int t = r * p.dil_h, oh = ah - t / p.stride_h;
      if (t % p.stride_h == bh && oh >= 0 && oh < p.p) row.mask |= 1u << r;
    }
    for (int s = 0; s < p.s; ++s) {
      const int t = s * p.dil_w, ow = aw - t / p.stride_w;
      if (t % p.stride_w == bw && ow >= 0 && ow < p.q) row.mask |= 1u << (16 + s);
    }
    row.off = ((img * p.p + ah) * p.q + aw) * p.k + chan;
  }
  return row;
}

TT_CONV_FN int tap_delta(int dir, const TtConvParams& p, int r, int s) {
  if (dir == 0) return (r * p.dil_h * p.w + s * p.dil_w) * p.c;
  return -((r * p.dil_h / p.stride_h) * p.q + s * p.dil_w / p.stride_w) * p.k;
}

// fwd's B: filter row n (an output channel of group g) is contiguous over (r, s, c).
TT_CONV_FN TapRow filter_row(const TtConvParams& p, int g, int n, int c) {
  const int cg = p.c / p.groups, kg = p.k / p.groups;
  TapRow row = {((g * kg + n) * p.r * p.s) * cg + c, n < kg ? 0xffffffffu : 0u};
  return row;
}
TT_CONV_FN int filter_delta(const TtConvParams& p, int r, int s) { return (r * p.s + s) * (p.c / p.groups); }

// FLAT walk (fwd only): the reduction index k runs over (r, s, c) of one group in the filter's
// own order, so a K tile may span taps. Meant for few channels (the 3-channel stem), where a
// (tap, chunk) tile would be mostly zeros. A thread's column of a K tile is one k, split here once
// per tile; the x element is base[row.off + delta] of a row made with the group's first channel,
// read iff ok && tap_ok(row.mask, r, s). k past the reduction gives ok = false.
struct FlatTap {
  int r, s, delta;
  bool ok;
};
TT_CONV_FN FlatTap flat_tap(const TtConvParams& p, int k) {
  const int cg = p.c / p.groups, sc = p.s * cg;
  FlatTap t;
  t.r = k / sc;
  const int rem = k - t.r * sc;
  t.s = rem / cg;
  t.ok = k < p.r * sc;
  t.delta = tap_delta(0, p, t.r, t.s) + (rem - t.s * cg);
  return t;
}

// The (r, s, chunk) of K tile t when the reduction's channels take `chunks` tiles per tap.
struct Taps {
  int r, s, chunk;
};
TT_CONV_FN Taps taps_of_tile(int t, int chunks, int S) {
  const int rs = t / chunks;
  Taps k = {rs / S, rs - (rs / S) * S, t - rs * chunks};
  return k;
}
TT_CONV_FN void next_tile(Taps& k, int chunks, int S) {
  if (++k.chunk == chunks) {
    k.chunk = 0;
    if (++k.s == S) {
      k.s = 0;
      ++k.r;
    }
  }
}

// PHASE (dgrad with a stride): a dx pixel (y, x) only receives taps (r, s) with
// (y + pad_h) % u == (r * dil_h) % u and likewise for x, so dx splits into u * v phases (y % u,
// x % v) that each reduce over their own taps alone. The GEMM's M walks the pixels phase-major and
// every M tile lies in one phase, so the tap set is uniform per block and whole K tiles of the
// other phases' taps are never loaded. A phase holds the pixels y = a + i * u, x = b + j * v.
struct Phase {
  int a, b;               // dx row and column residue
  int rows, cols;         // the phase's pixels per image: ceil((H - a) / u) x ceil((W - b) / v)
  int tile0;              // its first M tile
  unsigned rmask, smask;  // the filter rows / columns whose taps reach it (bit r, bit s)
  int nr, ns;             // set bits of rmask and smask
};

TT_CONV_FN int phase_pixels(const TtConvParams& p, const Phase& ph) { return p.n * ph.rows * ph.cols; }

// The bits i < n with (i * dil) % stride == res.
TT_CONV_FN unsigned phase_taps(int n, int dil, int stride, int res, int& count) {
  unsigned m = 0u;
  count = 0;
  for (int i = 0; i < n; ++i)
    if (i * dil % stride == res) m |= 1u << i, ++count;
  return m;
}

// The phase of M tile `tile` (bm rows per tile; a phase's tiles are ceil(pixels / bm)): a loop over
// the u * v phases, once per block. A tile past the last phase gets rows = 0 (no pixels).
TT_CONV_FN Phase phase_of_tile(const TtConvParams& p, int tile, int bm) {
  Phase ph = {0, 0, 0, 0, 0, 0u, 0u, 0, 0};
  int t0 = 0;
  for (int a = 0; a < p.stride_h; ++a) {
    const int rows = (p.h - a + p.stride_h - 1) / p.stride_h;
    for (int b = 0; b < p.stride_w; ++b) {
      const int cols = (p.w - b + p.stride_w - 1) / p.stride_w;
      const int tiles = (p.n * rows * cols + bm - 1) / bm;
      if (tile < t0 + tiles) {
        ph.a = a, ph.b = b, ph.rows = rows, ph.cols = cols, ph.tile0 = t0;
        ph.rmask = phase_taps(p.r, p.dil_h, p.stride_h, (a + p.pad_h) % p.stride_h, ph.nr);
        ph.smask = phase_taps(p.s, p.dil_w, p.stride_w, (b + p.pad_w) % p.stride_w, ph.ns);
        return ph;
      }
      t0 += tiles;
    }
  }
  return ph;
}

// The dx pixel (row of dx, [N*H*W]) of the phase's i-th pixel, or p.gemm_m (no row) past its end.
TT_CONV_FN int phase_pixel(const TtConvParams& p, const Phase& ph, int i) {
  if (i >= phase_pixels(p, ph)) return p.gemm_m;
  const int per = ph.rows * ph.cols, img = i / per, rem = i - img * per, y = rem / ph.cols, x = rem - y * ph.cols;
  return (img * p.h + ph.a + y * p.stride_h) * p.w + ph.b + x * p.stride_w;
}

// The index of the j-th set bit of mask (j < its bit count), and the next set bit after i (16: none).
TT_CONV_FN int nth_bit(unsigned mask, int j) {
  int i = 0;
  for (; i < 16; ++i)
    if ((mask >> i) & 1u) {
      if (j == 0) break;
      --j;
    }
  return i;
}
TT_CONV_FN int next_bit(unsigned mask, int i) {
  do ++i;
  while (i < 16 && !((mask >> i) & 1u));
  return i;
}

// The phase's K tiles are (its r, its s, chunk), nr * ns * chunks of them, in that order.
TT_CONV_FN Taps phase_taps_of_tile(int t, int chunks, const Phase& ph) {
  const int rs = t / chunks, jr = ph.ns > 0 ? rs / ph.ns : 0;
  Taps k = {nth_bit(ph.rmask, jr), nth_bit(ph.smask, rs - jr * ph.ns), t - rs * chunks};
  return k;
}
TT_CONV_FN void next_phase_tile(Taps& k, int chunks, const Phase& ph) {
  if (++k.chunk == chunks) {
    k.chunk = 0;
    k.s = next_bit(ph.smask, k.s);
    if (k.s >= 16) {
      k.s = nth_bit(ph.smask, 0);
      k.r = next_bit(ph.rmask, k.r);
    }
  }
}

// wgrad's reduction runs over output pixels: a thread's rows advance by BK pixels per K tile, so
// their (img, y, x) are carried forward instead of divided out again.
struct Pixel {
  int img, y, x;
};
TT_CONV_FN Pixel pixel_of(int i, int P, int Q) {
  const int img = i / (P * Q), rem = i - img * P * Q;
  Pixel px = {img, rem / Q, rem - (rem / Q) * Q};
  return px;
}
// Advances by dy rows and dx columns (dx < Q), i.e. by dy * Q + dx pixels.
TT_CONV_FN void advance(Pixel& px, int dy, int dx, int P, int Q) {
  px.x += dx;
  px.y += dy;
  if (px.x >= Q) {
    px.x -= Q;
    ++px.y;
  }
  while (px.y >= P) {
    px.y -= P;
    ++px.img;
  }
}

// wgrad's B: x at output pixel px under filter tap (r, s), channel chan (group offset included).
TT_CONV_FN bool wgrad_x_offset(const TtConvParams& p, const Pixel& px, int r, int s, int chan, int& off) {
  const int h = px.y * p.stride_h - p.pad_h + r * p.dil_h, w = px.x * p.stride_w - p.pad_w + s * p.dil_w;
  off = ((px.img * p.h + h) * p.w + w) * p.c + chan;
  return px.img < p.n && h >= 0 && h < p.h && w >= 0 && w < p.w;
}

// The gradients' operands that need no gather are plain row-major matrices whose rows are
// reduction indices: dgrad's filters (dir 1: row = output channel of the group, column = input
// channel, at filter tap (r, s)) and wgrad's dy (dir 2: row = output pixel, column = output
// channel). Element (row, col) of group g is base[col_off + row * ld + strided_tap(r, s)], read
// iff row < rows and col < cols; col_off holds the group and the column, computed once per thread.
// (mma_conv.cuh spells the same addressing inline; mfma_conv.cuh uses these.)
struct StridedOperand {
  int col_off, ld, rows, cols;
};
TT_CONV_FN StridedOperand strided_operand(int dir, const TtConvParams& p, int g, int col) {
  const int cg = p.c / p.groups, kg = p.k / p.groups;
  StridedOperand o;
  if (dir == 1) {
    o.ld = p.r * p.s * cg, o.rows = kg, o.cols = cg;
    o.col_off = g * kg * o.ld + col;
  } else {
    o.ld = p.k, o.rows = p.gemm_k, o.cols = kg;
    o.col_off = g * kg + col;
  }
  return o;
}
TT_CONV_FN int strided_tap(int dir, const TtConvParams& p, int r, int s) {
  return dir == 1 ? (r * p.s + s) * (p.c / p.groups) : 0;
}

// Where the GEMM's element (m, n) of group g lands in the tensor written (fwd y, dgrad dx, wgrad
// dw): base + m * ld + n for n < cols. wgrad's block columns are one filter tap (r, s) and a range
// of its channels, so n counts channels within that tap.
struct OutputTile {
  int base, ld, cols;
};
TT_CONV_FN OutputTile output_tile(int dir, const TtConvParams& p, int g, int r, int s) {
  const int cg = p.c / p.groups, kg = p.k / p.groups;
  OutputTile o;
  if (dir == 0) {
    o.ld = p.k, o.cols = kg, o.base = g * kg;
  } else if (dir == 1) {
    o.ld = p.c, o.cols = cg, o.base = g * cg;
  } else {
    o.ld = p.r * p.s * cg, o.cols = cg, o.base = g * kg * o.ld + (r * p.s + s) * cg;
  }
  return o;
}

}  // namespace tt_conv

#endif
