// Inputs for one problem on one device, and their fp64 reference (on the host, or for problems
// over 1e9 flops on a GPU by the naive reference_gemm kernel), made once per problem and shared
// by all its candidates. Inputs are fresh random values in [-1, 1] (never zeros), rounded to the
// input type first so the reference sees exactly what the kernel sees. Several copies of the
// operands are kept so that timing rotates through more than twice the device's cache.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/backend.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/gemm_problem.h"
#include "ops/operation.h"
#include "ops/output_check.h"

namespace tiletune::ops {

class GemmInputs : public Inputs {
 public:
  // `rotate` = false keeps a single copy (validation only).
  // Problems above `device_reference_flops` get their reference from the device (GPUs only).
  GemmInputs(gpu::Device& dev, const GemmProblem& problem, bool rotate = true, std::uint64_t seed = 0,
              double device_reference_flops = 1e9);

  const GemmProblem& problem() const { return problem_; }
  std::size_t sets() const override { return a_.size(); }
  CallParams call_params(std::size_t set) const override { return params(set); }
  // Kernel arguments that use copy `set` of the operands.
  TtGemmParams params(std::size_t set) const;
  // Validation (Inputs::validate) poisons C, or restores its random initial value when beta != 0,
  // and compares the whole of C, padding included, with the reference. On a GPU all of this stays
  // on the device (the reference and C's initial value are kept there); only the sums come back.
  void reset_output() override;
  ValidationResult check_output() override;  // on the device for GPU backends
  ValidationResult check_output_on_host();   // the same check over a host copy of C

  float alpha() const { return alpha_; }
  const std::vector<double>& reference() const { return reference_; }  // m x n per batch, packed
  float beta() const { return beta_; }

 protected:
  gpu::Device& device() override { return dev_; }

 private:
  void products_on_host();
  void products_on_device();
  ValidationResult judge(const Comparison& c);

  gpu::Device& dev_;
  GemmProblem problem_;
  float alpha_ = 1, beta_ = 0;
  std::vector<std::uint8_t> host_a_, host_b_, host_c0_;
  std::vector<double> reference_;  // m x n per batch, column-major, packed
  std::vector<gpu::DeviceBuffer> a_, b_, c_;
  std::unique_ptr<DeviceCheck> check_;  // GPUs: the reference on the device
  std::unique_ptr<DeviceSnapshot> c0_;  // GPUs with beta != 0: C's initial value on the device
};

// The compile request of a naive fp64 reference kernel (kernel_templates/reference_*.cuh) for
// `dev`'s backend and arch: `header` holds the kernel, `name_expression` instantiates it.
gpu::CompileRequest reference_kernel_request(const gpu::DeviceInfo& dev, const std::string& header,
                                             const std::string& name_expression);


}  // namespace tiletune::ops
