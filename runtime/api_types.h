// The C API's names for tiletune's own problem types, for programs that hold a Problem and
// dispatch it through the runtime as a trainer would (benchmarks, tests). Not part of the
// installed API: a trainer never sees a ConvProblem.
#pragma once
#include "runtime/tiletune.h"
#include "solutions/conv_problem.h"

namespace tiletune {

inline tiletune_datatype_t api_type(DataType t) {
  switch (t) {
    case DataType::F32: return TILETUNE_R_32F;
    case DataType::F16: return TILETUNE_R_16F;
    case DataType::BF16: return TILETUNE_R_16BF;
    case DataType::E4M3: return TILETUNE_R_8F_E4M3;
    case DataType::E5M2: return TILETUNE_R_8F_E5M2;
    case DataType::S8: return TILETUNE_R_8I;
    case DataType::S32: return TILETUNE_R_32I;
  }
  return TILETUNE_R_32F;
}

inline tiletune_conv_desc_t api_desc(const ConvProblem& p) {
  tiletune_conv_desc_t d;
  tiletune_conv_desc_init(&d, p.n, p.c, p.h, p.w, p.k, p.r, p.s);
  d.stride_h = p.stride_h, d.stride_w = p.stride_w, d.pad_h = p.pad_h, d.pad_w = p.pad_w;
  d.dilation_h = p.dil_h, d.dilation_w = p.dil_w, d.groups = p.groups;
  d.layout = p.layout == ConvLayout::NCHW ? TILETUNE_LAYOUT_NCHW : TILETUNE_LAYOUT_NHWC;
  d.in_type = api_type(p.in_type);
  d.out_type = api_type(p.out_type);
  return d;
}

}  // namespace tiletune
