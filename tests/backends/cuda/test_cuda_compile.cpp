// CUDA backend, compile side: NVRTC needs no GPU, so these run everywhere the toolkit is (CI too).
#include <gtest/gtest.h>


#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

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
#include "tests/cuda_test_util.h"
#include "tests/test_util.h"

using namespace tiletune;
namespace fs = std::filesystem;
using namespace tiletune::testing;

namespace {

TEST(CudaCompile, NvrtcCompilesSimtVariantsForSm90aWithoutAGpu) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  EXPECT_EQ(compiler->version().rfind("nvrtc-", 0), 0u);
  std::vector<GemmProblem> problems = {gemm(DataType::F32, DataType::F32, false, false, 4096, 4096, 4096),
                                       gemm(DataType::F32, DataType::F32, true, false, 1000, 1000, 1000),
                                       gemm(DataType::BF16, DataType::BF16, false, true, 512, 512, 512),
                                       gemm(DataType::F16, DataType::F32, true, true, 333, 200, 100)};
  auto cands = sample(problems, fake_device(gpu::BackendKind::Cuda), 3);
  ASSERT_GE(cands.size(), 8u);
  std::vector<gpu::CompileResult> results(cands.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < cands.size();)
      results[i] = compiler->compile(cands[i].tmpl->compile_request(cands[i].solution, problems[cands[i].problem_index], fake_device(gpu::BackendKind::Cuda)));
  };
  std::thread other(work);
  work();
  other.join();
  for (std::size_t i = 0; i < cands.size(); ++i) {
    EXPECT_TRUE(results[i].ok) << cands[i].solution.kernel_name() << "\n" << results[i].log;
    EXPECT_GT(results[i].code.bytes.size(), 1000u);
    EXPECT_NE(results[i].code.symbol.find("simt_gemm"), std::string::npos) << results[i].code.symbol;
  }
}

// The Hopper template's loaders (TMA, cp.async), clusters (1-D: B multicast; 2-D: A too), 72/80/96-column tiles and consumers
// splitting N on both operand majors and on tf32; kernels built for sm_90a hold wgmma, which NVRTC checks without a GPU.
// Run by the test below in a fresh process, with TILETUNE_NVRTC_LIB naming no file.
TEST(CudaCompile, DISABLED_WithoutNvrtcChild) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  EXPECT_EQ(compiler->version(), "nvrtc-none");
  const auto problems = std::vector<GemmProblem>{gemm(DataType::F32, DataType::F32, false, false, 64, 64, 64)};
  auto cands = sample(problems, fake_device(gpu::BackendKind::Cuda), 1);
  ASSERT_FALSE(cands.empty());
  const gpu::CompileResult r = compiler->compile(
      cands[0].tmpl->compile_request(cands[0].solution, problems[0], fake_device(gpu::BackendKind::Cuda)));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("NVRTC not found"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("/nonexistent/libnvrtc.so.13"), std::string::npos) << r.log;
}

TEST(CudaCompile, WithoutNvrtcOnlyCompilingFailsAndSaysWhy) {
  // NVRTC is opened once per process (this one has it open): ask a fresh one.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("TILETUNE_NVRTC_LIB", "/nonexistent/libnvrtc.so.13", 1);
    ::execl("/proc/self/exe", "test_cuda_compile", "--gtest_also_run_disabled_tests",
            "--gtest_filter=CudaCompile.DISABLED_WithoutNvrtcChild", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "without NVRTC, a compile did not fail naming it (see the child's output)";
}

TEST(CudaCompile, NvrtcCompilesWgmmaLoadersAndClustersForSm90a) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const KernelTemplate& t = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  GemmProblem tf32 = gemm(DataType::F32, DataType::F32, true, false, 1000, 1000, 1000);  // K-major both: TN
  tf32.compute_tf32 = true;
  const std::vector<GemmProblem> problems = {gemm(DataType::BF16, DataType::BF16, false, false, 1000, 1000, 1000),
                                             gemm(DataType::F16, DataType::F32, true, true, 3000, 3000, 3000), tf32};
  std::vector<std::pair<Solution, GemmProblem>> jobs;
  for (const auto& p : problems)
    for (int loader : {0, 1})
      for (int cluster : {1, 2}) {
        if (loader == 1 && cluster == 2) continue;  // refused by the template's constraints
        Solution s = t.default_solution();
        s.params["LOADER"] = loader;
        s.params["CLUSTER"] = cluster;
        s.params["BN"] = cluster == 2 ? 192 : 128;
        s.params["PINGPONG"] = cluster == 2 ? 0 : 1;  // ping-pong at BN 192 needs too many accumulators
        s.params["BK"] = 128 / size_of(p.a_type);        // one 128-byte swizzle atom of K
        const auto broken = t.violation(t.variables(s, p, dev));
        ASSERT_FALSE(broken) << s.kernel_name() << ": " << *broken;
        jobs.emplace_back(s, p);
      }
  // Consumers splitting N (COOPN): a 64 x 128 tile, alone and in clusters of 2 and 4, with the
  // plain and the TMA-store epilogue (16-bit and fp32 C), and consumers splitting K instead (TMA
  // store). The three variants rotate over (problem, cluster) as a Latin square: every pair of
  // problem, cluster size and variant is compiled once (9 compiles, not the 27 of the cross product).
  for (std::size_t pi = 0; pi < problems.size(); ++pi)
    for (int ci = 0; ci < 3; ++ci) {
      const GemmProblem& p = problems[pi];
      const int variant = int(pi + ci) % 3;  // 0: COOPN, 1: COOPN + TMA store, 2: COOPK + TMA store
      Solution s = t.default_solution();
      s.params["COOPN"] = variant < 2, s.params["COOPK"] = variant == 2, s.params["EPI"] = variant >= 1;
      s.params["BM"] = 64, s.params["BN"] = 128, s.params["CONSUMERS"] = 2, s.params["PINGPONG"] = 0;
      s.params["CLUSTER"] = 1 << ci, s.params["STAGES"] = variant == 2 ? 6 : 8;
      s.params["BK"] = 128 / size_of(p.a_type);
      const auto broken = t.violation(t.variables(s, p, dev));
      ASSERT_FALSE(broken) << s.kernel_name() << ": " << *broken;
      jobs.emplace_back(s, p);
    }
  // 96-column tiles, where B is K-major: pairs and quads of CTAs, ping-pong, the TMA store.
  for (const auto& p : problems) {
    if (p.trans_b) continue;
    for (int cluster : {2, 4}) {
      Solution s = t.default_solution();
      s.params["BN"] = 96, s.params["CLUSTER"] = cluster, s.params["PINGPONG"] = cluster == 2, s.params["EPI"] = 1;
      s.params["BK"] = 128 / size_of(p.a_type);
      const auto broken = t.violation(t.variables(s, p, dev));
      ASSERT_FALSE(broken) << s.kernel_name() << ": " << *broken;
      jobs.emplace_back(s, p);
    }
  }
  // Two-dimensional clusters (A multicast too): 128 x 96 tiles in 4 x 2, 64 x 128 split-N tiles in
  // 2 x 2 (an MN-major A's box split along K), 128 x 128 in 2 x 4 with a K-major A.
  for (const auto& p : problems)
    for (const auto& [bm, bn, cl, cln, coopn] : std::vector<std::array<int, 5>>{
             {128, 96, 4, 2, 0}, {64, 128, 2, 2, 1}, {128, 128, 2, 4, 0}}) {
      if (bn == 96 && p.trans_b) continue;
      Solution s = t.default_solution();
      s.params["BM"] = bm, s.params["BN"] = bn, s.params["CLUSTER"] = cl, s.params["CLUSTERN"] = cln;
      s.params["COOPN"] = coopn, s.params["PINGPONG"] = 0, s.params["EPI"] = 1, s.params["STAGES"] = 6;
      s.params["BK"] = 128 / size_of(p.a_type);
      const auto broken = t.violation(t.variables(s, p, dev));
      ASSERT_FALSE(broken) << s.kernel_name() << ": " << *broken;
      EXPECT_EQ(t.launch_dims(t.variables(s, p, dev)).cluster[0], unsigned(cl * cln));
      jobs.emplace_back(s, p);
    }
  // 72-, 80- and 160-column tiles (K-major B; epilogue chunks of 24, 16 and 32 columns), each
  // epilogue, alone, in clusters sharing B (in 8-row atoms where a CTA's share is not whole atoms),
  // and in 1 x 2 and 4 x 2 clusters. The shapes alternate between the two K-major-B problems (bf16
  // and tf32), each of which so gets every width and both epilogues.
  std::vector<GemmProblem> k_major_b;
  for (const auto& p : problems)
    if (!p.trans_b) k_major_b.push_back(p);
  ASSERT_EQ(k_major_b.size(), 2u);
  std::size_t shape = 0;
  for (const auto& [bn, cl, cln, epi] : std::vector<std::array<int, 4>>{
           {72, 1, 1, 0}, {72, 1, 2, 1}, {80, 2, 1, 1}, {80, 1, 1, 0}, {72, 2, 1, 1}, {72, 4, 2, 1}, {80, 4, 1, 0},
           {160, 1, 1, 1}, {160, 1, 1, 0}, {160, 2, 1, 1}, {160, 2, 1, 0}}) {
    const GemmProblem& p = k_major_b[shape++ % 2];
    Solution s = t.default_solution();
    s.params["BN"] = bn, s.params["CLUSTER"] = cl, s.params["CLUSTERN"] = cln, s.params["EPI"] = epi;
    s.params["PINGPONG"] = 0, s.params["STAGES"] = bn == 160 ? 4 : 6, s.params["BK"] = 128 / size_of(p.a_type);
    const auto broken = t.violation(t.variables(s, p, dev));
    ASSERT_FALSE(broken) << s.kernel_name() << ": " << *broken;
    jobs.emplace_back(s, p);
  }
  for (const auto& [s, p] : jobs) {
    gpu::CompileResult r = compiler->compile(t.compile_request(s, p, dev));
    EXPECT_TRUE(r.ok) << s.kernel_name() << "\n" << r.log;
    EXPECT_NE(r.code.symbol.find("wgmma_gemm"), std::string::npos);
  }
}

