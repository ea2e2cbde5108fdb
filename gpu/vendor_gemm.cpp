#include "gpu/vendor_gemm.h"

namespace tiletune::gpu {
#ifdef TILETUNE_WITH_CUDA
namespace cuda {
std::unique_ptr<VendorGemm> make_cublas_gemm();
}
#endif

std::unique_ptr<VendorGemm> make_vendor_gemm(Device& dev) {
#ifdef TILETUNE_WITH_CUDA
  if (dev.info().backend == BackendKind::Cuda) return cuda::make_cublas_gemm();
#endif
  (void)dev;
  return nullptr;
}

}  // namespace tiletune::gpu
