// tap_wgrad (the weight gradient of 3x3 stride-1 convolutions, each staged input row serving all
// three taps of a filter row): which problems its constraints admit (host), an NVRTC compile of a
// sample for sm_90a without spills (no GPU needed), and on a GPU a sample validated against the
// fp64 reference twice per candidate (the split-K reduction must leave its workspace zeroed).
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "solutions/model.h"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

ConvProblem tap_wgrad3x3(DataType in, DataType out, int n, int c, int h, int w, int k) {
  ConvProblem p;
  p.direction = ConvDirection::BackwardFilter, p.in_type = in, p.out_type = out;
  p.n = n, p.c = c, p.h = h, p.w = w, p.k = k, p.r = p.s = 3;
  p.stride_h = p.stride_w = 1, p.pad_h = p.pad_w = 1, p.dil_h = p.dil_w = 1, p.groups = 1;
  return p;
}

// ResNet's widths at small sizes (56 pixels: one row per 64 positions; 14; 7: rows packed two to
// an m16 step), a non-square image whose row is not a multiple of 16, one-pixel-high images (both
// halo rows padding), several channel tiles, both input types and every output type.
std::vector<Problem> tap_problems() {
  return {Problem(tap_wgrad3x3(DataType::BF16, DataType::BF16, 4, 64, 14, 14, 64)),
          Problem(tap_wgrad3x3(DataType::F16, DataType::F32, 6, 32, 7, 7, 64)),
          Problem(tap_wgrad3x3(DataType::BF16, DataType::F32, 2, 32, 9, 20, 32)),
          Problem(tap_wgrad3x3(DataType::F16, DataType::F16, 2, 64, 5, 56, 128)),
          Problem(tap_wgrad3x3(DataType::BF16, DataType::BF16, 16, 32, 1, 3, 32))};
}

std::size_t tap_candidates(const ConvProblem& p) {
  return tuner::enumerate({find_template("tap_wgrad")}, std::vector<Problem>{Problem(p)},
                          fake_device(gpu::BackendKind::Cuda))
      .candidates.size();
}

TEST(TapWgradSpace, TakesThe3x3Stride1WeightGradientsOnly) {
  for (int i = 0; i < 4; ++i) {  // ResNet-50's four 3x3 layers at batch 128
    const int c = 64 << i, hw = 56 >> i;
    EXPECT_GT(tap_candidates(tap_wgrad3x3(DataType::BF16, DataType::BF16, 128, c, hw, hw, c)), 0u) << c;
  }
  for (const Problem& p : tap_problems()) EXPECT_GT(tap_candidates(p.conv()), 0u) << p.key();
  const ConvProblem base = tap_wgrad3x3(DataType::BF16, DataType::BF16, 128, 64, 56, 56, 64);
  ConvProblem other = base;
  other.direction = ConvDirection::Forward;
  EXPECT_EQ(tap_candidates(other), 0u);
  other.direction = ConvDirection::BackwardData;
  EXPECT_EQ(tap_candidates(other), 0u);
  other = base, other.stride_h = other.stride_w = 2;
  EXPECT_EQ(tap_candidates(other), 0u);  // the shift per tap is one slot only at stride 1
  other = base, other.pad_h = other.pad_w = 0;
  EXPECT_EQ(tap_candidates(other), 0u);
  other = base, other.r = other.s = 5, other.pad_h = other.pad_w = 2;
  EXPECT_EQ(tap_candidates(other), 0u);
  other = base, other.dil_h = other.dil_w = 2, other.pad_h = other.pad_w = 2;
  EXPECT_EQ(tap_candidates(other), 0u);
  other = base, other.groups = 2;
  EXPECT_EQ(tap_candidates(other), 0u);
  other = base, other.c = 24;
  EXPECT_EQ(tap_candidates(other), 0u);  // channels in blocks of 32
  other = base, other.layout = ConvLayout::NCHW;
  EXPECT_EQ(tap_candidates(other), 0u);
  other = base, other.in_type = other.out_type = DataType::F32;
  EXPECT_EQ(tap_candidates(other), 0u);
}

// The model's expressions evaluate on ResNet's layers, and its price of the packing's zero positions
// makes two 7-pixel rows per m16 step cheaper than one.
TEST(TapWgradSpace, ModelPricesThePacking) {
  const KernelTemplate& t = find_template("tap_wgrad");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  for (int i = 0; i < 4; ++i) {
    const Problem p(tap_wgrad3x3(DataType::BF16, DataType::BF16, 128, 64 << i, 56 >> i, 56 >> i, 64 << i));
    const ModelEstimate e = model_estimate(t, t.default_solution(), p, dev);
    EXPECT_TRUE(e.has_model && e.seconds > 0) << p.key();
  }
  const Problem l4(tap_wgrad3x3(DataType::BF16, DataType::BF16, 128, 512, 7, 7, 512));
  Solution one = t.default_solution(), two = one;
  two.params["G"] = 2;
  EXPECT_LT(model_estimate(t, two, l4, dev).seconds, model_estimate(t, one, l4, dev).seconds);
}

// With and without the split-K reduction, every warp-tile shape and packing depth the sample
// reaches; none may spill (the JSON's registers_fit keeps 96 accumulators out of 384-thread blocks,
// where ptxas caps a thread at 168 registers).
TEST(TapWgradCompile, NvrtcCompilesASampleForSm90aWithoutSpills) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = tap_problems();
  const auto cands = conv_sample("tap_wgrad", ps, dev, 2);
  ASSERT_FALSE(cands.empty());
  const auto values = expect_no_spills(*compiler, cands, ps, dev);
  EXPECT_GT(values.at("SPLIT").size(), 1u);
  EXPECT_GT(values.at("G").size(), 1u);
  EXPECT_GT(values.at("WM").size(), 1u);
  std::printf("tap_wgrad: %zu candidates compiled\n", cands.size());
}

TEST(TapWgradCompile, TheDeepestSplitCompiles) {  // 264 parts: one level (see NarrowConvCompile's)
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = {Problem(tap_wgrad3x3(DataType::BF16, DataType::BF16, 128, 64, 56, 56, 64))};
  KernelTemplate t = find_template("tap_wgrad");
  const auto cands = deepest_split(t, "SPLIT", ps, dev);
  ASSERT_EQ(cands.size(), 1u) << "ResNet-50's l1 3x3 weight gradient takes tap_wgrad's deepest split";
  EXPECT_GT(cands[0].solution.params.at("SPLIT"), 4 * 63);
  expect_no_spills(*compiler, cands, ps, dev);
}

TEST(TapWgradGpu, SampleMatchesTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> ps = tap_problems();
  const std::size_t checked = validate_conv_candidates(*dev, conv_sample("tap_wgrad", ps, dev->info(), 10), ps);
  std::printf("%zu candidates validated\n", checked);
}

}  // namespace
