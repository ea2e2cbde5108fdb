// CUDA backend. NVRTC compilation needs no GPU and runs everywhere the toolkit is; the tests that
// launch kernels skip cleanly where no CUDA device is present and run on the H200.
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
#include "tests/test_util.h"

using namespace tiletune;
namespace fs = std::filesystem;
using namespace tiletune::testing;

namespace {

// A spread of each problem's surviving candidates: every stride-th one, plus the template default.
std::vector<tuner::Candidate> sample(const std::vector<GemmProblem>& problems, const gpu::DeviceInfo& dev,
                                     std::size_t per_problem) {
  auto e = tuner::enumerate({find_template("simt_gemm")}, problems, dev);
  std::vector<tuner::Candidate> out;
  for (std::size_t pi = 0; pi < problems.size(); ++pi) {
    std::vector<tuner::Candidate> mine;
    for (const auto& c : e.candidates)
      if (c.problem_index == pi) mine.push_back(c);
    std::size_t stride = std::max<std::size_t>(1, mine.size() / per_problem);
    for (std::size_t i = 0; i < mine.size(); i += stride) out.push_back(mine[i]);
  }
  return out;
}

TEST(CudaCompile, NvrtcCompilesSimtVariantsForSm90aWithoutAGpu) {
  auto compiler = gpu::cuda::make_compiler();
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
TEST(CudaCompile, NvrtcCompilesWgmmaLoadersAndClustersForSm90a) {
  auto compiler = gpu::cuda::make_compiler();
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
  // Consumers splitting N (COOPN): a 64 x 128 tile, alone and in clusters of 2 and 4, each epilogue.
  for (const auto& p : problems)
    for (int cluster : {1, 2, 4}) {
      Solution s = t.default_solution();
      s.params["COOPN"] = 1, s.params["BM"] = 64, s.params["BN"] = 128, s.params["CONSUMERS"] = 2;
      s.params["PINGPONG"] = 0, s.params["CLUSTER"] = cluster, s.params["STAGES"] = 8;
      s.params["BK"] = 128 / size_of(p.a_type);
      const auto broken = t.violation(t.variables(s, p, dev));
      ASSERT_FALSE(broken) << s.kernel_name() << ": " << *broken;
      jobs.emplace_back(s, p);
      s.params["EPI"] = 1;  // and with the TMA-store epilogue (16-bit and fp32 C)
      jobs.emplace_back(s, p);
      s.params["COOPN"] = 0, s.params["COOPK"] = 1, s.params["STAGES"] = 6;  // consumers splitting K instead
      const auto refused = t.violation(t.variables(s, p, dev));
      ASSERT_FALSE(refused) << s.kernel_name() << ": " << *refused;
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
  // 72- and 80-column tiles (K-major B; epilogue chunks of 24 and 16 columns), each epilogue,
  // alone, in clusters sharing B (in 8-row atoms where a CTA's share is not whole atoms), and in
  // 1 x 2 and 4 x 2 clusters.
  for (const auto& p : problems) {
    if (p.trans_b) continue;
    for (const auto& [bn, cl, cln, epi] : std::vector<std::array<int, 4>>{
             {72, 1, 1, 0}, {72, 1, 2, 1}, {80, 2, 1, 1}, {80, 1, 1, 0}, {72, 2, 1, 1}, {72, 4, 2, 1}, {80, 4, 1, 0}}) {
      Solution s = t.default_solution();
      s.params["BN"] = bn, s.params["CLUSTER"] = cl, s.params["CLUSTERN"] = cln, s.params["EPI"] = epi;
      s.params["PINGPONG"] = 0, s.params["STAGES"] = 6, s.params["BK"] = 128 / size_of(p.a_type);
      const auto broken = t.violation(t.variables(s, p, dev));
      ASSERT_FALSE(broken) << s.kernel_name() << ": " << *broken;
      jobs.emplace_back(s, p);
    }
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
  auto local = gpu::cuda::make_compiler();
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
  auto compiler = gpu::cuda::make_compiler();
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  for (auto type : {DataType::F32, DataType::F16, DataType::BF16}) {
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
// Compiles each (solution, problem) with NVRTC for the fake H200, two at a time, and expects ptxas
// to report no spills.
void expect_compiles_without_spills(const KernelTemplate& t, const std::vector<std::pair<Solution, GemmProblem>>& jobs) {
  auto compiler = gpu::cuda::make_compiler();
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
  expect_compiles_without_spills(t, jobs);
}

// The transposing loader (LOADER 2) for tf32 with an MN-major operand (NN: A, TT: B, NT: both):
// cooperative, ping-pong and split-N consumers up to 64 accumulators a thread. Beyond, NVRTC's
// build spills (ping-pong 128 x 128: 176 bytes, cooperative 128 x 256: 40), which the constraint
// keeps out.
TEST(CudaCompile, NvrtcCompilesTheTransposingTf32LoaderWithoutSpills) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  std::vector<std::pair<Solution, GemmProblem>> jobs;
  struct Shape { int bm, bn, pingpong, coopn, stages, epi; };
  auto variant = [&](const Shape& sh) {
    Solution s = t.default_solution();
    s.params["LOADER"] = 2, s.params["BK"] = 32, s.params["BM"] = sh.bm, s.params["BN"] = sh.bn;
    s.params["PINGPONG"] = sh.pingpong, s.params["COOPN"] = sh.coopn, s.params["STAGES"] = sh.stages;
    s.params["EPI"] = sh.epi;
    return s;
  };
  for (const auto& [ta, tb] : std::vector<std::pair<bool, bool>>{{false, false}, {false, true}, {true, true}}) {
    GemmProblem p = gemm(DataType::F32, DataType::F32, ta, tb, 1000, 1000, 1000);
    p.compute_tf32 = true;
    for (const Shape& sh : std::vector<Shape>{{128, 128, 0, 0, 3, 1}, {128, 64, 1, 0, 3, 1}, {64, 128, 0, 1, 3, 1},
                                              {128, 64, 1, 0, 3, 0}}) {
      const Solution s = variant(sh);
      const auto broken = t.violation(t.variables(s, p, dev));
      ASSERT_FALSE(broken) << s.kernel_name() << " on " << p.key() << ": " << *broken;
      jobs.emplace_back(s, p);
    }
    for (const Shape& big : std::vector<Shape>{{128, 128, 1, 0, 3, 0}, {128, 256, 0, 0, 3, 0}})
      EXPECT_TRUE(t.violation(t.variables(variant(big), p, dev))) << p.key();
  }
  expect_compiles_without_spills(t, jobs);
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
  // ..., CLUSTER 1, SPLITK 1, OCC 1, COOPN 0, EPI 0, COOPK 0, CLUSTERN 1>
  EXPECT_NE(t.name_expression(old, odd).find(", 1, 1, 1, 0, 0, 0, 1>"), std::string::npos) << t.name_expression(old, odd);
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

// The TMA-store epilogue's map over C (type and box of C's element size, the kernel's chunk of
// columns) and what
// refuses it: C, ldc or the batch stride off 16 bytes (the constraint, and the encoder itself).
TEST(CudaCompile, WgmmaTmaStoreMapAndAlignment) {
  static std::vector<std::pair<CUtensorMapDataType, std::vector<cuuint64_t>>> seen;
  struct Fake {
    static CUresult encode(CUtensorMap*, CUtensorMapDataType dt, cuuint32_t, void*, const cuuint64_t* dims,
                           const cuuint64_t*, const cuuint32_t* box, const cuuint32_t*, CUtensorMapInterleave,
                           CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
      seen.push_back({dt, {dims[0], dims[1], dims[2], box[0], box[1]}});
      return CUDA_SUCCESS;
    }
  };
  TtGemmParams p{};
  p.a = p.b = reinterpret_cast<const void*>(std::uintptr_t(1) << 20);
  p.c = reinterpret_cast<void*>(std::uintptr_t(1) << 21);
  p.m = 1000, p.n = 600, p.k = 512, p.lda = 1000, p.ldb = 512, p.ldc = 1000, p.batch = 1;
  gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 128, 64, 1, 3, 0);
  EXPECT_EQ(seen.size(), 2u);  // A and B only
  gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 128, 64, 1, 3, 1,
                                       DataType::BF16);
  gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::F16, false, false, 128, 128, 64, 1, 3, 1,
                                       DataType::F32);
  // 72- and 80-column tiles store chunks of 24 and 16 columns.
  gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 72, 64, 1, 3, 1,
                                       DataType::BF16);
  gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 80, 64, 1, 3, 1,
                                       DataType::F32);
  ASSERT_EQ(seen.size(), 14u);
  EXPECT_EQ(seen[4].first, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(seen[4].second, (std::vector<cuuint64_t>{1000, 600, 1, 64, 32}));
  EXPECT_EQ(seen[7].first, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(seen[7].second, (std::vector<cuuint64_t>{1000, 600, 1, 32, 32}));
  EXPECT_EQ(seen[10].second, (std::vector<cuuint64_t>{1000, 600, 1, 64, 24}));
  EXPECT_EQ(seen[13].second, (std::vector<cuuint64_t>{1000, 600, 1, 32, 16}));
  p.c = reinterpret_cast<void*>((std::uintptr_t(1) << 21) + 2);
  EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 128, 64, 1,
                                                    3, 1, DataType::BF16),
               Error);
  EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 128, 64, 1,
                                                    3, 2, DataType::BF16),
               Error);
  // Clusters: each CTA loads 1 / CLUSTER of a K-major B tile's rows (and multicasts them).
  p.c = reinterpret_cast<void*>(std::uintptr_t(1) << 21);
  seen.clear();
  gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 64, 128, 64, 4);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].second, (std::vector<cuuint64_t>{512, 600, 1, 64, 32}));  // B: K x N, box 64 k x 128 / 4 rows
  EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 64, 128, 64, 3),
               Error);
  // Two-dimensional clusters: the CTAs of a tile row share A, each loading 1 / CLUSTERN of an
  // MN-major box's K lines or of a K-major tile's rows.
  seen.clear();
  gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 96, 64, 4, 3, 0,
                                       DataType::BF16, 2);
  gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, true, false, 128, 128, 64, 2, 3, 0,
                                       DataType::BF16, 4);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].second, (std::vector<cuuint64_t>{1000, 512, 1, 64, 32}));  // A: M x K, box 64 rows x 64 / 2 k
  EXPECT_EQ(seen[1].second, (std::vector<cuuint64_t>{512, 600, 1, 64, 24}));   // B: box 64 k x 96 / 4 rows
  EXPECT_EQ(seen[2].second, (std::vector<cuuint64_t>{512, 1000, 1, 64, 32}));  // A: K x M, box 64 k x 128 / 4 rows
  EXPECT_EQ(seen[3].second, (std::vector<cuuint64_t>{512, 600, 1, 64, 64}));
  for (const auto& [cl, bad] : std::vector<std::pair<int, int>>{{2, 3}, {2, 8}, {4, 4}})
    EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 128, 64, cl,
                                                      3, 0, DataType::BF16, bad),
                 Error);
  // An MN-major B (trans_b) in a cluster: each CTA loads the K lines of its share of every box.
  seen.clear();
  gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, true, 128, 128, 64, 4);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].second, (std::vector<cuuint64_t>{600, 512, 1, 64, 16}));  // B: N x K, box 64 rows x 64 / 4 k
  // A K-major B whose share per CTA is not whole 8-row atoms (72 rows in pairs: 36) comes in
  // boxes of one atom; 80 rows in pairs are 40 each, one box.
  for (const auto& [bn, cl, box] : std::vector<std::array<int, 3>>{{72, 2, 8}, {72, 4, 8}, {80, 4, 8}, {80, 2, 40}}) {
    seen.clear();
    gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, bn, 64, cl);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[1].second, (std::vector<cuuint64_t>{512, 600, 1, 64, cuuint64_t(box)})) << bn << " in " << cl;
  }
  EXPECT_THROW(gpu::cuda::encode_tma_gemm_arguments(&Fake::encode, p, DataType::BF16, false, false, 128, 76, 64, 1),
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
}

