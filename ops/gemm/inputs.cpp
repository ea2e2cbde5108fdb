#include "ops/gemm/inputs.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "common/error.h"
#include "kernel_templates/host_types.h"
#include "solutions/kernel_template.h"
#include "ops/elements.h"

namespace tiletune::ops {
namespace {

// Fills the elements of a strided-batched column-major matrix with random values; the padding
// between rows and ld keeps the 0xFF poison so that a kernel reading it would be caught by NaNs.
void fill_random(std::vector<std::uint8_t>& buf, std::int64_t elements, std::int64_t rows, std::int64_t cols,
                 std::int64_t ld, std::int64_t stride, std::int64_t batch, DataType t, std::uint64_t seed) {
  buf.assign(std::size_t(elements) * size_of(t), 0xFF);
  random_fill(rows * cols * batch, seed, [&](std::int64_t idx, float v) {
    const std::int64_t i = idx % rows, j = idx / rows % cols, b = idx / (rows * cols);
    store_element(buf.data(), b * stride + j * ld + i, t, random_element(v, t));
  });
}

}  // namespace


GemmInputs::GemmInputs(gpu::Device& dev, const GemmProblem& problem, bool rotate, std::uint64_t seed,
                         double device_reference_flops)
    : dev_(dev), problem_(problem.canonical()) {
  problem_.validate();
  std::mt19937_64 rng(seed ? seed : std::random_device{}());
  const GemmProblem& p = problem_;
  fill_random(host_a_, p.elements_a(), p.rows_a(), p.cols_a(), p.lda, p.stride_a, p.batch, p.a_type, rng());
  fill_random(host_b_, p.elements_b(), p.rows_b(), p.cols_b(), p.ldb, p.stride_b, p.batch, p.type_b(), rng());
  fill_random(host_c0_, p.elements_c(), p.m, p.n, p.ldc, p.stride_c, p.batch, p.c_type, rng());
  std::uniform_real_distribution<float> dist(0.5f, 1.5f);
  alpha_ = dist(rng);
  beta_ = p.beta_zero ? 0.f : dist(rng);
  if (is_integer(p.c_type)) {  // integer GEMMs scale by integers (runtime/tiletune.h)
    alpha_ = float(1 + rng() % 3);
    const float betas[] = {-2.f, -1.f, 1.f, 2.f};
    beta_ = p.beta_zero ? 0.f : betas[rng() % 4];
  }

  std::size_t set_bytes = host_a_.size() + host_b_.size() + host_c0_.size();
  const std::size_t sets = rotation_sets(dev.info(), set_bytes, rotate);
  for (std::size_t s = 0; s < sets; ++s) {
    a_.emplace_back(dev, host_a_.size());
    b_.emplace_back(dev, host_b_.size());
    c_.emplace_back(dev, host_c0_.size());
    dev.copy_to_device(a_.back().get(), host_a_.data(), host_a_.size());
    dev.copy_to_device(b_.back().get(), host_b_.data(), host_b_.size());
    dev.copy_to_device(c_.back().get(), host_c0_.data(), host_c0_.size());
  }

  // op(A) op(B) in fp64; on a GPU, large problems use the naive device reference kernel.
  const bool on_device = !gpu::traits(dev.info().backend).host_memory && p.flops() > device_reference_flops && p.n <= 65535;
  if (on_device) products_on_device();
  else products_on_host();
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t i = 0; i < p.m; ++i) {
        double& v = reference_[std::size_t(b * p.m * p.n + j * p.m + i)];
        v *= double(alpha_);
        if (!p.beta_zero) v += double(beta_) * load_element(host_c0_.data(), b * p.stride_c + i + j * p.ldc, p.c_type);
      }
  // On a GPU, validation compares and restores C on the device: uploads once per problem here
  // instead of moving C across the bus twice per candidate.
  if (!gpu::traits(dev.info().backend).host_memory) {
    check_ = try_device_check(dev, OutputLayout::of_c(p), reference_);
    if (!p.beta_zero) {
      try {
        c0_ = std::make_unique<DeviceSnapshot>(dev, host_c0_);
      } catch (const std::exception&) {
        c0_.reset();  // reset_output uploads C's initial value instead
      }
    }
  }
}

void GemmInputs::products_on_device() {
  const GemmProblem& p = problem_;
  const gpu::CompileRequest req = reference_kernel_request(
      dev_.info(), "reference_gemm.cuh",
      std::string("reference_gemm<") + input_type_name(p) + ", " + (p.trans_a ? "true" : "false") + ", " +
          (p.trans_b ? "true" : "false") + ">");
  gpu::CompileResult r = dev_.compiler().compile(req);
  if (!r.ok) throw Error("compiling the reference kernel failed: " + r.log);
  auto kernel = dev_.load(r.code);
  reference_.assign(std::size_t(p.m * p.n * p.batch), 0.0);
  gpu::DeviceBuffer out(dev_, reference_.size() * sizeof(double));
  TtGemmParams args = params(0);
  args.c = out.get();
  gpu::LaunchDims dims;
  dims.block[0] = 256;
  dims.grid[0] = unsigned((p.m + 255) / 256);
  dims.grid[1] = unsigned(p.n);
  dims.grid[2] = unsigned(p.batch);
  dev_.launch(*kernel, dims, &args, sizeof args);
  dev_.synchronize();
  dev_.copy_to_host(reference_.data(), out.get(), reference_.size() * sizeof(double));
}