// NVRTC through compile servers (tuner/compile_process.h), two threads at once: the same code
// objects, byte for byte, as this process's NVRTC makes.
TEST(CudaCompile, CompileServersGiveTheCodeObjectsOfThisProcess) {
  auto local = gpu::make_compiler(gpu::BackendKind::Cuda);
  tuner::ProcessCompiler servers(TILETUNE_EXE, gpu::BackendKind::Cuda, *local);
  const KernelTemplate& t = find_template("simt_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const GemmProblem p = gemm(DataType::F32, DataType::F32, false, false, 1000, 1000, 1000);
  auto e = tuner::enumerate({t}, {p}, dev);
  ASSERT_GE(e.candidates.size(), 4u);
  std::vector<gpu::CompileRequest> requests;
  for (std::size_t i = 0; i < 4; ++i) requests.push_back(t.compile_request(e.candidates[i * 7 % e.candidates.size()].solution, p, dev));
  std::vector<gpu::CompileResult> there(requests.size());
  std::thread other([&] { for (std::size_t i = 1; i < requests.size(); i += 2) there[i] = servers.compile(requests[i]); });
  for (std::size_t i = 0; i < requests.size(); i += 2) there[i] = servers.compile(requests[i]);
  other.join();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const gpu::CompileResult here = local->compile(requests[i]);
    ASSERT_TRUE(here.ok) << here.log;
    EXPECT_TRUE(there[i].ok) << there[i].log;
    EXPECT_EQ(there[i].code.symbol, here.code.symbol);
    EXPECT_TRUE(there[i].code.bytes == here.code.bytes) << requests[i].name_expression;
  }
}

// The validator's device-side output check and C restore (check_output.cuh), for every output type.
TEST(CudaCompile, NvrtcCompilesTheOutputCheckForEveryType) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  for (auto type : {DataType::F32, DataType::F16, DataType::BF16, DataType::S32}) {
    gpu::CompileResult r = compiler->compile(ops::check_output_request(dev, type));
    EXPECT_TRUE(r.ok) << to_string(type) << "\n" << r.log;
    EXPECT_FALSE(r.code.symbol.empty());
  }
  for (int word : {2, 4}) {
    gpu::CompileResult r = compiler->compile(ops::copy_words_request(dev, word));
    EXPECT_TRUE(r.ok) << word << "\n" << r.log;
  }
}

