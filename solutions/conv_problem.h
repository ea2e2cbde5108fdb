// A convolution problem and its canonical key, the second problem kind beside GemmProblem. The
// key holds everything that changes which kernel is valid or fastest: direction, types, layout,
// every size, stride, padding, dilation and groups.
//
// Tensors are named after the forward convolution y = conv(x, w) whatever the direction:
//   x: N x C x H x W activations, w: K x C/groups x R x S filters, y: N x K x P x Q outputs,
// stored NHWC / KRSC / NPQK (layout NHWC) or NCHW / KCRS / NKPQ (layout NCHW).
//   fwd   reads x, w and writes y;
//   dgrad (input gradient)  reads dy (in y's place), w and writes dx (in x's place);
//   wgrad (weight gradient) reads x, dy and writes dw (in w's place).
// Outputs are overwritten (no alpha / beta); accumulation is fp32.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "solutions/gemm_problem.h"

namespace tiletune {

enum class ConvDirection { Forward, BackwardData, BackwardFilter };
enum class ConvLayout { NHWC, NCHW };

const char* to_string(ConvDirection d);                   // "fwd", "dgrad", "wgrad"
ConvDirection conv_direction_from_string(const std::string&);
const char* to_string(ConvLayout l);                      // "NHWC", "NCHW"
ConvLayout conv_layout_from_string(const std::string&);

// The GEMM a convolution is computed as, per group (batch = groups):
//   fwd:   M = N*P*Q, N = K/groups, K = C/groups*R*S
//   dgrad: M = N*H*W, N = C/groups, K = K/groups*R*S
//   wgrad: M = K/groups, N = C/groups*R*S, K = N*P*Q
struct ImplicitGemm {
  std::int64_t m = 1, n = 1, k = 1, batch = 1;
};

struct ConvProblem {
  ConvDirection direction = ConvDirection::Forward;
  ConvLayout layout = ConvLayout::NHWC;
  DataType in_type = DataType::F32;   // the two tensors read
  DataType out_type = DataType::F32;  // the tensor written
  std::int64_t n = 1, c = 1, h = 1, w = 1, k = 1, r = 1, s = 1;
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1, groups = 1;

  std::int64_t p() const;  // output height: (h + 2*pad_h - dil_h*(r-1) - 1) / stride_h + 1
  std::int64_t q() const;  // output width
  ConvProblem canonical() const { return *this; }  // every field is explicit already
  // Throws Error naming the offending field (sizes < 1, output size <= 0, C or K not divisible
  // by groups, ...).
  void validate() const;
  // e.g. "conv|fwd|bf16>bf16|acc_f32|NHWC|n128|c64|h56|w56|k64|r3|s3|u1x1|pad1x1|dil1x1|g1"
  std::string key() const;
  double flops() const;  // 2 * N*P*Q * K * C/groups * R*S, the same for all three directions
  ImplicitGemm implicit_gemm() const;

  std::int64_t elements_x() const { return n * c * h * w; }
  std::int64_t elements_w() const { return k * (c / groups) * r * s; }
  std::int64_t elements_y() const { return n * k * p() * q(); }
};

void to_json(nlohmann::json& j, const ConvProblem& p);    // with "kind": "conv"
void from_json(const nlohmann::json& j, ConvProblem& p);  // throws Error on bad fields

}  // namespace tiletune
