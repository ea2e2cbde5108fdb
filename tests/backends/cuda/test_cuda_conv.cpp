// simt_conv on CUDA: NVRTC compiles variants of all three directions, both layouts and split-K
// without a GPU; on a GPU, a spread of candidates is validated against the fp64 reference. The
// device fp64 reference (reference_conv.cuh) likewise: compiled here, compared with the host
// reference on a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "vendors/cuda/cudnn_api.h"
#include "vendors/vendor_conv.h"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "ops/conv/inputs.h"
#include "ops/elements.h"
#include "ops/output_check.h"
#include "tuner/enumerator.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

std::vector<Problem> conv_problems() {
  std::vector<Problem> out;
  for (int dir = 0; dir < 3; ++dir)
    for (auto layout : {ConvLayout::NHWC, ConvLayout::NCHW}) {
      ConvProblem p;
      p.direction = ConvDirection(dir);
      p.layout = layout;
      p.in_type = dir == 1 ? DataType::F16 : DataType::BF16;
      p.out_type = dir == 2 ? DataType::F32 : p.in_type;
      p.n = 4, p.c = 32, p.h = 17, p.w = 15, p.k = 48, p.r = 3, p.s = 3, p.pad_h = p.pad_w = 1;
      p.stride_h = dir == 1 ? 2 : 1, p.groups = layout == ConvLayout::NCHW ? 2 : 1;
      out.push_back(p);
    }
  return out;
}

std::vector<tuner::Candidate> spread(const std::vector<Problem>& problems, const gpu::DeviceInfo& dev, std::size_t per) {
  return conv_sample("simt_conv", problems, dev, per);
}

TEST(CudaConvCompile, NvrtcCompilesEveryDirectionAndLayoutWithoutAGpu) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> problems = conv_problems();
  auto cands = spread(problems, dev, 2);
  ASSERT_GE(cands.size(), problems.size() * 2);
  bool compiled_split = false;
  for (const auto& c : cands) {
    gpu::CompileResult r = compiler->compile(c.tmpl->compile_request(c.solution, problems[c.problem_index], dev));
    EXPECT_TRUE(r.ok) << c.solution.kernel_name() << " for " << problems[c.problem_index].key() << "\n" << r.log;
    EXPECT_NE(r.code.symbol.find("simt_conv"), std::string::npos) << r.code.symbol;
    compiled_split = compiled_split || c.solution.params.at("SPLITK") > 1;
  }
  EXPECT_TRUE(compiled_split);
}

TEST(CudaConvGpu, CandidatesMatchTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> problems = conv_problems();
  validate_conv_candidates(*dev, spread(problems, dev->info(), 4), problems);
}

TEST(CudaConvCompile, NvrtcCompilesTheDeviceReferenceForEveryDirectionTypeAndLayout) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  for (int dir = 0; dir < 3; ++dir)
    for (auto layout : {ConvLayout::NHWC, ConvLayout::NCHW})
      for (auto type : {DataType::F32, DataType::F16, DataType::BF16}) {
        ConvProblem p;
        p.direction = ConvDirection(dir), p.layout = layout, p.in_type = p.out_type = type;
        gpu::CompileResult r = compiler->compile(ops::reference_conv_request(p, dev));
        EXPECT_TRUE(r.ok) << p.key() << "\n" << r.log;
      }
}

// Both references from the same inputs (same seed): forcing the device one with a threshold of 0
// and the host one with an infinite threshold.
double reference_difference(gpu::Device& dev, const ConvProblem& p, std::uint64_t seed) {
  ops::ConvInputs on_device(dev, p, false, seed, 0.0), on_host(dev, p, false, seed, INFINITY);
  const auto &a = on_device.reference(), &b = on_host.reference();
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i])));
  return worst;
}

