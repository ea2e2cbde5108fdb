// The HIP backend's convolution path without an AMD GPU: hipRTC compiles, for gfx90a, a sample of
// simt_conv in every direction, both layouts and bf16 / fp16 / fp32, the device fp64 reference
// (reference_conv.cuh) for the same, and the device output check (check_output.cuh) that
// validation runs on them; each code object's AMDGPU metadata (llvm-readelf --notes) must describe
// the kernel. (mfma_conv, every direction, is compiled in test_hip_mfma.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "gpu/hip/code_object_info.h"
#include "gpu/hip/hip_backend.h"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "ops/conv/inputs.h"
#include "ops/output_check.h"
#include "vendors/libraries.h"
#include "vendors/vendor.h"

using namespace tiletune;
using namespace tiletune::testing;
namespace hipb = tiletune::gpu::hip;

namespace {

// The metadata of `r`'s kernel in its code object (a failure when it is not there).
hipb::AmdKernelInfo kernel_info(const gpu::CompileResult& r) {
  const auto kernels = hipb::read_amd_code_object(r.code.bytes);
  auto it = std::find_if(kernels.begin(), kernels.end(), [&](const auto& k) { return k.name == r.code.symbol; });
  if (it == kernels.end()) {
    ADD_FAILURE() << "kernel " << r.code.symbol << " not in the code object metadata";
    return {};
  }
  EXPECT_GT(it->vgpr_count, 0) << r.code.symbol;
  EXPECT_GT(it->sgpr_count, 0) << r.code.symbol;
  EXPECT_EQ(it->wavefront_size, 64) << r.code.symbol;
  return *it;
}

ConvProblem problem(ConvDirection dir, ConvLayout layout, DataType type) {
  ConvProblem p;
  p.direction = dir, p.layout = layout, p.in_type = type;
  p.out_type = type == DataType::F16 && dir == ConvDirection::BackwardFilter ? DataType::F32 : type;
  p.n = 4, p.c = 32, p.h = 17, p.w = 15, p.k = 48, p.r = p.s = 3, p.pad_h = p.pad_w = 1;
  p.stride_h = dir == ConvDirection::BackwardData ? 2 : 1;
  p.groups = layout == ConvLayout::NCHW ? 2 : 1;
  return p;
}

std::vector<Problem> every_direction_layout_and_type() {
  std::vector<Problem> out;
  for (int dir = 0; dir < 3; ++dir)
    for (auto layout : {ConvLayout::NHWC, ConvLayout::NCHW})
      for (auto type : {DataType::BF16, DataType::F16, DataType::F32})
        out.push_back(problem(ConvDirection(dir), layout, type));
  return out;
}

TEST(HipConvCompile, SimtConvEveryDirectionLayoutAndTypeForGfx90a) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Hip);
  const auto& t = find_template("simt_conv");
  ASSERT_TRUE(t.supports(gpu::BackendKind::Hip));
  const std::vector<Problem> problems = every_direction_layout_and_type();
  // Besides the default, one stride-picked candidate per problem; the first split-K one of each
  // direction.
  const auto cands = conv_sample("simt_conv", problems, dev, 1, true);
  std::set<std::size_t> covered;
  bool compiled_split = false;
  for (const auto& c : cands) {
    const Problem& p = problems[c.problem_index];
    SCOPED_TRACE(c.solution.kernel_name() + " for " + p.key());
    const gpu::CompileResult r = compiler->compile(c.tmpl->compile_request(c.solution, p, dev));
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_NE(r.code.symbol.find("simt_conv"), std::string::npos) << r.code.symbol;
    const hipb::AmdKernelInfo k = kernel_info(r);
    const Variables vars = t.variables(c.solution, p, dev);
    EXPECT_EQ(k.max_workgroup_size, vars.at("THREADS")) << "__launch_bounds__ not in the metadata";
    // The operand tiles, and no more than the JSON's LDS_BYTES (they and split-K's counter), which
    // the lds_fits constraint holds to the device's LDS.
    EXPECT_GE(k.lds_bytes, vars.at("BK") * (vars.at("BM") + vars.at("BN")) * 4);
    EXPECT_LE(k.lds_bytes, vars.at("LDS_BYTES"));
    std::printf("%-48s %-56s vgpr=%3d sgpr=%3d lds=%5d scratch=%d\n", c.solution.kernel_name().c_str(),
                p.key().substr(0, 56).c_str(), k.vgpr_count, k.sgpr_count, k.lds_bytes, k.private_bytes);
    covered.insert(c.problem_index);
    compiled_split = compiled_split || c.solution.params.at("SPLITK") > 1;
  }
  EXPECT_EQ(covered.size(), problems.size()) << "a direction, layout or type without a simt_conv candidate";
  EXPECT_TRUE(compiled_split) << "no split-K (wgrad) variant in the sample";
  std::printf("%zu simt_conv variants compiled for gfx90a\n", cands.size());
}

TEST(HipConvCompile, DeviceReferenceForEveryDirectionTypeAndLayout) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Hip);
  for (const Problem& problem : every_direction_layout_and_type()) {
    const ConvProblem& p = problem.conv();
    const gpu::CompileResult r = compiler->compile(ops::reference_conv_request(p, dev));
    ASSERT_TRUE(r.ok) << p.key() << "\n" << r.log;
    EXPECT_NE(r.code.symbol.find("reference_conv"), std::string::npos) << r.code.symbol;
    kernel_info(r);
  }
}

// The output check validation runs over each output type, and the word copies that restore outputs.
TEST(HipConvCompile, DeviceOutputCheckForEveryType) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Hip);
  for (auto type : {DataType::F32, DataType::F16, DataType::BF16}) {
    const gpu::CompileResult r = compiler->compile(ops::check_output_request(dev, type));
    ASSERT_TRUE(r.ok) << to_string(type) << "\n" << r.log;
    EXPECT_NE(r.code.symbol.find("check_output"), std::string::npos) << r.code.symbol;
    kernel_info(r);
  }
  for (int word : {2, 4}) {
    const gpu::CompileResult r = compiler->compile(ops::copy_words_request(dev, word));
    ASSERT_TRUE(r.ok) << word << "\n" << r.log;
    kernel_info(r);
  }
}

// MIOpen is the HIP backend's vendor convolution (compile-verified only: no AMD GPU or MIOpen is
// reachable here). Its scope is stated without loading it, and where it cannot be loaded the reason
// names the library.
TEST(MiopenConv, InScopeForOneTypeAndLoadsOrSaysWhy) {
  ConvProblem p;
  p.in_type = p.out_type = DataType::BF16;
  EXPECT_EQ(gpu::vendor_scope(gpu::BackendKind::Hip, Problem(p), false), "");
  p.out_type = DataType::F32;
  EXPECT_NE(gpu::vendor_scope(gpu::BackendKind::Hip, Problem(p), false).find("MIOpen"), std::string::npos);
  const std::string missing = hipb::miopen_missing();
  if (!missing.empty()) EXPECT_NE(missing.find("libMIOpen"), std::string::npos) << missing;
}

}  // namespace
