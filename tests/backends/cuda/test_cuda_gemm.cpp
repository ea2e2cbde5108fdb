// GEMM kernels on a CUDA device: sampled variants of every template validated against the fp64
// reference (under compute-sanitizer on the H200: the SanitizerSample tests). Skipped without a GPU.
#include <gtest/gtest.h>


#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "ops/arguments.h"
#include "ops/launch.h"
#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "ops/cuda/tma_arguments.h"
#include "runtime/tiletune.hpp"
#include "tuner/compile_process.h"
#include "tuner/config.h"
#include "ops/elements.h"
#include "tuner/enumerator.h"
#include "ops/output_check.h"
#include "ops/gemm/inputs.h"
#include "tuner/sweep.h"
#include "vendors/vendor_gemm.h"
#include "tests/cuda_test_util.h"
#include "tests/test_util.h"

using namespace tiletune;
namespace fs = std::filesystem;
using namespace tiletune::testing;

namespace {

TEST_F(CudaDevice, SampledSimtVariantsValidateOnEveryLayoutTypeAndEdge) {
  std::vector<GemmProblem> problems = {
      gemm(DataType::F32, DataType::F32, false, false, 1000, 1000, 1000),
      gemm(DataType::F32, DataType::F32, true, false, 127, 65, 33, 1, false),
      gemm(DataType::F32, DataType::F32, false, true, 256, 130, 77, 3),
      gemm(DataType::F32, DataType::F32, true, true, 64, 64, 64, 2, false),
      gemm(DataType::BF16, DataType::BF16, false, false, 300, 200, 100),
      gemm(DataType::F16, DataType::F32, true, false, 513, 257, 129),
      gemm(DataType::BF16, DataType::F32, false, true, 128, 96, 1000, 1, false),
  };
  problems[0].lda = 1003;  // odd leading dimension: only scalar loads are allowed
  auto cands = sample(problems, dev_->info(), 6);
  std::size_t checked = 0;
  for (const auto& c : cands) {
    const GemmProblem& p = problems[c.problem_index];
    auto r = dev_->compiler().compile(c.tmpl->compile_request(c.solution, p, dev_->info()));
    ASSERT_TRUE(r.ok) << r.log;
    auto kernel = dev_->load(r.code);
    ops::GemmInputs data(*dev_, p, false);
    auto v = data.validate([&](const TtGemmParams& a) { dev_->launch(*kernel, c.dims, &a, sizeof a); });
    EXPECT_TRUE(v.ok) << c.solution.kernel_name() << " on " << p.key() << ": " << v.reason;
    ++checked;
  }
  EXPECT_GE(checked, 30u);
}

// Small problems for every CUDA template, cheap enough to run under compute-sanitizer
// (memcheck, racecheck): scripts run this test by name on the H200.
// The vendor's algorithm choices are found for aligned pointers; called on a C or an A two bytes
// off 16 (a trainer's tensor view can be), each choice and the default give the reference's result:
// a choice that cannot take the pointers is not run (the default runs instead), never run wrongly.
TEST_F(CudaDevice, VendorChoicesOnMisalignedPointersGiveTheReferenceResult) {
  std::string why;
  auto vendor = gpu::make_vendor_gemm(*dev_, &why);
  if (!vendor) GTEST_SKIP() << why;
  GemmProblem p;
  p.a_type = p.c_type = DataType::BF16;
  p.m = p.n = p.k = 1000;
  p.lda = p.ldb = p.ldc = 1000;
  ops::GemmInputs data(*dev_, p, false);
  std::vector<gpu::VendorChoice> choices = vendor->alternatives(p, data.call_params(0).gemm, 8);
  ASSERT_FALSE(choices.empty()) << vendor->name();
  choices.insert(choices.begin(), gpu::VendorChoice{});  // the default too
  vendor->set_strict(false);
  const std::size_t c_bytes = std::size_t(p.ldc * p.n) * 2, a_bytes = std::size_t(p.lda * p.k) * 2;
  std::vector<std::uint8_t> host(std::max(c_bytes, a_bytes));
  for (const char* shifted_operand : {"C", "A"})
    for (const gpu::VendorChoice& choice : choices) {
      auto v = data.validate([&](const TtGemmParams& a) {
        TtGemmParams b = a;
        gpu::DeviceBuffer c1(*dev_, c_bytes + 16), a1(*dev_, a_bytes + 16);
        b.c = static_cast<std::uint8_t*>(c1.get()) + 2;
        if (shifted_operand[0] == 'A') {
          b.a = static_cast<std::uint8_t*>(a1.get()) + 2;
          dev_->copy_to_host(host.data(), a.a, a_bytes);
          dev_->copy_to_device(const_cast<void*>(b.a), host.data(), a_bytes);
        }
        vendor->run(p, b, nullptr, choice);
        dev_->synchronize();
        dev_->copy_to_host(host.data(), b.c, c_bytes);
        dev_->copy_to_device(a.c, host.data(), c_bytes);  // where the check reads it
      });
      EXPECT_TRUE(v.ok) << Solution{"vendor", choice}.kernel_name() << " with " << shifted_operand
                        << " two bytes off 16: " << v.reason;
    }
}

TEST_F(CudaDevice, SanitizerSampleOfEveryTemplate) {
  std::vector<GemmProblem> problems = {
      gemm(DataType::BF16, DataType::BF16, true, false, 200, 136, 72, 1, false),
      gemm(DataType::F16, DataType::F32, false, false, 130, 96, 40),
      gemm(DataType::BF16, DataType::F32, false, true, 64, 200, 64, 2),
      gemm(DataType::F32, DataType::F32, true, true, 65, 33, 40),
  };
  GemmProblem tf32 = gemm(DataType::F32, DataType::F32, true, false, 96, 64, 48);
  tf32.compute_tf32 = true;
  problems.push_back(tf32);
  std::size_t checked = 0;
  for (const auto& t : builtin_templates()) {
    if (!t.supports(gpu::BackendKind::Cuda)) continue;
    auto e = tuner::enumerate({t}, problems, dev_->info());
    std::vector<std::size_t> seen(problems.size(), 0);
    for (const auto& c : e.candidates) {
      if (seen[c.problem_index]++ >= 2) continue;  // two variants per problem and template
      ASSERT_NO_FATAL_FAILURE(validate_as_launched(*dev_, *c.tmpl, c.solution, problems[c.problem_index]));
      ++checked;
    }
  }
  EXPECT_GE(checked, 8u);
}

// A wgmma_gemm variant for the GPU tests below: the default solution with these parameters,
// admitted by the template's constraints for `p` (else a test failure and no kernel), compiled
// and loaded, with its split-K workspace allocated and zeroed.
struct WgmmaVariant {
  Solution solution;
  Variables vars;
  std::shared_ptr<gpu::Kernel> kernel;
  gpu::DeviceBuffer ws;
};
WgmmaVariant wgmma_variant(gpu::Device& dev, const GemmProblem& p, const std::map<std::string, std::int64_t>& params) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  WgmmaVariant v{t.default_solution(), {}, nullptr, {}};
  for (const auto& [k, x] : params) v.solution.params[k] = x;
  v.vars = t.variables(v.solution, p, dev.info());
  if (const auto broken = t.violation(v.vars)) {
    ADD_FAILURE() << v.solution.kernel_name() << " refused on " << p.key() << ": " << *broken;
    return v;
  }
  auto r = dev.compiler().compile(t.compile_request(v.solution, p, dev.info()));
  EXPECT_TRUE(r.ok) << v.solution.kernel_name() << "\n" << r.log;
  if (r.ok) v.kernel = dev.load(r.code);
  if (const auto bytes = std::size_t(t.workspace_bytes(v.vars))) {
    v.ws = gpu::DeviceBuffer(dev, bytes);
    dev.fill_bytes(v.ws.get(), 0, bytes);
  }
  return v;
}