// configs/h200_odd_splitk.json stays a short probe: split-K only on odd1000 (3000^3 has 576
// tiles), L2 promotion swept on single CTAs.
TEST(CudaCompile, OddSplitKProbeConfigEnumeratesASmallSpace) {
  const tuner::TuningConfig config = tuner::load_config(std::string(TILETUNE_SOURCE_DIR) + "/configs/h200_odd_splitk.json");
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
  auto compiler = gpu::cuda::make_compiler();
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

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
    dev_ = gpu::open_device(gpu::BackendKind::Cuda, 0);
  }
  std::unique_ptr<gpu::Device> dev_;
};

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
      const GemmProblem& p = problems[c.problem_index];
      auto r = dev_->compiler().compile(c.tmpl->compile_request(c.solution, p, dev_->info()));
      ASSERT_TRUE(r.ok) << c.solution.kernel_name() << "\n" << r.log;
      auto kernel = dev_->load(r.code);
      // As the tuner and the runtime launch it: with its operand copies (REPACK) where it makes them.
      const ops::KernelLaunch launch(*c.tmpl, c.tmpl->variables(c.solution, p, dev_->info()), p.canonical());
      gpu::DeviceBuffer ws;
      if (auto bytes = std::size_t(launch.workspace_bytes())) {
        ws = gpu::DeviceBuffer(*dev_, bytes);
        dev_->fill_bytes(ws.get(), 0, bytes);
      }
      ops::GemmInputs data(*dev_, p, false);
      auto v = data.validate_call([&](const ops::CallParams& a) { launch.launch(*dev_, *kernel, a, ws.get(), nullptr); });
      EXPECT_TRUE(v.ok) << c.solution.kernel_name() << " on " << p.key() << ": " << v.reason;
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
    const Solution& s = w.solution;
    const Variables& vars = w.vars;
    const auto& kernel = w.kernel;
    const auto& ws = w.ws;
    const std::size_t ws_bytes = ws.size();
    const gpu::LaunchDims dims = t.launch_dims(vars);
    ops::GemmInputs data(*dev_, p, false);
    const std::int64_t stride_c = p.stride_c ? p.stride_c : p.ldc * p.n;
    const std::size_t c_bytes = std::size_t((p.batch - 1) * stride_c + p.ldc * p.n) * size_of(p.c_type);
    std::vector<std::vector<std::uint8_t>> outputs;
    for (int run = 0; run < 2; ++run) {
      auto v = data.validate([&](TtGemmParams a) {
        a.workspace = ws.get();
        auto bytes = ops::kernel_arguments(t, a, p, vars);
        dev_->launch(*kernel, dims, bytes.data(), bytes.size());
        dev_->synchronize();
        outputs.emplace_back(c_bytes);
        dev_->copy_to_host(outputs.back().data(), a.c, c_bytes);
      });
      EXPECT_TRUE(v.ok) << s.kernel_name() << " on " << p.key() << ": " << v.reason;
    }
    EXPECT_TRUE(outputs[0] == outputs[1]) << s.kernel_name() << " on " << p.key() << ": not deterministic";
    if (ws_bytes) {
      std::vector<std::uint8_t> host(ws_bytes, 1);
      dev_->copy_to_host(host.data(), ws.get(), ws_bytes);
      EXPECT_EQ(std::count(host.begin(), host.end(), std::uint8_t(0)), std::ptrdiff_t(ws_bytes))
          << s.kernel_name() << ": workspace not left zeroed";
    }
  }
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
  const KernelTemplate& t = find_template("wgmma_gemm");
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
    ops::GemmInputs data(*dev_, p, false);
    for (bool small_grid : {false, true}) {
      gpu::LaunchDims dims = t.launch_dims(w.vars);
      if (small_grid) dims.grid[0] = 2;
      auto v = data.validate([&](TtGemmParams a) {
        a.workspace = w.ws.get();
        auto bytes = ops::kernel_arguments(t, a, p, w.vars);
        dev_->launch(*w.kernel, dims, bytes.data(), bytes.size());
      });
      EXPECT_TRUE(v.ok) << w.solution.kernel_name() << " on " << p.key() << (small_grid ? " (two CTAs)" : "") << ": "
                        << v.reason;
    }
    ++checked;
  }
  EXPECT_EQ(checked, cases.size());
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

