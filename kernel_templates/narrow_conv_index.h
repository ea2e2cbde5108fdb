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

}  // namespace tt_narrow

#endif  // TILETUNE_NARROW_CONV_INDEX_H
