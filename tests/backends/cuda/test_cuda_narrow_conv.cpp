// narrow_wgrad, wgmma_narrow_wgrad, narrow_dgrad, narrow_col2im, narrow_fwd and wgmma_narrow_fwd (the three directions of few-channel
// convolutions, e.g. the 3-channel stem): which problems their constraints admit (host), an NVRTC compile of a sample for sm_90a
// without spills (no GPU needed), and on a GPU a sample validated against the fp64 reference twice
// per candidate (the split-K reduction must leave its workspace zeroed).
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

ConvProblem wgrad(DataType in, DataType out, int n, int c, int h, int w, int k, int rs, int stride, int pad,
                  int dil_h = 1, ConvDirection dir = ConvDirection::BackwardFilter) {
  ConvProblem p;
  p.direction = dir, p.in_type = in, p.out_type = out;
  p.n = n, p.c = c, p.h = h, p.w = w, p.k = k, p.r = p.s = rs, p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad, p.dil_h = dil_h, p.dil_w = 1, p.groups = 1;
  return p;
}

// The stem's shape at a small size, and the corners of the row staging: pixels per row not a
// multiple of 16, one channel, vertical dilation (rows in the padding), S * C filling three n8
// tiles, several channel blocks, both input types and every output type.
std::vector<Problem> narrow_problems() {
  return {Problem(wgrad(DataType::BF16, DataType::BF16, 4, 3, 64, 64, 64, 7, 2, 3)),
          Problem(wgrad(DataType::F16, DataType::F32, 6, 4, 20, 22, 32, 5, 1, 2)),
          Problem(wgrad(DataType::BF16, DataType::F32, 8, 1, 40, 40, 16, 3, 2, 1)),
          Problem(wgrad(DataType::BF16, DataType::BF16, 8, 3, 30, 40, 128, 7, 2, 3, 2)),
          Problem(wgrad(DataType::F16, DataType::F16, 8, 8, 16, 16, 48, 3, 1, 1))};
}

// wgmma_narrow_wgrad's (K in blocks of 64): the stem's shape at a small size; stride 1 with odd D = C * stride
// (the pairs' 16-bit path), Q = 34 (three k16 steps, the last mostly past Q) and P = 23 (ROWS 2: each image's last
// group one row short); one channel at stride 2 with two channel blocks; eight channels (S * C = 24, two warpgroups
// of filter columns); vertical dilation (rows in the padding); both input types, every output type.
std::vector<Problem> wgmma_narrow_problems() {
  return {Problem(wgrad(DataType::BF16, DataType::BF16, 4, 3, 64, 64, 64, 7, 2, 3)),
          Problem(wgrad(DataType::F16, DataType::F32, 6, 3, 21, 32, 64, 5, 1, 3)),
          Problem(wgrad(DataType::BF16, DataType::F32, 8, 1, 40, 40, 128, 3, 2, 1)),
          Problem(wgrad(DataType::F16, DataType::F16, 8, 8, 16, 16, 64, 3, 1, 1)),
          Problem(wgrad(DataType::BF16, DataType::BF16, 8, 3, 30, 40, 64, 7, 2, 3, 2))};
}

// Both row groupings where they matter (a sample's candidates only cross them by chance): the stem-like shape, the
// odd P, one channel with two channel blocks, two warpgroups of filter columns; the dilated problem takes single
// rows only. Compiled in CI, run on the GPU under the sanitizers.
std::vector<tuner::Candidate> wgmma_wgrad_row_groups(const gpu::DeviceInfo& dev) {
  return conv_rows("wgmma_narrow_wgrad", wgmma_narrow_problems(), dev, {}, {"ROWS"},
                   {{0, 2}, {1, 1}, {1, 2}, {2, 2}, {3, 2}, {4, 1}});
}

ConvProblem dgrad(DataType in, DataType out, int n, int c, int h, int w, int k, int rs, int stride, int pad) {
  return wgrad(in, out, n, c, h, w, k, rs, stride, pad, 1, ConvDirection::BackwardData);
}

// The stem's shape, odd widths (a residue class one column short), one channel, a 1x1 stride-2
// layer (classes no tap reaches), stride 1, both input types, every output type.
std::vector<Problem> dgrad_problems() {
  return {Problem(dgrad(DataType::BF16, DataType::BF16, 2, 3, 40, 38, 64, 7, 2, 3)),
          Problem(dgrad(DataType::F16, DataType::F32, 3, 4, 17, 21, 32, 5, 1, 2)),
          Problem(dgrad(DataType::BF16, DataType::F32, 2, 1, 23, 25, 16, 3, 2, 1)),
          Problem(dgrad(DataType::F16, DataType::F16, 2, 8, 14, 14, 48, 1, 2, 0))};
}

