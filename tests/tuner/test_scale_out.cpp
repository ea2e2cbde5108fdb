// Sweeps split over several processes (issue 21, docs/scale-out.md), through the tiletune program:
// N = 4 shards (--shard I/N) merged with `db merge`, the same shards taken from rank 0 by
// `mpirun -np 4 ... --mpi`, a shard killed with SIGKILL and rerun, and a Slurm array job on a
// one-node cluster started for the test (scripts/slurm-local.sh). Each, merged and finished
// (`tune --finish-shards`: the finals of the parted problem), must give the unsharded sweep's
// winners and time the same candidates and the same finalists.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "db/database.h"
#include "db/shard_counts.h"
#include "tests/process_util.h"
#include "tuner/search.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::testing;

namespace {

// Four small fp32 GEMMs of one layout (the two candidates compile once per shard). The largest
// predicts a little more than a quarter of the sweep's cost, so that 4 shards part it over 2 of
// them (the others are whole). The candidates (tests/templates/paced_gemm.json) take 10 ms a run where
// they fit the problem (LARGE-1 from M = 128, LARGE-0 below) and 40 ms elsewhere, a sleep rather
// than work: every winner is known, and two sweeps timing the same runs spend the same seconds
// within a few percent, however loaded the machine. Each timing is a fixed number of runs: one to
// validate, one warm-up and one timed (min = max = 1, and a run outlasts target_ms, so the finals'
// longer run cap never binds). Few long runs: what varies with the load is each run's wake-up.
const char* kConfig = R"({"name": "scale-out",
  "problems": [
    {"dtype": "f32", "transA": "N", "transB": "N", "m": 128, "n": 128, "k": 32},
    {"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 32, "k": 16},
    {"dtype": "f32", "transA": "N", "transB": "N", "m": 48, "n": 32, "k": 32},
    {"dtype": "f32", "transA": "N", "transB": "N", "m": 32, "n": 32, "k": 32}],
  "templates": {"paced_gemm": {}},
  "benchmark": {"warmup": 1, "min_iterations": 1, "max_iterations": 1, "target_ms": 1}
})";

// The program finds the test template through its environment, which it inherits from this one.
const bool kTemplatePathSet = ::setenv("TILETUNE_TEMPLATE_PATH", TILETUNE_SOURCE_DIR "/tests/templates", 1) == 0;

std::vector<std::string> tune_args(const std::string& config, const std::string& db) {
  return {TILETUNE_EXE, "tune", config, "--db", db, "--backend", "host", "--no-vendor", "--jobs", "2"};
}

// problem key -> winning kernel
std::map<std::string, std::string> winners(const std::string& path) {
  db::Database d = db::Database::open(path, db::Mode::ReadOnly);
  std::map<std::string, std::string> out;
  for (const auto& w : d.winners("")) out[w.problem_key] = w.solution.kernel_name();
  return out;
}

// (problem key, kernel) of every measurement: the candidates a sweep measured.
std::set<std::pair<std::string, std::string>> measured(const std::string& path) {
  db::Database d = db::Database::open(path, db::Mode::ReadOnly);
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& p : d.problems())
    for (const auto& m : d.measurements(p.id)) out.emplace(p.key, m.kernel_name);
  return out;
}

// (problem key, kernel) of every measurement re-timed as a finalist.
std::set<std::pair<std::string, std::string>> finals(const std::string& path) {
  db::Database d = db::Database::open(path, db::Mode::ReadOnly);
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& p : d.problems())
    for (const auto& m : d.measurements(p.id))
      if (m.reason == tuner::kFinalTimingReason) out.emplace(p.key, m.kernel_name);
  return out;
}

std::size_t measurement_rows(const std::string& path) {
  db::Database d = db::Database::open(path, db::Mode::ReadOnly);
  std::size_t n = 0;
  for (const auto& p : d.problems()) n += std::size_t(p.measurements);
  return n;
}

