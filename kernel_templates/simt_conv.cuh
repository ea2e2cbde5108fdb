// SIMT implicit-GEMM convolution (no tensor cores) for CUDA and HIP, all three directions (DIR:
// 0 fwd, 1 dgrad, 2 wgrad; solutions/conv_problem.h gives each one's GEMM). A block computes a
// BM x BN tile of one group's GEMM with TM x TN outputs per thread; operands are gathered through
// the convolution's indexing into shared memory BK at a time (padding reads as zero).
// wgrad's reduction (N*P*Q) is long and its output small, so SPLITK blocks share a tile along K:
// each adds its partial sums into a zeroed fp32 workspace, the last to arrive (a per-tile counter)
// writes the output and zeroes its workspace tile and counter again for the next launch.
#ifndef TILETUNE_SIMT_CONV_CUH
#define TILETUNE_SIMT_CONV_CUH

#include "conv_params.h"
#include "tt_types.h"

namespace tt_simt_conv {

struct Px {
  int img, y, x;
};

TT_DEVICE Px decode(int i, int rows, int cols) {
  const int per = rows * cols, img = i / per, rem = i - img * per;
  return {img, rem / cols, rem % cols};
}

// A(m, kk) and B(kk, n) of group g's GEMM, as fp32, 0 where the convolution reads padding.
template <typename TA, int DIR, bool NCHW>
TT_DEVICE float load_a(const TtConvParams& p, int g, int m, int kk) {
  const int Cg = p.c / p.groups, Kg = p.k / p.groups;
  if (DIR == 0) {
    const Px o = decode(m, p.p, p.q);
    int c, r, s;
    tt_split_crs(NCHW, kk, Cg, p.r, p.s, c, r, s);
    const int ih = o.y * p.stride_h - p.pad_h + r * p.dil_h, iw = o.x * p.stride_w - p.pad_w + s * p.dil_w;
    if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) return 0.f;
    return tt_to_float(static_cast<const TA*>(p.x)[tt_act_offset(NCHW, o.img, g * Cg + c, ih, iw, p.c, p.h, p.w)]);
  }
  if (DIR == 1) {
    const Px i = decode(m, p.h, p.w);
    int ko, r, s;
    tt_split_crs(NCHW, kk, Kg, p.r, p.s, ko, r, s);
    const int th = i.y + p.pad_h - r * p.dil_h, tw = i.x + p.pad_w - s * p.dil_w;
    if (th < 0 || tw < 0 || th % p.stride_h || tw % p.stride_w) return 0.f;
    const int op = th / p.stride_h, oq = tw / p.stride_w;
    if (op >= p.p || oq >= p.q) return 0.f;
    return tt_to_float(static_cast<const TA*>(p.y)[tt_act_offset(NCHW, i.img, g * Kg + ko, op, oq, p.k, p.p, p.q)]);
  }
  const Px o = decode(kk, p.p, p.q);
  return tt_to_float(static_cast<const TA*>(p.y)[tt_act_offset(NCHW, o.img, g * Kg + m, o.y, o.x, p.k, p.p, p.q)]);
}

template <typename TA, int DIR, bool NCHW>
TT_DEVICE float load_b(const TtConvParams& p, int g, int kk, int n) {
  const int Cg = p.c / p.groups, Kg = p.k / p.groups;
  int c, r, s;
  if (DIR == 0) {
    tt_split_crs(NCHW, kk, Cg, p.r, p.s, c, r, s);
    return tt_to_float(static_cast<const TA*>(p.wt)[tt_filter_offset(NCHW, g * Kg + n, c, r, s, Cg, p.r, p.s)]);
  }
  if (DIR == 1) {
    int ko;
    tt_split_crs(NCHW, kk, Kg, p.r, p.s, ko, r, s);
    return tt_to_float(static_cast<const TA*>(p.wt)[tt_filter_offset(NCHW, g * Kg + ko, n, r, s, Cg, p.r, p.s)]);
  }
  const Px o = decode(kk, p.p, p.q);
  tt_split_crs(NCHW, n, Cg, p.r, p.s, c, r, s);
  const int ih = o.y * p.stride_h - p.pad_h + r * p.dil_h, iw = o.x * p.stride_w - p.pad_w + s * p.dil_w;
  if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) return 0.f;
  return tt_to_float(static_cast<const TA*>(p.x)[tt_act_offset(NCHW, o.img, g * Cg + c, ih, iw, p.c, p.h, p.w)]);
}