// Device::hold keeps the stream busy for the time asked, and what is enqueued behind it runs
// after it: the timing loop relies on both to time short kernels without launch gaps.
TEST_F(CudaDevice, HoldKeepsTheStreamBusyForTheTimeAsked) {
  gpu::Event a = dev_->create_event(), b = dev_->create_event(), c = dev_->create_event();
  ASSERT_TRUE(dev_->hold(0.01));  // the first call loads (JIT-compiles) the spin kernel: not part of the timing
  dev_->synchronize();
  dev_->record(a);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(dev_->hold(5.0));
  const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  dev_->record(b);
  EXPECT_FALSE(dev_->done(b));  // behind a 5 ms spin: the host did not wait for it
  EXPECT_LT(host_ms, 2.0);
  ASSERT_TRUE(dev_->hold(0.5));
  dev_->record(c);
  const float held = dev_->elapsed_ms(a, b), short_hold = dev_->elapsed_ms(b, c);
  dev_->destroy_event(a), dev_->destroy_event(b), dev_->destroy_event(c);
  EXPECT_GE(held, 4.9f);
  EXPECT_LT(held, 50.0f);
  EXPECT_GE(short_hold, 0.45f);
  EXPECT_LT(short_hold, held);
}

TEST_F(CudaDevice, DeviceReferenceMatchesTheHostReference) {
  for (auto p : {gemm(DataType::BF16, DataType::F32, true, false, 300, 170, 520, 2, false),
                 gemm(DataType::F32, DataType::F32, false, true, 129, 64, 1000)}) {
    ops::GemmInputs host(*dev_, p, false, 42, /*device_reference_flops=*/1e300);
    ops::GemmInputs device(*dev_, p, false, 42, /*device_reference_flops=*/0);
    ASSERT_EQ(host.reference().size(), device.reference().size());
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < host.reference().size(); ++i) {
      err += std::pow(host.reference()[i] - device.reference()[i], 2);
      ref += std::pow(host.reference()[i], 2);
    }
    EXPECT_LT(std::sqrt(err / ref), 1e-12) << p.key();
  }
}