// Seconds measuring candidates that a --json tune reports: preparing problems (inputs, reference),
// validating and timing candidates.
// With the counts of candidates measured and of finalists timed again.
struct Seconds {
  double prepare = 0, validate = 0, timing = 0;
  std::size_t measured = 0, remeasured = 0;
  double candidates() const { return validate + timing; }
  Seconds& operator+=(const Seconds& o) {
    prepare += o.prepare, validate += o.validate, timing += o.timing;
    measured += o.measured, remeasured += o.remeasured;
    return *this;
  }
};
Seconds seconds_of(const std::string& json_out) {
  const auto doc = nlohmann::json::parse(json_out);
  const auto& s = doc.at("seconds");
  const auto& c = doc.at("candidates");
  return {s.at("prepare").get<double>(), s.at("validate").get<double>(), s.at("timing").get<double>(),
          c.at("measured").get<std::size_t>(), c.at("remeasured").get<std::size_t>()};
}

class ScaleOut : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tiletune-scale-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    config_ = (dir_ / "sweep.json").string();
    std::ofstream(config_) << kConfig;
    fs::create_directories(dir_ / "full");
    auto args = tune_args(config_, (dir_ / "full.db").string());
    args.push_back("--json");
    const Output r = run_to_end(args, (dir_ / "full").string());
    ASSERT_EQ(r.code, 0) << r.err;
    full_seconds_ = seconds_of(r.out);
    full_winners_ = winners((dir_ / "full.db").string());
    full_measured_ = measured((dir_ / "full.db").string());
    full_finals_ = finals((dir_ / "full.db").string());
    ASSERT_EQ(full_winners_.size(), 4u);
    ASSERT_EQ(full_finals_.size(), 8u) << "both candidates of each problem are finalists";
    for (const auto& [key, kernel] : full_winners_) {  // the known winners (see kConfig)
      const bool large = std::stoi(key.substr(key.find("|m") + 2)) >= 128;
      EXPECT_EQ(kernel, large ? "paced_gemm_LARGE-1" : "paced_gemm_LARGE-0") << key;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // A fresh folder for one test.
  static fs::path folder(const std::string& name) {
    const fs::path d = dir_ / name;
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }

  // `db merge` of `shards` into `merged`: each candidate once, however often merged.
  static void merge(const std::string& merged, const std::vector<std::string>& shards, const fs::path& work) {
    std::vector<std::string> args = {TILETUNE_EXE, "db", "merge", merged};
    args.insert(args.end(), shards.begin(), shards.end());
    const ProgramOutput m = run_program(args);
    ASSERT_EQ(m.status, 0) << m.text;
    EXPECT_EQ(measured(merged), full_measured_);
    EXPECT_EQ(measurement_rows(merged), full_measured_.size()) << "one row per candidate, however often merged";
  }
  // `tune --finish-shards N` on the merged database, its --json output.
  static Output finish(const std::string& merged, const fs::path& work, int shards = 4) {
    auto args = tune_args(config_, merged);
    args.insert(args.end(), {"--finish-shards", std::to_string(shards), "--json"});
    return run_to_end(args, work.string());
  }
  // A merged (and finished) database against the unsharded sweep's.
  static void expect_same_as_unsharded(const std::string& merged) {
    EXPECT_EQ(winners(merged), full_winners_);
    EXPECT_EQ(measured(merged), full_measured_);
    EXPECT_EQ(finals(merged), full_finals_);
  }
  static void merge_and_finish(const std::string& merged, const std::vector<std::string>& shards, const fs::path& work) {
    merge(merged, shards, work);
    const Output f = finish(merged, work);
    ASSERT_EQ(f.code, 0) << f.err;
    expect_same_as_unsharded(merged);
  }

  static inline fs::path dir_;
  static inline std::string config_;
  static inline Seconds full_seconds_;
  static inline std::map<std::string, std::string> full_winners_;
  static inline std::set<std::pair<std::string, std::string>> full_measured_, full_finals_;
};