TEST(CudaConvGpu, DeviceReferenceMatchesTheHostReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  for (int i = 0; i < 60; ++i) {
    ConvProblem p = random_conv_problem(i % 2 ? ConvLayout::NCHW : ConvLayout::NHWC);
    p.direction = ConvDirection(i % 3);
    p.in_type = p.out_type = i % 5 == 0 ? DataType::F32 : i % 5 == 1 ? DataType::F16 : DataType::BF16;
    EXPECT_LT(reference_difference(*dev, p, std::uint64_t(i) + 1), 1e-12) << p.key();
  }
  // Larger than one block of threads and one wgrad chunk, with real ResNet strides.
  for (int dir = 0; dir < 3; ++dir) {
    ConvProblem p;
    p.direction = ConvDirection(dir), p.in_type = p.out_type = DataType::BF16;
    p.n = 3, p.c = 24, p.h = 29, p.w = 31, p.k = 40, p.r = p.s = 3, p.stride_h = p.stride_w = 2, p.pad_h = p.pad_w = 1;
    EXPECT_LT(reference_difference(*dev, p, 7), 1e-12) << p.key();
  }
}

// The output check on the device against the host check over a copy of the output: the tensor a
// direction writes, made from the reference, then perturbed, with a NaN, and with an inf.
TEST(CudaConvGpu, DeviceOutputCheckMatchesTheHostCheck) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  std::uint64_t seed = 1;
  for (const Problem& problem : conv_problems())
    for (double device_reference_flops : {double(INFINITY), 0.0}) {  // the uploaded reference and the device one
      const ConvProblem& p = problem.conv();
      ops::ConvInputs data(*dev, p, false, seed++, device_reference_flops);
      const TtConvParams args = data.params(0);
      void* out_ptr = p.direction == ConvDirection::Forward        ? args.y
                       : p.direction == ConvDirection::BackwardData ? args.x
                                                                    : args.wt;
      const std::vector<double>& ref = data.reference();
      std::vector<std::uint8_t> good(ref.size() * size_of(p.out_type));
      for (std::size_t i = 0; i < ref.size(); ++i) ops::store_element(good.data(), std::int64_t(i), p.out_type, float(ref[i]));
      auto check = [&](const std::vector<std::uint8_t>& out, const std::string& what) {
        dev->copy_to_device(out_ptr, out.data(), out.size());
        ops::ValidationResult d = data.check_output(), h = data.check_output_on_host();
        expect_same_verdict(d, h, p.key() + " " + what);
        return d;
      };
      EXPECT_TRUE(check(good, "correct").ok) << p.key();
      std::vector<std::uint8_t> out = good;
      for (std::size_t i = 0; i < ref.size(); ++i)
        ops::store_element(out.data(), std::int64_t(i), p.out_type, float(ref[i] * (i % 3 ? 1.05 : 0.9)));
      EXPECT_FALSE(check(out, "perturbed").ok) << p.key();
      out = good;
      ops::store_element(out.data(), std::int64_t(ref.size() - 1), p.out_type, NAN);
      ops::store_element(out.data(), std::int64_t(ref.size() / 3), p.out_type, NAN);  // the lower one is reported
      EXPECT_NE(check(out, "NaN").reason.find(" element " + std::to_string(ref.size() / 3) + " is "), std::string::npos);
      out = good;
      ops::store_element(out.data(), 0, p.out_type, INFINITY);
      EXPECT_NE(check(out, "inf").reason.find("element 0 is inf"), std::string::npos);
      data.reset_output();  // poisoned again: every element is NaN
      EXPECT_NE(data.check_output().reason.find("element 0 is "), std::string::npos);
    }
}

// Issue 6's sizes: each direction of the batch-128 stem (the longest wgrad reduction) and a 3x3
// layer must get its reference in seconds, not the host's minutes.
TEST(CudaConvGpu, DeviceReferenceOfBatch128ResNetLayersIsFast) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  ConvProblem stem, mid;
  stem.n = 128, stem.c = 3, stem.h = stem.w = 224, stem.k = 64, stem.r = stem.s = 7;
  stem.stride_h = stem.stride_w = 2, stem.pad_h = stem.pad_w = 3;
  mid.n = 128, mid.c = mid.k = 256, mid.h = mid.w = 14, mid.r = mid.s = 3, mid.pad_h = mid.pad_w = 1;
  for (ConvProblem p : {stem, mid})
    for (int dir = 0; dir < 3; ++dir) {
      p.direction = ConvDirection(dir), p.in_type = p.out_type = DataType::BF16;
      const auto start = std::chrono::steady_clock::now();
      ops::ConvInputs data(*dev, p, false);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("%s: inputs and device reference in %.2f s\n", p.key().c_str(), s);
      EXPECT_LT(s, 30.0) << p.key();
      double norm = 0;
      for (double v : data.reference()) norm += v * v;
      EXPECT_GT(norm, 0.0) << p.key();
    }
}

