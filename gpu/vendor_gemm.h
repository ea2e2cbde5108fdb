// The vendor's own GEMM (cuBLAS on CUDA, OpenBLAS on the host): a candidate of every sweep (timed on
// the tuner's buffers, it can win) and the runtime's rung for problems nobody tuned.
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
  // "" when the library computes `p`, else why not.
  virtual std::string unsupported(const GemmProblem& p) const = 0;
  // Enqueues C = alpha op(A) op(B) + beta C on `stream` (nullptr: the default stream); throws
  // Error on failure. Safe to call from several threads at once.
  virtual void run(const GemmProblem& p, const TtGemmParams& args, Stream stream = nullptr) = 0;
};

// nullptr when the device's vendor library is not built in or cannot be loaded; `why_not` (if
// given) then says why.
std::unique_ptr<VendorGemm> make_vendor_gemm(Device& dev, std::string* why_not = nullptr);

}  // namespace tiletune::gpu