TEST_F(ScaleOut, FourShardsMergedGiveTheUnshardedWinners) {
  const fs::path work = folder("shards");
  const std::string tmpl = (work / "tune-{shard}-{host}.db").string();
  Seconds seconds;
  int parted = 0;  // shards holding a part of the largest problem
  std::vector<std::string> dbs;
  for (int i = 0; i < 4; ++i) {
    auto args = tune_args(config_, tmpl);
    args.insert(args.end(), {"--shard", std::to_string(i) + "/4", "--json"});
    const Output r = run_to_end(args, work.string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("shard " + std::to_string(i) + "/4: "), std::string::npos) << r.err;
    parted += r.err.find("(1 of them a part of their candidates)") != std::string::npos;
    const auto doc = nlohmann::json::parse(r.out);
    dbs.push_back(doc.at("database").get<std::string>());
    EXPECT_EQ(dbs.back().find('{'), std::string::npos) << "the template is expanded: " << dbs.back();
    EXPECT_TRUE(fs::exists(dbs.back()));
    seconds += seconds_of(r.out);
  }
  EXPECT_EQ(parted, 2);
  // Each candidate of each problem is measured in one shard (a parted problem has a winner in each
  // of its shards: the best of its part).
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& db : dbs)
    for (const auto& m : measured(db)) EXPECT_TRUE(seen.insert(m).second) << m.first << " " << m.second << " twice";
  EXPECT_EQ(seen, full_measured_);
  // The shards re-time the finalists of their whole problems only: the parted one's are the whole
  // problem's, which no part can tell.
  std::set<std::pair<std::string, std::string>> shard_finals;
  for (const auto& db : dbs)
    for (const auto& f : finals(db)) shard_finals.insert(f);
  EXPECT_EQ(shard_finals.size(), full_finals_.size() - 2) << "the parted problem's 2 finalists are left to --finish-shards";
  const std::string merged = (work / "merged.db").string();
  merge(merged, dbs, work);
  merge(merged, dbs, work);  // merging again changes nothing
  // A count other than the shards' is refused before anything is timed: its parted problems are
  // not the ones the shards left.
  const Output three = finish(merged, work, 3);
  EXPECT_EQ(three.code, 1);
  EXPECT_NE(three.err.find("were split 4 ways (--shard I/4)"), std::string::npos) << three.err;
  EXPECT_EQ(finals(merged), shard_finals);
  const Output f = finish(merged, work);
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.err.find("1 of 4 problems were parted"), std::string::npos) << f.err;
  seconds += seconds_of(f.out);
  expect_same_as_unsharded(merged);
  // Merging the shards again keeps the finals (a first timing does not replace a finalist's
  // re-timing, even where it was faster), and finishing again has nothing to time.
  merge(merged, dbs, work);
  expect_same_as_unsharded(merged);
  const Output again = finish(merged, work);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(seconds_of(again.out).remeasured, 0u);
  // The cost of sharding, N = 4 against one process: the same work, so the same seconds. The same
  // timings (each candidate once, the same finalists once more), each of the same runs (kConfig),
  // of a kernel whose runs last a set time: the seconds validating and timing candidates, summed
  // over the shards and the finishing step, are within 5% of the one process's.
  EXPECT_EQ(seconds.measured, full_seconds_.measured);
  EXPECT_EQ(seconds.remeasured, full_seconds_.remeasured);
  const double ratio = seconds.candidates() / full_seconds_.candidates();
  std::printf("seconds validating + timing candidates: 4 shards + finishing %.3f, unsharded %.3f, ratio %.3f; "
              "preparing problems: %.3f against %.3f; timings: %zu + %zu finals against %zu + %zu\n",
              seconds.candidates(), full_seconds_.candidates(), ratio, seconds.prepare, full_seconds_.prepare,
              seconds.measured, seconds.remeasured, full_seconds_.measured, full_seconds_.remeasured);
  EXPECT_NEAR(ratio, 1.0, 0.05);
}

