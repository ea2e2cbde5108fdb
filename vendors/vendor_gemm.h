// The vendor's own GEMM (cuBLAS/cuBLASLt on CUDA, rocBLAS on HIP, OpenBLAS on the host).
#pragma once
#include <memory>
#include <string>

#include "kernel_templates/gemm_params.h"
#include "solutions/gemm_problem.h"
#include "vendors/vendor_library.h"

namespace tiletune::gpu {

using VendorGemm = VendorLibrary<GemmProblem, TtGemmParams>;

// nullptr when the device's vendor library is not built in or cannot be loaded; `why_not` (if
// given) then says why.
std::unique_ptr<VendorGemm> make_vendor_gemm(Device& dev, std::string* why_not = nullptr);

}  // namespace tiletune::gpu