// C of `data`'s problem made from its reference, rounded to the C type, padding and gaps poisoned.
std::vector<std::uint8_t> output_from_reference(const ops::GemmInputs& data) {
  const GemmProblem& p = data.problem();
  std::vector<std::uint8_t> out(std::size_t(p.elements_c()) * size_of(p.c_type), 0xFF);
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t i = 0; i < p.m; ++i)
        ops::store_element(out.data(), b * p.stride_c + j * p.ldc + i, p.c_type,
                             float(data.reference()[std::size_t((b * p.n + j) * p.m + i)]));
  return out;
}

// The output check on the device (what validation runs on a GPU) against the same check over a
// host copy of C, on outputs made from the reference: correct, perturbed, with NaN / inf, with
// padding or a gap between batches written; and the device reset of C (poison, or C0 for beta != 0).
TEST_F(CudaDevice, DeviceOutputCheckMatchesTheHostCheck) {
  GemmProblem gapped = gemm(DataType::F32, DataType::F32, false, false, 100, 37, 64, 3, false);
  gapped.ldc = 104, gapped.stride_c = 104 * 37 + 50;
  GemmProblem padded = gemm(DataType::F16, DataType::F16, true, false, 129, 64, 1000);
  padded.ldc = 131;
  const std::vector<GemmProblem> problems = {gapped, padded, gemm(DataType::BF16, DataType::BF16, true, false, 300, 170, 520, 2, false),
                                             gemm(DataType::F32, DataType::F32, false, true, 1500, 1300, 64)};
  std::uint64_t seed = 1;
  for (const GemmProblem& p : problems) {
    // Both references, so that both the uploaded host reference and the device one are covered.
    for (double device_reference_flops : {1e300, 0.0}) {
      ops::GemmInputs data(*dev_, p, false, seed++, device_reference_flops);
      const GemmProblem& q = data.problem();
      const std::string key = q.key();
      void* c = data.params(0).c;
      const std::size_t bytes = std::size_t(q.elements_c()) * size_of(q.c_type);
      std::vector<std::uint8_t> initial(bytes), now(bytes);
      dev_->copy_to_host(initial.data(), c, bytes);
      auto check = [&](const std::vector<std::uint8_t>& out, const std::string& what) {
        dev_->copy_to_device(c, out.data(), out.size());
        ops::ValidationResult d = data.check_output(), h = data.check_output_on_host();
        expect_same_verdict(d, h, key + " " + what);
        return d;
      };
      auto at = [&](std::int64_t i, std::int64_t j, std::int64_t b) { return b * q.stride_c + j * q.ldc + i; };
      const std::vector<std::uint8_t> good = output_from_reference(data);
      EXPECT_TRUE(check(good, "correct").ok) << key;

      std::vector<std::uint8_t> out = good;
      for (std::int64_t b = 0; b < q.batch; ++b)
        for (std::int64_t j = 0; j < q.n; ++j)
          for (std::int64_t i = 0; i < q.m; ++i) {
            const std::int64_t idx = at(i, j, b);
            ops::store_element(out.data(), idx, q.c_type,
                                 float(ops::load_element(good.data(), idx, q.c_type) * ((i + j) % 3 ? 1.05 : 0.9)));
          }
      tiletune::ops::ValidationResult v = check(out, "perturbed");
      EXPECT_FALSE(v.ok) << key;
      EXPECT_GT(v.rel_error, 0.005) << key;

      out = good;
      ops::store_element(out.data(), at(q.m / 2, q.n - 1, q.batch - 1), q.c_type, NAN);
      ops::store_element(out.data(), at(q.m - 1, q.n / 3, 0), q.c_type, NAN);  // the lower one is reported
      v = check(out, "NaN");
      EXPECT_FALSE(v.ok);
      EXPECT_NE(v.reason.find("C(" + std::to_string(q.m - 1) + "," + std::to_string(q.n / 3) + ", batch 0) is "),
                std::string::npos) << v.reason;
      out = good;
      ops::store_element(out.data(), at(0, q.n - 1, q.batch - 1), q.c_type, -INFINITY);
      EXPECT_NE(check(out, "inf").reason.find("is -inf"), std::string::npos) << key;
      if (q.ldc > q.m) {
        out = good;
        ops::store_element(out.data(), at(q.m, q.n / 2, 0), q.c_type, 0.5f);  // padding before a later NaN
        ops::store_element(out.data(), at(1, q.n - 1, 0), q.c_type, NAN);
        EXPECT_NE(check(out, "padding").reason.find("wrote outside C: row " + std::to_string(q.m)), std::string::npos) << key;
        ops::store_element(out.data(), at(2, 0, 0), q.c_type, NAN);  // a NaN before the padding
        EXPECT_NE(check(out, "NaN before padding").reason.find("C(2,0, batch 0) is "), std::string::npos) << key;
      }
      if (q.batch > 1 && q.stride_c > q.ldc * q.n) {
        out = good;
        ops::store_element(out.data(), q.stride_c + q.ldc * q.n + 3, q.c_type, 1.f);
        v = check(out, "gap");
        EXPECT_FALSE(v.ok);
        EXPECT_EQ(v.rel_error, 0);
        EXPECT_EQ(v.reason, "wrote between batches of C at element " + std::to_string(q.stride_c + q.ldc * q.n + 3));
      }

      data.reset_output();
      dev_->synchronize();
      dev_->copy_to_host(now.data(), c, bytes);
      if (q.beta_zero) EXPECT_EQ(now, std::vector<std::uint8_t>(bytes, 0xFF)) << key;
      else EXPECT_EQ(now, initial) << key << ": reset_output restores C0 on the device";
    }
  }
}

