// mma_conv's PHASE split of strided input gradients on CUDA: NVRTC compiles a few PHASE 1 variants
// for sm_90a without spills (no GPU needed), and on a GPU a sample of PHASE 1 candidates is
// validated against the fp64 reference with the output poisoned, including phases no filter tap
// reaches (1x1 stride 2, 3x3 stride 3), odd sizes, both input types and split-K.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

ConvProblem phase_dgrad(DataType in, DataType out, int n, int c, int h, int w, int k, int rs, int stride, int pad) {
  ConvProblem p;
  p.direction = ConvDirection::BackwardData, p.in_type = in, p.out_type = out;
  p.n = n, p.c = c, p.h = h, p.w = w, p.k = k, p.r = p.s = rs, p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  return p;
}

// mma_conv with PHASE 1 only; candidates point at it, so it lives as long as the program.
const KernelTemplate& phase_template() {
  static const KernelTemplate t = [] {
    KernelTemplate c = find_template("mma_conv");
    c.set_values("PHASE", {1});
    return c;
  }();
  return t;
}

TEST(MmaConvPhaseCompile, NvrtcCompilesPhaseVariantsForSm90aWithoutSpills) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  // A small grid, so that split-K candidates exist: the first candidate, the first split-K one and
  // the first staged-epilogue one.
  const std::vector<Problem> ps = {phase_dgrad(DataType::BF16, DataType::BF16, 2, 64, 9, 9, 256, 3, 2, 1)};
  const auto cands = conv_sample(phase_template(), ps, dev, 1, true);
  ASSERT_LE(cands.size(), 4u) << "keep the compile test short";
  const auto values = expect_no_spills(*compiler, cands, ps, dev);
  EXPECT_EQ(values.at("PHASE"), (std::set<std::int64_t>{1}));
  EXPECT_EQ(values.at("EPI").size(), 2u);
  EXPECT_GT(*values.at("SPLITK").rbegin(), 1);
}

TEST(MmaConvPhaseGpu, PhaseCandidatesMatchTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> ps = {
      phase_dgrad(DataType::BF16, DataType::BF16, 2, 64, 15, 13, 48, 3, 2, 1),  // 3x3/2, odd H and W
      phase_dgrad(DataType::F16, DataType::F16, 3, 32, 14, 14, 64, 3, 2, 1),    // 3x3/2, even
      phase_dgrad(DataType::BF16, DataType::F32, 2, 96, 9, 11, 40, 1, 2, 0),    // 1x1/2: 3 of 4 phases all zeros
      phase_dgrad(DataType::F16, DataType::F16, 2, 40, 10, 11, 24, 3, 3, 1),    // 3x3/3: one tap per phase
      phase_dgrad(DataType::BF16, DataType::BF16, 2, 64, 9, 9, 256, 3, 2, 1),   // small grid, deep K: split-K
  };
  const auto cands = conv_sample(phase_template(), ps, dev->info(), 4);
  std::set<std::int64_t> splits;
  for (const auto& c : cands) splits.insert(c.solution.params.at("SPLITK"));
  EXPECT_GT(*splits.rbegin(), 1) << "the sample holds split-K candidates";
  const std::size_t checked = validate_conv_candidates(*dev, cands, ps);
  std::printf("%zu PHASE 1 candidates validated\n", checked);
}

}  // namespace
