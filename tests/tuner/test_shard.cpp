// The split of a config into shards (tuner/shard.h) as pure functions: the same split for the same
// inputs, every unit of work in exactly one shard, the load within its bound; the shard from the
// environment of Slurm and MPI launchers; the database path template.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "common/error.h"
#include "tuner/config.h"
#include "tuner/shard.h"

using namespace tiletune;
using tuner::ShardId;

namespace {

// `n` GEMMs of sizes spread over two orders of magnitude of FLOPs, host templates only.
tuner::TuningConfig config_of(int n, const std::string& strategy = "exhaustive") {
  std::string problems;
  for (int i = 0; i < n; ++i) {
    const int m = 32 + 37 * (i % 11), k = 16 + 29 * (i % 7);
    problems += std::string(i ? "," : "") + R"({"dtype": "f32", "transA": "N", "transB": "N", "m": )" +
                std::to_string(m) + R"(, "n": )" + std::to_string(48 + 8 * i) + R"(, "k": )" + std::to_string(k) + "}";
  }
  return tuner::parse_config(R"({"problems": [)" + problems + R"(],
      "templates": {"host_gemm": {"parameters": {"MT0": [16, 32], "MT1": [16, 32], "KU": [16], "TT0": [8], "TT1": [2, 4]}}},
      "search": {"strategy": ")" + strategy + R"(", "budget": )" + (strategy == "exhaustive" ? "0" : "2") + "}}",
                             ".");
}

std::map<std::pair<std::size_t, int>, int> owners(const tuner::ShardPlan& plan) {
  std::map<std::pair<std::size_t, int>, int> seen;
  for (std::size_t s = 0; s < plan.shards.size(); ++s)
    for (const auto& u : plan.shards[s]) {
      EXPECT_TRUE(seen.emplace(std::make_pair(u.problem, u.part), int(s)).second)
          << "problem " << u.problem << " part " << u.part << " is in two shards";
    }
  return seen;
}

TEST(Shard, EveryUnitIsInExactlyOneShardAndTheLoadIsWithinTheBound) {
  const tuner::TuningConfig c = config_of(40);
  const auto costs = tuner::problem_costs(c, gpu::BackendKind::Host);
  ASSERT_EQ(costs.size(), 40u);
  for (int n : {1, 2, 3, 4, 7, 16, 64}) {
    const tuner::ShardPlan plan = tuner::plan_shards(c, costs, n);
    ASSERT_EQ(int(plan.shards.size()), n);
    const auto seen = owners(plan);
    // Every problem, every part of a parted one.
    std::map<std::size_t, std::set<int>> parts;
    for (const auto& s : plan.shards)
      for (const auto& u : s) {
        parts[u.problem].insert(u.part);
        EXPECT_LT(u.part, u.parts);
      }
    ASSERT_EQ(parts.size(), 40u) << n << " shards";
    for (const auto& s : plan.shards)
      for (const auto& u : s) EXPECT_EQ(int(parts[u.problem].size()), u.parts);
    EXPECT_NEAR(std::accumulate(plan.load.begin(), plan.load.end(), 0.0), plan.total, plan.total * 1e-12);
    // Greedy longest-first: the heaviest shard is over the mean by less than the largest unit.
    double largest = 0;
    for (const auto& s : plan.shards)
      for (const auto& u : s) largest = std::max(largest, u.cost);
    const double mean = plan.total / n;
    for (const auto& s : plan.shards)
      for (const auto& u : s)
        EXPECT_TRUE(u.cost <= mean * (1 + 1e-12) || std::size_t(u.parts) == costs[u.problem].candidates)
            << "a unit larger than a shard's share: it should have been parted";
    EXPECT_LE(*std::max_element(plan.load.begin(), plan.load.end()), mean + largest) << n << " shards";
  }
}