// Validates a wgmma_gemm variant on `p` on its full grid and on a grid of two CTAs (clusters of
// CLUSTER CTAs: one or two clusters), where every CTA walks several tiles.
void expect_valid_on_full_and_two_cta_grids(gpu::Device& dev, const WgmmaVariant& w, const GemmProblem& p) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  ops::GemmInputs data(dev, p, false);
  for (bool small_grid : {false, true}) {
    gpu::LaunchDims dims = t.launch_dims(w.vars);
    if (small_grid) dims.grid[0] = 2;
    auto v = data.validate([&](TtGemmParams a) {
      a.workspace = w.ws.get();
      auto bytes = ops::kernel_arguments(t, a, p, w.vars);
      dev.launch(*w.kernel, dims, bytes.data(), bytes.size());
    });
    EXPECT_TRUE(v.ok) << w.solution.kernel_name() << " on " << p.key() << (small_grid ? " (two CTAs)" : "") << ": "
                      << v.reason;
  }
}

// Parameter set i on problem i % problems.size(), each admitted, compiled and validated on the full
// grid and on two CTAs.
void expect_sets_valid_on_full_and_two_cta_grids(gpu::Device& dev, const std::vector<GemmProblem>& problems,
                                                 const std::vector<std::map<std::string, std::int64_t>>& sets) {
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const GemmProblem& p = problems[i % problems.size()];
    const WgmmaVariant w = wgmma_variant(dev, p, sets[i]);
    ASSERT_TRUE(w.kernel) << i << " on " << p.key();
    expect_valid_on_full_and_two_cta_grids(dev, w, p);
  }
}

// Runs a wgmma_gemm variant twice on `dims` through data.validate: valid both times, bit-identical
// (its reductions sum in a fixed order), and the workspace left zeroed.
void expect_valid_deterministic_and_zeroed(gpu::Device& dev, const WgmmaVariant& w, const GemmProblem& p,
                                           const gpu::LaunchDims& dims) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  ops::GemmInputs data(dev, p, false);
  const std::int64_t stride_c = p.stride_c ? p.stride_c : p.ldc * p.n;
  const std::size_t c_bytes = std::size_t((p.batch - 1) * stride_c + p.ldc * p.n) * size_of(p.c_type);
  std::vector<std::vector<std::uint8_t>> outputs;
  for (int run = 0; run < 2; ++run) {
    auto v = data.validate([&](TtGemmParams a) {
      a.workspace = w.ws.get();
      auto bytes = ops::kernel_arguments(t, a, p, w.vars);
      dev.launch(*w.kernel, dims, bytes.data(), bytes.size());
      dev.synchronize();
      outputs.emplace_back(c_bytes);
      dev.copy_to_host(outputs.back().data(), a.c, c_bytes);
    });
    EXPECT_TRUE(v.ok) << w.solution.kernel_name() << " on " << p.key() << ": " << v.reason;
  }
  EXPECT_TRUE(outputs[0] == outputs[1]) << w.solution.kernel_name() << " on " << p.key() << ": not deterministic";
  if (const std::size_t ws_bytes = w.ws.size()) {
    std::vector<std::uint8_t> host(ws_bytes, 1);
    dev.copy_to_host(host.data(), w.ws.get(), ws_bytes);
    EXPECT_EQ(std::count(host.begin(), host.end(), std::uint8_t(0)), std::ptrdiff_t(ws_bytes))
        << w.solution.kernel_name() << ": workspace not left zeroed";
  }
}

