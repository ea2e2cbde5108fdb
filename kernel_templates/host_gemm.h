// CPU GEMM template for the host backend: compiled by the system C++ compiler into a shared object.
// One call computes one MT0 x MT1 tile of C (the host backend runs the grid of tiles on a thread
// pool), so host kernels share the GPU templates' launch model and the tuner treats them alike.
// The operands are packed per KU-deep slice into contiguous panels so that the TT0 x TT1 register
// tile loops run over unit-stride data the compiler can vectorise, whatever the transposes.
#ifndef TILETUNE_HOST_GEMM_H
#define TILETUNE_HOST_GEMM_H

#include <cstring>

#include "gemm_params.h"
#include "host_types.h"

// One element of C: alpha * acc + beta * C in fp32, or, for the int8 GEMM, in int32 with the
// integer alpha and beta the runtime admits (wrapping as the GPU kernels do). beta == 0: C is never read.
template <typename TC>
inline void tt_host_store(TC& out, float acc, float alpha, float beta) {
  float v = alpha * acc;
  if (beta != 0.f) v += beta * tt_host_to_float(out);
  out = tt_host_from_float<TC>(v);
}
inline void tt_host_store(int& out, int acc, float alpha, float beta) {
  unsigned v = unsigned(int(alpha)) * unsigned(acc);
  if (beta != 0.f) v += unsigned(int(beta)) * unsigned(out);
  out = int(v);
}

// TAB: one input type, or tt_ab<A's, B's> (host_types.h).
template <typename TAB, typename TC, bool TRANSA, bool TRANSB, int MT0, int MT1, int KU, int TT0, int TT1>
void host_gemm(const void* arg, unsigned bx, unsigned by, unsigned bz) {
  static_assert(MT0 % TT0 == 0 && MT1 % TT1 == 0, "thread tile must divide the macro tile");
  typedef typename tt_input_a<TAB>::type TA;
  typedef typename tt_input_b<TAB>::type TB;
  const TtGemmParams& p = *static_cast<const TtGemmParams*>(arg);
  const TA* A = static_cast<const TA*>(p.a) + (long long)bz * p.stride_a;
  const TB* B = static_cast<const TB*>(p.b) + (long long)bz * p.stride_b;
  TC* C = static_cast<TC*>(p.c) + (long long)bz * p.stride_c;
  const int i0 = int(bx) * MT0, j0 = int(by) * MT1;
  const int mt = p.m - i0 < MT0 ? p.m - i0 : MT0;
  const int nt = p.n - j0 < MT1 ? p.n - j0 : MT1;
  if (mt <= 0 || nt <= 0) return;

  // Panels padded with zeros to whole tiles: the inner loops never test edges. Acc: fp32, or
  // int32 for int8 inputs (exact, as the tensor cores' s32 accumulation).
  typedef typename tt_host_acc<TA>::type Acc;
  alignas(64) Acc a_panel[KU][MT0];
  alignas(64) Acc b_panel[KU][MT1];
  alignas(64) Acc acc[MT1][MT0];
  std::memset(acc, 0, sizeof(acc));

  for (int k0 = 0; k0 < p.k; k0 += KU) {
    const int kt = p.k - k0 < KU ? p.k - k0 : KU;
    for (int kk = 0; kk < KU; ++kk)
      for (int i = 0; i < MT0; ++i) {
        Acc v = 0;
        if (kk < kt && i < mt) {
          long long r = i0 + i, c = k0 + kk;
          v = Acc(tt_host_to_float(TRANSA ? A[c + r * p.lda] : A[r + c * p.lda]));
        }
        a_panel[kk][i] = v;
      }
    for (int kk = 0; kk < KU; ++kk)
      for (int j = 0; j < MT1; ++j) {
        Acc v = 0;
        if (kk < kt && j < nt) {
          long long r = k0 + kk, c = j0 + j;
          v = Acc(tt_host_to_float(TRANSB ? B[c + r * p.ldb] : B[r + c * p.ldb]));
        }
        b_panel[kk][j] = v;
      }
    for (int jt = 0; jt < MT1; jt += TT1)
      for (int it = 0; it < MT0; it += TT0) {
        Acc r[TT1][TT0];
        for (int j = 0; j < TT1; ++j)
          for (int i = 0; i < TT0; ++i) r[j][i] = acc[jt + j][it + i];
        for (int kk = 0; kk < KU; ++kk)
          for (int j = 0; j < TT1; ++j) {
            const Acc b = b_panel[kk][jt + j];
            for (int i = 0; i < TT0; ++i) r[j][i] += a_panel[kk][it + i] * b;
          }
        for (int j = 0; j < TT1; ++j)
          for (int i = 0; i < TT0; ++i) acc[jt + j][it + i] = r[j][i];
      }
  }

  for (int j = 0; j < nt; ++j)
    for (int i = 0; i < mt; ++i) {
      tt_host_store(C[(long long)(i0 + i) + (long long)(j0 + j) * p.ldc], acc[j][i], p.alpha, p.beta);
    }
}

#endif