// Split-K variants of the Hopper template as the odd1000 sweep admits them: every tile shape and
// consumer arrangement, SPLITK 2 / 3 / 4 in turn, plus a 2-CTA cluster. ptxas must not spill:
// the accumulators of a ping-pong 128 x 128 consumer leave little room for the reduction.
// (Known: a few variants at 168 registers spill 4-12 bytes of loop bookkeeping outside the main
// loop: 128 x 128 ping-pong at SPLITK 3, 128 x 192 at 3 and 4, the cluster at 4.)
// Also two blocks per multiprocessor (OCC 2: at most 128 registers per thread) with split-K.
// No variant may have its wgmma serialised (an empty split's zeroing in front of the main loop
// once made ptxas serialise every split-K kernel).
// Compiles each (solution, problem) with NVRTC for the fake H200, two at a time, and expects ptxas
// to report no spills (and with `unserialized`, no wgmma serialised: ptxas's performance warning).
void expect_compiles_without_spills(const KernelTemplate& t, const std::vector<std::pair<Solution, GemmProblem>>& jobs,
                                    bool unserialized = false) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  std::vector<gpu::CompileResult> results(jobs.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < jobs.size();) {
      gpu::CompileRequest req = t.compile_request(jobs[i].first, jobs[i].second, dev);
      req.options.push_back("--ptxas-options=-v");
      results[i] = compiler->compile(req);
    }
  };
  std::thread other(work);
  work();
  other.join();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const gpu::CompileResult& r = results[i];
    ASSERT_TRUE(r.ok) << jobs[i].first.kernel_name() << "\n" << r.log;
    const std::size_t at = r.log.find(" bytes spill stores");
    ASSERT_NE(at, std::string::npos) << r.log;
    const std::size_t from = r.log.find_last_of(' ', at - 1) + 1;
    EXPECT_EQ(r.log.substr(from, at - from), "0") << jobs[i].first.kernel_name() << "\n" << r.log;
    if (unserialized) EXPECT_EQ(r.log.find("serialized"), std::string::npos) << jobs[i].first.kernel_name() << "\n" << r.log;
  }
}

TEST(CudaCompile, NvrtcCompilesWgmmaSplitKWithoutSpillsForSm90a) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const GemmProblem nn = gemm(DataType::BF16, DataType::BF16, false, false, 1000, 1000, 1000);
  struct Shape { int bm, bn, consumers, pingpong, cluster, occ = 1; };
  const std::vector<Shape> shapes = {{128, 128, 1, 0, 1}, {128, 128, 2, 0, 1}, {128, 128, 2, 1, 1}, {128, 64, 1, 0, 1},
                                     {128, 64, 2, 0, 1},  {128, 64, 2, 1, 1},  {64, 128, 1, 0, 1},  {64, 128, 2, 1, 1},
                                     {128, 128, 2, 0, 2}, {64, 128, 1, 0, 1, 2}};
  std::vector<std::pair<Solution, GemmProblem>> jobs;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    Solution s = t.default_solution();
    s.params["BM"] = shapes[i].bm, s.params["BN"] = shapes[i].bn;
    s.params["CONSUMERS"] = shapes[i].consumers, s.params["PINGPONG"] = shapes[i].pingpong;
    s.params["CLUSTER"] = shapes[i].cluster;
    s.params["OCC"] = shapes[i].occ;
    s.params["SPLITK"] = shapes[i].cluster == 2 ? 2 : 2 + std::int64_t(i % 3);
    const Variables vars = t.variables(s, nn, dev);
    const auto broken = t.violation(vars);
    ASSERT_FALSE(broken) << s.kernel_name() << ": " << *broken;
    EXPECT_GT(t.workspace_bytes(vars), 0) << s.kernel_name();
    jobs.emplace_back(s, nn);
  }
  expect_compiles_without_spills(t, jobs, true);
}

// wgmma_gemm variants: the default solution with each set of parameters, on problems[i % size];
// every one admissible (a test fails where one is not).
std::vector<std::pair<Solution, GemmProblem>> wgmma_jobs(const std::vector<std::map<std::string, std::int64_t>>& sets,
                                                         const std::vector<GemmProblem>& problems) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  std::vector<std::pair<Solution, GemmProblem>> jobs;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    Solution s = t.default_solution();
    for (const auto& [k, v] : sets[i]) s.params[k] = v;
    const GemmProblem& p = problems[i % problems.size()];
    const auto broken = t.violation(t.variables(s, p, dev));
    EXPECT_FALSE(broken) << s.kernel_name() << ": " << *broken;
    if (!broken) jobs.emplace_back(s, p);
  }
  return jobs;
}

// Jobs whose partials meet in the workspace (stream-K, split-K): each has a workspace, and each
// compiles without spills or serialised wgmma.
void expect_workspaces_and_no_spills(const KernelTemplate& t,
                                     const std::vector<std::pair<Solution, GemmProblem>>& jobs) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  for (const auto& [s, p] : jobs) EXPECT_GT(t.workspace_bytes(t.variables(s, p, dev)), 0) << s.kernel_name();
  expect_compiles_without_spills(t, jobs, true);
}

// SCHED 1 (stream-K over the last partial wave): every consumer arrangement it takes (split N
// too), both epilogues, two blocks a multiprocessor, fp32 output; none spills (the TMA producer at 40
// registers walks the streamed items too).
TEST(CudaCompile, NvrtcCompilesWgmmaStreamKWithoutSpillsForSm90a) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const auto jobs = wgmma_jobs(
      {{{"BM", 128}, {"BN", 128}, {"CONSUMERS", 2}, {"PINGPONG", 0}, {"EPI", 0}, {"SCHED", 1}},
       {{"BM", 128}, {"BN", 128}, {"CONSUMERS", 2}, {"PINGPONG", 1}, {"EPI", 1}, {"SCHED", 1}},
       {{"BM", 128}, {"BN", 256}, {"CONSUMERS", 2}, {"PINGPONG", 0}, {"EPI", 1}, {"SCHED", 1}},
       {{"BM", 128}, {"BN", 64}, {"CONSUMERS", 1}, {"PINGPONG", 0}, {"EPI", 1}, {"SCHED", 1}},
       {{"BM", 64}, {"BN", 128}, {"CONSUMERS", 2}, {"PINGPONG", 1}, {"EPI", 0}, {"SCHED", 1}},
       {{"BM", 64}, {"BN", 64}, {"CONSUMERS", 1}, {"PINGPONG", 0}, {"EPI", 1}, {"OCC", 2}, {"SCHED", 1}},
       {{"BM", 128}, {"BN", 256}, {"CONSUMERS", 2}, {"PINGPONG", 0}, {"EPI", 0}, {"COOPN", 1}, {"SCHED", 1}}},
      {gemm(DataType::BF16, DataType::BF16, false, false, 1280, 1280, 4096),
       gemm(DataType::BF16, DataType::F32, true, false, 1280, 1280, 4096)});
  ASSERT_EQ(jobs.size(), 7u);
  expect_workspaces_and_no_spills(t, jobs);
}

// Deep split-K (SPLITK >= 16 meets in two levels, splitk_tree.h): the variants of the GPU sample
// (CudaDevice.SanitizerSampleOfWgmmaDeepSplitK), all admissible, none spilling.
TEST(CudaCompile, NvrtcCompilesWgmmaDeepSplitKWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const auto jobs = wgmma_jobs(deep_split_sets(), deep_split_problems());
  ASSERT_EQ(jobs.size(), 7u);
  expect_workspaces_and_no_spills(t, jobs);
}

// Skinny split-K (32-column tiles over N below 32): the variants of the GPU sample
// (CudaDevice.SanitizerSampleOfWgmmaSkinnySplitK), all admissible, none spilling.
TEST(CudaCompile, NvrtcCompilesWgmmaSkinnySplitKWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const auto jobs = wgmma_jobs(skinny_split_sets(), skinny_split_problems());
  ASSERT_EQ(jobs.size(), 8u);
  expect_workspaces_and_no_spills(t, jobs);
}

