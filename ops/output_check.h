// The comparison of a kernel's output with its fp64 reference that validation rests on, shared by
// GEMM (GemmInputs) and convolution (ConvInputs) data: on the host over a copy of the output, or on
// a GPU by kernel_templates/check_output.cuh so that only a few kilobytes come back per candidate.
// Both find the same things: the lowest index that is NaN/inf or padding that lost its poison,
// the lowest index between batches that lost it, and the sums behind the relative-norm error.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/backend.h"
#include "solutions/gemm_problem.h"

namespace tiletune::ops {

struct ValidationResult {
  bool ok = false;
  double rel_error = 0;
  std::string reason;  // why it failed
};

// See kernel_templates/check_params.h: `batch` blocks `stride` elements apart, each `cols` columns
// of `ld` elements, the first `rows` of them values, the rest padding; the reference is packed.
// Padding and gaps must hold 0xFF bytes (the poison, and what fill_random leaves there).
struct OutputLayout {
  DataType type = DataType::F32;
  std::int64_t rows = 0, cols = 1, ld = 0, stride = 0, batch = 1;
  std::int64_t elements() const { return (batch - 1) * stride + ld * cols; }
  static OutputLayout flat(DataType type, std::int64_t elements);
  static OutputLayout of_c(const GemmProblem& p);  // C of a canonical problem
};

struct Comparison {
  double err = 0, ref = 0;        // sums of (out - ref)^2 and ref^2 over the values (complete only when nothing is bad)
  std::int64_t first_bad = -1;    // lowest element of the columns that is non-finite or changed padding
  std::int64_t first_gap = -1;    // lowest element between batches that changed
  double rel_error() const;       // sqrt(err / ref)
};

// The verdict once nothing is NaN/inf or out of place: the relative error against `tolerance`.
ValidationResult judge_error(const Comparison& c, double tolerance);

// Element `index` of a device buffer of `type` (the value a failure reason quotes).
double read_element(gpu::Device& dev, const void* buffer, std::int64_t index, DataType type);

// On the host: `out` holds layout.elements() elements, `reference` rows x cols x batch values.
Comparison compare_output(const OutputLayout& layout, const std::uint8_t* out, const double* reference);

// On a GPU: the reference lives in device memory for as long as this object, made once per
// problem; compare() runs the kernel on an output in device memory and waits for it.
class DeviceCheck {
 public:
  // Compiles the kernel for `dev` (CUDA or HIP) and uploads `reference`.
  DeviceCheck(gpu::Device& dev, const OutputLayout& layout, const std::vector<double>& reference);
  // Takes a reference already on the device (rows x cols x batch doubles).
  DeviceCheck(gpu::Device& dev, const OutputLayout& layout, gpu::DeviceBuffer reference);
  Comparison compare(const void* out);

 private:
  gpu::Device& dev_;
  OutputLayout layout_;
  gpu::DeviceBuffer reference_, partials_;
  std::shared_ptr<gpu::Kernel> kernel_;
  unsigned blocks_ = 1;
};

// A DeviceCheck, or none where the device cannot hold or compile one (a large reference on a
// nearly full device): the host check then serves, slower, with the same verdicts, instead of
// every candidate of the problem failing.
template <class Reference>
std::unique_ptr<DeviceCheck> try_device_check(gpu::Device& dev, const OutputLayout& layout, Reference&& reference) {
  try {
    return std::make_unique<DeviceCheck>(dev, layout, std::forward<Reference>(reference));
  } catch (const std::exception&) {
    return nullptr;
  }
}

// A device copy of an output's initial value, written back into the output before each
// validation without crossing the bus again (GEMM with beta != 0).
class DeviceSnapshot {
 public:
  DeviceSnapshot(gpu::Device& dev, const std::vector<std::uint8_t>& bytes);
  void restore(void* dst);

 private:
  gpu::Device& dev_;
  gpu::DeviceBuffer copy_;
  std::shared_ptr<gpu::Kernel> kernel_;
  std::size_t bytes_ = 0;
  int word_bytes_ = 4;
};

// The compile requests of the two kernels, for `dev`'s backend and arch.
gpu::CompileRequest check_output_request(const gpu::DeviceInfo& dev, DataType type);
gpu::CompileRequest copy_words_request(const gpu::DeviceInfo& dev, int word_bytes);

}  // namespace tiletune::ops
