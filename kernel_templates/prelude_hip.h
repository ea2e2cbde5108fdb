// First header of every HIP (hipRTC) translation unit built from kernel_templates/.
// hipRTC already provides hip_runtime (threadIdx, __syncthreads, __shared__, ...), so only the
// spelling differences to CUDA live here.
#ifndef TILETUNE_PRELUDE_HIP_H
#define TILETUNE_PRELUDE_HIP_H

#define TT_HIP 1

#define TT_RESTRICT __restrict__
#define TT_FORCEINLINE inline __attribute__((always_inline))
#define TT_DEVICE __device__ inline __attribute__((always_inline))
#define TT_UNROLL _Pragma("unroll")

#endif