// C as a view of a taller matrix: the variants of the GPU sample (CudaDevice.WgmmaLeavesTheRowsPastMAlone), all
// admissible, none spilling.
TEST(CudaCompile, NvrtcCompilesWgmmaViewsOfTallerCWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const auto jobs = wgmma_jobs(rows_past_m_sets(), rows_past_m_problems());
  ASSERT_EQ(jobs.size(), 6u);
  expect_compiles_without_spills(t, jobs);
}

// C's column phases (REPACK 2): the variants of the GPU sample (CudaDevice.SanitizerSampleOfWgmmaColumnPhases),
// all admissible, with the edge rows' scratch as their workspace, none spilling.
TEST(CudaCompile, NvrtcCompilesWgmmaColumnPhasesWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const auto jobs = wgmma_jobs(column_phase_sets(), column_phase_problems());
  ASSERT_EQ(jobs.size(), 5u);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  for (const auto& [s, p] : jobs)
    EXPECT_EQ(t.workspace_bytes(t.variables(s, p, dev)), column_phases(p).bytes) << s.kernel_name();
  expect_compiles_without_spills(t, jobs, true);
}

// EPI 2 (unaligned 16-bit C in aligned runs) on the GPT-2 LM head (C's leading dimension 50257):
// the consumer arrangements it takes, bf16 and fp16; none spills. Where C is aligned EPI 2 would
// be EPI 0: refused.
TEST(CudaCompile, NvrtcCompilesWgmmaAlignedRunsEpilogueWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const auto jobs = wgmma_jobs({{{"BM", 128}, {"BN", 256}, {"CONSUMERS", 2}, {"PINGPONG", 0}, {"COOPN", 1}, {"EPI", 2}},
                                {{"BM", 128}, {"BN", 128}, {"CONSUMERS", 2}, {"PINGPONG", 1}, {"EPI", 2}},
                                {{"BM", 128}, {"BN", 128}, {"CONSUMERS", 2}, {"PINGPONG", 0}, {"EPI", 2}},
                                {{"BM", 64}, {"BN", 128}, {"CONSUMERS", 1}, {"PINGPONG", 0}, {"EPI", 2}},
                                {{"BM", 128}, {"BN", 64}, {"CONSUMERS", 2}, {"PINGPONG", 1}, {"EPI", 2}}},
                               {gemm(DataType::BF16, DataType::BF16, true, false, 50257, 4096, 768),
                                gemm(DataType::F16, DataType::F16, true, false, 50257, 4096, 768)});
  ASSERT_EQ(jobs.size(), 5u);
  Solution s = t.default_solution();
  s.params["EPI"] = 2;
  EXPECT_TRUE(t.violation(t.variables(s, gemm(DataType::BF16, DataType::BF16, true, false, 4096, 4096, 768),
                                      fake_device(gpu::BackendKind::Cuda))));
  expect_compiles_without_spills(t, jobs, true);
}

// EPI 3 (the tile staged for the producer warpgroup's spare warps to store): the arrangements of the
// GPU sample (CudaDevice.SanitizerSampleOfWgmmaStagedStores) on the LM head, unaligned and aligned C,
// 64- and 128-row consumers, split N, a 72-column tile, clusters; none spills (the storers run at the
// producer's 40 registers). Refused: ping-pong, split-K, the cp.async loader, fp32 C.
TEST(CudaCompile, NvrtcCompilesWgmmaStagedStoresWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const GemmProblem lmhead = gemm(DataType::BF16, DataType::BF16, true, false, 50257, 4096, 768);
  const auto jobs = wgmma_jobs(staged_store_sets(), {lmhead, gemm(DataType::F16, DataType::F16, true, false, 50304, 4096, 768)});
  ASSERT_EQ(jobs.size(), staged_store_sets().size());
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  for (const auto& [k, v] : std::vector<std::pair<std::string, int>>{{"PINGPONG", 1}, {"SPLITK", 2}, {"LOADER", 1}}) {
    Solution s = t.default_solution();
    s.params["EPI"] = 3, s.params["PINGPONG"] = 0, s.params[k] = v;
    EXPECT_TRUE(t.violation(t.variables(s, lmhead, dev))) << k;
  }
  Solution s = t.default_solution();
  s.params["EPI"] = 3, s.params["PINGPONG"] = 0;
  EXPECT_FALSE(t.violation(t.variables(s, lmhead, dev)));
  EXPECT_TRUE(t.violation(t.variables(s, gemm(DataType::BF16, DataType::F32, true, false, 4096, 4096, 768), dev)));
  expect_compiles_without_spills(t, jobs, true);
}

// The transposing loader (LOADER 2) for tf32 with an MN-major operand (NN: A, TT: B, NT: both):
// cooperative, ping-pong and split-N consumers up to 64 accumulators a thread, and split-K, none with
// its wgmma serialised. Beyond, NVRTC's
// build spills (ping-pong 128 x 128: 176 bytes, cooperative 128 x 256: 40), which the constraint
// keeps out.
TEST(CudaCompile, NvrtcCompilesTheTransposingTf32LoaderWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  std::vector<std::pair<Solution, GemmProblem>> jobs;
  struct Shape { int bm, bn, pingpong, coopn, stages, epi, splitk = 1; };
  auto variant = [&](const Shape& sh) {
    Solution s = t.default_solution();
    s.params["LOADER"] = 2, s.params["BK"] = 32, s.params["BM"] = sh.bm, s.params["BN"] = sh.bn;
    s.params["PINGPONG"] = sh.pingpong, s.params["COOPN"] = sh.coopn, s.params["STAGES"] = sh.stages;
    s.params["EPI"] = sh.epi, s.params["SPLITK"] = sh.splitk;
    return s;
  };
  for (const auto& [ta, tb] : std::vector<std::pair<bool, bool>>{{false, false}, {false, true}, {true, true}}) {
    GemmProblem p = gemm(DataType::F32, DataType::F32, ta, tb, 1000, 1000, 1000);
    p.compute_tf32 = true;
    for (const Shape& sh : std::vector<Shape>{{128, 128, 0, 0, 3, 1}, {128, 64, 1, 0, 3, 1}, {64, 128, 0, 1, 3, 1},
                                              {128, 64, 1, 0, 3, 0}, {128, 128, 0, 0, 3, 1, 2}}) {
      const Solution s = variant(sh);
      const auto broken = t.violation(t.variables(s, p, dev));
      ASSERT_FALSE(broken) << s.kernel_name() << " on " << p.key() << ": " << *broken;
      jobs.emplace_back(s, p);
    }
    for (const Shape& big : std::vector<Shape>{{128, 128, 1, 0, 3, 0}, {128, 256, 0, 0, 3, 0}})
      EXPECT_TRUE(t.violation(t.variables(variant(big), p, dev))) << p.key();
  }
  expect_compiles_without_spills(t, jobs, true);
}

