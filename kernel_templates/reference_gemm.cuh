// The reference the validator trusts on large problems, where an fp64 host reference would take
// minutes: one thread per element of C, products and sums in fp64, written as fp64. Deliberately
// naive so that it is obviously right; it is not a tuning template (no .json beside it).
#include "gemm_params.h"
#include "tt_types.h"

// TAB: one input type, or tt_ab<A's, B's> (tt_types.h).
template <typename TAB, bool TRANSA, bool TRANSB>
__global__ void reference_gemm(TtGemmParams p) {
  typedef typename tt_input_a<TAB>::type TA;
  typedef typename tt_input_b<TAB>::type TB;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long j = (long long)blockIdx.y;
  const long long b = (long long)blockIdx.z;
  if (i >= p.m) return;
  const TA* A = (const TA*)p.a + b * p.stride_a;
  const TB* B = (const TB*)p.b + b * p.stride_b;
  double s = 0;
  for (long long l = 0; l < p.k; ++l) {
    double x = tt_to_float(TRANSA ? A[l + i * p.lda] : A[i + l * p.lda]);
    double y = tt_to_float(TRANSB ? B[j + l * p.ldb] : B[l + j * p.ldb]);
    s += x * y;
  }
  // c holds m x n x batch doubles, packed; alpha (and beta * C0) are applied on the host.
  ((double*)p.c)[(b * p.n + j) * p.m + i] = s;
}