TEST(Shard, TheCostIsCandidatesTimesTheirMeasuringTime) {
  tuner::BenchmarkOptions b;
  b.warmup = 2, b.min_iterations = 5, b.max_iterations = 50, b.target_ms = 100;
  const tuner::CostRates r{1e10, 0.01};
  // 1e6 FLOPs: 0.1 ms a run, the iteration cap binds: 0.01 + 1e-4 x (1 + 2 + 50).
  EXPECT_NEAR(tuner::candidate_seconds(1e6, b, r), 0.01 + 1e-4 * 53, 1e-12);
  // 1e9 FLOPs: 0.1 s a run, min_iterations binds: 0.01 + 0.1 x (1 + 2 + 5).
  EXPECT_NEAR(tuner::candidate_seconds(1e9, b, r), 0.01 + 0.1 * 8, 1e-12);
  // In between the target rules: 10 ms a run, 10 timed.
  EXPECT_NEAR(tuner::candidate_seconds(1e8, b, r), 0.01 + 0.01 * (3 + 10), 1e-12);
  // Small problems cost about the same (the overhead), large ones grow with their FLOPs.
  EXPECT_LT(tuner::candidate_seconds(1e6, b, r) / tuner::candidate_seconds(1e3, b, r), 1.6);
  EXPECT_NEAR(tuner::candidate_seconds(1e11, b, r) / tuner::candidate_seconds(1e10, b, r), 10, 0.2);
}

