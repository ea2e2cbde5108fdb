// The vendor's own GEMM (cuBLAS on CUDA), run on the tuner's buffers so that every table can
// quote tiletune's kernels as a ratio to it, measured in the same process on the same data.
#pragma once
#include <memory>
#include <string>

#include "gpu/backend.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/problem.h"

namespace tiletune::gpu {

class VendorGemm {
 public:
  virtual ~VendorGemm() = default;
  virtual std::string name() const = 0;
  virtual bool supports(const GemmProblem& p) const = 0;
  // Enqueues C = alpha op(A) op(B) + beta C on the default stream; throws Error on failure.
  virtual void run(const GemmProblem& p, const TtGemmParams& args) = 0;
};

// nullptr when the device's vendor library is not built in or cannot be loaded.
std::unique_ptr<VendorGemm> make_vendor_gemm(Device& dev);

}  // namespace tiletune::gpu