// tf32 with A read into registers (AREG 1): NN by TMA (cooperative, ping-pong with 128 accumulators
// a thread, split-N, a 2-CTA cluster) and NT with B through LOADER 2, each also with split-K,
// without spills and without ptxas serialising the
// wgmma (which it does, with a warning, where it cannot prove the A registers unchanged while a
// wgmma reads them). (The constraints: tests/solutions/test_wgmma_afrag.cpp.)
TEST(CudaCompile, NvrtcCompilesTf32AFromRegistersWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  struct Shape { bool tb; int bm, bn, pingpong, coopn, loader, cluster, epi, splitk = 1; };
  std::vector<std::pair<Solution, GemmProblem>> jobs;
  auto variant = [&](const Shape& sh) {
    Solution s = t.default_solution();
    s.params["AREG"] = 1, s.params["BK"] = 32, s.params["BM"] = sh.bm, s.params["BN"] = sh.bn;
    s.params["PINGPONG"] = sh.pingpong, s.params["COOPN"] = sh.coopn, s.params["LOADER"] = sh.loader;
    s.params["CLUSTER"] = sh.cluster, s.params["EPI"] = sh.epi, s.params["STAGES"] = 4;
    s.params["SPLITK"] = sh.splitk;
    return s;
  };
  for (const Shape& sh : std::vector<Shape>{{false, 128, 128, 0, 0, 0, 1, 1},
                                            {false, 128, 128, 1, 0, 0, 1, 0},
                                            {false, 64, 128, 0, 1, 0, 1, 1},
                                            {false, 128, 128, 0, 0, 0, 2, 1},
                                            {true, 128, 128, 0, 0, 2, 1, 1},
                                            {false, 128, 128, 0, 0, 0, 1, 1, 2},
                                            {true, 128, 128, 0, 0, 2, 1, 1, 3}}) {
    const Solution s = variant(sh);
    GemmProblem p = gemm(DataType::F32, DataType::F32, false, sh.tb, 1000, 1000, 1000);
    p.compute_tf32 = true;
    const auto broken = t.violation(t.variables(s, p, dev));
    ASSERT_FALSE(broken) << s.kernel_name() << " on " << p.key() << ": " << *broken;
    jobs.emplace_back(s, p);
  }
  expect_compiles_without_spills(t, jobs, true);
}

// The 8-bit wgmma kernels (e4m3 -> bf16 / fp32, s8 -> s32; TN, BK = 128): the consumer
// arrangements, both loaders, both epilogues and a cluster compile without spills, and the device
// reference reads both input types. The constraints keep 8-bit inputs to TN, and int8 off split-K,
// consumers splitting K and 72-column tiles (no integer wgmma of that N).
TEST(CudaCompile, NvrtcCompilesEightBitWgmmaWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  // K = 4112: rows 16-byte aligned but off 128 bytes, which the cp.async loader (LOADER 1) needs.
  const GemmProblem fp8 = gemm(DataType::E4M3, DataType::BF16, true, false, 4096, 4096, 4112);
  const GemmProblem fp8_f32 = gemm(DataType::E4M3, DataType::F32, true, false, 4096, 4096, 4112);
  const GemmProblem int8 = gemm(DataType::S8, DataType::S32, true, false, 4096, 4096, 4112);
  struct Shape { int bm, bn, pingpong, coopn, loader, epi, cluster; };
  auto variant = [&](const Shape& sh) {
    Solution s = t.default_solution();
    s.params["BK"] = 128, s.params["BM"] = sh.bm, s.params["BN"] = sh.bn, s.params["PINGPONG"] = sh.pingpong;
    s.params["COOPN"] = sh.coopn, s.params["LOADER"] = sh.loader, s.params["EPI"] = sh.epi;
    s.params["CLUSTER"] = sh.cluster;
    return s;
  };
  const std::vector<Shape> shapes = {{128, 128, 1, 0, 0, 1, 1}, {128, 256, 0, 0, 0, 1, 2}, {64, 256, 0, 1, 0, 0, 1},
                                     {128, 128, 0, 0, 1, 0, 1}, {128, 80, 1, 0, 0, 0, 1}};
  std::vector<std::pair<Solution, GemmProblem>> jobs;
  for (const GemmProblem& p : {fp8, int8})
    for (const Shape& sh : shapes) {
      const Solution s = variant(sh);
      const auto broken = t.violation(t.variables(s, p, dev));
      ASSERT_FALSE(broken) << s.kernel_name() << " on " << p.key() << ": " << *broken;
      jobs.emplace_back(s, p);
    }
  const Solution f32_out = variant({128, 192, 0, 0, 0, 0, 1});
  ASSERT_FALSE(t.violation(t.variables(f32_out, fp8_f32, dev)));
  jobs.emplace_back(f32_out, fp8_f32);
  // What the constraints keep out.
  Solution split = variant({128, 128, 1, 0, 0, 0, 1});
  split.params["SPLITK"] = 2, split.params["PINGPONG"] = 0;
  EXPECT_TRUE(t.violation(t.variables(split, gemm(DataType::S8, DataType::S32, true, false, 256, 256, 8192), dev)));
  EXPECT_FALSE(t.violation(t.variables(split, gemm(DataType::E4M3, DataType::BF16, true, false, 256, 256, 8192), dev)));
  EXPECT_TRUE(t.violation(t.variables(variant({128, 72, 1, 0, 0, 0, 1}), int8, dev)));
  EXPECT_FALSE(t.violation(t.variables(variant({128, 72, 1, 0, 0, 0, 1}), fp8, dev)));
  for (const auto& [ta, tb] : std::vector<std::pair<bool, bool>>{{false, false}, {false, true}, {true, true}})
    EXPECT_TRUE(t.violation(t.variables(variant(shapes[0]), gemm(DataType::E4M3, DataType::BF16, ta, tb, 4096, 4096, 4112), dev)));
  EXPECT_TRUE(t.violation(t.variables(t.default_solution(), fp8, dev)));  // BK 64 is not one 128-byte line of fp8
  expect_compiles_without_spills(t, jobs);
  // The validator's device reference reads the 8-bit inputs.
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  for (const char* ta : {"tt_e4m3", "signed char"}) {
    gpu::CompileResult r = compiler->compile(ops::reference_kernel_request(
        dev, "reference_gemm.cuh", std::string("reference_gemm<") + ta + ", true, false>"));
    EXPECT_TRUE(r.ok) << ta << "\n" << r.log;
  }
}

