#include "vendors/vendor_gemm.h"

#include "gpu/host/host_backend.h"
#include "vendors/libraries.h"
#ifdef TILETUNE_WITH_CUDA
#include "gpu/cuda/cuda_backend.h"
#endif
#ifdef TILETUNE_WITH_HIP
#include "gpu/hip/hip_backend.h"
#endif

namespace tiletune::gpu {

std::unique_ptr<VendorGemm> make_vendor_gemm(Device& dev, std::string* why_not) {
  std::string why = std::string("no vendor GEMM library for the ") + to_string(dev.info().backend) + " backend";
  std::unique_ptr<VendorGemm> v;
  switch (dev.info().backend) {
    case BackendKind::Host: v = host::make_openblas_gemm(&why); break;
#ifdef TILETUNE_WITH_CUDA
    case BackendKind::Cuda:
      v = cuda::make_cublas_gemm(dev);
      if (!v) why = "cuBLAS (libcublas.so.13) cannot be loaded";
      break;
#endif
#ifdef TILETUNE_WITH_HIP
    case BackendKind::Hip: v = hip::make_rocblas_gemm(dev, &why); break;
#endif
    default: break;
  }
  if (!v && why_not) *why_not = why;
  return v;
}

}  // namespace tiletune::gpu
