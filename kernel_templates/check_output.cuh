// The validator's comparison of a kernel's output with the fp64 reference, run on the device so
// that a few bytes per thread block come back instead of the whole output (64 MB for a 4096^2
// fp32 C). The same test as tuner/output_check.cpp's compare_output on the host: every value must
// be finite, padding and the gaps between batches must still hold the 0xFF poison bytes, and the
// sums of squared differences and squared reference values give the relative-norm error.
// Each block reduces its threads' sums in a fixed order and writes one TtCheckPartial; the host
// adds the blocks in order, so the result does not change from run to run.
// Not a tuning template (no .json beside it).
#include "check_params.h"
#include "tt_types.h"

__device__ inline bool tt_check_poisoned(float x) { return tt_detail::f2u(x) == 0xffffffffu; }
__device__ inline bool tt_check_poisoned(tt_half x) { return x.bits == 0xffffu; }
__device__ inline bool tt_check_poisoned(tt_bf16 x) { return x.bits == 0xffffu; }
__device__ inline bool tt_check_poisoned(int x) { return x == -1; }

// An output element as fp64: int32 exactly (through fp32 it would round above 2^24).
template <typename T> __device__ inline double tt_check_value(T x) { return tt_to_float(x); }
__device__ inline double tt_check_value(int x) { return (double)x; }

template <typename T>
__global__ void __launch_bounds__(TT_CHECK_THREADS) check_output(TtCheckParams p) {
  __shared__ double s_err[TT_CHECK_THREADS], s_ref[TT_CHECK_THREADS];
  __shared__ long long s_bad[TT_CHECK_THREADS], s_gap[TT_CHECK_THREADS];
  const T* out = (const T*)p.out;
  const long long span = p.ld * p.cols;  // one batch without the gap after it
  double err = 0, ref = 0;
  long long bad = TT_CHECK_NONE, gap = TT_CHECK_NONE;  // a thread's indices only grow: its first is its lowest
  for (long long idx = (long long)blockIdx.x * TT_CHECK_THREADS + threadIdx.x; idx < p.elements;
       idx += (long long)gridDim.x * TT_CHECK_THREADS) {
    const T x = out[idx];
    const long long b = idx / p.stride, r = idx - b * p.stride;
    if (r >= span) {
      if (!tt_check_poisoned(x) && gap == TT_CHECK_NONE) gap = idx;
      continue;
    }
    const long long j = r / p.ld, i = r - j * p.ld;
    if (i >= p.rows) {
      if (!tt_check_poisoned(x) && bad == TT_CHECK_NONE) bad = idx;
      continue;
    }
    const double v = tt_check_value(x);
    if (!(v - v == 0.0)) {  // NaN or inf
      if (bad == TT_CHECK_NONE) bad = idx;
      continue;
    }
    const double want = p.ref[(b * p.cols + j) * p.rows + i];
    err += (v - want) * (v - want);
    ref += want * want;
  }
  const int t = threadIdx.x;
  s_err[t] = err, s_ref[t] = ref, s_bad[t] = bad, s_gap[t] = gap;
  __syncthreads();
  for (int half = TT_CHECK_THREADS / 2; half > 0; half /= 2) {
    if (t < half) {
      s_err[t] += s_err[t + half];
      s_ref[t] += s_ref[t + half];
      if (s_bad[t + half] < s_bad[t]) s_bad[t] = s_bad[t + half];
      if (s_gap[t + half] < s_gap[t]) s_gap[t] = s_gap[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    TtCheckPartial& part = ((TtCheckPartial*)p.partials)[blockIdx.x];
    part.err = s_err[0], part.ref = s_ref[0], part.first_bad = s_bad[0], part.first_gap = s_gap[0];
  }
}

// W: unsigned int, or unsigned short for outputs whose size is not a multiple of 4 bytes.
template <typename W>
__global__ void copy_words(TtCopyParams p) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.words; i += (long long)gridDim.x * blockDim.x)
    ((W*)p.dst)[i] = ((const W*)p.src)[i];
}
