// What the CUDA test files share: a spread of simt_gemm candidates, the fixture of the tests that
// launch kernels (they skip cleanly where no CUDA device is present and run on the H200), and the
// check of one variant launched the way the tuner and the runtime launch it.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "ops/gemm/inputs.h"
#include "ops/launch.h"
#include "solutions/kernel_template.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

namespace tiletune::testing {

// A spread of each problem's surviving candidates: every stride-th one, plus the template default.
inline std::vector<tuner::Candidate> sample(const std::vector<GemmProblem>& problems, const gpu::DeviceInfo& dev,
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

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
    dev_ = gpu::open_device(gpu::BackendKind::Cuda, 0);
  }
  std::unique_ptr<gpu::Device> dev_;
};

// Compiles and loads solution `s` of `t` for `p` and validates it against the reference, launched
// through ops::KernelLaunch as the tuner and the runtime launch it: with its zeroed workspace and
// the operand copies (REPACK) where it makes them. A compile failure is fatal (wrap the call in
// ASSERT_NO_FATAL_FAILURE); a wrong result is a failure the caller's loop goes on after.
inline void validate_as_launched(gpu::Device& dev, const KernelTemplate& t, const Solution& s, const GemmProblem& p) {
  auto r = dev.compiler().compile(t.compile_request(s, p, dev.info()));
  ASSERT_TRUE(r.ok) << s.kernel_name() << "\n" << r.log;
  auto kernel = dev.load(r.code);
  const ops::KernelLaunch launch(t, t.variables(s, p, dev.info()), p.canonical());
  gpu::DeviceBuffer ws;
  if (const auto bytes = std::size_t(launch.workspace_bytes())) {
    ws = gpu::DeviceBuffer(dev, bytes);
    dev.fill_bytes(ws.get(), 0, bytes);
  }
  ops::GemmInputs data(dev, p, false);
  auto v = data.validate_call([&](const ops::CallParams& a) { launch.launch(dev, *kernel, a, ws.get(), nullptr); });
  EXPECT_TRUE(v.ok) << s.kernel_name() << " on " << p.key() << ": " << v.reason;
  // The template's own workspace (split-K) is left zeroed, as the runtime's shared scratch needs;
  // the operand copies after it (REPACK) are not.
  if (ws.get())
    expect_left_zeroed(dev, ws.get(),
                       std::size_t(std::min(launch.workspace_bytes(), t.repack_offset(t.variables(s, p, dev.info())))),
                       s.kernel_name() + " on " + p.key());
}

// Deep split-K samples of wgmma_gemm (SPLITK >= 16, which meets in two levels: splitk_tree.h), the
// parameter set i on problem i % 3: 16, 22, 44 and 132 parts, a last K tile cut short, the last run
// of parts shorter than the others, a batch of two with beta != 0, more units than multiprocessors
// (132 parts of 6 tiles); the 128 x 128 ping-pong sets hold 128 accumulators a thread, so they meet
// in one level with eight reads in flight. One list for the compile test and the GPU sample.
inline std::vector<GemmProblem> deep_split_problems() {
  return {gemm(DataType::BF16, DataType::BF16, false, false, 200, 136, 12352),
          gemm(DataType::F16, DataType::F32, true, false, 96, 160, 34000),
          gemm(DataType::BF16, DataType::F32, true, false, 130, 100, 4200, 2, false)};
}
inline std::vector<std::map<std::string, std::int64_t>> deep_split_sets() {
  return {{{"BM", 128}, {"BN", 128}, {"CONSUMERS", 2}, {"PINGPONG", 0}, {"SPLITK", 16}},
          {{"BM", 64}, {"BN", 64}, {"CONSUMERS", 2}, {"PINGPONG", 1}, {"SPLITK", 132}},
          {{"BM", 128}, {"BN", 64}, {"CONSUMERS", 2}, {"PINGPONG", 0}, {"SPLITK", 16}},
          {{"BM", 128}, {"BN", 128}, {"CONSUMERS", 2}, {"PINGPONG", 1}, {"SPLITK", 22}},
          {{"BM", 64}, {"BN", 64}, {"CONSUMERS", 1}, {"PINGPONG", 0}, {"SPLITK", 22}},
          {{"BM", 128}, {"BN", 128}, {"CONSUMERS", 2}, {"PINGPONG", 1}, {"SPLITK", 16}},
          {{"BM", 64}, {"BN", 128}, {"CONSUMERS", 1}, {"PINGPONG", 0}, {"SPLITK", 44}}};
}

// C as a view of a taller matrix (ldc past M), the parameter set i on problem i % 5: the TMA store (EPI 1) where M
// is whole 16-byte runs (bf16, fp32 C from fp16), the threads' stores (EPI 0) where it is not (bf16, fp16 with
// beta != 0, fp32 C). One list for the compile test and the GPU sample.
inline std::vector<GemmProblem> rows_past_m_problems() {
  auto view = [](DataType in, DataType out, bool ta, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t ldc,
                 bool beta_zero = true) {
    GemmProblem p = gemm(in, out, ta, false, m, n, k, 1, beta_zero);
    p.ldc = ldc;
    if (!ta) p.lda = (m + 7) / 8 * 8;  // A of 16-byte columns, as the TMA loads need
    return p.canonical();
  };
  return {view(DataType::BF16, DataType::BF16, true, 200, 72, 128, 216),
          view(DataType::F16, DataType::F32, false, 196, 64, 64, 200),
          view(DataType::BF16, DataType::BF16, true, 201, 72, 128, 208),
          view(DataType::F16, DataType::F16, false, 250, 136, 64, 264, false),
          view(DataType::BF16, DataType::F32, true, 203, 64, 64, 208)};
}
inline std::vector<std::map<std::string, std::int64_t>> rows_past_m_sets() {
  const auto set = [](int bm, int bn, int epi) {
    return std::map<std::string, std::int64_t>{{"BM", bm}, {"BN", bn}, {"EPI", epi}};
  };
  return {set(128, 128, 1), set(128, 64, 1), set(128, 128, 0), set(128, 64, 0), set(128, 64, 0), set(64, 64, 1)};
}

