// CPU implicit-GEMM convolution for the host backend, all three directions (DIR: 0 fwd, 1 dgrad,
// 2 wgrad; solutions/conv_problem.h gives each one's GEMM). One call computes one BM x BN tile
// of one group's GEMM (grid z = group), as host_gemm does: the operands are gathered through the
// convolution's indexing into zero-padded panels, so the multiply loops run over unit-stride data
// the compiler vectorises, whatever the layout.
// PRECOMP = 1 decodes the tile's GEMM rows (fwd, dgrad) or columns (wgrad) into tensor
// coordinates once per tile instead of once per element and K step: fewer integer divisions for
// more panel-building memory.
#ifndef TILETUNE_HOST_CONV_H
#define TILETUNE_HOST_CONV_H

#include <cstring>

#include "conv_params.h"
#include "host_types.h"

namespace tt_host_conv {

// A GEMM row (fwd, dgrad) or column (wgrad) as tensor coordinates: image and output pixel (fwd,
// wgrad's K), image and input pixel (dgrad), or channel and filter tap (wgrad's N).
struct Coord {
  int a, b, c;
};

inline Coord decode_pixel(int i, int rows, int cols) {  // i over images x rows x cols
  const int per_image = rows * cols;
  const int img = i / per_image, rem = i - img * per_image;
  return {img, rem / cols, rem % cols};
}

// Filter tap (r, s) from a pixel (ph, pw) and its partner: the input pixel a tap reads (fwd,
// wgrad), or the output pixel that reads a given input pixel (dgrad; -1 when none does).
inline bool input_pixel(const TtConvParams& p, int op, int oq, int r, int s, int& ih, int& iw) {
  ih = op * p.stride_h - p.pad_h + r * p.dil_h;
  iw = oq * p.stride_w - p.pad_w + s * p.dil_w;
  return ih >= 0 && ih < p.h && iw >= 0 && iw < p.w;
}
inline bool output_pixel(const TtConvParams& p, int ih, int iw, int r, int s, int& op, int& oq) {
  const int th = ih + p.pad_h - r * p.dil_h, tw = iw + p.pad_w - s * p.dil_w;
  if (th < 0 || tw < 0 || th % p.stride_h || tw % p.stride_w) return false;
  op = th / p.stride_h;
  oq = tw / p.stride_w;
  return op < p.p && oq < p.q;
}

}  // namespace tt_host_conv