// wgmma_gemm split-K on the odd shape it is meant for (1000^3 NN, rows not 128-byte aligned) and
// on a batched one with beta != 0, every consumer arrangement, with clusters and each L2
// promotion: valid, bit-identical on a second run (the reduction order is fixed), and the
// workspace left zeroed. Clusters also run the co-resident-cluster grid of the backend.
TEST_F(CudaDevice, WgmmaSplitKValidatesOnOddShapesDeterministically) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  const KernelTemplate& t = find_template("wgmma_gemm");
  const std::vector<GemmProblem> problems = {gemm(DataType::BF16, DataType::BF16, false, false, 1000, 1000, 1000),
                                             gemm(DataType::BF16, DataType::F32, true, false, 600, 400, 1000, 2, false),
                                             gemm(DataType::BF16, DataType::BF16, false, false, 3000, 3000, 3000)};
  struct Case { std::size_t problem; int bm, bn, consumers, pingpong, cluster, splitk, l2promo, clustern = 1; };
  const std::vector<Case> cases = {
      {0, 128, 128, 2, 1, 1, 2, 3}, {0, 128, 128, 2, 0, 1, 3, 2}, {0, 128, 128, 1, 0, 1, 4, 0},
      {0, 128, 64, 2, 1, 1, 2, 1},  {0, 128, 64, 1, 0, 1, 3, 3},  {0, 64, 128, 2, 1, 1, 4, 3},
      {0, 128, 192, 2, 0, 1, 2, 3}, {0, 128, 128, 2, 0, 2, 2, 3}, {0, 128, 128, 2, 1, 1, 1, 0},
      {1, 128, 128, 2, 1, 1, 2, 3}, {1, 128, 64, 2, 0, 1, 3, 3},  {1, 64, 128, 1, 0, 1, 4, 2},
      {1, 128, 128, 2, 0, 2, 2, 3}, {2, 128, 128, 2, 0, 2, 1, 3}, {2, 128, 256, 2, 0, 1, 1, 2},
      {0, 128, 96, 2, 0, 2, 1, 2},  {0, 128, 96, 2, 1, 1, 2, 2},
      // Two-dimensional clusters: A shared along tile rows too, with split-K and beta != 0.
      {0, 128, 128, 2, 0, 2, 2, 2, 2}, {1, 128, 128, 2, 0, 2, 2, 3, 2}, {0, 128, 96, 2, 0, 4, 1, 2, 2},
      // 72- and 80-column tiles through the threads' stores (24- and 16-column chunks).
      {0, 128, 72, 2, 0, 1, 1, 2}, {1, 128, 80, 2, 1, 1, 2, 3}, {0, 128, 80, 2, 0, 2, 2, 2},
      // 2-D clusters with a column of CTAs past N (400 / 80 = 5 tile columns in pairs): those skip the reduction.
      {1, 128, 80, 2, 0, 1, 2, 3, 2}};
  for (const Case& c : cases) {
    const GemmProblem& p = problems[c.problem];
    const WgmmaVariant w = wgmma_variant(*dev_, p, {{"BM", c.bm}, {"BN", c.bn}, {"CONSUMERS", c.consumers},
                                                    {"PINGPONG", c.pingpong}, {"CLUSTER", c.cluster},
                                                    {"SPLITK", c.splitk}, {"L2PROMO", c.l2promo},
                                                    {"CLUSTERN", c.clustern}});
    ASSERT_TRUE(w.kernel);
    expect_valid_deterministic_and_zeroed(*dev_, w, p, t.launch_dims(w.vars));
  }
}

// Parameter set i on problem i % problems.size(): valid, bit-identical on a second run, the
// workspace left zeroed, on the full grid and on three CTAs (each walks many split units of several
// tiles, and a split tile's parts meet across CTAs).
void expect_split_sample_valid(gpu::Device& dev, const std::vector<GemmProblem>& problems,
                               const std::vector<std::map<std::string, std::int64_t>>& sets) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const GemmProblem& p = problems[i % problems.size()];
    const WgmmaVariant w = wgmma_variant(dev, p, sets[i]);
    ASSERT_TRUE(w.kernel);
    const gpu::LaunchDims dims = t.launch_dims(w.vars);
    expect_valid_deterministic_and_zeroed(dev, w, p, dims);
    gpu::LaunchDims three = dims;
    three.grid[0] = 3;
    expect_valid_deterministic_and_zeroed(dev, w, p, three);
  }
}

// Deep split-K (SPLITK >= 16 meets in two levels: runs of parts, then the runs; splitk_tree.h):
// deep_split_sets() on deep_split_problems(). Small enough for compute-sanitizer.
TEST_F(CudaDevice, SanitizerSampleOfWgmmaDeepSplitK) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  expect_split_sample_valid(*dev_, deep_split_problems(), deep_split_sets());
}

