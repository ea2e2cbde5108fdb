#include "ops/operation.h"

#include <cmath>

#include "common/error.h"

namespace tiletune::ops {

// One per folder of ops/.
const Operation& gemm_operation();
const Operation& conv_operation();

const Operation& operation(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::Gemm: return gemm_operation();
    case ProblemKind::Conv: return conv_operation();
  }
  throw Error("unknown problem kind");
}

void no_tma_arguments(const KernelTemplate& t) {
  throw Error("template " + t.name() + ": arguments '" + t.arguments_name() + "' are not available in this build");
}

namespace {
double epsilon(DataType t) {
  switch (t) {
    case DataType::F32: return std::ldexp(1.0, -24);
    case DataType::F16: return std::ldexp(1.0, -11);
    case DataType::BF16: return std::ldexp(1.0, -8);
    case DataType::E4M3: return std::ldexp(1.0, -4);
    case DataType::E5M2: return std::ldexp(1.0, -3);
    case DataType::S8:
    case DataType::S32: return 0;
  }
  return 1;
}

}  // namespace

double tolerance(const Problem& problem) {
  const GemmProblem p = problem.gemm_view();
  // int8 x int8 -> int32 is exact: products and sums of integers, compared with an exact fp64 reference.
  if (is_integer(p.c_type)) return 0;
  // tf32 rounds both inputs to 10 mantissa bits: a product's relative error is up to 2^-10.
  double inputs = p.compute_tf32 ? 4 * std::ldexp(1.0, -11) : 0;
  // fp8 inputs are exact (the reference reads the same e4m3 / e5m2 values) and so are their products,
  // but Hopper's fp8 wgmma adds them into the fp32 accumulators with fewer mantissa bits (about
  // 14 rather than 24, as measured by the DeepSeek-V3 report): the sums' error grows like
  // 2^-14 sqrt(K) instead of 2^-24 sqrt(K) (the margin, 8 rather than 16, keeps a K = 4096 bound
  // near 3%, well below the error of a skipped k-step).
  const double sums = is_fp8(p.a_type) ? 8 * std::ldexp(1.0, -14) : 16 * std::ldexp(1.0, -24);
  return 4 * epsilon(p.c_type) + inputs + sums * std::sqrt(double(p.k)) + 1e-7;
}

}  // namespace tiletune::ops
