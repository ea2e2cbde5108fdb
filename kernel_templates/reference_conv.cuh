// The convolution reference the validator trusts on large problems (a batch-128 ResNet-50 layer
// is ~1e11 flops: minutes for the fp64 host loop, well under a second here). One thread per
// element of the tensor the direction writes, products and sums in fp64, written as fp64 in the
// problem's layout. It gathers (dgrad finds the output pixels that read an input pixel) where the
// host reference scatters, so the two share only the offset formulas of conv_params.h.
// wgrad's reduction (N*P*Q, up to 1.6e6 terms) is cut into gridDim.y chunks added atomically
// into a zeroed output, since one thread per filter element would leave most of the GPU idle.
// Not a tuning template (no .json beside it).
#include "conv_params.h"
#include "tt_types.h"

// (n, c, h, w) of element i of an activation tensor (C channels, H x W pixels).
__device__ inline void tt_ref_act_coords(bool nchw, long long i, int C, int H, int W, int& n, int& c, int& h, int& w) {
  if (nchw) {
    w = int(i % W), h = int(i / W % H), c = int(i / W / H % C), n = int(i / W / H / C);
  } else {
    c = int(i % C), w = int(i / C % W), h = int(i / C / W % H), n = int(i / C / W / H);
  }
}

template <typename T, int DIR, bool NCHW>
__global__ void reference_conv(TtConvParams p) {
  const int Cg = p.c / p.groups, Kg = p.k / p.groups;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const T* x = (const T*)p.x;
  const T* wt = (const T*)p.wt;
  const T* y = (const T*)p.y;
  if (DIR == 0) {  // y(n, k, op, oq) = sum over c, r, s of x * wt
    if (i >= (long long)p.n * p.k * p.p * p.q) return;
    int n, k, op, oq;
    tt_ref_act_coords(NCHW, i, p.k, p.p, p.q, n, k, op, oq);
    const int g = k / Kg;
    double sum = 0;
    for (int r = 0; r < p.r; ++r)
      for (int s = 0; s < p.s; ++s) {
        const int ih = op * p.stride_h - p.pad_h + r * p.dil_h, iw = oq * p.stride_w - p.pad_w + s * p.dil_w;
        if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
        for (int c = 0; c < Cg; ++c)
          sum += (double)tt_to_float(x[tt_act_offset(NCHW, n, g * Cg + c, ih, iw, p.c, p.h, p.w)]) *
                 (double)tt_to_float(wt[tt_filter_offset(NCHW, k, c, r, s, Cg, p.r, p.s)]);
      }
    ((double*)p.y)[i] = sum;
  } else if (DIR == 1) {  // dx(n, c, ih, iw) = sum over the (k, r, s) whose output pixel reads it
    if (i >= (long long)p.n * p.c * p.h * p.w) return;
    int n, cin, ih, iw;
    tt_ref_act_coords(NCHW, i, p.c, p.h, p.w, n, cin, ih, iw);
    const int g = cin / Cg, c = cin % Cg;
    double sum = 0;
    for (int r = 0; r < p.r; ++r) {
      const int th = ih + p.pad_h - r * p.dil_h;
      if (th < 0 || th % p.stride_h != 0 || th / p.stride_h >= p.p) continue;
      for (int s = 0; s < p.s; ++s) {
        const int tw = iw + p.pad_w - s * p.dil_w;
        if (tw < 0 || tw % p.stride_w != 0 || tw / p.stride_w >= p.q) continue;
        for (int kk = 0; kk < Kg; ++kk) {
          const int k = g * Kg + kk;
          sum += (double)tt_to_float(y[tt_act_offset(NCHW, n, k, th / p.stride_h, tw / p.stride_w, p.k, p.p, p.q)]) *
                 (double)tt_to_float(wt[tt_filter_offset(NCHW, k, c, r, s, Cg, p.r, p.s)]);
        }
      }
    }
    ((double*)p.x)[i] = sum;
  } else {  // dw(k, c, r, s) += sum over this block row's chunk of (n, op, oq) of x * dy
    if (i >= (long long)p.k * Cg * p.r * p.s) return;
    int k, c, r, s;
    if (NCHW) {
      s = int(i % p.s), r = int(i / p.s % p.r), c = int(i / p.s / p.r % Cg), k = int(i / p.s / p.r / Cg);
    } else {
      c = int(i % Cg), s = int(i / Cg % p.s), r = int(i / Cg / p.s % p.r), k = int(i / Cg / p.s / p.r);
    }
    const int g = k / Kg;
    const long long total = (long long)p.n * p.p * p.q;
    const long long chunk = (total + gridDim.y - 1) / gridDim.y;
    const long long begin = blockIdx.y * chunk, end = begin + chunk < total ? begin + chunk : total;
    double sum = 0;
    for (long long j = begin; j < end; ++j) {
      const int oq = int(j % p.q), op = int(j / p.q % p.p), n = int(j / p.q / p.p);
      const int ih = op * p.stride_h - p.pad_h + r * p.dil_h, iw = oq * p.stride_w - p.pad_w + s * p.dil_w;
      if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
      sum += (double)tt_to_float(x[tt_act_offset(NCHW, n, g * Cg + c, ih, iw, p.c, p.h, p.w)]) *
             (double)tt_to_float(y[tt_act_offset(NCHW, n, k, op, oq, p.k, p.p, p.q)]);
    }
    atomicAdd((double*)p.wt + i, sum);
  }
}