// Skinny GEMMs on 32-column tiles with split-K: skinny_split_sets() on skinny_split_problems().
// Small enough for compute-sanitizer.
TEST_F(CudaDevice, SanitizerSampleOfWgmmaSkinnySplitK) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  expect_split_sample_valid(*dev_, skinny_split_problems(), skinny_split_sets());
}

// SCHED 1 (stream-K over the last partial wave, wgmma_sched.h) on grids of 50, 70 (a batch of two
// with beta != 0), 100 and 196 tiles (a full wave, then 64 tiles streamed): one and two consumers,
// ping-pong, consumers splitting N, both epilogues, two blocks a multiprocessor; valid, bit-identical on a second run,
// the workspace left zeroed; and on a grid of three CTAs (every tile but one or two whole).
// Small enough for compute-sanitizer.
TEST_F(CudaDevice, SanitizerSampleOfWgmmaStreamK) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  const KernelTemplate& t = find_template("wgmma_gemm");
  const std::vector<GemmProblem> problems = {gemm(DataType::BF16, DataType::BF16, false, false, 640, 640, 1024),
                                             gemm(DataType::F16, DataType::F32, true, false, 1792, 896, 1024),
                                             gemm(DataType::BF16, DataType::F32, true, false, 600, 400, 1000, 2, false)};
  struct Case { std::size_t problem; int bm, bn, consumers, pingpong, epi, occ = 1, coopn = 0; };
  const std::vector<Case> cases = {{0, 128, 64, 2, 0, 0}, {0, 128, 64, 2, 1, 1}, {0, 64, 128, 1, 0, 1},
                                   {0, 64, 64, 1, 0, 1, 2}, {1, 128, 64, 2, 1, 1}, {1, 128, 64, 2, 0, 0},
                                   {1, 128, 128, 2, 0, 1, 1, 1}, {2, 128, 64, 2, 1, 0}, {2, 128, 64, 1, 0, 1}};
  for (const Case& c : cases) {
    const GemmProblem& p = problems[c.problem];
    const WgmmaVariant w = wgmma_variant(*dev_, p, {{"BM", c.bm}, {"BN", c.bn}, {"CONSUMERS", c.consumers},
                                                    {"PINGPONG", c.pingpong}, {"EPI", c.epi}, {"OCC", c.occ},
                                                    {"COOPN", c.coopn}, {"SCHED", 1}});
    ASSERT_TRUE(w.kernel);
    EXPECT_GT(w.vars.at("SK_UNITS"), 0) << w.solution.kernel_name() << " on " << p.key();
    const gpu::LaunchDims dims = t.launch_dims(w.vars);
    EXPECT_EQ(dims.grid[0], unsigned(dev_->info().multiprocessors * c.occ)) << "SCHED 1 takes every multiprocessor";
    expect_valid_deterministic_and_zeroed(*dev_, w, p, dims);
    gpu::LaunchDims three = dims;  // three workers: one or two tiles left over, cut otherwise
    three.grid[0] = 3;
    expect_valid_deterministic_and_zeroed(*dev_, w, p, three);
  }
}

// EPI 2 (16-bit C whose columns are not 16-byte aligned, cut into scalars and 16-byte vectors):
// odd leading dimensions of C (1001, 603; columns at every alignment), edges in M and N, a batch
// with beta != 0, one and two consumers, ping-pong, consumers splitting N, 64- and 128-row
// consumer tiles; on the full grid and on two CTAs. Small enough for compute-sanitizer.
TEST_F(CudaDevice, SanitizerSampleOfWgmmaAlignedRunsOfUnalignedC) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  const std::vector<GemmProblem> problems = {gemm(DataType::BF16, DataType::BF16, true, false, 1001, 200, 512),
                                             gemm(DataType::F16, DataType::F16, true, false, 1001, 136, 320),
                                             gemm(DataType::BF16, DataType::BF16, true, false, 603, 130, 256, 2, false)};
  struct Case { std::size_t problem; int bm, bn, consumers, pingpong, coopn; };
  const std::vector<Case> cases = {{0, 128, 128, 2, 0, 0}, {0, 128, 128, 2, 1, 0}, {0, 128, 256, 2, 0, 1},
                                   {1, 64, 128, 1, 0, 0},  {1, 128, 64, 2, 1, 0},  {2, 128, 128, 2, 0, 0},
                                   {2, 64, 64, 1, 0, 0}};
  for (const Case& c : cases) {
    const GemmProblem& p = problems[c.problem];
    ASSERT_NE(p.ldc % 8, 0) << "C's columns must not all be 16-byte aligned";
    const WgmmaVariant w = wgmma_variant(*dev_, p, {{"BM", c.bm}, {"BN", c.bn}, {"CONSUMERS", c.consumers},
                                                    {"PINGPONG", c.pingpong}, {"COOPN", c.coopn}, {"EPI", 2}});
    ASSERT_TRUE(w.kernel);
    expect_valid_on_full_and_two_cta_grids(*dev_, w, p);
  }
}

// EPI 3 (each consumer stages its tile in C's type; warps 1-3 of the producer warpgroup store it
// while the consumers go on): staged_store_sets() on staged_store_problems(), on the full grid and on
// two CTAs (each walks several tiles, so the staged / stored barriers turn many phases).
TEST_F(CudaDevice, SanitizerSampleOfWgmmaStagedStores) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  expect_sets_valid_on_full_and_two_cta_grids(*dev_, staged_store_problems(), staged_store_sets());
}

