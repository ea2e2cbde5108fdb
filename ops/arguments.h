// The kernel parameters of a call, and the argument bytes a template's kernels take for them.
#pragma once
#include <cstdint>
#include <vector>

#include "kernel_templates/conv_params.h"
#include "ops/operation.h"

namespace tiletune::ops {

// A convolution call's parameters: sizes from the canonical problem, tensors by role.
TtConvParams conv_arguments(const ConvProblem& p, void* x, void* wt, void* y);

// The bytes of `t`'s kernel argument for `params`: the struct as is, or the TMA descriptors of
// Operation::tma_arguments.
inline std::vector<std::uint8_t> kernel_arguments(const KernelTemplate& t, const CallParams& params,
                                                  const Problem& kernel_problem, const Variables& vars) {
  if (t.arguments() == KernelTemplate::Arguments::Params) {
    const auto* b = static_cast<const std::uint8_t*>(params.data());
    return {b, b + params.size()};
  }
  return operation(params.kind).tma_arguments(t, params, kernel_problem, vars);
}

}  // namespace tiletune::ops
