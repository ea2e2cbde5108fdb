// The single by-value argument of a template's kernels, as its JSON's "arguments" names it.
#pragma once
#include <cstdint>
#include <vector>

#include "kernel_templates/conv_params.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/kernel_template.h"

namespace tiletune::gpu {

// "gemm": the bytes of `p`. "gemm_tma": TtGemmTmaParams with TMA descriptors for p's pointers,
// built by the CUDA backend (Error where CUDA is not built in).
std::vector<std::uint8_t> kernel_arguments(const KernelTemplate& t, const TtGemmParams& p, const GemmProblem& problem,
                                           const Variables& vars);

// A convolution kernel's argument ("conv"): sizes from the canonical problem, tensors by role.
TtConvParams conv_arguments(const ConvProblem& p, void* x, void* wt, void* y);

// The bytes a convolution kernel takes: "conv": `p` as is; "conv_tma": TtConvTmaParams with TMA
// descriptors for p's pointers, built by the CUDA backend (Error where CUDA is not built in).
// `problem` is the canonical problem of `p`, vars the candidate's variables.
std::vector<std::uint8_t> conv_kernel_arguments(const KernelTemplate& t, const TtConvParams& p,
                                                const ConvProblem& problem, const Variables& vars);

}  // namespace tiletune::gpu