ConvProblem fwd(DataType in, DataType out, int n, int c, int h, int w, int k, int rs, int stride, int pad) {
  return wgrad(in, out, n, c, h, w, k, rs, stride, pad, 1, ConvDirection::Forward);
}

// The stem's shape at a small size; a row width whose pixels end inside an m16 tile (Q = 19), odd
// padding parity (pad_w * C odd: the row's elements start at odd offsets of the staged row), one
// channel and stride 1, S * C = 40 (three k16 steps), K = 48 / 16 / 128, both input types, every
// output type.
std::vector<Problem> fwd_problems() {
  return {Problem(fwd(DataType::BF16, DataType::BF16, 2, 3, 40, 40, 64, 7, 2, 3)),
          Problem(fwd(DataType::F16, DataType::F32, 3, 4, 17, 38, 48, 5, 2, 2)),
          Problem(fwd(DataType::BF16, DataType::F32, 2, 8, 21, 19, 16, 3, 1, 1)),
          Problem(fwd(DataType::F16, DataType::F16, 2, 8, 12, 14, 128, 5, 1, 2)),
          Problem(fwd(DataType::BF16, DataType::BF16, 3, 3, 24, 24, 32, 3, 1, 1))};
}

// wgmma_narrow_fwd's (K in blocks of 64, 16-bit out): the stem's shape at a small size; five channels, Q = 19, odd
// padding parity (pad_w * C = 5) and S * C = 25 (odd: a padding column a filter row); S * C = 9 at Q = 24; eight
// channels at stride 1 with Q = 70 (two warpgroups of pixels, the second mostly past Q) and two channel blocks;
// both input types.
std::vector<Problem> wgmma_fwd_problems() {
  return {Problem(fwd(DataType::BF16, DataType::BF16, 2, 3, 40, 40, 64, 7, 2, 3)),
          Problem(fwd(DataType::F16, DataType::F16, 3, 5, 17, 40, 64, 5, 2, 1)),
          Problem(fwd(DataType::BF16, DataType::BF16, 3, 3, 24, 24, 64, 3, 1, 1)),
          Problem(fwd(DataType::F16, DataType::F16, 2, 8, 12, 70, 128, 3, 1, 1))};
}

std::size_t candidates(const ConvProblem& p, const char* name = "narrow_wgrad") {
  return tuner::enumerate({find_template(name)}, std::vector<Problem>{Problem(p)},
                          fake_device(gpu::BackendKind::Cuda))
      .candidates.size();
}

TEST(NarrowConvSpace, TakesTheWeightGradientOfFewChannelsOnly) {
  ConvProblem stem = wgrad(DataType::BF16, DataType::BF16, 128, 3, 224, 224, 64, 7, 2, 3);
  EXPECT_GT(candidates(stem), 0u);
  for (const Problem& p : narrow_problems()) EXPECT_GT(candidates(p.conv()), 0u) << p.key();
  ConvProblem other = stem;
  other.direction = ConvDirection::Forward;
  EXPECT_EQ(candidates(other), 0u);
  other.direction = ConvDirection::BackwardData;
  EXPECT_EQ(candidates(other), 0u);
  other = stem, other.c = 64;
  EXPECT_EQ(candidates(other), 0u);  // mma_conv / wgmma_conv territory
  other = stem, other.dil_w = 2;
  EXPECT_EQ(candidates(other), 0u);  // the columns of a filter row are no longer one linear run
  other = stem, other.w = 223;
  EXPECT_EQ(candidates(other), 0u);  // rows of 669 elements: no 16-byte copies
  other = stem, other.in_type = other.out_type = DataType::F32;
  EXPECT_EQ(candidates(other), 0u);
}

