#include "ops/conv/inputs.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "common/error.h"
#include "ops/arguments.h"
#include "solutions/problem.h"
#include "ops/conv/reference.h"
#include "ops/elements.h"

namespace tiletune::ops {

int ConvInputs::output_tensor() const {
  switch (problem_.direction) {
    case ConvDirection::Forward: return kY;
    case ConvDirection::BackwardData: return kX;
    case ConvDirection::BackwardFilter: return kW;
  }
  return kY;
}

ConvInputs::ConvInputs(gpu::Device& dev, const ConvProblem& problem, bool rotate, std::uint64_t seed,
                   double device_reference_flops)
    : dev_(dev), problem_(problem.canonical()) {
  problem_.validate();
  const ConvProblem& p = problem_;
  std::mt19937_64 rng(seed ? seed : std::random_device{}());
  const std::int64_t counts[3] = {p.elements_x(), p.elements_w(), p.elements_y()};
  const int out = output_tensor();
  for (int t = 0; t < 3; ++t) {
    const DataType type = t == out ? p.out_type : p.in_type;
    host_[t].assign(std::size_t(counts[t]) * size_of(type), 0xFF);
    if (t == out) continue;
    random_fill(counts[t], rng(), [&](std::int64_t i, float v) { store_element(host_[t].data(), i, type, v); });
  }

  const std::size_t sets = rotation_sets(dev.info(), host_[0].size() + host_[1].size() + host_[2].size(), rotate);
  std::vector<gpu::DeviceBuffer>* bufs[3] = {&x_, &w_, &y_};
  for (std::size_t s = 0; s < sets; ++s)
    for (int t = 0; t < 3; ++t) {
      bufs[t]->emplace_back(dev, host_[t].size());
      dev.copy_to_device(bufs[t]->back().get(), host_[t].data(), host_[t].size());
    }

  const bool on_gpu = !gpu::traits(dev.info().backend).host_memory;
  const OutputLayout layout = OutputLayout::flat(p.out_type, counts[out]);
  if (on_gpu && p.flops() > device_reference_flops) {
    check_ = try_device_check(dev, layout, reference_on_device());
    return;
  }
  // The inputs as the kernel sees them (rounded to the input type), in fp64.
  std::vector<double> inputs[3];
  for (int t = 0; t < 3; ++t) {
    if (t == out) continue;
    inputs[t].resize(std::size_t(counts[t]));
    for (std::int64_t i = 0; i < counts[t]; ++i) inputs[t][std::size_t(i)] = load_element(host_[t].data(), i, p.in_type);
  }
  switch (p.direction) {
    case ConvDirection::Forward: reference_ = conv_reference(p, inputs[kX], inputs[kW]); break;
    case ConvDirection::BackwardData: reference_ = conv_reference(p, inputs[kY], inputs[kW]); break;
    case ConvDirection::BackwardFilter: reference_ = conv_reference(p, inputs[kX], inputs[kY]); break;
  }
  if (on_gpu) check_ = try_device_check(dev, layout, reference_);  // uploaded once per problem
}

gpu::CompileRequest reference_conv_request(const ConvProblem& p, const gpu::DeviceInfo& dev) {
  return reference_kernel_request(dev, "reference_conv.cuh",
                                  std::string("reference_conv<") + device_type_name(p.in_type) + ", " +
                                      std::to_string(int(p.direction)) + ", " +
                                      (p.layout == ConvLayout::NCHW ? "true" : "false") + ">");
}

gpu::DeviceBuffer ConvInputs::reference_on_device() {
  const ConvProblem& p = problem_;
  gpu::CompileResult r = dev_.compiler().compile(reference_conv_request(p, dev_.info()));
  if (!r.ok) throw Error("compiling the convolution reference kernel failed: " + r.log);
  auto kernel = dev_.load(r.code);
  const int out = output_tensor();
  const std::int64_t elements = out == kX ? p.elements_x() : out == kW ? p.elements_w() : p.elements_y();
  gpu::DeviceBuffer result(dev_, std::size_t(elements) * sizeof(double));
  dev_.fill_bytes(result.get(), 0, result.size());  // wgrad's chunks add into it
  TtConvParams args = params(0);
  (out == kX ? args.x : out == kW ? args.wt : args.y) = result.get();
  gpu::LaunchDims dims;
  dims.block[0] = 256;
  dims.grid[0] = unsigned((elements + 255) / 256);
  if (p.direction == ConvDirection::BackwardFilter) {
    // About 2^22 threads in all, each summing at least a few dozen terms of the N*P*Q reduction.
    const std::int64_t terms = p.n * p.p() * p.q();
    dims.grid[1] = unsigned(std::clamp<std::int64_t>((std::int64_t(1) << 22) / elements, 1,
                                                     std::min<std::int64_t>(65535, std::max<std::int64_t>(1, terms / 32))));
  }
  dev_.launch(*kernel, dims, &args, sizeof args);
  dev_.synchronize();
  reference_.resize(std::size_t(elements));
  dev_.copy_to_host(reference_.data(), result.get(), reference_.size() * sizeof(double));
  return result;
}

TtConvParams ConvInputs::params(std::size_t set) const {
  return conv_arguments(problem_, x_.at(set).get(), w_.at(set).get(), y_.at(set).get());
}

void* ConvInputs::output_buffer() const {
  const int out = output_tensor();
  return (out == kX ? x_ : out == kW ? w_ : y_)[0].get();
}

void ConvInputs::reset_output() { dev_.fill_bytes(output_buffer(), 0xFF, host_[output_tensor()].size()); }

std::vector<std::uint8_t> ConvInputs::read_output() {
  const int out = output_tensor();
  std::vector<std::uint8_t> got(host_[out].size());
  dev_.copy_to_host(got.data(), output_buffer(), got.size());
  return got;
}

ValidationResult ConvInputs::check_output() {
  if (!check_) return check_output_on_host();
  return judge(check_->compare(output_buffer()));
}

ValidationResult ConvInputs::check_output_on_host() {
  const std::vector<std::uint8_t> got = read_output();
  return judge(compare_output(OutputLayout::flat(problem_.out_type, std::int64_t(reference_.size())), got.data(),
                              reference_.data()));
}

ValidationResult ConvInputs::judge(const Comparison& c) {
  static const char* const names[3] = {"x", "wt", "y"};
  const int out = output_tensor();
  if (c.first_bad >= 0) {  // a flat tensor has no padding: the first NaN/inf
    ValidationResult r;
    r.rel_error = INFINITY;
    r.reason = std::string(names[out]) + " element " + std::to_string(c.first_bad) + " is " +
               std::to_string(read_element(dev_, output_buffer(), c.first_bad, problem_.out_type)) +
               " (not written, or NaN/inf)";
    return r;
  }
  return judge_error(c, tolerance(problem_));
}

}  // namespace tiletune::ops
