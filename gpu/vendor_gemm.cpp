#include "gpu/vendor_gemm.h"

#ifdef TILETUNE_WITH_CUDA
#include "gpu/cuda/cuda_backend.h"
#endif

namespace tiletune::gpu {

std::unique_ptr<VendorGemm> make_vendor_gemm(Device& dev) {
#ifdef TILETUNE_WITH_CUDA
  if (dev.info().backend == BackendKind::Cuda) return cuda::make_cublas_gemm();
#endif
  (void)dev;
  return nullptr;
}

}  // namespace tiletune::gpu