template <typename TA, typename TC, int DIR, bool NCHW, int BM, int BN, int BK, int PRECOMP>
void host_conv(const void* arg, unsigned bx, unsigned by, unsigned bz) {
  using namespace tt_host_conv;
  const TtConvParams& p = *static_cast<const TtConvParams*>(arg);
  const TA* X = static_cast<const TA*>(p.x);
  const TA* Wt = static_cast<const TA*>(p.wt);
  const TA* Y = static_cast<const TA*>(p.y);
  const int g = int(bz), Cg = p.c / p.groups, Kg = p.k / p.groups;
  const int i0 = int(bx) * BM, j0 = int(by) * BN;
  const int mt = p.gemm_m - i0 < BM ? p.gemm_m - i0 : BM;
  const int nt = p.gemm_n - j0 < BN ? p.gemm_n - j0 : BN;
  if (mt <= 0 || nt <= 0) return;

  // The side decoded once per tile with PRECOMP: rows for fwd / dgrad, columns for wgrad.
  Coord pre[DIR == 2 ? BN : BM];
  const int pre_count = DIR == 2 ? nt : mt;
  if (PRECOMP)
    for (int i = 0; i < pre_count; ++i) {
      if (DIR == 0) pre[i] = decode_pixel(i0 + i, p.p, p.q);
      else if (DIR == 1) pre[i] = decode_pixel(i0 + i, p.h, p.w);
      else tt_split_crs(NCHW, j0 + i, Cg, p.r, p.s, pre[i].a, pre[i].b, pre[i].c);
    }
  auto row = [&](int i) {  // fwd / dgrad rows, wgrad columns
    if (PRECOMP) return pre[i];
    Coord c;
    if (DIR == 0) c = decode_pixel(i0 + i, p.p, p.q);
    else if (DIR == 1) c = decode_pixel(i0 + i, p.h, p.w);
    else tt_split_crs(NCHW, j0 + i, Cg, p.r, p.s, c.a, c.b, c.c);
    return c;
  };

  // A(m, kk) and B(kk, n) of the group's GEMM, 0 where the convolution reads padding.
  auto load_a = [&](int i, int kk) -> float {
    if (DIR == 0) {  // x[img, ch, ih, iw]: kk = (ch, r, s)
      const Coord m = row(i);
      int ch, r, s, ih, iw;
      tt_split_crs(NCHW, kk, Cg, p.r, p.s, ch, r, s);
      if (!input_pixel(p, m.b, m.c, r, s, ih, iw)) return 0.f;
      return tt_host_to_float(X[tt_act_offset(NCHW, m.a, g * Cg + ch, ih, iw, p.c, p.h, p.w)]);
    }
    if (DIR == 1) {  // dy[img, kout, op, oq]: kk = (kout, r, s)
      const Coord m = row(i);
      int ko, r, s, op, oq;
      tt_split_crs(NCHW, kk, Kg, p.r, p.s, ko, r, s);
      if (!output_pixel(p, m.b, m.c, r, s, op, oq)) return 0.f;
      return tt_host_to_float(Y[tt_act_offset(NCHW, m.a, g * Kg + ko, op, oq, p.k, p.p, p.q)]);
    }
    const Coord px = decode_pixel(kk, p.p, p.q);  // wgrad: dy[img, kout = m, op, oq]
    return tt_host_to_float(Y[tt_act_offset(NCHW, px.a, g * Kg + i0 + i, px.b, px.c, p.k, p.p, p.q)]);
  };
  auto load_b = [&](int kk, int j) -> float {
    if (DIR == 0) {  // wt[kout = n, ch, r, s]
      int ch, r, s;
      tt_split_crs(NCHW, kk, Cg, p.r, p.s, ch, r, s);
      return tt_host_to_float(Wt[tt_filter_offset(NCHW, g * Kg + j0 + j, ch, r, s, Cg, p.r, p.s)]);
    }
    if (DIR == 1) {  // wt[kout, ch = n, r, s]
      int ko, r, s;
      tt_split_crs(NCHW, kk, Kg, p.r, p.s, ko, r, s);
      return tt_host_to_float(Wt[tt_filter_offset(NCHW, g * Kg + ko, j0 + j, r, s, Cg, p.r, p.s)]);
    }
    const Coord px = decode_pixel(kk, p.p, p.q);  // wgrad: x[img, ch, ih, iw], n = (ch, r, s)
    const Coord crs = row(j);
    int ih, iw;
    if (!input_pixel(p, px.b, px.c, crs.b, crs.c, ih, iw)) return 0.f;
    return tt_host_to_float(X[tt_act_offset(NCHW, px.a, g * Cg + crs.a, ih, iw, p.c, p.h, p.w)]);
  };

  alignas(64) float a_panel[BK][BM];
  alignas(64) float b_panel[BK][BN];
  alignas(64) float acc[BN][BM];
  std::memset(acc, 0, sizeof(acc));
  for (int k0 = 0; k0 < p.gemm_k; k0 += BK) {
    const int kt = p.gemm_k - k0 < BK ? p.gemm_k - k0 : BK;
    for (int kk = 0; kk < BK; ++kk)
      for (int i = 0; i < BM; ++i) a_panel[kk][i] = kk < kt && i < mt ? load_a(i, k0 + kk) : 0.f;
    for (int kk = 0; kk < BK; ++kk)
      for (int j = 0; j < BN; ++j) b_panel[kk][j] = kk < kt && j < nt ? load_b(k0 + kk, j) : 0.f;
    for (int kk = 0; kk < BK; ++kk)
      for (int j = 0; j < BN; ++j) {
        const float b = b_panel[kk][j];
        for (int i = 0; i < BM; ++i) acc[j][i] += a_panel[kk][i] * b;
      }
  }

  for (int j = 0; j < nt; ++j)
    for (int i = 0; i < mt; ++i) {
      const TC v = tt_host_from_float<TC>(acc[j][i]);
      if (DIR == 0) {
        const Coord m = row(i);
        static_cast<TC*>(p.y)[tt_act_offset(NCHW, m.a, g * Kg + j0 + j, m.b, m.c, p.k, p.p, p.q)] = v;
      } else if (DIR == 1) {
        const Coord m = row(i);
        static_cast<TC*>(p.x)[tt_act_offset(NCHW, m.a, g * Cg + j0 + j, m.b, m.c, p.c, p.h, p.w)] = v;
      } else {
        const Coord crs = row(j);
        static_cast<TC*>(p.wt)[tt_filter_offset(NCHW, g * Kg + i0 + i, crs.a, crs.b, crs.c, Cg, p.r, p.s)] = v;
      }
    }
}

#endif
