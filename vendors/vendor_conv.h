// The vendor's own convolution (cuDNN on CUDA, MIOpen on HIP). Its default call runs the library's
// own search at a problem's first call (benchmark mode, find: every algorithm timed on the
// caller's buffers, the fastest kept); its choices (cuDNN's engine configurations, MIOpen's found
// algorithms) are timed by a sweep like any candidate.
#pragma once
#include <memory>
#include <string>

#include "kernel_templates/conv_params.h"
#include "solutions/conv_problem.h"
#include "vendors/vendor_library.h"

namespace tiletune::gpu {

using VendorConv = VendorLibrary<ConvProblem, TtConvParams>;

// Why `library`, given one data type for all of a convolution's tensors (as cuDNN and MIOpen are
// here), does not compute `p`; "" when it does.
inline std::string one_type_only(const std::string& library, const ConvProblem& p) {
  if (p.in_type == p.out_type) return "";
  return library + " is given one type for all tensors here; this problem reads " + to_string(p.in_type) +
         " and writes " + to_string(p.out_type);
}

// nullptr when the device's vendor library is not built in or cannot be loaded; `why_not` (if
// given) then says why.
std::unique_ptr<VendorConv> make_vendor_conv(Device& dev, std::string* why_not = nullptr);

}  // namespace tiletune::gpu