// Where cuDNN is installed every symbol the comparison needs must resolve; where it is not, the
// reason must say how to point at it.
TEST(CudnnConv, LoadsEverySymbolOrSaysHowToFindIt) {
  std::string why;
  if (gpu::cuda::cudnn::api(&why)) {
    EXPECT_TRUE(why.empty()) << why;
  } else {
    EXPECT_NE(why.find("TILETUNE_CUDNN_LIB"), std::string::npos) << why;
  }
}

TEST(CudnnConvGpu, AgreesWithTheReferenceInEveryDirectionAndLayout) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  std::string why;
  auto cudnn = gpu::make_vendor_conv(*dev, &why);
  if (!cudnn) GTEST_SKIP() << why;
  for (Problem problem : conv_problems()) {
    ConvProblem p = problem.conv();
    p.out_type = p.in_type;  // cuDNN's legacy API wants one type throughout
    ASSERT_EQ(cudnn->unsupported(p), "");
    ops::ConvInputs data(*dev, p, false);
    ops::ValidationResult v = data.validate([&](const TtConvParams& a) { cudnn->run(p, a); });
    EXPECT_TRUE(v.ok) << cudnn->name() << " " << cudnn->algorithm(p) << " on " << p.key() << ": " << v.reason;
  }
  ConvProblem mixed = conv_problems()[4].conv();  // wgrad bf16 -> f32
  EXPECT_NE(cudnn->unsupported(mixed).find("one type"), std::string::npos);
}

// cuDNN's engine configurations are choices of the "vendor" template (issue 15): each one the
// graph API offers is named by its published fields, rebuilt from them alone, and computes the
// reference's result; a choice cuDNN cannot build throws when strict and runs the default otherwise.
TEST(CudnnConvGpu, EngineConfigurationsAreChoicesThatRebuildAndAgreeWithTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  std::string why;
  auto cudnn = gpu::make_vendor_conv(*dev, &why);
  if (!cudnn) GTEST_SKIP() << why;
  cudnn->set_strict(true);
  std::size_t choices_run = 0;
  for (Problem problem : conv_problems()) {
    ConvProblem p = problem.conv();
    p.out_type = p.in_type;
    ops::ConvInputs data(*dev, p, false);
    const std::vector<gpu::VendorChoice> choices = cudnn->alternatives(p, data.call_params(0).conv, 4);
    for (const gpu::VendorChoice& c : choices) {
      ASSERT_TRUE(c.count("ENGINE")) << p.key();
      ops::ValidationResult v = data.validate([&](const TtConvParams& a) { cudnn->run(p, a, nullptr, c); });
      EXPECT_TRUE(v.ok) << Solution{"vendor", c}.kernel_name() << " on " << p.key() << ": " << v.reason;
      ++choices_run;
    }
    const gpu::VendorChoice bogus{{"ENGINE", 1 << 20}, {"KNOB1", 7}};
    EXPECT_THROW(data.validate([&](const TtConvParams& a) { cudnn->run(p, a, nullptr, bogus); }), Error) << p.key();
    cudnn->set_strict(false);
    ops::ValidationResult fallback = data.validate([&](const TtConvParams& a) { cudnn->run(p, a, nullptr, bogus); });
    EXPECT_TRUE(fallback.ok) << "an unbuildable choice, not strict, runs the default: " << fallback.reason;
    cudnn->set_strict(true);
  }
  // The legacy API (no cuDNN headers at build time) offers none; the graph API offers several.
  if (cudnn->algorithm(conv_problems()[0].conv()).find("engine configuration") != std::string::npos)
    EXPECT_GE(choices_run, conv_problems().size()) << "the graph API offered no engine configurations";
}

}  // namespace