// C's column phases (REPACK 2, EPI 1), the parameter set i on problem i % 4: 8 phases (bf16, ldc 1001 = M, N of
// 2051 leaving the last five phases a column short), 4 (fp16, ldc 334, beta != 0), 2 (ldc 268, one consumer, beta != 0)
// and fp32 C (4 phases of ldc 205, beta != 0); ping-pong and a 2-CTA cluster of 256-column tiles. One list for
// the compile test and the GPU sample.
inline std::vector<GemmProblem> column_phase_problems() {
  auto tn = [](DataType c, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t ldc, bool beta_zero) {
    GemmProblem p = gemm(DataType::BF16, c, true, false, m, n, k, 1, beta_zero);
    p.ldc = ldc;
    return p.canonical();
  };
  return {tn(DataType::BF16, 1001, 2051, 256, 1001, true), tn(DataType::F16, 333, 70, 320, 334, false),
          tn(DataType::BF16, 260, 64, 128, 268, false), tn(DataType::F32, 203, 45, 192, 205, false)};
}
inline std::vector<std::map<std::string, std::int64_t>> column_phase_sets() {
  const auto set = [](int bm, int bn, int consumers, int pingpong, int cluster) {
    return std::map<std::string, std::int64_t>{{"BM", bm},         {"BN", bn}, {"CONSUMERS", consumers},
                                               {"PINGPONG", pingpong}, {"CLUSTER", cluster}, {"EPI", 1},
                                               {"REPACK", kRepackColumnPhases}};
  };
  return {set(128, 128, 2, 0, 1), set(128, 64, 2, 1, 1), set(64, 128, 1, 0, 1), set(128, 64, 2, 0, 1),
          set(128, 256, 2, 0, 2)};
}

// Skinny GEMMs as the shipped bf16 / fp16 configs tile them (32-column tiles over N of 16, 8 and
// 12: a K-major B of fewer rows than the tile's box), the parameter set i on problem i % 3: split-K
// in one level and in two (16), one and two consumers, ping-pong, both epilogues, a batch of two with
// beta != 0. One list for the compile test and the GPU sample.
inline std::vector<GemmProblem> skinny_split_problems() {
  return {gemm(DataType::BF16, DataType::BF16, true, false, 1000, 16, 2048),
          gemm(DataType::F16, DataType::F16, true, false, 512, 8, 4096),
          gemm(DataType::BF16, DataType::F32, true, false, 384, 12, 1024, 2, false)};
}
inline std::vector<std::map<std::string, std::int64_t>> skinny_split_sets() {
  const auto set = [](int bm, int consumers, int pingpong, int splitk, int epi, int stages) {
    return std::map<std::string, std::int64_t>{{"BM", bm},         {"BN", 32},       {"CONSUMERS", consumers},
                                               {"PINGPONG", pingpong}, {"SPLITK", splitk}, {"EPI", epi},
                                               {"STAGES", stages}};
  };
  return {set(64, 1, 0, 2, 0, 8),  set(64, 1, 0, 16, 1, 4), set(64, 1, 0, 4, 1, 4), set(64, 2, 1, 4, 1, 8),
          set(64, 2, 1, 8, 0, 8),  set(64, 2, 1, 2, 0, 6),  set(128, 2, 0, 3, 1, 6), set(128, 2, 0, 6, 0, 4)};
}

// EPI 3 (the tile staged for the producer warpgroup's spare warps to store), the parameter set i on
// problem i % 3 of staged_store_problems(): 128-row consumers (the LM head's 256 x 128 tile and 128 x
// 256 split N), 64-row ones (two, and one alone), a 72-column tile (an odd last stmatrix group),
// clusters of 2 sharing B. One list for the compile test and the GPU sample.
inline std::vector<std::map<std::string, std::int64_t>> staged_store_sets() {
  const auto set = [](int bm, int bn, int consumers, int coopn, int cluster, int stages) {
    return std::map<std::string, std::int64_t>{{"BM", bm},       {"BN", bn},           {"CONSUMERS", consumers},
                                               {"PINGPONG", 0},  {"COOPN", coopn},     {"CLUSTER", cluster},
                                               {"EPI", 3},       {"STAGES", stages}};
  };
  return {set(256, 128, 2, 0, 1, 3), set(128, 128, 2, 0, 1, 4), set(128, 256, 2, 1, 1, 3), set(64, 128, 1, 0, 1, 4),
          set(128, 72, 2, 0, 1, 4),  set(256, 128, 2, 0, 2, 3), set(128, 128, 2, 0, 2, 4)};
}
// C's columns at every alignment (ldc 1001) and edges in M and N; C aligned; a batch of two with
// beta != 0 (EPI 2's path) and ldc 603.
inline std::vector<GemmProblem> staged_store_problems() {
  return {gemm(DataType::BF16, DataType::BF16, true, false, 1001, 200, 512),
          gemm(DataType::F16, DataType::F16, true, false, 1024, 136, 320),
          gemm(DataType::BF16, DataType::BF16, true, false, 603, 130, 256, 2, false)};
}

}  // namespace tiletune::testing