// e5m2 inputs on wgmma_gemm: e4m3 x e5m2, e5m2 x e4m3 and e5m2 x e5m2 (TN, BK 128) compile without
// spills in the arrangements the e4m3 test takes, and their machine code multiplies the operands
// in their own types (where cuobjdump is found). One input type keeps its instantiation's name (the
// name a database's code objects were compiled as); two say both. The device reference reads
// e5m2 and both pairs; templates that do not read two input types never see such a problem.
TEST(CudaCompile, NvrtcCompilesE5m2WgmmaWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  auto fp8 = [](DataType a, DataType b) {
    GemmProblem p = gemm(a, DataType::BF16, true, false, 4096, 4096, 4112);
    p.b_type = b;
    return p;
  };
  const GemmProblem pairs[] = {fp8(DataType::E4M3, DataType::E5M2), fp8(DataType::E5M2, DataType::E4M3),
                               fp8(DataType::E5M2, DataType::E5M2)};
  struct Shape { int bm, bn, pingpong, coopn, loader, epi; };
  const std::vector<Shape> shapes = {{128, 128, 1, 0, 0, 1}, {64, 256, 0, 1, 0, 0}, {128, 128, 0, 0, 1, 0},
                                     {128, 80, 1, 0, 0, 0}};
  std::vector<std::pair<Solution, GemmProblem>> jobs;
  for (const GemmProblem& p : pairs)
    for (const Shape& sh : shapes) {
      Solution s = t.default_solution();
      s.params["BK"] = 128, s.params["BM"] = sh.bm, s.params["BN"] = sh.bn, s.params["PINGPONG"] = sh.pingpong;
      s.params["COOPN"] = sh.coopn, s.params["LOADER"] = sh.loader, s.params["EPI"] = sh.epi;
      const auto broken = t.violation(t.variables(s, p, dev));
      ASSERT_FALSE(broken) << s.kernel_name() << " on " << p.key() << ": " << *broken;
      jobs.emplace_back(s, p);
    }
  expect_compiles_without_spills(t, jobs);
  if (const std::string tool = tiletune::testing::cuobjdump(); !tool.empty()) {
    auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
    const char* expect[] = {".E4M3.E5M2", ".E5M2.E4M3", ".E5M2.E5M2"};
    for (std::size_t i = 0; i < 3; ++i) {
      const gpu::CompileResult r = compiler->compile(t.compile_request(jobs[i * shapes.size()].first, pairs[i], dev));
      ASSERT_TRUE(r.ok) << r.log;
      const std::string sass = tiletune::testing::sass_of(r.code.bytes, tool, "wgmma_e5m2_" + std::to_string(i));
      EXPECT_NE(sass.find(expect[i]), std::string::npos) << pairs[i].key() << ": no HGMMA " << expect[i];
    }
  }
  // The instantiation's name: e4m3 alone as before, the pair as tt_ab.
  Solution s = jobs[0].first;
  const std::string one = t.name_expression(s, gemm(DataType::E4M3, DataType::BF16, true, false, 4096, 4096, 4112));
  EXPECT_EQ(one.rfind("wgmma_gemm<tt_e4m3, tt_bf16, true, false, 128, 128, 128,", 0), 0u) << one;
  const std::string two = t.name_expression(s, pairs[0]);
  EXPECT_EQ(two.rfind("wgmma_gemm<tt_ab<tt_e4m3, tt_e5m2>, tt_bf16, true, false, 128, 128, 128,", 0), 0u) << two;
  EXPECT_EQ(t.name_expression(s, pairs[2]).rfind("wgmma_gemm<tt_e5m2, tt_bf16,", 0), 0u);
  // A template that reads one input type is not offered the pair.
  const KernelTemplate& mma = find_template("mma_gemm");
  const auto refused = mma.violation(mma.variables(mma.default_solution(), pairs[0], dev));
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("one_input_type"), std::string::npos) << *refused;
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  for (const char* ta : {"tt_e5m2", "tt_ab<tt_e4m3, tt_e5m2>", "tt_ab<tt_e5m2, tt_e4m3>"}) {
    gpu::CompileResult r = compiler->compile(ops::reference_kernel_request(
        dev, "reference_gemm.cuh", std::string("reference_gemm<") + ta + ", true, false>"));
    EXPECT_TRUE(r.ok) << ta << "\n" << r.log;
  }
}

// SPLITK and L2PROMO reach the kernel and the tensor maps; a solution from a database written
// before they existed gets the defaults, i.e. the kernel and maps it was tuned with.
TEST(CudaCompile, WgmmaSplitKAndL2PromotionDefaultsAndConstraints) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const GemmProblem odd = gemm(DataType::BF16, DataType::BF16, false, false, 1000, 1000, 1000);
  Solution old{"wgmma_gemm", {{"BM", 128}, {"BN", 128}, {"BK", 64}, {"STAGES", 4}, {"CONSUMERS", 2}, {"RASTER", 0},
                              {"GROUP", 8}, {"PINGPONG", 1}, {"LOADER", 0}, {"CLUSTER", 1}}};
  const Variables v = t.variables(old, odd, dev);
  EXPECT_EQ(v.at("SPLITK"), 1);
  EXPECT_EQ(v.at("L2PROMO"), 3);
  EXPECT_EQ(t.workspace_bytes(v), 0);
  EXPECT_EQ(v.at("OCC"), 1);
  EXPECT_EQ(v.at("COOPN"), 0);
  EXPECT_EQ(v.at("EPI"), 0);
  EXPECT_EQ(v.at("COOPK"), 0);
  EXPECT_EQ(v.at("CLUSTERN"), 1);
  EXPECT_EQ(v.at("AREG"), 0);
  EXPECT_EQ(v.at("SCHED"), 0);
  // ..., CLUSTER 1, SPLITK 1, OCC 1, COOPN 0, EPI 0, COOPK 0, CLUSTERN 1, AREG 0, SCHED 0>
  EXPECT_NE(t.name_expression(old, odd).find(", 1, 1, 1, 0, 0, 0, 1, 0, 0>"), std::string::npos) << t.name_expression(old, odd);
  EXPECT_TRUE(t.launch_dims(v).persistent);

  Solution split = t.default_solution();
  split.params["SPLITK"] = 2;
  const Variables sv = t.variables(split, odd, dev);
  EXPECT_FALSE(t.violation(sv));
  EXPECT_EQ(t.launch_dims(sv).grid[0], 128u);  // 64 tiles x 2 splits
  EXPECT_EQ(t.workspace_bytes(sv), 256 + 64 * 2 * 128 * 128 * 4);
  // 576 tiles fill the machine: no split-K; nor with too few K tiles per split.
  EXPECT_TRUE(t.violation(t.variables(split, gemm(DataType::BF16, DataType::BF16, false, false, 3000, 3000, 3000), dev)));
  split.params["SPLITK"] = 4;
  EXPECT_TRUE(t.violation(t.variables(split, gemm(DataType::BF16, DataType::BF16, false, false, 1000, 1000, 640), dev)));
  // Two blocks per SM hold twice the tiles: 190 tiles of 64 x 128 leave SMs idle only with OCC 2.
  Solution occ = t.default_solution();
  occ.params["BM"] = 64, occ.params["CONSUMERS"] = 1, occ.params["PINGPONG"] = 0, occ.params["SPLITK"] = 2;
  const GemmProblem mid = gemm(DataType::BF16, DataType::BF16, false, false, 1200, 1200, 1200);
  const auto one_block = t.violation(t.variables(occ, mid, dev));
  ASSERT_TRUE(one_block);
  EXPECT_NE(one_block->find("split_k_only_for_small_grids"), std::string::npos) << *one_block;
  occ.params["OCC"] = 2;
  const auto two_blocks = t.violation(t.variables(occ, mid, dev));
  EXPECT_FALSE(two_blocks) << *two_blocks;
  // Clusters of 8 fill 128 of 132 SMs: 130 tiles leave none idle there, 2 with single CTAs.
  Solution cl = t.default_solution();
  cl.params["PINGPONG"] = 0, cl.params["SPLITK"] = 2;
  const GemmProblem p130 = gemm(DataType::BF16, DataType::BF16, false, false, 1280, 1664, 1024);  // 10 x 13 tiles
  EXPECT_FALSE(t.violation(t.variables(cl, p130, dev)));
  cl.params["CLUSTER"] = 4, cl.params["CLUSTERN"] = 2;
  const auto clustered = t.violation(t.variables(cl, p130, dev));
  ASSERT_TRUE(clustered);
  EXPECT_NE(clustered->find("split_k_only_for_small_grids"), std::string::npos) << *clustered;

  // The L2 promotion each value asks the driver for, through a stand-in for cuTensorMapEncodeTiled.
  static std::vector<CUtensorMapL2promotion> seen;
  struct Fake {
    static CUresult encode(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                           const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                           CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill) {
      seen.push_back(l2);
      return CUDA_SUCCESS;
    }
  };
  TtGemmParams p{};
  p.a = p.b = reinterpret_cast<const void*>(std::uintptr_t(1) << 20);
  p.m = p.n = p.k = 1024, p.lda = p.ldb = p.ldc = 1024, p.batch = 1;
  for (int l2 : {0, 1, 2, 3}) gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 128, 64, 1, l2);
  gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 128, 64);
  EXPECT_EQ(seen, (std::vector<CUtensorMapL2promotion>{
                      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B}));
  EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 128, 64, 1, 4), Error);
}

