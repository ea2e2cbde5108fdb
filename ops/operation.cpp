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
  }
  return 1;
}

}  // namespace

double tolerance(const Problem& problem) {
  const GemmProblem p = problem.gemm_view();
  // tf32 rounds both inputs to 10 mantissa bits: a product's relative error is up to 2^-10.
  double inputs = p.compute_tf32 ? 4 * std::ldexp(1.0, -11) : 0;
  return 4 * epsilon(p.c_type) + inputs + 16 * std::ldexp(1.0, -24) * std::sqrt(double(p.k)) + 1e-7;
}

}  // namespace tiletune::ops