TEST(Shard, TheSplitIsBalancedByCostNotByCount) {
  // One problem 64x the FLOPs of each of the others: a count split puts it with 2 others and its
  // shard does most of the work; the cost split parts it over all 4 shards.
  tuner::TuningConfig c = tuner::parse_config(R"({"problems": [
      {"dtype": "f32", "transA": "N", "transB": "N", "m": 1024, "n": 1024, "k": 256},
      {"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 64, "k": 64},
      {"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 64, "k": 65},
      {"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 64, "k": 66},
      {"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 64, "k": 67},
      {"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 64, "k": 68},
      {"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 64, "k": 69},
      {"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 64, "k": 70}],
      "templates": {"host_gemm": {"parameters": {"MT0": [16, 32], "MT1": [16, 32], "KU": [16], "TT0": [8], "TT1": [2, 4]}}}})",
                                              ".");
  const auto costs = tuner::problem_costs(c, gpu::BackendKind::Host);
  EXPECT_DOUBLE_EQ(costs[0].cost, 8 * tuner::candidate_seconds(2.0 * 1024 * 1024 * 256, c.benchmark,
                                                               tuner::cost_rates(gpu::BackendKind::Host)));
  EXPECT_EQ(costs[0].candidates, 8u);
  // The big problem's candidates run into min_iterations, the small ones' into the overhead and the
  // iteration cap: it costs about as much as the seven others together, not 64x each of them.
  double small = 0;
  for (std::size_t i = 1; i < costs.size(); ++i) small += costs[i].cost;
  EXPECT_GT(costs[0].cost, 0.5 * small);
  EXPECT_LT(costs[0].cost, 2 * small);
  const tuner::ShardPlan plan = tuner::plan_shards(c, costs, 4);
  const double mean = plan.total / 4;
  for (double load : plan.load) EXPECT_NEAR(load, mean, 0.1 * mean);
  int with_big = 0;
  for (const auto& s : plan.shards) {
    ASSERT_FALSE(s.empty());
    if (s.front().problem != 0) continue;
    ++with_big;
    EXPECT_EQ(s.front().parts, 3);
  }
  EXPECT_EQ(with_big, 3) << "the big problem is parted";
  // By count (2 problems a shard), the shard with the big problem would do over twice the mean.
  EXPECT_GT(costs[0].cost + costs[1].cost, 2 * mean);
  // Another strategy ranks all of a problem's candidates: the big problem stays whole.
  c.search.strategy = "model";
  c.search.budget = 2;
  const tuner::ShardPlan whole = tuner::plan_shards(c, costs, 4);
  for (const auto& s : whole.shards)
    for (const auto& u : s) EXPECT_EQ(u.parts, 1);
}

TEST(Shard, TheSameInputsGiveTheSameSplit) {
  const tuner::TuningConfig c = config_of(25);
  const auto costs = tuner::problem_costs(c, gpu::BackendKind::Host);
  const auto a = tuner::plan_shards(c, costs, 6), b = tuner::plan_shards(config_of(25), costs, 6);
  EXPECT_EQ(owners(a), owners(b));
  EXPECT_EQ(a.load, b.load);
  // ... and the same for any order of shard count queries (no state between calls).
  EXPECT_EQ(owners(tuner::plan_shards(c, costs, 6)), owners(a));
  // Equal costs (ties) are broken by config order, not by anything that varies between processes.
  std::vector<tuner::ProblemCost> flat(costs.size(), {1.0, 8});
  const auto f = tuner::plan_shards(c, flat, 5);
  for (int s = 0; s < 5; ++s) EXPECT_EQ(f.shards[s].front().problem, std::size_t(s));
}

TEST(Shard, MoreShardsThanWorkLeavesSomeEmpty) {
  const tuner::TuningConfig c = config_of(2, "model");
  const auto plan = tuner::plan_shards(c, tuner::problem_costs(c, gpu::BackendKind::Host), 5);
  std::size_t units = 0;
  for (const auto& s : plan.shards) units += s.size();
  EXPECT_EQ(units, 2u);
  EXPECT_THROW(tuner::plan_shards(c, {{1.0, 8}, {1.0, 8}}, 0), Error);
  EXPECT_THROW(tuner::plan_shards(c, {{1.0, 8}}, 2), Error);
}

TEST(Shard, ShardConfigKeepsItsProblemsAndFiltersThePartsCandidates) {
  const tuner::TuningConfig c = config_of(6);
  const std::vector<tuner::ProblemCost> costs = {{100, 8}, {1, 8}, {1, 8}, {1, 8}, {1, 8}, {1, 8}};  // problem 0 in 3 parts
  const auto plan = tuner::plan_shards(c, costs, 3);
  std::set<std::string> keys;
  std::map<std::size_t, int> kept_of_big;
  for (int s = 0; s < 3; ++s) {
    tuner::SweepOptions o;
    const tuner::TuningConfig part = tuner::shard_config(c, plan, s, o);
    ASSERT_TRUE(o.filter.candidate && o.filter.finish);
    ASSERT_EQ(part.problems[0].key(), c.problems[0].key());  // the parted problem, first in config order
    for (std::size_t ordinal = 0; ordinal < 9; ++ordinal)
      if (o.filter.candidate(0, ordinal)) ++kept_of_big[ordinal];
    // The parted problem's finals and vendor timing are left to the merged database; a whole
    // problem's are done here.
    EXPECT_FALSE(o.filter.finish(0));
    for (std::size_t pi = 1; pi < part.problems.size(); ++pi) EXPECT_TRUE(o.filter.finish(pi));
    for (const auto& p : part.problems) keys.insert(p.key());
  }
  EXPECT_EQ(keys.size(), 6u);
  for (std::size_t ordinal = 0; ordinal < 9; ++ordinal) EXPECT_EQ(kept_of_big[ordinal], 1) << ordinal;
  // Nothing parted: no filter at all.
  tuner::SweepOptions o;
  tuner::shard_config(c, tuner::plan_shards(c, std::vector<tuner::ProblemCost>(6, {1.0, 8}), 3), 1, o);
  // A problem is parted in no more parts than it has candidates.
  const auto few = tuner::plan_shards(c, {{100, 2}, {1, 8}, {1, 8}, {1, 8}, {1, 8}, {1, 8}}, 3);
  for (const auto& s : few.shards)
    for (const auto& u : s)
      if (u.problem == 0) EXPECT_EQ(u.parts, 2);
  EXPECT_FALSE(o.filter.candidate);
  EXPECT_THROW(tuner::shard_config(c, plan, 3, o), Error);
}

TEST(Shard, PartsOfAProblemGoToDistinctShards) {
  // Part 1 of problem 0 would fit best where part 0 went (the other shards hold a heavier unit
  // each): it goes to the least-loaded shard without a part of its problem.
  const tuner::TuningConfig c = config_of(4);
  const auto plan = tuner::plan_shards(c, {{0.062, 2}, {0.06, 2}, {0.06, 2}, {0.06, 2}}, 4);
  std::vector<int> holding;
  for (int s = 0; s < 4; ++s)
    for (const auto& u : plan.shards[s])
      if (u.problem == 0) holding.push_back(s);
  ASSERT_EQ(holding.size(), 2u);
  EXPECT_NE(holding[0], holding[1]);
  for (int s = 0; s < 4; ++s) {  // so each shard's config names a problem once
    tuner::SweepOptions o;
    std::set<std::string> keys;
    for (const auto& p : tuner::shard_config(c, plan, s, o).problems) EXPECT_TRUE(keys.insert(p.key()).second);
  }
}

TEST(Shard, PartedConfigHoldsTheProblemsThePlanParts) {
  const tuner::TuningConfig c = config_of(6);
  const auto plan = tuner::plan_shards(c, {{1, 8}, {100, 8}, {1, 8}, {60, 8}, {1, 8}, {1, 8}}, 3);
  const tuner::TuningConfig parted = tuner::parted_config(c, plan);
  ASSERT_EQ(parted.problems.size(), 2u);  // 100 and 60 each above a third of 164
  EXPECT_EQ(parted.problems[0].key(), c.problems[1].key());
  EXPECT_EQ(parted.problems[1].key(), c.problems[3].key());
  EXPECT_EQ(parted.templates.size(), c.templates.size());
  // Nothing parted (another strategy, or one shard): nothing to finish.
  EXPECT_TRUE(tuner::parted_config(c, tuner::plan_shards(c, tuner::problem_costs(c, gpu::BackendKind::Host), 1)).problems.empty());
  const tuner::TuningConfig m = config_of(6, "model");
  EXPECT_TRUE(tuner::parted_config(m, tuner::plan_shards(m, {{1, 8}, {100, 8}, {1, 8}, {60, 8}, {1, 8}, {1, 8}}, 3))
                  .problems.empty());
}

TEST(Shard, ParseShard) {
  EXPECT_EQ(tuner::parse_shard("0/4"), (ShardId{0, 4}));
  EXPECT_EQ(tuner::parse_shard("3/4"), (ShardId{3, 4}));
  for (const char* bad : {"4/4", "-1/4", "1/0", "1", "a/b", "1/4x", "", "/", "1/"}) {
    EXPECT_THROW(tuner::parse_shard(bad), Error) << bad;
  }
}

tuner::EnvLookup env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(Shard, FromSlurmArrayVariables) {
  EXPECT_EQ(tuner::shard_from_environment(env({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})),
            (ShardId{2, 4}));
  // --array=5-8
  EXPECT_EQ(tuner::shard_from_environment(env(
                {{"SLURM_ARRAY_TASK_ID", "7"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "5"}})),
            (ShardId{2, 4}));
  // --array=0-12:4
  EXPECT_EQ(tuner::shard_from_environment(env({{"SLURM_ARRAY_TASK_ID", "8"},
                                               {"SLURM_ARRAY_TASK_COUNT", "4"},
                                               {"SLURM_ARRAY_TASK_MIN", "0"},
                                               {"SLURM_ARRAY_TASK_STEP", "4"}})),
            (ShardId{2, 4}));
  // Slurm wins over the MPI rank of a job step inside an array task.
  EXPECT_EQ(tuner::shard_from_environment(env({{"SLURM_ARRAY_TASK_ID", "1"},
                                               {"SLURM_ARRAY_TASK_COUNT", "2"},
                                               {"OMPI_COMM_WORLD_RANK", "0"},
                                               {"OMPI_COMM_WORLD_SIZE", "1"}})),
            (ShardId{1, 2}));
  EXPECT_THROW(tuner::shard_from_environment(env({{"SLURM_ARRAY_TASK_ID", "2"}})), Error);
  EXPECT_THROW(tuner::shard_from_environment(env({{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})),
               Error);
  EXPECT_THROW(tuner::shard_from_environment(env({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})),
               Error);
  // A plain Slurm job (no array) is no shard.
  EXPECT_EQ(tuner::shard_from_environment(env({{"SLURM_JOB_ID", "17"}, {"SLURM_PROCID", "0"}})), std::nullopt);
}

TEST(Shard, FromMpiLaunchers) {
  EXPECT_EQ(tuner::shard_from_environment(env({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}})),
            (ShardId{3, 8}));
  EXPECT_EQ(tuner::shard_from_environment(env({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}})), (ShardId{1, 2}));
  EXPECT_EQ(tuner::shard_from_environment(env({{"PMIX_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "6"}})), (ShardId{5, 6}));
  EXPECT_THROW(tuner::shard_from_environment(env({{"PMIX_RANK", "5"}})), Error);
  EXPECT_THROW(tuner::shard_from_environment(env({{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}})), Error);
  EXPECT_EQ(tuner::shard_from_environment(env({})), std::nullopt);
}

TEST(Shard, DatabaseTemplate) {
  EXPECT_EQ(tuner::expand_db_template("/local/tune-{shard}-of-{count}-{host}.db", {3, 16}, "node07"),
            "/local/tune-3-of-16-node07.db");
  EXPECT_EQ(tuner::expand_db_template("plain.db", {0, 1}, "h"), "plain.db");
  EXPECT_THROW(tuner::expand_db_template("tune-{rank}.db", {0, 1}, "h"), Error);
  EXPECT_THROW(tuner::expand_db_template("tune-{shard.db", {0, 1}, "h"), Error);
  const std::string host = tuner::short_host_name();
  EXPECT_FALSE(host.empty());
  EXPECT_EQ(host.find('.'), std::string::npos);
}

}  // namespace