// A stand-in for cuTensorMapEncodeTiled that encodes nothing and records what each map asks for:
// its element type, then its three dimensions and its box's two (innermost first).
struct TmaMaps {
  static inline std::vector<std::pair<CUtensorMapDataType, std::vector<cuuint64_t>>> seen;
  static CUresult encode(CUtensorMap*, CUtensorMapDataType dt, cuuint32_t, void*, const cuuint64_t* dims,
                         const cuuint64_t*, const cuuint32_t* box, const cuuint32_t*, CUtensorMapInterleave,
                         CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
    seen.push_back({dt, {dims[0], dims[1], dims[2], box[0], box[1]}});
    return CUDA_SUCCESS;
  }
};

// 8-bit operands (TN) move as bytes in boxes of one 128-byte line (BK = 128 elements) by BM / BN
// rows; int8's C map is int32, fp8's bf16. BK 64 is not one line of 8-bit elements: refused.
TEST(CudaCompile, WgmmaEightBitMaps) {
  auto& seen = TmaMaps::seen;
  seen.clear();
  TtGemmParams p{};
  p.a = p.b = reinterpret_cast<const void*>(std::uintptr_t(1) << 20);
  p.c = reinterpret_cast<void*>(std::uintptr_t(1) << 21);
  p.m = 1000, p.n = 600, p.k = 512, p.lda = 512, p.ldb = 512, p.ldc = 1000, p.batch = 1;
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::S8, true, false, 128, 256, 128, 1, 3, 1, DataType::S32);
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::E4M3, true, false, 128, 128, 128, 1, 3, 1,
                                       DataType::BF16);
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[0].first, CU_TENSOR_MAP_DATA_TYPE_UINT8);
  EXPECT_EQ(seen[0].second, (std::vector<cuuint64_t>{512, 1000, 1, 128, 128}));  // A: K x M, box 128 k x BM rows
  EXPECT_EQ(seen[1].second, (std::vector<cuuint64_t>{512, 600, 1, 128, 256}));   // B: K x N, box 128 k x BN rows
  EXPECT_EQ(seen[2].first, CU_TENSOR_MAP_DATA_TYPE_INT32);
  EXPECT_EQ(seen[3].first, CU_TENSOR_MAP_DATA_TYPE_UINT8);
  EXPECT_EQ(seen[5].first, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::E4M3, true, false, 128, 128, 64), Error);
}