TEST(NarrowConvSpace, WgmmaTakesTheWeightGradientOfFewChannelsOnHopper) {
  const char* name = "wgmma_narrow_wgrad";
  ConvProblem stem = wgrad(DataType::BF16, DataType::BF16, 128, 3, 224, 224, 64, 7, 2, 3);
  EXPECT_GT(candidates(stem, name), 0u);
  for (const Problem& p : wgmma_narrow_problems()) EXPECT_GT(candidates(p.conv(), name), 0u) << p.key();
  ConvProblem other = stem;
  other.direction = ConvDirection::BackwardData;
  EXPECT_EQ(candidates(other, name), 0u);
  other = stem, other.c = 16;
  EXPECT_EQ(candidates(other, name), 0u);
  other = stem, other.k = 96;
  EXPECT_EQ(candidates(other, name), 0u);  // N in blocks of 64 channels
  other = stem, other.dil_w = 2;
  EXPECT_EQ(candidates(other, name), 0u);
  other = stem, other.w = 223;
  EXPECT_EQ(candidates(other, name), 0u);
  other = stem, other.r = other.s = 11;
  EXPECT_EQ(candidates(other, name), 0u);  // 363 filter columns: past four warpgroups
  gpu::DeviceInfo ampere = fake_device(gpu::BackendKind::Cuda);
  ampere.arch = "sm_80", ampere.compute_capability = 80;
  EXPECT_TRUE(tuner::enumerate({find_template(name)}, std::vector<Problem>{Problem(stem)}, ampere).candidates.empty());
}

TEST(NarrowConvSpace, WgmmaTakesTheForwardPassOfFewChannelsOnHopper) {
  const char* name = "wgmma_narrow_fwd";
  ConvProblem stem = fwd(DataType::BF16, DataType::BF16, 128, 3, 224, 224, 64, 7, 2, 3);
  EXPECT_GT(candidates(stem, name), 0u);
  for (const Problem& p : wgmma_fwd_problems()) EXPECT_GT(candidates(p.conv(), name), 0u) << p.key();
  ConvProblem other = stem;
  other.direction = ConvDirection::BackwardFilter;
  EXPECT_EQ(candidates(other, name), 0u);
  other = stem, other.out_type = DataType::F32;
  EXPECT_EQ(candidates(other, name), 0u);  // 16-byte runs of 16-bit outputs
  other = stem, other.k = 96;
  EXPECT_EQ(candidates(other, name), 0u);
  other = stem, other.w = 600;
  EXPECT_EQ(candidates(other, name), 0u);  // 300 pixels a row: past two warpgroups
  other = stem, other.c = 16;
  EXPECT_EQ(candidates(other, name), 0u);
}

// narrow_dgrad (one n8 tile of channels) and narrow_col2im (Z's R * S * C columns) alike.
TEST(NarrowConvSpace, TakesTheInputGradientOfFewChannelsOnly) {
  for (const char* name : {"narrow_dgrad", "narrow_col2im"}) {
    ConvProblem stem = dgrad(DataType::BF16, DataType::BF16, 128, 3, 224, 224, 64, 7, 2, 3);
    EXPECT_GT(candidates(stem, name), 0u) << name;
    for (const Problem& p : dgrad_problems()) EXPECT_GT(candidates(p.conv(), name), 0u) << name << " " << p.key();
    ConvProblem other = stem;
    other.direction = ConvDirection::BackwardFilter;
    EXPECT_EQ(candidates(other, name), 0u) << name;
    other = stem, other.c = 16;
    EXPECT_EQ(candidates(other, name), 0u) << name;  // more than 8 channels
    other = stem, other.k = 72;
    EXPECT_EQ(candidates(other, name), 0u) << name;  // K in k16 steps
    other = stem, other.dil_h = 2;
    EXPECT_EQ(candidates(other, name), 0u) << name;
    other = stem, other.in_type = other.out_type = DataType::F32;
    EXPECT_EQ(candidates(other, name), 0u) << name;
  }
}

TEST(NarrowConvSpace, TakesTheForwardPassOfFewChannelsOnly) {
  ConvProblem stem = fwd(DataType::BF16, DataType::BF16, 128, 3, 224, 224, 64, 7, 2, 3);
  EXPECT_GT(candidates(stem, "narrow_fwd"), 0u);
  for (const Problem& p : fwd_problems()) EXPECT_GT(candidates(p.conv(), "narrow_fwd"), 0u) << p.key();
  ConvProblem other = stem;
  other.direction = ConvDirection::BackwardData;
  EXPECT_EQ(candidates(other, "narrow_fwd"), 0u);
  other = stem, other.c = 16;
  EXPECT_EQ(candidates(other, "narrow_fwd"), 0u);  // wgmma_conv / mma_conv territory
  other = stem, other.k = 72;
  EXPECT_EQ(candidates(other, "narrow_fwd"), 0u);  // K in k16 steps
  other = stem, other.dil_w = 2;
  EXPECT_EQ(candidates(other, "narrow_fwd"), 0u);  // a filter row's columns no longer one linear run
  other = stem, other.w = 223;
  EXPECT_EQ(candidates(other, "narrow_fwd"), 0u);  // rows of 669 elements: no 16-byte copies
}