// The wgmma arrangements outside the default space, for the sanitizers too: clusters of 2 and 4
// and 2-D ones (B and A multicast, remote releases, the producer's tail wait instead of a closing cluster barrier)
// and consumers splitting N or K, on both majors of B and an edge in every dimension, on a grid of two
// clusters so that every CTA walks several tiles.
TEST_F(CudaDevice, SanitizerSampleOfWgmmaClustersAndSplitN) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  const KernelTemplate& t = find_template("wgmma_gemm");
  // K of 13 and 14 K steps: the 4-stage ring wraps within a unit.
  // K of one tile: the second of two consumers splitting K sums nothing.
  const std::vector<GemmProblem> problems = {gemm(DataType::BF16, DataType::BF16, false, false, 200, 136, 832),
                                             gemm(DataType::F16, DataType::F32, true, true, 264, 264, 840),
                                             gemm(DataType::BF16, DataType::F32, true, false, 264, 136, 64)};
  struct Shape { int bm, bn, consumers, pingpong, cluster, coopn, coopk, clustern = 1; };
  const std::vector<Shape> shapes = {{64, 128, 2, 0, 2, 1, 0}, {64, 128, 2, 0, 1, 1, 0}, {128, 64, 2, 0, 2, 0, 0},
                                     {64, 128, 2, 1, 2, 0, 0}, {64, 128, 2, 0, 4, 1, 0}, {64, 64, 2, 1, 4, 0, 0},
                                     {64, 128, 2, 0, 2, 0, 1}, {64, 128, 2, 0, 1, 0, 1},
                                     // 2-D clusters (a column of CTAs past N where N = 264), 8 CTAs
                                     {64, 128, 2, 0, 2, 1, 0, 2}, {64, 64, 2, 1, 2, 0, 0, 2}, {64, 64, 2, 1, 4, 0, 0, 2}};
  std::size_t checked = 0;
  for (const auto& p : problems)
    for (const auto& sh : shapes) {
      const WgmmaVariant w = wgmma_variant(*dev_, p, {{"BM", sh.bm}, {"BN", sh.bn}, {"CONSUMERS", sh.consumers},
                                                      {"PINGPONG", sh.pingpong}, {"CLUSTER", sh.cluster},
                                                      {"COOPN", sh.coopn}, {"COOPK", sh.coopk}, {"STAGES", 4},
                                                      {"CLUSTERN", sh.clustern}});
      if (!w.kernel) continue;
      const Solution& s = w.solution;
      const Variables& vars = w.vars;
      const auto& kernel = w.kernel;
      // Two clusters (or CTAs) only: each walks several units, so the ring runs across units, the
      // ping-pong consumers alternate, and the producer's tail waits after many phases.
      gpu::LaunchDims dims = t.launch_dims(vars);
      dims.grid[0] = 2 * unsigned(sh.cluster * sh.clustern);
      ops::GemmInputs data(*dev_, p, false);
      for (int run = 0; run < 2; ++run) {  // twice: a rerun finds the barriers and buffers as a fresh launch would
        auto v = data.validate([&](TtGemmParams a) {
          auto bytes = ops::kernel_arguments(t, a, p, vars);
          dev_->launch(*kernel, dims, bytes.data(), bytes.size());
        });
        EXPECT_TRUE(v.ok) << s.kernel_name() << " on " << p.key() << ": " << v.reason;
      }
      ++checked;
    }
  EXPECT_EQ(checked, problems.size() * shapes.size());
}

// The transposing loader (LOADER 2): tf32 with an MN-major A (NN), B (TT) or both (NT), edges in
// every dimension, a batch with beta != 0 (which takes the threads' stores whatever EPI says),
// one consumer, cooperative, ping-pong and split-N consumers, both epilogues, split-K, 96-column
// tiles, 3 to 5 stages; on the full grid and on two CTAs, where each walks several tiles so that
// the ring and the landing slots wrap many times. Cheap enough for compute-sanitizer.
TEST_F(CudaDevice, SanitizerSampleOfWgmmaTransposingLoader) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  std::vector<GemmProblem> problems = {gemm(DataType::F32, DataType::F32, false, false, 200, 136, 840),
                                       gemm(DataType::F32, DataType::F32, false, true, 264, 264, 832),
                                       gemm(DataType::F32, DataType::F32, true, true, 136, 200, 100, 2, false)};
  for (auto& p : problems) p.compute_tf32 = true;
  struct Case { std::size_t problem; int bm, bn, pingpong, coopn, stages, epi, splitk = 1, consumers = 2; };
  const std::vector<Case> cases = {{0, 128, 128, 0, 0, 3, 0}, {0, 128, 64, 1, 0, 4, 1}, {0, 64, 128, 0, 1, 3, 1},
                                   {1, 128, 128, 0, 0, 3, 1}, {1, 128, 64, 1, 0, 3, 0}, {2, 128, 64, 1, 0, 4, 0},
                                   {2, 64, 128, 0, 1, 3, 1},  {0, 128, 64, 0, 0, 5, 1, 2}, {0, 128, 96, 0, 0, 3, 1},
                                   {1, 64, 128, 0, 0, 4, 0, 1, 1}};
  std::size_t checked = 0;
  for (const Case& c : cases) {
    const GemmProblem& p = problems[c.problem];
    const WgmmaVariant w = wgmma_variant(*dev_, p, {{"LOADER", 2}, {"BK", 32}, {"BM", c.bm}, {"BN", c.bn},
                                                    {"PINGPONG", c.pingpong}, {"COOPN", c.coopn},
                                                    {"STAGES", c.stages}, {"EPI", c.epi}, {"SPLITK", c.splitk},
                                                    {"CONSUMERS", c.consumers}});
    if (!w.kernel) continue;
    expect_valid_on_full_and_two_cta_grids(*dev_, w, p);
    ++checked;
  }
  EXPECT_EQ(checked, cases.size());
}