TEST_F(CudaDevice, SweepThenRuntimeDispatchOnTheGpu) {
  fs::path dir = fs::temp_directory_path() / ("tiletune-cuda-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string db = (dir / "cuda.db").string();
  const std::string json = R"({
    "problems": [{"dtype": "f32", "transA": "T", "transB": "N", "m": 777, "n": 512, "k": 300}],
    "templates": {"simt_gemm": {"parameters": {"MT0": [64, 128], "MT1": [64, 128], "DU": [8], "PAD": [4], "DB": [1]}}},
    "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 10, "target_ms": 5}
  })";
  auto config = tuner::parse_config(json, dir.string());
  auto s = cuda_sweep_one_winner(json, dir.string(), db);
  ASSERT_EQ(s.winners.size(), 1u);
  EXPECT_GT(s.winners[0].vendor_tflops, 0) << "cuBLAS must have been timed alongside";

  Handle h(db, "cuda");
  ops::GemmInputs data(*dev_, config.problems[0].gemm(), false);
  const GemmProblem& p = data.problem();
  auto v = data.validate([&](const TtGemmParams& a) {
    h.gemm(TILETUNE_OP_T, TILETUNE_OP_N, p.m, p.n, p.k, a.alpha, a.a, TILETUNE_R_32F, p.lda, a.b, p.ldb, a.beta, a.c,
           TILETUNE_R_32F, p.ldc);
    h.synchronize();
  });
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(h.stats().tuned, 1u);
  EXPECT_EQ(h.stats().jit_compiles, 0u);
  fs::remove_all(dir);
}

