// The fp64 reference convolution, written straight from the definition (one loop nest over
// every output pixel, filter tap and channel pair, for all three directions), so that it shares
// no indexing shortcut with the implicit-GEMM kernels it checks.
#pragma once
#include <vector>

#include "solutions/conv_problem.h"

namespace tiletune::ops {

// The tensors the direction reads, as doubles in the problem's layout (kernel_templates/
// conv_params.h): fwd (x, wt), dgrad (dy, wt), wgrad (x, dy). Returns the tensor it writes
// (y, dx or dw), in the same layout.
std::vector<double> conv_reference(const ConvProblem& p, const std::vector<double>& first,
                                   const std::vector<double>& second);

}  // namespace tiletune::ops