// tf32 with A read into registers (AREG 1): NN by TMA (and once by cp.async), NT with B through
// LOADER 2; edges in every dimension, odd M (lda padded to 16-byte rows, which TMA needs) and odd
// N with a batch and beta != 0, K tails, one consumer, cooperative, ping-pong and split-N
// consumers, a 2-CTA cluster, split-K, both epilogues, 3 to 5 stages; on the full grid and on two
// CTAs (every CTA walks several tiles: the ring wraps, the fragment registers are reused across
// stages). Cheap enough for compute-sanitizer.
TEST_F(CudaDevice, SanitizerSampleOfWgmmaTf32AFromRegisters) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  GemmProblem odd = gemm(DataType::F32, DataType::F32, false, false, 201, 131, 100, 2, false);
  odd.lda = 204, odd.stride_a = 0;
  std::vector<GemmProblem> problems = {gemm(DataType::F32, DataType::F32, false, false, 200, 136, 840),
                                       odd.canonical(),
                                       gemm(DataType::F32, DataType::F32, false, true, 264, 264, 832),
                                       gemm(DataType::F32, DataType::F32, false, true, 200, 136, 100, 2, false)};
  for (auto& p : problems) p.compute_tf32 = true;
  struct Case { std::size_t problem; int bm, bn, pingpong, coopn, stages, epi, loader, cluster = 1, splitk = 1, consumers = 2; };
  const std::vector<Case> cases = {{0, 128, 128, 0, 0, 4, 1, 0},        {0, 128, 64, 1, 0, 4, 0, 0},
                                   {0, 64, 128, 0, 1, 3, 1, 0},         {0, 128, 128, 0, 0, 4, 1, 0, 2},
                                   {0, 128, 64, 0, 0, 5, 1, 0, 1, 2},   {0, 128, 64, 0, 0, 4, 1, 0, 1, 1, 1},
                                   {1, 128, 128, 0, 0, 4, 0, 0},        {1, 128, 64, 1, 0, 3, 0, 0},
                                   {1, 128, 128, 0, 0, 4, 0, 1},        {2, 128, 128, 0, 0, 4, 1, 2},
                                   {2, 128, 64, 1, 0, 3, 0, 2},         {3, 64, 128, 0, 1, 3, 0, 2}};
  std::size_t checked = 0;
  for (const Case& c : cases) {
    const GemmProblem& p = problems[c.problem];
    const WgmmaVariant w = wgmma_variant(*dev_, p, {{"AREG", 1}, {"LOADER", c.loader}, {"BK", 32}, {"BM", c.bm},
                                                    {"BN", c.bn}, {"PINGPONG", c.pingpong}, {"COOPN", c.coopn},
                                                    {"STAGES", c.stages}, {"EPI", c.epi}, {"CLUSTER", c.cluster},
                                                    {"SPLITK", c.splitk}, {"CONSUMERS", c.consumers}});
    if (!w.kernel) continue;
    expect_valid_on_full_and_two_cta_grids(*dev_, w, p);
    ++checked;
  }
  EXPECT_EQ(checked, cases.size());
}

// C as a view of a taller matrix (ldc past M; rows_past_m_sets() on rows_past_m_problems()): the rows
// between M and ldc are the caller's and keep their bytes. The threads' stores (EPI 0) on an M off 16
// bytes, beta zero and not; the TMA store on an M of whole 16-byte runs (past an M off them it would
// write the rest of the run, so EPI 1 is refused there: CudaCompile's constraint test).
TEST_F(CudaDevice, WgmmaLeavesTheRowsPastMAlone) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  const auto problems = rows_past_m_problems();
  for (const GemmProblem& p : problems) ASSERT_GT(p.ldc, p.m) << p.key();
  expect_sets_valid_on_full_and_two_cta_grids(*dev_, problems, rows_past_m_sets());
}

