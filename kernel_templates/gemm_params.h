// The single argument every GEMM kernel takes, on every backend (passed by value on GPUs, by
// pointer on the host). One struct instead of a list keeps the launch code identical for all
// templates and all vendors. Only fundamental types: this header is compiled by NVRTC, hipRTC
// and the host compiler alike, none of which may have <cstdint> at hand.
//
// BLAS column-major: C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C.
// Element (i, j) of a column-major matrix X with leading dimension ldx is X[i + j * ldx].
// Batch b reads A + b * stride_a (in elements), likewise B and C.
// workspace: device memory of the size the template's "workspace_bytes" expression asks for,
// zero-filled when first allocated; a kernel that uses it must leave it zeroed when it finishes
// (e.g. split-K tile semaphores), so that it is never cleared between launches.
#ifndef TILETUNE_GEMM_PARAMS_H
#define TILETUNE_GEMM_PARAMS_H

struct TtGemmParams {
  const void* a;
  const void* b;
  void* c;
  long long lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  int m, n, k, batch;
  float alpha, beta;
  void* workspace;
};

#endif