// Where GEMM element (m, n) of group g lives in the written tensor.
template <int DIR, bool NCHW>
TT_DEVICE long long out_offset(const TtConvParams& p, int g, int m, int n) {
  const int Cg = p.c / p.groups, Kg = p.k / p.groups;
  if (DIR == 0) {
    const Px o = decode(m, p.p, p.q);
    return tt_act_offset(NCHW, o.img, g * Kg + n, o.y, o.x, p.k, p.p, p.q);
  }
  if (DIR == 1) {
    const Px i = decode(m, p.h, p.w);
    return tt_act_offset(NCHW, i.img, g * Cg + n, i.y, i.x, p.c, p.h, p.w);
  }
  int c, r, s;
  tt_split_crs(NCHW, n, Cg, p.r, p.s, c, r, s);
  return tt_filter_offset(NCHW, g * Kg + m, c, r, s, Cg, p.r, p.s);
}

}  // namespace tt_simt_conv

template <typename TA, typename TC, int DIR, bool NCHW, int BM, int BN, int BK, int TM, int TN, int SPLITK>
__global__ void __launch_bounds__((BM / TM) * (BN / TN)) simt_conv(const TtConvParams p) {
  using namespace tt_simt_conv;
  constexpr int THREADS = (BM / TM) * (BN / TN);
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  const int g = int(blockIdx.z) / SPLITK, split = int(blockIdx.z) % SPLITK;
  const int m0 = int(blockIdx.x) * BM, n0 = int(blockIdx.y) * BN;
  const int tid = int(threadIdx.x), tm = tid % (BM / TM), tn = tid / (BM / TM);
  // This block's share of K, in whole BK steps.
  const int steps = (p.gemm_k + BK - 1) / BK, per = (steps + SPLITK - 1) / SPLITK;
  const int k_begin = split * per * BK;
  const int k_end = min(p.gemm_k, k_begin + per * BK);

  float acc[TM][TN];
  TT_UNROLL
  for (int i = 0; i < TM; ++i)
    TT_UNROLL
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    for (int e = tid; e < BK * BM; e += THREADS) {
      const int kk = e / BM, i = e % BM;
      As[kk][i] = m0 + i < p.gemm_m && k0 + kk < k_end ? load_a<TA, DIR, NCHW>(p, g, m0 + i, k0 + kk) : 0.f;
    }
    for (int e = tid; e < BK * BN; e += THREADS) {
      const int kk = e / BN, j = e % BN;
      Bs[kk][j] = n0 + j < p.gemm_n && k0 + kk < k_end ? load_b<TA, DIR, NCHW>(p, g, k0 + kk, n0 + j) : 0.f;
    }
    __syncthreads();
    TT_UNROLL
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
      TT_UNROLL
      for (int i = 0; i < TM; ++i) a[i] = As[kk][tm + i * (BM / TM)];
      TT_UNROLL
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tn + j * (BN / TN)];
      TT_UNROLL
      for (int i = 0; i < TM; ++i)
        TT_UNROLL
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }

  TC* out = static_cast<TC*>(DIR == 0 ? p.y : DIR == 1 ? p.x : p.wt);
  if (SPLITK == 1) {
    TT_UNROLL
    for (int i = 0; i < TM; ++i)
      TT_UNROLL
      for (int j = 0; j < TN; ++j) {
        const int m = m0 + tm + i * (BM / TM), n = n0 + tn + j * (BN / TN);
        if (m < p.gemm_m && n < p.gemm_n) out[out_offset<DIR, NCHW>(p, g, m, n)] = tt_from_float<TC>(acc[i][j]);
      }
    return;
  }
  // Split-K: workspace = one fp32 GEMM output per group, then one counter per tile.
  float* partial = static_cast<float*>(p.workspace) + (long long)g * p.gemm_m * p.gemm_n;
  TT_UNROLL
  for (int i = 0; i < TM; ++i)
    TT_UNROLL
    for (int j = 0; j < TN; ++j) {
      const int m = m0 + tm + i * (BM / TM), n = n0 + tn + j * (BN / TN);
      if (m < p.gemm_m && n < p.gemm_n) atomicAdd(&partial[(long long)m * p.gemm_n + n], acc[i][j]);
    }
  __threadfence();
  __syncthreads();
  __shared__ int last;
  unsigned* counters = reinterpret_cast<unsigned*>(static_cast<float*>(p.workspace) +
                                                   (long long)p.groups * p.gemm_m * p.gemm_n);
  unsigned* counter = counters + ((long long)g * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  if (tid == 0) last = atomicAdd(counter, 1u) == unsigned(SPLITK - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int e = tid; e < BM * BN; e += THREADS) {
    const int m = m0 + e / BN, n = n0 + e % BN;
    if (m >= p.gemm_m || n >= p.gemm_n) continue;
    float* v = &partial[(long long)m * p.gemm_n + n];
    out[out_offset<DIR, NCHW>(p, g, m, n)] = tt_from_float<TC>(*(volatile float*)v);
    *v = 0.f;
  }
  if (tid == 0) *counter = 0u;
}

#endif
