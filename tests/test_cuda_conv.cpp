// simt_conv on CUDA: NVRTC compiles variants of all three directions, both layouts and split-K
// without a GPU; on a GPU, a spread of candidates is validated against the fp64 reference.
#include <gtest/gtest.h>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
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

// Per problem: the default, the first split-K candidate, and every stride-th other one.
std::vector<tuner::Candidate> spread(const std::vector<Problem>& problems, const gpu::DeviceInfo& dev, std::size_t per) {
  auto e = tuner::enumerate({find_template("simt_conv")}, problems, dev);
  std::vector<tuner::Candidate> out;
  for (std::size_t pi = 0; pi < problems.size(); ++pi) {
    std::vector<tuner::Candidate> mine;
    for (const auto& c : e.candidates)
      if (c.problem_index == pi) mine.push_back(c);
    const std::size_t stride = std::max<std::size_t>(1, mine.size() / per);
    bool split_seen = false;
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const bool split = mine[i].solution.params.at("SPLITK") > 1;
      if (i % stride == 0 || (split && !split_seen) || mine[i].solution.params == find_template("simt_conv").defaults())
        out.push_back(mine[i]);
      split_seen = split_seen || split;
    }
  }
  return out;
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
  for (const auto& c : spread(problems, dev->info(), 4)) {
    const Problem& p = problems[c.problem_index];
    gpu::CompileResult r = dev->compiler().compile(c.tmpl->compile_request(c.solution, p, dev->info()));
    ASSERT_TRUE(r.ok) << r.log;
    auto kernel = dev->load(r.code);
    const Variables vars = c.tmpl->variables(c.solution, p, dev->info());
    const gpu::LaunchDims dims = c.tmpl->launch_dims(vars);
    gpu::DeviceBuffer workspace;
    if (std::int64_t bytes = c.tmpl->workspace_bytes(vars); bytes > 0) {
      workspace = gpu::DeviceBuffer(*dev, std::size_t(bytes));
      dev->fill_bytes(workspace.get(), 0, std::size_t(bytes));
    }
    tuner::ConvData data(*dev, p.conv(), false);
    for (int run = 0; run < 2; ++run) {  // twice: split-K must leave its workspace zeroed
      tuner::ValidationResult v = data.validate([&](TtConvParams a) {
        a.workspace = workspace.get();
        dev->launch(*kernel, dims, &a, sizeof a);
      });
      EXPECT_TRUE(v.ok) << c.solution.kernel_name() << " on " << p.key() << " (run " << run << "): " << v.reason;
    }
  }
}

}  // namespace