// wgrad with and without the split-K reduction; dgrad and fwd with several tile counts per warp; col2im with
// several n8 tiles per read of the dy fragments.
TEST(NarrowConvCompile, NvrtcCompilesASampleForSm90aWithoutSpills) {
  compile_sample("narrow_wgrad", narrow_problems(), "SPLIT", 2);
  compile_sample("wgmma_narrow_wgrad", wgmma_narrow_problems(), "SPLIT", 3);
  compile_sample("wgmma_narrow_wgrad", wgmma_narrow_problems(), "ROWS", 2);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const auto grouped = wgmma_wgrad_row_groups(dev);
  ASSERT_EQ(grouped.size(), 6u);
  expect_no_spills(*gpu::make_compiler(gpu::BackendKind::Cuda), grouped, wgmma_narrow_problems(), dev);
  compile_sample("narrow_dgrad", dgrad_problems(), "MT", 6);
  compile_sample("narrow_col2im", dgrad_problems(), "NB", 6);
  compile_sample("narrow_fwd", fwd_problems(), "MT", 4);
  compile_sample("wgmma_narrow_fwd", wgmma_fwd_problems(), "KS", 4);
}

// SPLIT 528 (and tap_wgrad's 264, test_cuda_tap_wgrad.cpp): past what the two-level meeting's
// counter fields count, so one level; the H100 sweep of 2026-12-05 lost 20 such candidates of the
// stem to a static_assert.
TEST(NarrowConvCompile, TheDeepestSplitCompiles) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = {Problem(wgrad(DataType::BF16, DataType::BF16, 128, 3, 224, 224, 64, 7, 2, 3))};
  KernelTemplate t = find_template("narrow_wgrad");
  const auto cands = deepest_split(t, "SPLIT", ps, dev);
  ASSERT_EQ(cands.size(), 1u) << "the stem's weight gradient takes narrow_wgrad's deepest split";
  EXPECT_GT(cands[0].solution.params.at("SPLIT"), 4 * 63);
  expect_no_spills(*compiler, cands, ps, dev);
}

TEST(NarrowConvGpu, SampleMatchesTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> ps = narrow_problems();
  std::size_t checked = validate_conv_candidates(*dev, conv_sample("narrow_wgrad", ps, dev->info(), 8), ps);
  const std::vector<Problem> ws = wgmma_narrow_problems();
  checked += validate_conv_candidates(*dev, conv_sample("wgmma_narrow_wgrad", ws, dev->info(), 6), ws);
  const std::vector<Problem> ds = dgrad_problems();
  checked += validate_conv_candidates(*dev, conv_sample("narrow_dgrad", ds, dev->info(), 6), ds);
  checked += validate_conv_candidates(*dev, conv_sample("narrow_col2im", ds, dev->info(), 6), ds);
  const std::vector<Problem> fs = fwd_problems();
  checked += validate_conv_candidates(*dev, conv_sample("narrow_fwd", fs, dev->info(), 8), fs);
  const std::vector<Problem> wf = wgmma_fwd_problems();
  checked += validate_conv_candidates(*dev, conv_sample("wgmma_narrow_fwd", wf, dev->info(), 4), wf);
  std::printf("%zu candidates validated\n", checked);
}

// The samples compute-sanitizer's memcheck and racecheck run (scripts/h200_grad_probes.sh,
// h200_next_checks.sh conv_samples): one candidate a problem.
TEST(NarrowConvGpu, SanitizerSampleOfTheForwardPass) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> fs = fwd_problems();
  EXPECT_GE(validate_conv_candidates(*dev, conv_sample("narrow_fwd", fs, dev->info(), 1), fs), fs.size());
}

TEST(NarrowConvGpu, SanitizerSampleOfWgmmaWgrad) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> ws = wgmma_narrow_problems();
  EXPECT_GE(validate_conv_candidates(*dev, conv_sample("wgmma_narrow_wgrad", ws, dev->info(), 2), ws), ws.size());
  const auto grouped = wgmma_wgrad_row_groups(dev->info());
  ASSERT_EQ(grouped.size(), 6u);
  validate_conv_candidates(*dev, grouped, ws);
}

TEST(NarrowConvGpu, SanitizerSampleOfWgmmaFwd) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> wf = wgmma_fwd_problems();
  EXPECT_GE(validate_conv_candidates(*dev, conv_sample("wgmma_narrow_fwd", wf, dev->info(), 2), wf), wf.size());
}

TEST(NarrowConvGpu, SanitizerSampleOfCol2im) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> ds = dgrad_problems();
  EXPECT_GE(validate_conv_candidates(*dev, conv_sample("narrow_col2im", ds, dev->info(), 2), ds), ds.size());
}

}  // namespace