gpu::CompileRequest reference_kernel_request(const gpu::DeviceInfo& dev, const std::string& header,
                                             const std::string& name_expression) {
  gpu::CompileRequest req;
  req.headers = embedded_kernel_sources();
  req.source = "#include \"" + std::string(gpu::traits(dev.backend).prelude) + "\"\n#include \"" + header + "\"\n";
  req.name_expression = name_expression;
  req.arch = dev.arch;
  return req;
}

TtGemmParams GemmInputs::params(std::size_t set) const {
  const GemmProblem& p = problem_;
  TtGemmParams k{};
  k.a = a_.at(set).get();
  k.b = b_.at(set).get();
  k.c = c_.at(set).get();
  k.lda = p.lda;
  k.ldb = p.ldb;
  k.ldc = p.ldc;
  k.stride_a = p.stride_a;
  k.stride_b = p.stride_b;
  k.stride_c = p.stride_c;
  k.m = int(p.m);
  k.n = int(p.n);
  k.k = int(p.k);
  k.batch = int(p.batch);
  k.alpha = alpha_;
  k.beta = beta_;
  return k;
}

void GemmInputs::products_on_host() {
  const GemmProblem& p = problem_;
  // op(A) as rows of k and op(B) as columns of k, both contiguous in k, for a fast dot product.
  reference_.assign(std::size_t(p.m * p.n * p.batch), 0.0);
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (std::int64_t b = 0; b < p.batch; ++b) {
    std::vector<double> at(std::size_t(p.m * p.k)), bt(std::size_t(p.n * p.k));
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t l = 0; l < p.k; ++l)
        at[i * p.k + l] = load_element(host_a_.data(), b * p.stride_a + (p.trans_a ? l + i * p.lda : i + l * p.lda), p.a_type);
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t l = 0; l < p.k; ++l)
        bt[j * p.k + l] = load_element(host_b_.data(), b * p.stride_b + (p.trans_b ? j + l * p.ldb : l + j * p.ldb), p.type_b());
    auto work = [&](unsigned t) {
      for (std::int64_t j = t; j < p.n; j += threads)
        for (std::int64_t i = 0; i < p.m; ++i) {
          const double* x = &at[i * p.k];
          const double* y = &bt[j * p.k];
          double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          std::int64_t l = 0;
          for (; l + 4 <= p.k; l += 4) {
            s0 += x[l] * y[l];
            s1 += x[l + 1] * y[l + 1];
            s2 += x[l + 2] * y[l + 2];
            s3 += x[l + 3] * y[l + 3];
          }
          for (; l < p.k; ++l) s0 += x[l] * y[l];
          reference_[std::size_t(b * p.m * p.n + j * p.m + i)] = s0 + s1 + s2 + s3;
        }
    };
    run_on_threads(threads, work);
  }
}

void GemmInputs::reset_output() {
  if (problem_.beta_zero) dev_.fill_bytes(c_[0].get(), 0xFF, host_c0_.size());  // NaN in every type
  else if (c0_) c0_->restore(c_[0].get());
  else dev_.copy_to_device(c_[0].get(), host_c0_.data(), host_c0_.size());
}

ValidationResult GemmInputs::check_output() {
  if (!check_) return check_output_on_host();
  return judge(check_->compare(c_[0].get()));
}

ValidationResult GemmInputs::check_output_on_host() {
  std::vector<std::uint8_t> out(host_c0_.size());
  dev_.copy_to_host(out.data(), c_[0].get(), out.size());
  return judge(compare_output(OutputLayout::of_c(problem_), out.data(), reference_.data()));
}

ValidationResult GemmInputs::judge(const Comparison& c) {
  const GemmProblem& p = problem_;
  ValidationResult r;
  if (c.first_bad >= 0) {  // the lowest column with a bad element, and its first bad row
    const OutputLayout l = OutputLayout::of_c(p);
    const std::int64_t b = c.first_bad / l.stride, i = c.first_bad % l.stride % p.ldc, j = c.first_bad % l.stride / p.ldc;
    if (i >= p.m) {
      r.reason = "wrote outside C: row " + std::to_string(i) + " >= m in column " + std::to_string(j);
    } else {
      r.reason = "C(" + std::to_string(i) + "," + std::to_string(j) + ", batch " + std::to_string(b) + ") is " +
                 std::to_string(read_element(dev_, c_[0].get(), c.first_bad, p.c_type)) + " (not written, or NaN/inf)";
    }
    r.rel_error = INFINITY;
    return r;
  }
  if (c.first_gap >= 0) {
    r.reason = "wrote between batches of C at element " + std::to_string(c.first_gap);
    return r;
  }
  return judge_error(c, tolerance(p));
}

}  // namespace tiletune::ops