TEST_F(ScaleOut, AShardKilledMidRunIsRerunAloneAndResumes) {
  const fs::path work = folder("killed");
  std::vector<std::string> dbs;
  for (int i = 0; i < 4; ++i) dbs.push_back((work / ("tune-" + std::to_string(i) + ".db")).string());
  // The others run to their end; shard 1 (two problems: the most left after its first measurement)
  // is killed below.
  for (int i : {0, 2, 3}) {
    auto args = tune_args(config_, (work / "tune-{shard}.db").string());
    args.insert(args.end(), {"--shard", std::to_string(i) + "/4"});
    const ProgramOutput r = run_program(args);
    ASSERT_EQ(r.status, 0) << r.text;
  }
  // Shard 1 is killed once it has measured something.
  auto args = tune_args(config_, (work / "tune-{shard}.db").string());
  args.insert(args.end(), {"--shard", "1/4"});
  const std::string log = (work / "killed.txt").string();
  Child c = spawn(args, log);
  bool reached = false;
  for (int i = 0; i < 6000 && !reached; ++i) {  // at most 60 s
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!fs::exists(dbs[1])) continue;
    try {
      db::Database d = db::Database::open(dbs[1], db::Mode::ReadOnly);
      std::size_t n = 0;
      for (const auto& p : d.problems()) n += std::size_t(p.measurements);
      reached = n >= 1;
    } catch (const std::exception&) {
      // not created or migrated yet
    }
  }
  ::kill(c.pid, SIGKILL);
  EXPECT_EQ(wait_for(c), 128 + SIGKILL);
  ASSERT_TRUE(reached) << read_file(log);
  const std::size_t before = measured(dbs[1]).size();
  const ProgramOutput again = run_program(args);
  ASSERT_EQ(again.status, 0) << again.text;
  // It resumed: what the killed run measured is not measured again.
  EXPECT_NE(again.text.find(std::to_string(before) + " already measured"), std::string::npos) << again.text;
  merge_and_finish((work / "merged.db").string(), dbs, work);
}

TEST_F(ScaleOut, ShardAutoReadsTheEnvironmentAndRefusesWithoutOne) {
  const fs::path work = folder("auto");
  auto args = tune_args(config_, (work / "tune-{shard}-of-{count}.db").string());
  args.insert(args.end(), {"--shard", "auto"});
  // A plain run inside a Slurm allocation (no array) is not split: --shard auto says so.
  const Output none = run_to_end(args, work.string(), {"SLURM_JOB_ID=17"});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("--shard auto"), std::string::npos) << none.err;
  const Output r = run_to_end(args, work.string(), {"SLURM_ARRAY_TASK_ID=12", "SLURM_ARRAY_TASK_MIN=10",
                                                    "SLURM_ARRAY_TASK_COUNT=4"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("shard 2/4: "), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(work / "tune-2-of-4.db"));
  // More shards than units of work: the last is empty, and still writes its (empty) database, so
  // that merging every shard's file needs no exception.
  auto empty = tune_args(config_, (work / "tune-{shard}-of-{count}.db").string());
  empty.insert(empty.end(), {"--shard", "31/32", "--json"});
  const Output e = run_to_end(empty, work.string());
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("\"database\""), std::string::npos) << e.out;
  EXPECT_NE(e.err.find("shard 31/32 has no work"), std::string::npos) << e.err;
  EXPECT_TRUE(winners((work / "tune-31-of-32.db").string()).empty());
  // A bad shard is a usage error naming it.
  auto bad = tune_args(config_, (work / "x.db").string());
  bad.insert(bad.end(), {"--shard", "4/4"});
  const Output b = run_to_end(bad, work.string());
  EXPECT_NE(b.code, 0);
  EXPECT_NE(b.err.find("4/4"), std::string::npos) << b.err;
}

