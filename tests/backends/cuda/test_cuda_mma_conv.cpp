// mma_conv on CUDA: NVRTC compiles a sample of every direction for sm_90a without a GPU (with
// ptxas's register and spill report), and on a GPU a sample of each direction is validated
// against the fp64 reference, twice per candidate (split-K must leave its workspace zeroed).
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <set>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "ops/conv/inputs.h"
#include "tuner/enumerator.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

ConvProblem mma_conv(ConvDirection dir, DataType in, DataType out, int n, int c, int h, int w, int k, int rs, int stride,
                 int pad, int dil = 1, int groups = 1) {
  ConvProblem p;
  p.direction = dir, p.in_type = in, p.out_type = out;
  p.n = n, p.c = c, p.h = h, p.w = w, p.k = k, p.r = p.s = rs, p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad, p.dil_h = p.dil_w = dil, p.groups = groups;
  return p;
}

// Small problems, each direction in both input types and all three output types, with the corners
// the index math has: padding, stride, dilation, groups, channels that are not a multiple of BK
// (and only of 2: 4-byte copies), a 3-channel stem (element copies), a tiny grid for split-K.
std::vector<Problem> mma_problems() {
  std::vector<Problem> out;
  for (int dir = 0; dir < 3; ++dir) {
    const auto d = ConvDirection(dir);
    const DataType half = dir == 1 ? DataType::BF16 : DataType::F16;
    out.push_back(mma_conv(d, DataType::BF16, DataType::BF16, 2, 64, 15, 13, 64, 3, 1, 1));
    out.push_back(mma_conv(d, half, dir == 2 ? DataType::F32 : half, 3, 48, 12, 11, 80, 3, 2, 1));
    out.push_back(mma_conv(d, DataType::BF16, DataType::F32, 2, 96, 9, 9, 40, 1, 2, 0));
    out.push_back(mma_conv(d, DataType::F16, DataType::F16, 2, 36, 10, 9, 20, 3, 1, 2, 2, 2));  // Cg 18, Kg 10
    out.push_back(mma_conv(d, DataType::BF16, DataType::BF16, 4, 128, 7, 7, 256, 3, 1, 1));     // deep K, small grid
  }
  out.push_back(mma_conv(ConvDirection::Forward, DataType::BF16, DataType::BF16, 2, 3, 20, 18, 64, 7, 2, 3));
  return out;
}

TEST(MmaConvCompile, NvrtcCompilesEveryDirectionForSm90a) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = mma_problems();
  // One stride-picked candidate per problem besides the default, and the first split-K, flat and
  // staged ones of each direction: every direction, type and corner of mma_problems() still
  // compiles, with each VB and each switch (the GPU test below validates them per problem).
  const auto cands = conv_sample("mma_conv", ps, dev, 1, true);
  std::set<int> dirs;
  std::set<std::int64_t> vbs;
  bool split = false, flat = false, staged = false;
  const std::regex regs("Used ([0-9]+) registers"), spill("([0-9]+) bytes spill stores");
  for (const auto& c : cands) {
    const Problem& p = ps[c.problem_index];
    gpu::CompileRequest req = c.tmpl->compile_request(c.solution, p, dev);
    req.options.push_back("--ptxas-options=-v");
    const gpu::CompileResult r = compiler->compile(req);
    ASSERT_TRUE(r.ok) << c.solution.kernel_name() << " for " << p.key() << "\n" << r.log;
    std::smatch mr, ms;
    const bool have = std::regex_search(r.log, mr, regs) && std::regex_search(r.log, ms, spill);
    // ptxas spills a few words around the split-K reduction of some tiles (as for mma_gemm); the
    // main loop must not spill.
    const int limit = c.solution.params.at("SPLITK") > 1 ? 64 : 0;
    EXPECT_TRUE(have && std::stoi(ms[1].str()) <= limit) << c.solution.kernel_name() << " spills for " << p.key();
    std::printf("%-70s %-58s regs %3s spill %s\n", c.solution.kernel_name().c_str(), p.key().substr(5, 58).c_str(),
                have ? mr[1].str().c_str() : "?", have ? ms[1].str().c_str() : "?");
    dirs.insert(int(p.conv().direction));
    vbs.insert(c.solution.params.at("VB"));
    split = split || c.solution.params.at("SPLITK") > 1;
    flat = flat || c.solution.params.at("FLAT") == 1;
    staged = staged || c.solution.params.at("EPI") == 1;
  }
  EXPECT_EQ(dirs.size(), 3u);
  EXPECT_EQ(vbs, (std::set<std::int64_t>{2, 4, 16}));
  EXPECT_TRUE(split);
  EXPECT_TRUE(flat);
  EXPECT_TRUE(staged);
}

TEST(MmaConvGpu, SampleOfEachDirectionMatchesTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> ps = mma_problems();
  const std::size_t checked = validate_conv_candidates(*dev, conv_sample("mma_conv", ps, dev->info(), 6), ps);
  std::printf("%zu candidates validated\n", checked);
}

}  // namespace
