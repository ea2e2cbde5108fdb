// Convolutions that are plain GEMMs, and the GEMM each one is, so that the GEMM templates' kernels
// can compute them (templates whose JSON says "arguments": "conv_as_gemm_tma").
//
// A 1x1 convolution with stride 1, no padding and one group, NHWC activations and KRSC filters,
// reads every pixel once and in place: x is an N*H*W x C row-major matrix, y (dy) an N*P*Q x K
// one (P = H, Q = W) and the filters a K x C one. In the column-major terms of TtGemmParams
// (kernel_templates/gemm_params.h) a row-major R x S matrix is an S x R column-major one, so:
//   fwd   y^T  [K x NHW] = W^T [K x C, stored C x K: TRANSA] * x^T [C x NHW, stored C x NHW]
//   dgrad dx^T [C x NHW] = W^T [C x K, stored C x K]          * dy^T [K x NHW, stored K x NHW]
//   wgrad dW^T [C x K]   = x^T [C x NHW, stored C x NHW]      * dy  [NHW x K, stored K x NHW: TRANSB]
// The output's channels are contiguous, so they are the GEMM's M; the leading dimensions are the
// channel counts. Stride > 1 is left out: the strided pixel gather is no single tiled box of the
// GEMM's N rows (an output row of Q pixels would be a box of its own), and dgrad of stride > 1
// writes zeros between the pixels dy reaches.
#pragma once
#include <optional>
#include <string>

#include "kernel_templates/conv_params.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/conv_problem.h"

namespace tiletune {

// The tensors of a convolution in Pointers order (ops/operation.h): x, w, y.
enum class ConvTensor { X = 0, W = 1, Y = 2 };

struct ConvGemm {
  GemmProblem gemm;  // canonical: packed leading dimensions, batch 1, beta zero
  ConvTensor a = ConvTensor::W, b = ConvTensor::X, c = ConvTensor::Y;  // which tensor each operand is
};

// Why `p` is not a plain GEMM, naming the first rule it breaks; nullopt when it is one.
std::optional<std::string> conv_gemm_refusal(const ConvProblem& p);

// The GEMM of the table above for `p`'s direction. Its sizes are those of the convolution's
// implicit GEMM (solutions/conv_problem.h) with M and N in the output's order, for any problem, so
// that a template's expressions always evaluate; it computes the convolution only where
// conv_gemm_refusal(p) is nullopt.
ConvGemm conv_as_gemm(const ConvProblem& p);

// The parameters of the GEMM `g` on a convolution call's tensors (ops/arguments.h, conv_arguments):
// its operands by role, alpha 1 and beta 0 (convolutions overwrite their output), the workspace.
TtGemmParams conv_gemm_params(const ConvGemm& g, const TtConvParams& a);

}  // namespace tiletune