// C's column phases (REPACK 2; column_phase_sets() on column_phase_problems()) as the tuner validates
// them (C on 256 bytes), then at every element offset of C from 16 bytes and with beta != 0, against the
// threads' stores (EPI 0) of the same tile on the same data: C within the tolerance, every byte around
// and between its columns untouched. Cheap enough for compute-sanitizer.
TEST_F(CudaDevice, SanitizerSampleOfWgmmaColumnPhases) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  const KernelTemplate& t = find_template("wgmma_gemm");
  const auto problems = column_phase_problems();
  const auto sets = column_phase_sets();
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const GemmProblem& p = problems[i % problems.size()];
    ASSERT_GT(column_phases(p).phases, 0) << p.key();
    Solution phased = t.default_solution();
    for (const auto& [k, v] : sets[i]) phased.params[k] = v;
    Solution plain = phased;  // the same tile, the threads' stores on C as it is
    plain.params.erase("REPACK");
    plain.params["EPI"] = 0;
    ASSERT_NO_FATAL_FAILURE(validate_as_launched(*dev_, t, phased, p));

    const int cb = size_of(p.c_type), ab = size_of(p.a_type);
    auto kernel_of = [&](const Solution& s) {
      auto r = dev_->compiler().compile(t.compile_request(s, p, dev_->info()));
      EXPECT_TRUE(r.ok) << s.kernel_name() << "\n" << r.log;
      return r.ok ? dev_->load(r.code) : nullptr;
    };
    const auto k_phased = kernel_of(phased), k_plain = kernel_of(plain);
    ASSERT_TRUE(k_phased && k_plain);
    const Variables v_phased = t.variables(phased, p, dev_->info()), v_plain = t.variables(plain, p, dev_->info());
    ASSERT_FALSE(t.violation(v_phased)) << *t.violation(v_phased);
    const ops::KernelLaunch l_phased(t, v_phased, p), l_plain(t, v_plain, p);
    gpu::DeviceBuffer ws(*dev_, std::size_t(std::max<std::int64_t>(256, l_phased.workspace_bytes())));
    dev_->fill_bytes(ws.get(), 0, ws.size());
    std::mt19937_64 rng(11);
    std::vector<std::uint8_t> a(std::size_t(p.elements_a() * ab)), b(std::size_t(p.elements_b() * ab));
    for (std::int64_t e = 0; e < p.elements_a(); ++e) ops::store_element(a.data(), e, p.a_type, ops::random_input(rng));
    for (std::int64_t e = 0; e < p.elements_b(); ++e) ops::store_element(b.data(), e, p.a_type, ops::random_input(rng));
    const std::size_t c_bytes = std::size_t(p.elements_c() * cb), around = 64;
    std::vector<std::uint8_t> c0(c_bytes + 2 * around, 0xFF);
    for (std::int64_t col = 0; col < p.n; ++col)
      for (std::int64_t row = 0; row < p.m; ++row)
        ops::store_element(c0.data() + around, row + col * p.ldc, p.c_type, ops::random_input(rng));
    gpu::DeviceBuffer da(*dev_, a.size()), db(*dev_, b.size()), dc[2] = {{*dev_, c0.size()}, {*dev_, c0.size()}};
    dev_->copy_to_device(da.get(), a.data(), a.size());
    dev_->copy_to_device(db.get(), b.data(), b.size());
    for (int off = 0; off < 16 / cb; ++off)
      for (float beta : {0.f, -1.25f}) {
        if (beta != 0.f && p.beta_zero) continue;
        std::vector<std::uint8_t> out[2];
        for (int side = 0; side < 2; ++side) {
          dev_->copy_to_device(dc[side].get(), c0.data(), c0.size());
          void* cp = static_cast<char*>(dc[side].get()) + around - 16 + off * cb;
          // The same bytes under C at every offset: C0 moved with it.
          dev_->copy_to_device(cp, c0.data() + around, c_bytes);
          TtGemmParams g{da.get(), db.get(), cp, p.lda, p.ldb, p.ldc, 0, 0, 0, int(p.m), int(p.n), int(p.k), 1, 0.5f, beta, nullptr};
          (side ? l_plain : l_phased).launch(*dev_, side ? *k_plain : *k_phased, g, ws.get(), nullptr);
          dev_->synchronize();
          out[side].resize(c0.size());
          dev_->copy_to_host(out[side].data(), dc[side].get(), c0.size());
        }
        const std::size_t at = around - 16 + std::size_t(off * cb);
        std::int64_t bad = -1;
        double worst = 0;
        for (std::size_t byte = 0; byte < c0.size() && bad < 0; ++byte) {
          const bool inside = byte >= at && byte < at + c_bytes && ((byte - at) / cb) % p.ldc < std::size_t(p.m);
          if (!inside) {
            if (out[0][byte] != out[1][byte]) bad = std::int64_t(byte);
            continue;
          }
          if ((byte - at) % cb) continue;
          const double x = ops::load_element(out[0].data() + at, std::int64_t((byte - at) / cb), p.c_type);
          const double y = ops::load_element(out[1].data() + at, std::int64_t((byte - at) / cb), p.c_type);
          worst = std::max(worst, std::abs(x - y) / (1 + std::abs(y)));
          if (!(std::abs(x - y) <= 2e-2 * (1 + std::abs(y)))) bad = std::int64_t(byte);
        }
        EXPECT_LT(bad, 0) << phased.kernel_name() << " on " << p.key() << ", C at offset " << off << ", beta " << beta
                          << ": byte " << bad - std::int64_t(at) << " from C's start differs (worst relative difference "
                          << worst << ")";
      }
  }
}

