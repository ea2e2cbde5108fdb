// The vendor's own convolution (cuDNN on CUDA): a candidate of every sweep and the runtime's rung
// for convolutions nobody tuned, like VendorGemm.
#pragma once
#include <memory>
#include <string>

#include "gpu/backend.h"
#include "kernel_templates/conv_params.h"
#include "solutions/conv_problem.h"

namespace tiletune::gpu {

class VendorConv {
 public:
  virtual ~VendorConv() = default;
  virtual std::string name() const = 0;  // e.g. "cuDNN 9.1.0"
  // "" when the library computes `p`, else why not (e.g. mixed input and output types).
  virtual std::string unsupported(const ConvProblem& p) const = 0;
  // Enqueues p's direction on `stream` (nullptr: the default stream) with the arguments' x, wt and
  // y. The first call for a problem first runs the library's own algorithm search on these
  // buffers (cuDNN's find, which times every algorithm) and keeps the fastest; throws Error on
  // failure. Safe to call from several threads at once.
  virtual void run(const ConvProblem& p, const TtConvParams& args, Stream stream = nullptr) = 0;
  // The algorithm run() chose for `p` ("" before its first call).
  virtual std::string algorithm(const ConvProblem& p) const = 0;
};

// nullptr when the device's vendor library is not built in or cannot be loaded; `why_not` (if
// given) then says why.
std::unique_ptr<VendorConv> make_vendor_conv(Device& dev, std::string* why_not = nullptr);

}  // namespace tiletune::gpu
