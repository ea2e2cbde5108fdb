// First header of every CUDA (NVRTC) translation unit built from kernel_templates/.
// NVRTC has no system headers, so this file must stay free of #include directives; everything
// vendor-specific the templates need is spelled here once instead of #ifdef-ing each template.
#ifndef TILETUNE_PRELUDE_CUDA_H
#define TILETUNE_PRELUDE_CUDA_H

#define TT_CUDA 1

#define TT_RESTRICT __restrict__
#define TT_FORCEINLINE __forceinline__
#define TT_DEVICE __device__ __forceinline__
#define TT_UNROLL _Pragma("unroll")

#endif
