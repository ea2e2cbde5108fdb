// The single argument of every convolution kernel, on every backend (by value on GPUs, by
// pointer on the host), and the tensor offsets every convolution template and the host
// reference share, so that a layout means the same thing everywhere. No includes: compiled by
// NVRTC, hipRTC and the host compiler alike.
//
// Tensors are named after the forward convolution (solutions/conv_problem.h): x (N, C, H, W),
// wt (K, C/groups, R, S), y (N, K, P, Q). fwd writes y, dgrad writes x (dx from dy and wt),
// wgrad writes wt (dw from x and dy). Element offsets:
//   NHWC layout: x, y ((n*H + h)*W + w)*C + c; wt ((k*R + r)*S + s)*Cg + c   (KRSC)
//   NCHW layout: x, y ((n*C + c)*H + h)*W + w; wt ((k*Cg + c)*R + r)*S + s   (KCRS)
#ifndef TILETUNE_CONV_PARAMS_H
#define TILETUNE_CONV_PARAMS_H

#if defined(TT_CUDA) || defined(TT_HIP)
#define TT_CONV_FN __host__ __device__ inline
#else
#define TT_CONV_FN inline
#endif

struct TtConvParams {
  void* x;
  void* wt;
  void* y;
  int n, c, h, w, k, r, s, p, q;
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
  int gemm_m, gemm_n, gemm_k;  // the implicit GEMM of one group (solutions/conv_problem.h)
  void* workspace;             // as TtGemmParams::workspace
};

// Offset of element (n, c, h, w) of an activation tensor with C channels and H x W pixels.
TT_CONV_FN long long tt_act_offset(bool nchw, int n, int c, int h, int w, int C, int H, int W) {
  return nchw ? (((long long)n * C + c) * H + h) * W + w : (((long long)n * H + h) * W + w) * C + c;
}

// Offset of filter element (k, c, r, s), c within the group's Cg channels.
TT_CONV_FN long long tt_filter_offset(bool nchw, int k, int c, int r, int s, int Cg, int R, int S) {
  return nchw ? (((long long)k * Cg + c) * R + r) * S + s : (((long long)k * R + r) * S + s) * Cg + c;
}

// A reduction index of the implicit GEMM split into (channel, r, s): the channel varies fastest
// in NHWC (contiguous in x and wt), s fastest in NCHW (contiguous in wt).
TT_CONV_FN void tt_split_crs(bool nchw, int i, int Cn, int R, int S, int& c, int& r, int& s) {
  if (nchw) {
    s = i % S;
    r = (i / S) % R;
    c = i / (S * R);
  } else {
    c = i % Cn;
    s = (i / Cn) % S;
    r = i / (Cn * S);
  }
}

#endif
