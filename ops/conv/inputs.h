// Inputs of one convolution on one device and their fp64 reference (on the host, or for problems
// over `device_reference_flops` on a GPU by kernel_templates/reference_conv.cuh), the convolution
// twin of GemmInputs: the two tensors the direction reads are fresh random values in [-1, 1] (never
// zeros) rounded to the input type, the tensor it writes is poisoned (0xFF bytes: NaN in every
// type) before each validation, so an element a kernel forgets to write is caught, including the
// zeros of a strided dgrad that no filter tap reaches.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/backend.h"
#include "kernel_templates/conv_params.h"
#include "solutions/conv_problem.h"
#include "ops/gemm/inputs.h"
#include "ops/operation.h"

namespace tiletune::ops {

class ConvInputs : public Inputs {
 public:
  ConvInputs(gpu::Device& dev, const ConvProblem& problem, bool rotate = true, std::uint64_t seed = 0,
           double device_reference_flops = 1e9);

  const ConvProblem& problem() const { return problem_; }
  std::size_t sets() const override { return x_.size(); }
  CallParams call_params(std::size_t set) const override { return params(set); }
  TtConvParams params(std::size_t set) const;

  void reset_output() override;
  ValidationResult check_output() override;  // on the device for GPU backends
  ValidationResult check_output_on_host();  // the same check over a host copy of the output
  // The reference of the tensor written, in the problem's layout.
  const std::vector<double>& reference() const { return reference_; }
  // The tensor written, as it is now in copy 0 (bytes of the output type).
  std::vector<std::uint8_t> read_output();
  // The inputs as the kernel sees them (host copies, in their types' bytes): x, wt, y.
  const std::vector<std::uint8_t>& host_tensor(int which) const { return host_[which]; }

 protected:
  gpu::Device& device() override { return dev_; }

 private:
  enum { kX = 0, kW = 1, kY = 2 };
  int output_tensor() const;
  void* output_buffer() const;  // copy 0 of the tensor written
  gpu::DeviceBuffer reference_on_device();  // also copied into reference_
  ValidationResult judge(const Comparison& c);

  gpu::Device& dev_;
  ConvProblem problem_;
  std::vector<std::uint8_t> host_[3];
  std::vector<double> reference_;
  std::vector<gpu::DeviceBuffer> x_, w_, y_;
  std::unique_ptr<DeviceCheck> check_;  // GPUs: the reference on the device
};


// The compile request of reference_conv for `p`'s direction, input type and layout.
gpu::CompileRequest reference_conv_request(const ConvProblem& p, const gpu::DeviceInfo& dev);

}  // namespace tiletune::ops