// The TMA-store epilogue (EPI 1) on every output type, edges in M and N (the TMA clips), batches,
// split-K, ping-pong and split-N consumers, and beta != 0 (which takes the threads' stores): each
// validated on the full grid and on a grid of two clusters (or CTAs), where every CTA walks
// several tiles and the two staging buffers of 16-bit C alternate across them; cheap enough for
// compute-sanitizer.
TEST_F(CudaDevice, SanitizerSampleOfWgmmaTmaStore) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  const KernelTemplate& t = find_template("wgmma_gemm");
  GemmProblem tf32 = gemm(DataType::F32, DataType::F32, true, false, 200, 104, 96, 2);
  tf32.compute_tf32 = true;
  const std::vector<GemmProblem> problems = {gemm(DataType::BF16, DataType::BF16, false, false, 1000, 1000, 1000),
                                             gemm(DataType::F16, DataType::F32, true, false, 600, 400, 1000, 2),
                                             gemm(DataType::F16, DataType::F16, true, true, 264, 136, 840, 3),
                                             gemm(DataType::BF16, DataType::BF16, false, true, 600, 400, 512, 2, false),
                                             tf32};
  struct Case { std::size_t problem; int bm, bn, consumers, pingpong, cluster, coopn, splitk, coopk = 0, clustern = 1; };
  const std::vector<Case> cases = {
      {0, 64, 128, 2, 0, 2, 1, 1}, {0, 128, 128, 2, 1, 1, 0, 1}, {0, 128, 128, 2, 0, 1, 0, 2},
      {1, 128, 128, 2, 1, 1, 0, 1}, {1, 128, 192, 2, 0, 2, 0, 1}, {1, 64, 128, 1, 0, 1, 0, 3},
      {2, 64, 128, 2, 0, 1, 1, 1}, {2, 128, 64, 2, 1, 2, 0, 1}, {3, 128, 128, 2, 1, 1, 0, 1},
      {3, 64, 128, 2, 0, 2, 1, 1}, {4, 128, 128, 2, 1, 1, 0, 1}, {4, 64, 64, 1, 0, 1, 0, 1},
      {0, 64, 128, 2, 0, 4, 1, 1}, {3, 64, 128, 2, 0, 4, 1, 1}, {0, 64, 128, 2, 0, 2, 0, 1, 1},
      {2, 64, 128, 2, 0, 2, 0, 1, 1}, {4, 64, 128, 2, 0, 1, 0, 1, 1},
      // 96-column tiles (K-major B): pairs (48 rows of B each), ping-pong, quads with fp32 C, tf32.
      {0, 128, 96, 2, 0, 2, 0, 1}, {0, 128, 96, 2, 1, 1, 0, 1}, {1, 128, 96, 2, 0, 4, 0, 1},
      {4, 128, 96, 2, 1, 1, 0, 1},
      // 2-D clusters: 128 x 96 in 4 x 2 (cuBLAS's fp16 arrangement for 1000^3), split-N in 2 x 2 on a K-major A.
      {0, 128, 96, 2, 0, 4, 0, 1, 0, 2}, {1, 64, 128, 2, 0, 2, 1, 1, 0, 2},
      // 72 columns (chunks of 24: a last stmatrix.x2), 80 in pairs with fp32 C (chunks of 16), tf32 ping-pong.
      {0, 128, 72, 2, 0, 1, 0, 1}, {0, 128, 72, 2, 0, 1, 0, 1, 0, 2}, {1, 128, 80, 2, 0, 2, 0, 1},
      {4, 128, 72, 2, 1, 1, 0, 1},
      // A shared by 4 tile columns: K-major A (32 rows each) in 2 x 4, MN-major A (16 K lines each)
      // in 1 x 4; 80 columns with 16-bit C (one stmatrix.x4 per 16-column chunk, two buffers).
      {1, 128, 128, 2, 0, 2, 0, 1, 0, 4}, {0, 128, 64, 2, 0, 1, 0, 1, 0, 4}, {0, 128, 80, 2, 0, 2, 0, 1, 0, 2},
      // B shared in 8-row atoms where a CTA's share is not whole atoms: 72 in 4 x 2 (3, 2, 2, 2
      // atoms each), 72 in pairs with fp32 C (5, 4), 80 in quads (3, 3, 2, 2).
      {0, 128, 72, 2, 0, 4, 0, 1, 0, 2}, {1, 128, 72, 2, 0, 2, 0, 1}, {0, 128, 80, 2, 0, 4, 0, 1}};
  std::size_t checked = 0;
  for (const Case& c : cases) {
    const GemmProblem& p = problems[c.problem];
    const WgmmaVariant w = wgmma_variant(
        *dev_, p, {{"BM", c.bm}, {"BN", c.bn}, {"CONSUMERS", c.consumers}, {"PINGPONG", c.pingpong},
                   {"CLUSTER", c.cluster}, {"COOPN", c.coopn}, {"COOPK", c.coopk}, {"SPLITK", c.splitk}, {"EPI", 1},
                   {"CLUSTERN", c.clustern},
                   {"STAGES", 4},
                   {"BK", 128 / size_of(p.a_type)}});
    if (!w.kernel) continue;
    const Solution& s = w.solution;
    const Variables& vars = w.vars;
    const auto& kernel = w.kernel;
    const auto& ws = w.ws;
    ops::GemmInputs data(*dev_, p, false);
    for (bool small_grid : {false, true}) {
      gpu::LaunchDims dims = t.launch_dims(vars);
      if (small_grid) dims.grid[0] = 2 * unsigned(c.cluster * c.clustern);
      auto v = data.validate([&](TtGemmParams a) {
        a.workspace = ws.get();
        auto bytes = ops::kernel_arguments(t, a, p, vars);
        dev_->launch(*kernel, dims, bytes.data(), bytes.size());
      });
      EXPECT_TRUE(v.ok) << s.kernel_name() << " on " << p.key() << (small_grid ? " (two clusters)" : "") << ": "
                        << v.reason;
    }
    ++checked;
  }
  EXPECT_EQ(checked, cases.size());
}

}  // namespace
