// wgmma_rows1x1 (1x1 convolutions that write more than they read: a tile is 64 pixels x the whole output row,
// stored with one bulk copy): which problems its constraints admit (host), an NVRTC compile of a sample for sm_90a
// without spills or serialised wgmma (no GPU needed), and on an sm_90 GPU a sample validated against the fp64
// reference, twice per candidate (and a one-a-problem sample for the sanitizers).
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

ConvProblem conv1x1(ConvDirection dir, DataType t, int n, int c, int h, int w, int k) {
  ConvProblem p;
  p.direction = dir, p.in_type = p.out_type = t;
  p.n = n, p.c = c, p.h = h, p.w = w, p.k = k;
  return p;
}

// MobileNet's and EfficientNet's input gradients (24 -> 144, 40 -> 240 channels: three and four chunks of the
// row, a last tile of 8 and 36 pixels), ResNet-50's l1 forward 64 -> 256 (four k16 steps, four chunks), a forward
// pass of 32 -> 72 channels over 189 pixels, the 64 -> 64 input gradient; bf16 and fp16.
std::vector<Problem> rows_problems() {
  const ConvDirection fwd = ConvDirection::Forward, dgrad = ConvDirection::BackwardData;
  return {Problem(conv1x1(dgrad, DataType::BF16, 2, 144, 14, 14, 24)),
          Problem(conv1x1(dgrad, DataType::F16, 1, 240, 10, 10, 40)),
          Problem(conv1x1(fwd, DataType::BF16, 2, 64, 12, 12, 256)),
          Problem(conv1x1(fwd, DataType::F16, 3, 32, 7, 9, 72)),
          Problem(conv1x1(dgrad, DataType::BF16, 2, 64, 8, 8, 64))};
}

std::size_t candidates(const ConvProblem& p) {
  return tuner::enumerate({find_template("wgmma_rows1x1")}, std::vector<Problem>{Problem(p)},
                          fake_device(gpu::BackendKind::Cuda))
      .candidates.size();
}

TEST(Rows1x1Space, TakesOneByOneLayersWithFewReductionChannelsAndWholeRows) {
  for (const Problem& p : rows_problems()) EXPECT_GT(candidates(p.conv()), 0u) << p.key();
  const ConvProblem mbnet = rows_problems()[0].conv();
  ConvProblem other = mbnet;
  other.direction = ConvDirection::BackwardFilter;
  EXPECT_EQ(candidates(other), 0u);
  other = mbnet, other.k = 72;
  EXPECT_EQ(candidates(other), 0u);  // a reduction of more than one 128-byte line
  other = mbnet, other.c = 264;
  EXPECT_EQ(candidates(other), 0u);  // an output row past four chunks
  other = mbnet, other.r = other.s = 3, other.pad_h = other.pad_w = 1;
  EXPECT_EQ(candidates(other), 0u);
  other = mbnet, other.stride_h = other.stride_w = 2;
  EXPECT_EQ(candidates(other), 0u);
  other = mbnet, other.out_type = DataType::F32;
  EXPECT_EQ(candidates(other), 0u);  // the staging holds 16-bit rows
  other = mbnet, other.c = 140;
  EXPECT_EQ(candidates(other), 0u);  // rows in 16-byte chunks
}

TEST(Rows1x1Compile, NvrtcCompilesASampleForSm90aWithoutSpills) { compile_sample("wgmma_rows1x1", rows_problems(), "NC", 4); }

TEST(Rows1x1Gpu, SampleMatchesTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  if (dev->info().compute_capability != 90) GTEST_SKIP() << "wgmma needs sm_90";
  const std::vector<Problem> ps = rows_problems();
  const std::size_t checked = validate_conv_candidates(*dev, conv_sample("wgmma_rows1x1", ps, dev->info(), 4), ps);
  EXPECT_GE(checked, ps.size());
  std::printf("%zu candidates validated\n", checked);
}

// The sample compute-sanitizer's memcheck and racecheck run (h200_next_checks.sh rows1x1): one candidate a problem.
TEST(Rows1x1Gpu, SanitizerSample) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  if (dev->info().compute_capability != 90) GTEST_SKIP() << "wgmma needs sm_90";
  const std::vector<Problem> ps = rows_problems();
  EXPECT_GE(validate_conv_candidates(*dev, conv_sample("wgmma_rows1x1", ps, dev->info(), 1), ps), ps.size());
}

}  // namespace