// The runtime runs a TMA-store winner (its map over C encoded for the caller's C), and a C
// pointer off 16 bytes, which the TMA store cannot take, goes to another kernel instead of
// failing: the same numbers either way.
TEST_F(CudaDevice, RuntimeRunsTheTmaStoreWinnerAndRoutesAMisalignedCElsewhere) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  fs::path dir = fs::temp_directory_path() / ("tiletune-cuda-tma-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "tma.db").string();
  const std::string json = R"({
    "problems": [{"dtype": "bf16", "transA": "N", "transB": "N", "m": 1000, "n": 1000, "k": 1000}],
    "templates": {"wgmma_gemm": {"parameters": {"BM": [64], "BN": [128], "STAGES": [6], "CONSUMERS": [2],
      "PINGPONG": [0], "COOPN": [1], "CLUSTER": [2], "GROUP": [8], "RASTER": [0], "SPLITK": [1], "EPI": [1]}}},
    "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 10, "target_ms": 5}
  })";
  const auto config = tuner::parse_config(json, dir.string());
  const auto s = cuda_sweep_one_winner(json, dir.string(), db);
  ASSERT_EQ(s.winners.size(), 1u);
  EXPECT_NE(s.winners[0].kernel_name.find("EPI-1"), std::string::npos) << s.winners[0].kernel_name;

  Handle h(db, "cuda");
  ops::GemmInputs data(*dev_, config.problems[0].gemm(), false);
  const GemmProblem& p = data.problem();
  const std::size_t c_elems = std::size_t(p.ldc * p.n);
  std::vector<std::uint16_t> tuned_out(c_elems), other_out(c_elems);
  auto v = data.validate([&](const TtGemmParams& a) {
    h.gemm(TILETUNE_OP_N, TILETUNE_OP_N, p.m, p.n, p.k, a.alpha, a.a, TILETUNE_R_16BF, p.lda, a.b, p.ldb, a.beta, a.c,
           TILETUNE_R_16BF, p.ldc);
    h.synchronize();
    dev_->copy_to_host(tuned_out.data(), a.c, c_elems * 2);
    // The same product into C one element (2 bytes) past a 16-byte boundary.
    gpu::DeviceBuffer shifted(*dev_, (c_elems + 1) * 2);
    auto* c1 = static_cast<std::uint8_t*>(shifted.get()) + 2;
    h.gemm(TILETUNE_OP_N, TILETUNE_OP_N, p.m, p.n, p.k, a.alpha, a.a, TILETUNE_R_16BF, p.lda, a.b, p.ldb, 0.0f, c1,
           TILETUNE_R_16BF, p.ldc);
    h.synchronize();
    dev_->copy_to_host(other_out.data(), c1, c_elems * 2);
  });
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(h.stats().calls, 2u);
  EXPECT_EQ(h.stats().tuned, 1u);  // the misaligned call did not run the TMA-store winner
  auto bf16 = [](std::uint16_t b) { std::uint32_t u = std::uint32_t(b) << 16; float f; std::memcpy(&f, &u, 4); return f; };
  double worst = 0;
  for (std::int64_t j = 0; j < p.n; ++j)
    for (std::int64_t i = 0; i < p.m; ++i) {
      const float x = bf16(tuned_out[j * p.ldc + i]), y = bf16(other_out[j * p.ldc + i]);
      worst = std::max(worst, double(std::fabs(x - y)) / (1.0 + std::fabs(x)));
    }
  EXPECT_LT(worst, 2e-2) << "the misaligned call's kernel disagrees with the TMA-store winner";
  fs::remove_all(dir);
}

}  // namespace