// The TMA-store epilogue's map over C (type and box of C's element size, the kernel's chunk of
// columns) and what
// refuses it: C, ldc or the batch stride off 16 bytes (the constraint, and the encoder itself).
TEST(CudaCompile, WgmmaTmaStoreMapAndAlignment) {
  auto& seen = TmaMaps::seen;
  seen.clear();
  TtGemmParams p{};
  p.a = p.b = reinterpret_cast<const void*>(std::uintptr_t(1) << 20);
  p.c = reinterpret_cast<void*>(std::uintptr_t(1) << 21);
  p.m = 1000, p.n = 600, p.k = 512, p.lda = 1000, p.ldb = 512, p.ldc = 1000, p.batch = 1;
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 128, 64, 1, 3, 0);
  EXPECT_EQ(seen.size(), 2u);  // A and B only
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 128, 64, 1, 3, 2);
  EXPECT_EQ(seen.size(), 4u);  // EPI 2 (the threads' stores in aligned runs): no map over C either
  seen.resize(2);
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 128, 64, 1, 3, 1,
                                       DataType::BF16);
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::F16, false, false, 128, 128, 64, 1, 3, 1,
                                       DataType::F32);
  // 72- and 80-column tiles store chunks of 24 and 16 columns.
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 72, 64, 1, 3, 1,
                                       DataType::BF16);
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 80, 64, 1, 3, 1,
                                       DataType::F32);
  ASSERT_EQ(seen.size(), 14u);
  EXPECT_EQ(seen[4].first, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(seen[4].second, (std::vector<cuuint64_t>{1000, 600, 1, 64, 32}));
  EXPECT_EQ(seen[7].first, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(seen[7].second, (std::vector<cuuint64_t>{1000, 600, 1, 32, 32}));
  EXPECT_EQ(seen[10].second, (std::vector<cuuint64_t>{1000, 600, 1, 64, 24}));
  EXPECT_EQ(seen[13].second, (std::vector<cuuint64_t>{1000, 600, 1, 32, 16}));
  p.c = reinterpret_cast<void*>((std::uintptr_t(1) << 21) + 2);
  EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 128, 64, 1,
                                                    3, 1, DataType::BF16),
               Error);
  seen.clear();  // EPI 3 (stores by the producer's spare warps): no map over C, any alignment
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 128, 64, 1, 3, 3,
                                       DataType::BF16);
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 128, 64, 1,
                                                    3, 4, DataType::BF16),
               Error);  // no EPI 4
  // Clusters: each CTA loads 1 / CLUSTER of a K-major B tile's rows (and multicasts them).
  p.c = reinterpret_cast<void*>(std::uintptr_t(1) << 21);
  seen.clear();
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 64, 128, 64, 4);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].second, (std::vector<cuuint64_t>{512, 600, 1, 64, 32}));  // B: K x N, box 64 k x 128 / 4 rows
  EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 64, 128, 64, 3),
               Error);
  // Two-dimensional clusters: the CTAs of a tile row share A, each loading 1 / CLUSTERN of an
  // MN-major box's K lines or of a K-major tile's rows.
  seen.clear();
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 96, 64, 4, 3, 0,
                                       DataType::BF16, 2);
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, true, false, 128, 128, 64, 2, 3, 0,
                                       DataType::BF16, 4);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].second, (std::vector<cuuint64_t>{1000, 512, 1, 64, 32}));  // A: M x K, box 64 rows x 64 / 2 k
  EXPECT_EQ(seen[1].second, (std::vector<cuuint64_t>{512, 600, 1, 64, 24}));   // B: box 64 k x 96 / 4 rows
  EXPECT_EQ(seen[2].second, (std::vector<cuuint64_t>{512, 1000, 1, 64, 32}));  // A: K x M, box 64 k x 128 / 4 rows
  EXPECT_EQ(seen[3].second, (std::vector<cuuint64_t>{512, 600, 1, 64, 64}));
  for (const auto& [cl, bad] : std::vector<std::pair<int, int>>{{2, 3}, {2, 8}, {4, 4}})
    EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 128, 64, cl,
                                                      3, 0, DataType::BF16, bad),
                 Error);
  // An MN-major B (trans_b) in a cluster: each CTA loads the K lines of its share of every box.
  seen.clear();
  gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, true, 128, 128, 64, 4);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].second, (std::vector<cuuint64_t>{600, 512, 1, 64, 16}));  // B: N x K, box 64 rows x 64 / 4 k
  // A K-major B whose share per CTA is not whole 8-row atoms (72 rows in pairs: 36) comes in
  // boxes of one atom; 80 rows in pairs are 40 each, one box.
  for (const auto& [bn, cl, box] : std::vector<std::array<int, 3>>{{72, 2, 8}, {72, 4, 8}, {80, 4, 8}, {80, 2, 40}}) {
    seen.clear();
    gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, bn, 64, cl);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[1].second, (std::vector<cuuint64_t>{512, 600, 1, 64, cuuint64_t(box)})) << bn << " in " << cl;
  }
  EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&TmaMaps::encode, p, DataType::BF16, false, false, 128, 76, 64, 1),
               Error);  // not whole 8-row atoms at all

  const KernelTemplate& t = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  Solution s = t.default_solution();
  GemmProblem odd_ldc = gemm(DataType::BF16, DataType::BF16, true, false, 1001, 1000, 1000);  // lda = ldb = K
  EXPECT_FALSE(t.violation(t.variables(s, odd_ldc, dev)));
  const std::int64_t smem0 = t.variables(s, odd_ldc, dev).at("SMEM_BYTES");
  s.params["EPI"] = 1;
  const auto broken = t.violation(t.variables(s, odd_ldc, dev));
  ASSERT_TRUE(broken);
  EXPECT_NE(broken->find("tma_store_needs_16_byte_c"), std::string::npos) << *broken;
  const GemmProblem even = gemm(DataType::BF16, DataType::BF16, false, false, 1000, 1000, 1000);
  const Variables v = t.variables(s, even, dev);
  EXPECT_FALSE(t.violation(v));
  EXPECT_EQ(v.at("SMEM_BYTES"), smem0 + 512 * v.at("CONSUMERS"));  // every consumer's staging on 1024 bytes
  // C a view of a taller matrix (ldc 1008) with M off 16 bytes: the TMA store would write the rest of
  // the last 16-byte run of each column, rows that are the caller's (on an H100, as
  // triton-lang/triton#11583 reports; CudaDevice.WgmmaLeavesTheRowsPastMAlone).
  GemmProblem view = gemm(DataType::BF16, DataType::BF16, true, false, 1001, 1000, 1000);
  view.ldc = 1008;
  const auto past_m = t.violation(t.variables(s, view.canonical(), dev));
  ASSERT_TRUE(past_m);
  EXPECT_NE(past_m->find("tma_store_needs_16_byte_c"), std::string::npos) << *past_m;
  view.m = 1000;
  EXPECT_FALSE(t.violation(t.variables(s, view.canonical(), dev)));
}

// configs/probes/h200_odd_splitk.json stays a short probe: split-K only on odd1000 (3000^3 has 576
// tiles), L2 promotion swept on single CTAs.
TEST(CudaCompile, OddSplitKProbeConfigEnumeratesASmallSpace) {
  const tuner::TuningConfig config = tuner::load_config(std::string(TILETUNE_SOURCE_DIR) + "/configs/probes/h200_odd_splitk.json");
  const auto e = tuner::enumerate(config.templates, config.problems, fake_device(gpu::BackendKind::Cuda));
  std::size_t split[2] = {0, 0}, all[2] = {0, 0};
  for (const auto& c : e.candidates) {
    ++all[c.problem_index];
    split[c.problem_index] += c.solution.params.at("SPLITK") > 1;
  }
  EXPECT_EQ(all[0], 80u);
  EXPECT_EQ(split[0], 60u);
  EXPECT_EQ(all[1], 20u);
  EXPECT_EQ(split[1], 0u);
}

TEST(CudaCompile, ErrorsComeBackInTheLogAndBadArchesAreRefused) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  gpu::CompileRequest r;
  r.source = "template <int X> __global__ void k(int* p) { p[0] = X + undefined_name; }\n";
  r.name_expression = "k<1>";
  r.arch = "sm_90a";
  auto res = compiler->compile(r);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.log.find("undefined_name"), std::string::npos) << res.log;
  r.arch = "gfx90a";
  res = compiler->compile(r);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.log.find("gfx90a"), std::string::npos);
  EXPECT_EQ(gpu::cuda::arch_name(9, 0), "sm_90a");
  EXPECT_EQ(gpu::cuda::arch_name(8, 6), "sm_86");
}

}  // namespace
