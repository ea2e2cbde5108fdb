// Helpers of the CUDA convolution template tests (test_cuda_conv.cpp, test_cuda_mma_conv.cpp).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ops/arguments.h"
#include "ops/launch.h"
#include "gpu/backend.h"
#include "solutions/kernel_template.h"
#include "ops/conv/inputs.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

namespace tiletune::testing {

// Per problem: every stride-th candidate of template `name` (about `per` of them), the first
// candidate of each switch (split-K, flat walk, staged epilogue) and the default when enumerated.
// `t` may be a narrowed copy of a template (set_values): its space enumerates faster.
// switches_per_direction: the first of each switch once per convolution direction instead of once
// per problem (a compile-only test: a switch's code is the same for every problem of a direction,
// the problems' corners are compiled by their stride-picked and default candidates).
inline std::vector<tuner::Candidate> conv_sample(const KernelTemplate& t, const std::vector<Problem>& problems,
                                                 const gpu::DeviceInfo& dev, std::size_t per,
                                                 bool switches_per_direction = false) {
  const auto e = tuner::enumerate({t}, problems, dev);
  std::vector<tuner::Candidate> out;
  std::set<std::string> seen_in_direction[3];
  for (std::size_t pi = 0; pi < problems.size(); ++pi) {
    std::vector<tuner::Candidate> mine;
    for (const auto& c : e.candidates)
      if (c.problem_index == pi) mine.push_back(c);
    const std::size_t stride = std::max<std::size_t>(1, mine.size() / per);
    // Besides every stride-th, the first candidate that sets each of these away from its default
    // (split-K; mma_conv's flat walk and staged epilogue; wgmma_narrow_wgrad's row groups).
    const auto& defaults = t.defaults();
    std::set<std::string> seen_in_problem;
    std::set<std::string>& seen =
        switches_per_direction ? seen_in_direction[int(problems[pi].conv().direction)] : seen_in_problem;
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const auto& params = mine[i].solution.params;
      bool first = false;
      for (const char* key : {"SPLITK", "FLAT", "EPI", "ROWS"})
        if (params.count(key) && params.at(key) != defaults.at(key)) first = seen.insert(key).second || first;
      if (i % stride == 0 || first || params == defaults) out.push_back(mine[i]);
    }
  }
  return out;
}
inline std::vector<tuner::Candidate> conv_sample(const std::string& name, const std::vector<Problem>& problems,
                                                 const gpu::DeviceInfo& dev, std::size_t per,
                                                 bool switches_per_direction = false) {
  return conv_sample(find_template(name), problems, dev, per, switches_per_direction);
}

// Candidates of template `name` from a table, each admitted (a test failure where one is not): the
// parameters every row shares, then a row a variant (the problem's index first, then the values of
// `columns`), each over the first sampled candidate of its problem.
inline std::vector<tuner::Candidate> conv_rows(const std::string& name, const std::vector<Problem>& ps,
                                               const gpu::DeviceInfo& dev,
                                               const std::map<std::string, std::int64_t>& shared,
                                               const std::vector<std::string>& columns,
                                               const std::vector<std::vector<int>>& rows) {
  const std::vector<tuner::Candidate> base = conv_sample(name, ps, dev, 1);
  std::vector<tuner::Candidate> out;
  for (const std::vector<int>& row : rows) {
    EXPECT_EQ(row.size(), columns.size() + 1);
    const std::size_t problem = std::size_t(row.at(0));
    for (const auto& b : base)
      if (b.problem_index == problem) {
        tuner::Candidate c = b;
        for (const auto& [param, value] : shared) c.solution.params[param] = value;
        for (std::size_t i = 0; i < columns.size(); ++i) c.solution.params[columns[i]] = row.at(i + 1);
        const auto broken = c.tmpl->violation(c.tmpl->variables(c.solution, ps[problem], dev));
        EXPECT_FALSE(broken) << c.solution.kernel_name() << ": " << *broken;
        if (!broken) out.push_back(c);
        break;
      }
  }
  return out;
}

// Narrows `t` (a copy the caller keeps: the candidates point to it) to `key`, its split parameter,
// at the deepest value its space lists, and returns the first candidate of each problem: the
// split-K reduction's compile-time limits must admit every split a template offers (a template's
// largest split once failed a static_assert in a sweep).
inline std::vector<tuner::Candidate> deepest_split(KernelTemplate& t, const std::string& key,
                                                   const std::vector<Problem>& problems, const gpu::DeviceInfo& dev) {
  std::int64_t deepest = 0;
  for (const auto& [param, values] : t.parameters())
    if (param == key) deepest = *std::max_element(values.begin(), values.end());
  t.set_values(key, {deepest});
  std::vector<tuner::Candidate> out;
  std::set<std::size_t> seen;
  for (const auto& c : tuner::enumerate({t}, problems, dev).candidates)
    if (seen.insert(c.problem_index).second) out.push_back(c);
  return out;
}

