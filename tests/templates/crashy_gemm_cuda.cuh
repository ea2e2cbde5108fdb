// Test-only CUDA template that misbehaves on purpose, to test crash isolation on a GPU
// (tests/test_isolation.cpp). It is found through TILETUNE_TEMPLATE_PATH, never embedded.
// One thread per element of C (naive: it only has to be right).
//   MODE 0: a correct GEMM
//   MODE 1: stores to an unmapped address: CUDA_ERROR_ILLEGAL_ADDRESS, which leaves the context unusable
//   MODE 2: spins forever (a hang: the sweep's time-out must kill the worker, and the GPU recover)
//   MODE 3: a wrong result (the correct one plus 1)
#include "gemm_params.h"
#include "tt_types.h"

template <typename TA, typename TC, bool TRANSA, bool TRANSB, int MODE>
__global__ void crashy_gemm_cuda(TtGemmParams p) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long j = blockIdx.y, b = blockIdx.z;
  if (MODE == 1) {
    // 16 TiB past C: unmapped. Computed from a kernel argument so that it cannot be folded away.
    *(volatile int*)((char*)p.c + (1ll << 44)) = 1;
  }
  if (MODE == 2) {
    // A loop without side effects may be assumed to end and was dropped by the compiler (the
    // kernel ran normally on the H200); a volatile read of global memory every turn cannot be.
    const volatile int* x = (const volatile int*)p.c;
    while (p.m > 0) (void)*x;
  }
  if (i >= p.m) return;
  const TA* A = (const TA*)p.a + b * p.stride_a;
  const TA* B = (const TA*)p.b + b * p.stride_b;
  TC* C = (TC*)p.c + b * p.stride_c;
  float s = 0.f;
  for (long long l = 0; l < p.k; ++l)
    s += tt_to_float(TRANSA ? A[l + i * p.lda] : A[i + l * p.lda]) * tt_to_float(TRANSB ? B[j + l * p.ldb] : B[l + j * p.ldb]);
  TC& out = C[i + j * p.ldc];
  float v = p.alpha * s;
  if (p.beta != 0.f) v += p.beta * tt_to_float(out);
  if (MODE == 3) v += 1.f;
  out = tt_from_float<TC>(v);
}
