// Inputs for one problem on one device, and their fp64 reference, made once per problem and shared
// by all its candidates. Inputs are fresh random values in [-1, 1] (never zeros), rounded to the
// input type first so the reference sees exactly what the kernel sees. Several copies of the
// operands are kept so that timing rotates through more than twice the device's cache.
#pragma once
#include <cstdint>
#include <vector>

#include "gpu/backend.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/problem.h"

namespace tiletune::tuner {

struct ValidationResult {
  bool ok = false;
  double rel_error = 0;
  std::string reason;  // why it failed
};

class ProblemData {
 public:
  // `rotate` = false keeps a single copy (validation only).
  ProblemData(gpu::Device& dev, const GemmProblem& problem, bool rotate = true, std::uint64_t seed = 0);

  const GemmProblem& problem() const { return problem_; }
  std::size_t sets() const { return a_.size(); }
  // Kernel arguments that use copy `set` of the operands.
  TtGemmParams params(std::size_t set) const;
  // Poisons C (or restores its random initial value when beta != 0), runs `launch` on copy 0,
  // and compares the whole of C, padding included, with the reference.
  template <class Launch>
  ValidationResult validate(Launch&& launch) {
    reset_output();
    launch(params(0));
    dev_.synchronize();
    return check_output();
  }
  void reset_output();
  ValidationResult check_output();

  float alpha() const { return alpha_; }
  float beta() const { return beta_; }

 private:
  void compute_reference();

  gpu::Device& dev_;
  GemmProblem problem_;
  float alpha_ = 1, beta_ = 0;
  std::vector<std::uint8_t> host_a_, host_b_, host_c0_;
  std::vector<double> reference_;  // m x n per batch, column-major, packed
  std::vector<gpu::DeviceBuffer> a_, b_, c_;
};

// Relative-norm tolerance for a problem: output rounding of the C type plus fp32 accumulation
// error growing with sqrt(k).
double tolerance(const GemmProblem& p);

}  // namespace tiletune::tuner