// Compiles each of `cands` with `compiler` (NVRTC) and ptxas -v: every compile must succeed with no
// spill stores (at most max_spill_bytes) and no wgmma serialised. Returns the values each parameter took across the sample, so that a caller can
// check the sample reached the variants it is about.
inline std::map<std::string, std::set<std::int64_t>> expect_no_spills(gpu::Compiler& compiler,
                                                                      const std::vector<tuner::Candidate>& cands,
                                                                      const std::vector<Problem>& problems,
                                                                      const gpu::DeviceInfo& dev,
                                                                      int max_spill_bytes = 0) {
  const std::regex spill("([0-9]+) bytes spill stores");
  std::map<std::string, std::set<std::int64_t>> values;
  for (const auto& c : cands) {
    gpu::CompileRequest req = c.tmpl->compile_request(c.solution, problems[c.problem_index], dev);
    req.options.push_back("--ptxas-options=-v");
    const gpu::CompileResult r = compiler.compile(req);
    EXPECT_TRUE(r.ok) << c.solution.kernel_name() << "\n" << r.log;
    std::smatch ms;
    EXPECT_TRUE(!r.ok || (std::regex_search(r.log, ms, spill) && std::stoi(ms[1].str()) <= max_spill_bytes))
        << c.solution.kernel_name() << " spills:\n" << r.log;
    // ptxas's performance warning when it cannot keep wgmma in flight (a register it cannot prove
    // untouched while an asynchronous wgmma reads it, e.g. an A fragment refilled too early).
    EXPECT_EQ(r.log.find("serialized"), std::string::npos) << c.solution.kernel_name() << "\n" << r.log;
    for (const auto& [name, v] : c.solution.params) values[name].insert(v);
  }
  return values;
}

// A sample of template `name` (`per` candidates a problem) compiled for sm_90a by NVRTC without spills or serialised
// wgmma; parameter `varied` must take more than one value across it.
inline void compile_sample(const char* name, const std::vector<Problem>& ps, const char* varied, std::size_t per) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const auto cands = conv_sample(name, ps, dev, per);
  ASSERT_FALSE(cands.empty());
  EXPECT_GT(expect_no_spills(*compiler, cands, ps, dev)[varied].size(), 1u) << varied << " takes one value in the sample";
  std::printf("%s: %zu candidates compiled\n", name, cands.size());
}

// Compiles every candidate on all cores (NVRTC compiles concurrently in threads, as the tuner's
// compile pool does); results in the candidates' order.
inline std::vector<gpu::CompileResult> compile_all(const gpu::Device& dev, const std::vector<tuner::Candidate>& cands,
                                                   const std::vector<Problem>& problems) {
  std::vector<gpu::CompileResult> out(cands.size());
  std::atomic<std::size_t> next{0};
  const unsigned n = std::max(1u, std::min(std::thread::hardware_concurrency(), unsigned(cands.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < n; ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < cands.size();)
        out[i] = dev.compiler().compile(
            cands[i].tmpl->compile_request(cands[i].solution, problems[cands[i].problem_index], dev.info()));
    });
  for (auto& t : pool) t.join();
  return out;
}

// Runs one compiled candidate twice against the fp64 reference (split-K must leave its workspace
// zeroed for the second run); failures are reported through gtest.
inline void validate_conv_candidate(gpu::Device& dev, const tuner::Candidate& c, const Problem& p,
                                    const gpu::CompileResult& r) {
  ASSERT_TRUE(r.ok) << c.solution.kernel_name() << "\n" << r.log;
  auto kernel = dev.load(r.code);
  const ops::KernelLaunch launch(*c.tmpl, c.tmpl->variables(c.solution, p, dev.info()), p.canonical());
  gpu::DeviceBuffer workspace;
  if (std::int64_t bytes = launch.workspace_bytes(); bytes > 0) {
    workspace = gpu::DeviceBuffer(dev, std::size_t(bytes));
    dev.fill_bytes(workspace.get(), 0, std::size_t(bytes));
  }
  ops::ConvInputs data(dev, p.conv(), false);
  for (int run = 0; run < 2; ++run) {
    ops::ValidationResult v = data.validate_call([&](const ops::CallParams& a) {
      launch.launch(dev, *kernel, a, workspace.get(), nullptr);
    });
    EXPECT_TRUE(v.ok) << c.solution.kernel_name() << " on " << p.key() << " (run " << run << "): " << v.reason;
  }
  // Every template's contract: the workspace is left as zeroed as it came (the runtime shares it).
  if (workspace.get())
    expect_left_zeroed(dev, workspace.get(), std::size_t(launch.workspace_bytes()),
                       c.solution.kernel_name() + " on " + p.key());
}

// Every candidate of `cands`, compiled in parallel first, validated one after another.
inline std::size_t validate_conv_candidates(gpu::Device& dev, const std::vector<tuner::Candidate>& cands,
                                            const std::vector<Problem>& problems) {
  const std::vector<gpu::CompileResult> code = compile_all(dev, cands, problems);
  for (std::size_t i = 0; i < cands.size(); ++i)
    validate_conv_candidate(dev, cands[i], problems[cands[i].problem_index], code[i]);
  return cands.size();
}

}  // namespace tiletune::testing