// The shard count recorded in a database: none in an unsharded sweep's, so --finish-shards
// refuses it; two after shards of two splits were merged together, which no count finishes.
TEST_F(ScaleOut, FinishShardsRefusesADatabaseItsShardsDoNotMatch) {
  const fs::path work = folder("count");
  auto copy_of_full = [&](const std::string& name, const std::vector<int>& counts) {
    const std::string path = (work / name).string();
    const Output m = run_to_end({TILETUNE_EXE, "db", "merge", path, (dir_ / "full.db").string()}, work.string());
    EXPECT_EQ(m.code, 0) << m.err;
    db::Database d = db::Database::open(path, db::Mode::ReadWrite);
    d.transaction("test", [&] { db::add_shard_counts(d, "scale-out", counts); });
    return path;
  };
  const Output none = finish(copy_of_full("unsharded.db", {}), work);
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("holds no shard count of sweep 'scale-out'"), std::string::npos) << none.err;
  const std::string by4 = copy_of_full("by4.db", {4}), by2 = copy_of_full("by2.db", {2});
  const Output two = finish(by2, work);
  EXPECT_EQ(two.code, 1);
  EXPECT_NE(two.err.find("were split 2 ways"), std::string::npos) << two.err;
  // `db merge` keeps every count it meets.
  const std::string mixed = (work / "mixed.db").string();
  const Output m = run_to_end({TILETUNE_EXE, "db", "merge", mixed, by4, by2}, work.string());
  ASSERT_EQ(m.code, 0) << m.err;
  db::Database d = db::Database::open(mixed, db::Mode::ReadOnly);
  EXPECT_EQ(db::shard_counts(d, "scale-out"), (std::vector<int>{2, 4}));
  const Output both = finish(mixed, work);
  EXPECT_EQ(both.code, 1);
  EXPECT_NE(both.err.find("were split 2, 4 ways"), std::string::npos) << both.err;
}

bool on_path(const std::string& tool) {
  return run_program({"/bin/sh", "-c", "command -v " + tool}).status == 0;
}

TEST_F(ScaleOut, MpirunOfFourRanksTakingShardsFromRankZero) {
#ifndef TILETUNE_WITH_MPI
  GTEST_SKIP() << "tiletune is built without MPI (libopenmpi-dev absent when configured)";
#else
  if (!on_path("mpirun")) GTEST_SKIP() << "no mpirun (openmpi-bin)";
  const fs::path work = folder("mpi");
  const std::string merged = (work / "merged.db").string();
  std::vector<std::string> args = {"mpirun", "-np", "4", "--oversubscribe", "--allow-run-as-root", "-x",
                                   "OMPI_MCA_mpi_warn_on_fork=0", "-x", "TILETUNE_TEMPLATE_PATH"};
  auto tune = tune_args(config_, merged);
  tune.insert(tune.end(), {"--mpi", "--mpi-shards", "6", "--local-db", (work / "rank-{shard}-{host}.db").string()});
  args.insert(args.end(), tune.begin(), tune.end());
  const ProgramOutput r = run_program(args);
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("wrote " + merged + ": 6 shards on 4 ranks"), std::string::npos) << r.text;
  // The queue handed out each shard exactly once.
  for (int shard = 0; shard < 6; ++shard) {
    const std::string line = ", shard " + std::to_string(shard) + "/6: ";
    const auto first = r.text.find(line);
    EXPECT_NE(first, std::string::npos) << "shard " << shard << " never ran:\n" << r.text;
    if (first != std::string::npos) EXPECT_EQ(r.text.find(line, first + 1), std::string::npos) << r.text;
  }
  // Rank 0 finished the merged database itself: 6 shards part every problem.
  EXPECT_NE(r.text.find("finished 4 parted problems: 8 finals timed"), std::string::npos) << r.text;
  expect_same_as_unsharded(merged);
  EXPECT_FALSE(fs::exists(merged + ".ranks")) << "the copies of the ranks' databases are removed";
#endif
}

TEST_F(ScaleOut, SlurmArrayOfFourShardsOnALocalCluster) {
  const std::string script = std::string(TILETUNE_SOURCE_DIR) + "/scripts/slurm-local.sh";
  const fs::path work = folder("slurm");
  const ProgramOutput r = run_program({"bash", script, TILETUNE_EXE, config_, work.string()});
  if (r.status == 77) GTEST_SKIP() << r.text;  // no slurmctld, slurmd or munged, or not root
  ASSERT_EQ(r.status, 0) << r.text;
  std::vector<std::string> dbs;
  for (const auto& e : fs::directory_iterator(work / "db"))
    if (e.path().extension() == ".db") dbs.push_back(e.path().string());
  ASSERT_EQ(dbs.size(), 4u) << r.text;
  merge_and_finish((work / "merged.db").string(), dbs, work);
}

}  // namespace
