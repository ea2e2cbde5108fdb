// simt_conv on CUDA: NVRTC compiles variants of all three directions, both layouts and split-K
// without a GPU; on a GPU, a spread of candidates is validated against the fp64 reference.
#include <gtest/gtest.h>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "tuner/conv_data.h"
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
  auto compiler = gpu::cuda::make_compiler();
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
  for (const auto& c : spread(problems, dev->info(), 4)) validate_conv_candidate(*dev, c, problems[c.problem_index]);
}

}  // namespace
