// The vendor libraries behind the seam of vendors/vendor.h (cuBLAS, cuDNN, rocBLAS, MIOpen, OpenBLAS), one factory each, in the backend's
// namespace; each returns nullptr (with the reason in `why_not` where it takes one) when its
// library cannot be loaded or was not built in.
#pragma once
#include <memory>
#include <string>

#include "vendors/vendor_conv.h"
#include "vendors/vendor_gemm.h"

namespace tiletune::gpu::host {
// OpenBLAS's sgemm (vendors/host/openblas_gemm.cpp).
std::unique_ptr<VendorGemm> make_openblas_gemm(std::string* why_not = nullptr);
}  // namespace tiletune::gpu::host

namespace tiletune::gpu::cuda {
// cuBLASLt and cuBLAS (vendors/cuda/cublas_gemm.cpp).
std::unique_ptr<VendorGemm> make_cublas_gemm(Device& dev);
// cuDNN's legacy find (vendors/cuda/cudnn_conv.cpp).
std::unique_ptr<VendorConv> make_cudnn_conv(Device& dev, std::string* why_not);
// cuDNN through its graph API (vendors/cuda/cudnn_graph.cpp), the engines PyTorch runs.
std::unique_ptr<VendorConv> make_cudnn_graph_conv(Device& dev, std::string* why_not);
}  // namespace tiletune::gpu::cuda

namespace tiletune::gpu::hip {
// rocBLAS (vendors/hip/rocblas_gemm.cpp).
std::unique_ptr<VendorGemm> make_rocblas_gemm(Device& dev, std::string* why_not);
// MIOpen (vendors/hip/miopen_conv.cpp), and why it cannot be used here ("" when it can).
std::unique_ptr<VendorConv> make_miopen_conv(Device& dev, std::string* why_not);
std::string miopen_missing();
}  // namespace tiletune::gpu::hip
