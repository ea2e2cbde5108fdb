// The enumerator (tuner/space_walk.h: expressions bound to slots, constraints checked as soon as
// their parameters are set, whole sub-spaces rejected at once) against the plain evaluation it
// replaced, kept here as the reference: every solution of cartesian(), its variables() map,
// violation() and launch_dims(). Same candidates in the same order, same pruned list and reasons.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "common/error.h"
#include "solutions/gemm_problem.h"
#include "tests/test_util.h"
#include "tuner/config.h"
#include "tuner/enumerator.h"

using namespace tiletune;
using namespace tiletune::tuner;

namespace {

Enumeration reference(const std::vector<KernelTemplate>& templates, const std::vector<Problem>& problems,
                      const gpu::DeviceInfo& device) {
  Enumeration e;
  e.pruned_by_problem.resize(problems.size());
  for (const auto& t : templates) {
    if (!t.supports(device.backend)) continue;
    auto shared = std::make_shared<const KernelTemplate>(t);
    const std::vector<Solution> space = cartesian(t);
    for (std::size_t pi = 0; pi < problems.size(); ++pi) {
      if (problems[pi].kind() != t.problem_kind()) continue;
      auto consider = [&](const Solution& s) {
        ++e.total;
        const Variables vars = t.variables(s, problems[pi], device);
        if (auto why = t.violation(vars)) {
          const std::string reason = why->substr(0, why->find(':'));
          ++e.pruned_by_reason[reason], ++e.pruned_by_problem[pi][reason], ++e.pruned_count;
          e.pruned.push_back({pi, s, *why});
          return;
        }
        e.candidates.push_back({pi, shared, s, t.launch_dims(vars)});
      };
      const std::vector<int> copies = t.repack_offers(problems[pi]);
      for (const auto& s : space) {
        consider(s);
        for (int r : copies) {
          Solution copied = s;
          copied.params["REPACK"] = r;
          consider(copied);
        }
      }
    }
  }
  return e;
}

bool same_dims(const gpu::LaunchDims& a, const gpu::LaunchDims& b) {
  return a.block[0] == b.block[0] && a.grid[0] == b.grid[0] && a.grid[1] == b.grid[1] && a.grid[2] == b.grid[2] &&
         a.shared_bytes == b.shared_bytes && a.cluster[0] == b.cluster[0] && a.cluster[1] == b.cluster[1] &&
         a.persistent == b.persistent;
}

void expect_same(const std::vector<KernelTemplate>& templates, const std::vector<Problem>& problems,
                 const gpu::DeviceInfo& device) {
  const Enumeration want = reference(templates, problems, device);
  for (unsigned threads : {1u, 3u}) {
    const Enumeration got = enumerate(templates, problems, device, {.keep_pruned = true, .threads = threads});
    EXPECT_EQ(got.total, want.total);
    EXPECT_EQ(got.pruned_count, want.pruned_count);
    EXPECT_EQ(got.pruned_by_reason, want.pruned_by_reason);
    EXPECT_EQ(got.pruned_by_problem, want.pruned_by_problem);
    ASSERT_EQ(got.candidates.size(), want.candidates.size());
    for (std::size_t i = 0; i < want.candidates.size(); ++i) {
      const Candidate &g = got.candidates[i], &w = want.candidates[i];
      ASSERT_EQ(g.problem_index, w.problem_index) << i;
      ASSERT_EQ(g.solution, w.solution) << i << ": " << g.solution.kernel_name() << " vs " << w.solution.kernel_name();
      ASSERT_TRUE(same_dims(g.dims, w.dims)) << g.solution.kernel_name();
    }
    ASSERT_EQ(got.pruned.size(), want.pruned.size());
    for (std::size_t i = 0; i < want.pruned.size(); ++i) {
      const PrunedCandidate &g = got.pruned[i], &w = want.pruned[i];
      ASSERT_EQ(g.problem_index, w.problem_index) << i;
      ASSERT_EQ(g.solution, w.solution) << i;
      ASSERT_EQ(g.reason, w.reason) << w.solution.kernel_name();
    }
    // Without the list, the same counts.
    const Enumeration counted = enumerate(templates, problems, device, {.threads = threads});
    EXPECT_TRUE(counted.pruned.empty());
    EXPECT_EQ(counted.pruned_count, want.pruned_count);
    EXPECT_EQ(counted.candidates.size(), want.candidates.size());
  }
}

tuner::TuningConfig reference_config(const std::string& path) {
  return tuner::load_config(std::string(TILETUNE_SOURCE_DIR) + "/configs/" + path);
}

// Every `stride`-th problem: the reference takes microseconds per candidate.
std::vector<Problem> every(const std::vector<Problem>& all, std::size_t stride) {
  std::vector<Problem> out;
  for (std::size_t i = 0; i < all.size(); i += stride) out.push_back(all[i]);
  return out;
}

TEST(EnumerationReference, ShippedConvConfig) {
  const TuningConfig c = reference_config("h200/h200_conv_resnet50.json");
  expect_same(c.templates, every(c.problems, 9), tiletune::testing::fake_device(gpu::BackendKind::Cuda));
}

TEST(EnumerationReference, ShippedGemmConfigWithRepack) {
  TuningConfig c = reference_config("h200/h200_small_gemm.json");
  std::vector<Problem> problems = every(c.problems, 4);
  GemmProblem odd = problems.front().gemm();  // an odd leading dimension: REPACK copies are offered
  odd.lda = odd.rows_a() + 1;
  problems.push_back(odd.canonical());
  ASSERT_GT(repack_plan(problems.back().gemm()).bytes, 0);
  // C's columns off 16 bytes on a TN GEMM: REPACK 2 (column phases) is offered too, and with an odd
  // lda besides, both copies.
  GemmProblem phased = tiletune::testing::gemm(DataType::BF16, DataType::BF16, true, false, 1000, 256, 512);
  phased.ldc = 1001;
  problems.push_back(phased.canonical());
  ASSERT_EQ(column_phases(problems.back().gemm()).phases, 8);
  phased.lda = 513;
  phased.m = 2000, phased.ldc = 2002;
  problems.push_back(phased.canonical());
  ASSERT_EQ(column_phases(problems.back().gemm()).phases, 0);  // A off 16 bytes: copies only
  expect_same(c.templates, problems, tiletune::testing::fake_device(gpu::BackendKind::Cuda));
}

TEST(EnumerationReference, BuiltinsOnEveryBackend) {
  std::vector<Problem> problems = {GemmProblem{.m = 300, .n = 200, .k = 100}};
  for (const auto& p : every(reference_config("examples/quickstart_conv.json").problems, 3)) problems.push_back(p);
  std::vector<KernelTemplate> small;  // the builtins whose spaces the reference walks in a second
  for (const auto& t : builtin_templates())
    if (combinations(t) <= 10000) small.push_back(t);
  for (auto backend : {gpu::BackendKind::Cuda, gpu::BackendKind::Hip, gpu::BackendKind::Host})
    expect_same(small, problems, tiletune::testing::fake_device(backend));
}

// A template written to hit the binding rules: a derived value reusing a parameter's name (the
// expressions before it read the parameter), a name only a later derived value defines (unknown
// until then, skipped by a short-circuit), REPACK as a parameter, and a constraint name with ':'.
TEST(EnumerationReference, NameBindingEdgeCases) {
  static const std::map<std::string, std::string> sources = {{"edge.cuh", ""}};
  const auto spec = nlohmann::ordered_json::parse(R"({
      "name": "edge_gemm", "source": "edge.cuh", "instance": "edge<A, B>", "backends": ["cuda"], "repack": true,
      "parameters": {"A": [1, 2, 3], "REPACK": [0, 1], "B": [4, 8]},
      "default": {"A": 1, "B": 4, "REPACK": 0, "UNUSED": 7},
      "derived": [["TWICE_A", "2 * A"], ["A", "A + 10"], ["GUARDED", "A < 0 && LATER > 0"], ["LATER", "B + REPACKED"]],
      "constraints": {"a:odd": "TWICE_A % 4 != 0", "shadowed": "A > 10", "b": "B * A <= 100 || REPACK == 1",
                      "late": "LATER + GUARDED < 9"},
      "launch": {"block": "32", "grid_x": "(M + A - 1) / A", "grid_y": "LATER", "grid_z": "BATCH",
                 "shared_bytes": "UNUSED * B"}})");
  const std::vector<KernelTemplate> templates = {KernelTemplate::from_json(spec, &sources)};
  GemmProblem aligned{.m = 64, .n = 64, .k = 64}, odd{.m = 63, .n = 65, .k = 33};
  odd.lda = odd.rows_a() + 1;
  expect_same(templates, {Problem(aligned), Problem(odd.canonical())}, tiletune::testing::fake_device(gpu::BackendKind::Cuda));
}

TEST(EnumerationReference, ExpressionErrorsStillFail) {
  KernelTemplate t = find_template("simt_gemm");
  t.add_constraint("broken", "MT0 / (MT1 - MT1) > 0");
  const std::vector<KernelTemplate> templates = {t};
  const std::vector<GemmProblem> problems = {GemmProblem{.m = 256, .n = 256, .k = 256}};
  const std::string want = tiletune::testing::error_of([&] { reference(templates, {Problem(problems[0])}, tiletune::testing::fake_device(gpu::BackendKind::Cuda)); });
  const std::string got = tiletune::testing::error_of([&] { enumerate(templates, problems, tiletune::testing::fake_device(gpu::BackendKind::Cuda)); });
  EXPECT_NE(want.find("division by zero"), std::string::npos) << want;
  EXPECT_EQ(got, want);
}

}  // namespace
