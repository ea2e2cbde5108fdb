// Search strategies (tuner/search.h): the analytical model's score, the per-problem selection, and
// whole sweeps on the host backend with each strategy.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "db/database.h"
#include "solutions/solution.h"
#include "tests/test_util.h"
#include "tuner/config.h"
#include "tuner/enumerator.h"
#include "tuner/search.h"
#include "tuner/sweep.h"

namespace fs = std::filesystem;
using namespace tiletune;
using tiletune::testing::expect_finals;
using tiletune::testing::fake_device;
using tiletune::testing::gemm;

namespace {

const char* kSearchConfig = R"({
  "name": "search-test",
  "problems": [
    {"dtype": "f32", "transA": "N", "transB": "N", "m": 70, "n": 45, "k": 33},
    {"dtype": "f32", "transA": "T", "transB": "N", "m": 64, "n": 64, "k": 64}
  ],
  "templates": {"host_gemm": {"parameters": {"MT0": [16, 32, 64], "MT1": [16, 32], "KU": [16], "TT0": [8], "TT1": [2, 4]}}},
  "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 4}
})";

struct SweepRun {
  tuner::SweepSummary summary;
  std::string db;
};

class Search : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tiletune-search-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  SweepRun sweep(const tuner::SearchOptions& s, const std::string& name, bool vendor = false) {
    tuner::TuningConfig c = tuner::parse_config(kSearchConfig, dir_.string());
    c.search = s;
    tuner::SweepOptions o;
    o.backend = gpu::BackendKind::Host;
    o.db_path = (dir_ / (name + ".db")).string();
    o.compare_vendor = vendor;
    SweepRun r{tuner::run_sweep(c, o, stderr), o.db_path};
    return r;
  }

  // An exhaustive sweep `name`, `sql` run on its database (the state a stopped sweep or a packed
  // database leaves), and the rerun that repairs it; a third run must then measure nothing.
  SweepRun exhaustive_edited_rerun(const std::string& name, const std::string& sql) {
    tuner::SearchOptions s;
    s.strategy = "exhaustive";
    SweepRun r = sweep(s, name);
    EXPECT_GE(r.summary.remeasured, 2 * tuner::kFinalists);
    {
      db::Database d = db::Database::open(r.db, db::Mode::ReadWrite);
      char* err = nullptr;
      EXPECT_EQ(sqlite3_exec(d.native_handle(), sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
      sqlite3_free(err);
    }
    SweepRun again = sweep(s, name);
    EXPECT_EQ(sweep(s, name).summary.remeasured, 0u) << "the rerun repaired it";
    return again;
  }

  // Per problem key: kernel name -> measurement, for the host arch.
  static std::map<std::string, std::map<std::string, db::MeasurementRow>> rows(const std::string& path) {
    db::Database d = db::Database::open(path, db::Mode::ReadOnly);
    std::map<std::string, std::map<std::string, db::MeasurementRow>> out;
    for (const auto& p : d.problems())
      for (const auto& m : d.measurements(p.id)) out[p.key][m.kernel_name] = m;
    return out;
  }

  static std::size_t space_per_problem() {
    tuner::TuningConfig c = tuner::parse_config(kSearchConfig, ".");
    auto dev = fake_device(gpu::BackendKind::Host);
    tuner::Enumeration e = tuner::enumerate(c.templates, std::vector<Problem>{c.problems[0]}, dev);
    return e.candidates.size();
  }

  static void expect_valid(const SweepRun& r) {
    db::Database d = db::Database::open(r.db, db::Mode::ReadOnly);
    EXPECT_EQ(d.integrity_check(), "ok");
    ASSERT_EQ(r.summary.winners.size(), 2u);
    for (const auto& w : d.winners("")) {
      auto m = d.find_measurement(w.problem_id, w.solution_id, w.arch);
      ASSERT_TRUE(m);
      EXPECT_EQ(m->status, db::Status::Ok);
      EXPECT_NE(m->reason, tuner::kShortTimingReason) << "a winner must be fully timed";
      EXPECT_GT(w.median_ms, 0);
    }
  }

  fs::path dir_;
};

TEST(SearchOptions, ConfigAndValidation) {
  auto c = tuner::parse_config(
      R"({"problems": [{"dtype": "f32", "m": 8, "n": 8, "k": 8}],
          "search": {"strategy": "random", "budget": 5, "budget_seconds": 2.5, "seed": 7}})", ".");
  EXPECT_EQ(c.search.strategy, "random");
  EXPECT_EQ(c.search.budget, 5u);
  EXPECT_EQ(c.search.budget_seconds, 2.5);
  EXPECT_EQ(c.search.seed, 7u);
  EXPECT_NE(tiletune::testing::error_of([] {
              tuner::parse_config(R"({"problems": [{"dtype": "f32", "m": 8, "n": 8, "k": 8}], "search": {"strategy": "genetic"}})", ".");
            }).find("unknown search strategy 'genetic'"),
            std::string::npos);
  EXPECT_NE(tiletune::testing::error_of([] {
              tuner::parse_config(R"({"problems": [{"dtype": "f32", "m": 8, "n": 8, "k": 8}], "search": {"budgt": 3}})", ".");
            }).find("unknown key 'budgt'"),
            std::string::npos);
  EXPECT_NE(tiletune::testing::error_of([] {
              tuner::parse_config(R"({"problems": [{"dtype": "f32", "m": 8, "n": 8, "k": 8}], "search": {"strategy": "random"}})", ".");
            }).find("needs a budget"),
            std::string::npos);
}

// On 132 SMs with one block per SM (the shared memory of a 4-stage wgmma ring allows no more):
// 1408 x 1536 is exactly 132 tiles of 128 x 128, one full wave; 128 x 256 tiles move fewer bytes
// but make 66 tiles, half the machine idle.
TEST(SearchModel, WaveQuantisationOn132SMs) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const KernelTemplate& t = find_template("wgmma_gemm");
  ASSERT_TRUE(t.has_model());
  GemmProblem p = gemm(DataType::BF16, DataType::BF16, true, false, 1408, 1536, 4096);
  Solution full = t.default_solution(), half = t.default_solution();
  full.params["BM"] = 128, full.params["BN"] = 128;
  half.params["BM"] = 128, half.params["BN"] = 256;
  ModelEstimate a = model_estimate(t, full, p, dev), b = model_estimate(t, half, p, dev);
  ASSERT_TRUE(a.has_model && b.has_model);
  EXPECT_EQ(a.tiles, 132);
  EXPECT_EQ(a.blocks_per_mp, 1);
  EXPECT_DOUBLE_EQ(a.wave_factor, 1.0);
  EXPECT_EQ(b.tiles, 66);
  EXPECT_DOUBLE_EQ(b.wave_factor, 2.0);
  EXPECT_LT(b.load_seconds / b.math_seconds, a.load_seconds / a.math_seconds);  // bigger tiles re-read less...
  EXPECT_LT(a.seconds, b.seconds);            // ...but quantise badly

  // One more row of tiles than a full wave: 133 tiles on 132 slots costs two waves.
  GemmProblem q = gemm(DataType::BF16, DataType::BF16, true, false, 1408 + 128, 1536, 4096);  // 12 x 12 = 144
  EXPECT_NEAR(model_estimate(t, full, q, dev).wave_factor, 2.0 / (144.0 / 132.0), 1e-12);

  // select_candidates("model") puts the well-quantised one first; a template without a model
  // section ranks last.
  nlohmann::ordered_json spec = nlohmann::ordered_json::parse(R"({"name": "nomodel", "source": "host_gemm.h",
      "backends": ["cuda"], "instance": "x", "parameters": {"A": [1]}, "default": {"A": 1},
      "launch": {"block": "1", "grid_x": "1", "grid_y": "1", "grid_z": "1", "shared_bytes": "0"}})");
  KernelTemplate none = KernelTemplate::from_json(spec);
  EXPECT_FALSE(none.has_model());
  Solution ns = none.default_solution();
  std::vector<tuner::SearchCandidate> cands = {{&none, &ns}, {&t, &half}, {&t, &full}};
  tuner::SearchOptions o;
  o.strategy = "model";
  EXPECT_EQ(tuner::select_candidates(o, cands, p, dev), (std::vector<std::size_t>{2, 1, 0}));
  o.budget = 1;
  EXPECT_EQ(tuner::select_candidates(o, cands, p, dev), (std::vector<std::size_t>{2}));
  // A budget of two keeps each template's best (a quota of max(1, 2 / (2 * 2))): the template the
  // model cannot rank is timed instead of wgmma_gemm's second.
  o.budget = 2;
  EXPECT_EQ(tuner::select_candidates(o, cands, p, dev), (std::vector<std::size_t>{2, 0}));
}

// C's column phases (REPACK 2): priced as the kernel on one phase's problem, once per phase; and a
// family of their own for the quota, so that a budget the plain kernels' ranks would fill still times
// the best phased candidate.
TEST(SearchModel, ColumnPhasesArePricedPerPhaseAndKeepAQuota) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const KernelTemplate& t = find_template("wgmma_gemm");
  GemmProblem p = gemm(DataType::BF16, DataType::BF16, true, false, 8191, 1024, 512);
  p.ldc = 8191;
  p = p.canonical();
  const ColumnPhases plan = column_phases(p);
  ASSERT_EQ(plan.phases, 8);
  Solution phased = t.default_solution();
  phased.params["EPI"] = 1, phased.params["PINGPONG"] = 0, phased.params["REPACK"] = kRepackColumnPhases;
  ASSERT_FALSE(t.violation(t.variables(phased, p, dev)));
  EXPECT_EQ(t.variables(phased, p, dev).at("COLUMN_PHASES"), 8);
  Solution one = phased;
  one.params.erase("REPACK");
  const ModelEstimate all = model_estimate(t, phased, p, dev), each = model_estimate(t, one, plan.kernel_problem, dev);
  ASSERT_TRUE(all.has_model && each.has_model);
  EXPECT_NEAR(all.seconds, 8 * each.seconds, 1e-12 * all.seconds);
  EXPECT_EQ(all.tiles, each.tiles);

  std::vector<Solution> plain(4, t.default_solution());
  for (std::size_t i = 0; i < plain.size(); ++i) plain[i].params["STAGES"] = std::int64_t(4 + i);
  std::vector<tuner::SearchCandidate> cands;
  for (const Solution& s : plain) cands.push_back({&t, &s});
  cands.push_back({&t, &phased});
  tuner::SearchOptions o;
  o.strategy = "model";
  ASSERT_EQ(tuner::select_candidates(o, cands, p, dev).back(), 4u) << "ranked last, so only a quota can pick it";
  o.budget = 2;
  const auto picked = tuner::select_candidates(o, cands, p, dev);
  ASSERT_EQ(picked.size(), 2u);
  EXPECT_NE(std::find(picked.begin(), picked.end(), 4u), picked.end()) << "the phased family lost its quota";
}

// wgmma_gemm launches min(tiles, SMs) blocks that loop over the tiles: 264 tiles on 132 SMs are
// two tiles per block, one round, no idle SM; 133 tiles leave 131 SMs idle for the second tile.
TEST(SearchModel, PersistentGridLoopsOverTiles) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const KernelTemplate& t = find_template("wgmma_gemm");
  Solution s = t.default_solution();  // 128 x 128
  ModelEstimate two = model_estimate(t, s, gemm(DataType::BF16, DataType::BF16, true, false, 2816, 1536, 4096), dev);
  EXPECT_EQ(two.tiles, 264);
  EXPECT_EQ(two.blocks, 132);
  EXPECT_EQ(two.resident, 1);
  EXPECT_DOUBLE_EQ(two.wave_factor, 1.0);
  EXPECT_NEAR(two.seconds, 2 * two.tile_seconds, 1e-15);
  ModelEstimate one_more = model_estimate(t, s, gemm(DataType::BF16, DataType::BF16, true, false, 1408 + 128, 1536, 4096), dev);
  EXPECT_EQ(one_more.blocks, 132);
  EXPECT_NEAR(one_more.seconds, 2 * one_more.tile_seconds, 1e-15) << "144 tiles: some blocks do two";
}

// wgmma_gemm split-K: 1000^3 makes 64 tiles of 128 x 128 on 132 SMs; two splits make 128 units
// of half the K steps each, one round, so the model expects it faster despite the partial sums.
TEST(SearchModel, WgmmaSplitKFillsTheMachine) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const KernelTemplate& t = find_template("wgmma_gemm");
  const GemmProblem p = gemm(DataType::BF16, DataType::BF16, false, false, 1000, 1000, 1000);
  Solution one = t.default_solution(), two = t.default_solution();
  two.params["SPLITK"] = 2;
  const ModelEstimate a = model_estimate(t, one, p, dev), b = model_estimate(t, two, p, dev);
  EXPECT_EQ(a.tiles, 64);
  EXPECT_EQ(a.blocks, 64);
  EXPECT_EQ(a.steps, 16);
  EXPECT_EQ(b.tiles, 128);
  EXPECT_EQ(b.blocks, 128);
  EXPECT_EQ(b.steps, 8);
  EXPECT_LT(b.seconds, a.seconds);
}

// wgmma_gemm SCHED 1 (stream-K): 1280^2 makes 100 tiles of 128 x 128 on 132 SMs, 1792^2 196: the
// streamed last wave prices below leaving a quarter of the machine idle; 264 tiles (two full
// waves) have nothing to stream, and SCHED 1 is refused there.
TEST(SearchModel, WgmmaStreamKFillsTheLastWave) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const KernelTemplate& t = find_template("wgmma_gemm");
  for (int mn : {1280, 1792}) {
    const GemmProblem p = gemm(DataType::BF16, DataType::BF16, false, false, mn, mn, 4096);
    Solution dp = t.default_solution(), sk = t.default_solution();
    sk.params["SCHED"] = 1;
    EXPECT_FALSE(t.violation(t.variables(sk, p, dev))) << mn;
    const ModelEstimate a = model_estimate(t, dp, p, dev), b = model_estimate(t, sk, p, dev);
    EXPECT_EQ(b.blocks, 132) << mn;
    EXPECT_LT(b.seconds, a.seconds) << mn;
  }
  Solution sk = t.default_solution();
  sk.params["SCHED"] = 1;
  const auto refused = t.violation(t.variables(sk, gemm(DataType::BF16, DataType::BF16, false, false, 128 * 12, 128 * 22, 4096), dev));
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("stream_k"), std::string::npos) << *refused;
}

// The terms the model weighs, each on a case where it decides.
TEST(SearchModel, PipelineDepthOccupancyAndEpilogue) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const KernelTemplate& wg = find_template("wgmma_gemm");
  Solution s4 = wg.default_solution(), s6 = wg.default_solution();
  s4.params["BN"] = s6.params["BN"] = 64;
  s4.params["PINGPONG"] = s6.params["PINGPONG"] = 0;
  s4.params["STAGES"] = 4, s6.params["STAGES"] = 6;
  // N = 16: few tiles, each streaming a long K panel; the latency of the loads is hidden only by
  // the loads in flight, so the deeper ring wins...
  GemmProblem thin = gemm(DataType::BF16, DataType::BF16, true, false, 4096, 16, 4096);
  ModelEstimate a = model_estimate(wg, s4, thin, dev), b = model_estimate(wg, s6, thin, dev);
  EXPECT_GT(a.latency_seconds, b.latency_seconds);
  EXPECT_LT(b.seconds, a.seconds);
  // ...while a big square problem is bound by the panels' bytes, not by latency: depth is free.
  GemmProblem sq = gemm(DataType::BF16, DataType::BF16, false, false, 8192, 8192, 8192);
  s4.params["BN"] = s6.params["BN"] = 128;
  EXPECT_DOUBLE_EQ(model_estimate(wg, s4, sq, dev).seconds, model_estimate(wg, s6, sq, dev).seconds);

  // Ping-pong hides the epilogue behind the other consumer's main loop: it matters when K is short.
  Solution pp = wg.default_solution(), coop = wg.default_solution();
  pp.params["PINGPONG"] = 1, coop.params["PINGPONG"] = 0;
  GemmProblem short_k = gemm(DataType::BF16, DataType::BF16, false, false, 8192, 8192, 128);
  EXPECT_LT(model_estimate(wg, pp, short_k, dev).seconds, model_estimate(wg, coop, short_k, dev).seconds);

  // simt_gemm: 512 threads of 8 x 8 accumulators fill the register file with one block per SM,
  // 128 threads of 4 x 4 fit several.
  const KernelTemplate& simt = find_template("simt_gemm");
  Solution big = simt.default_solution(), small = simt.default_solution();
  big.params["MT0"] = 256, big.params["MT1"] = 128, big.params["TT0"] = 8, big.params["TT1"] = 8;
  small.params["MT0"] = 64, small.params["MT1"] = 32, small.params["TT0"] = 4, small.params["TT1"] = 4;
  GemmProblem f32 = gemm(DataType::F32, DataType::F32, false, false, 4096, 4096, 4096);
  ModelEstimate eb = model_estimate(simt, big, f32, dev), es = model_estimate(simt, small, f32, dev);
  EXPECT_EQ(eb.blocks_per_mp, 1);
  EXPECT_GT(es.blocks_per_mp, 2);
  // Small thread tiles read more shared memory per flop: bound by it, not by the FMA pipes.
  EXPECT_GT(es.operand_seconds, es.math_seconds);
  EXPECT_LT(eb.operand_seconds / eb.math_seconds, es.operand_seconds / es.math_seconds);
  EXPECT_LT(eb.seconds, es.seconds);
}

// Equal estimates are ordered by the template's "prefer" list (simt_gemm: larger macro tile, then
// padding), whatever the order the candidates come in.
TEST(SearchModel, TiesBrokenByPreferDeterministically) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const KernelTemplate& t = find_template("simt_gemm");
  GemmProblem p = gemm(DataType::F32, DataType::F32, false, false, 4096, 4096, 4096);
  Solution pad0 = t.default_solution(), pad4 = t.default_solution();
  pad0.params["PAD"] = 0, pad4.params["PAD"] = 4;
  ModelEstimate e0 = model_estimate(t, pad0, p, dev), e4 = model_estimate(t, pad4, p, dev);
  ASSERT_DOUBLE_EQ(e0.seconds, e4.seconds) << "padding costs the model nothing; only the tie-break sees it";
  EXPECT_TRUE(model_before(e4, e0));
  EXPECT_FALSE(model_before(e0, e4));
  tuner::SearchOptions o;
  o.strategy = "model";
  std::vector<tuner::SearchCandidate> ab = {{&t, &pad0}, {&t, &pad4}}, ba = {{&t, &pad4}, {&t, &pad0}};
  EXPECT_EQ(tuner::select_candidates(o, ab, p, dev), (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(tuner::select_candidates(o, ba, p, dev), (std::vector<std::size_t>{0, 1}));
}

TEST(SearchModel, ModelSectionKeysAreChecked) {
  auto spec = [](const std::string& model) {
    return nlohmann::ordered_json::parse(R"({"name": "m", "source": "host_gemm.h", "backends": ["host"],
        "instance": "x", "parameters": {"A": [1, 2]}, "default": {"A": 1},
        "launch": {"block": "1", "grid_x": "1", "grid_y": "1", "grid_z": "1", "shared_bytes": "0"},
        "model": )" + model + "}");
  };
  KernelTemplate ok = KernelTemplate::from_json(spec(R"({"about": "notes", "tile_m": "16", "tile_n": "16",
      "tile_k": "8", "threads": "1", "stages": "A + 1", "prefer": ["A", "0 - A"]})"));
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Host);
  Solution s = ok.default_solution();
  s.params["A"] = 2;
  std::optional<ModelShape> sh = ok.model_shape(ok.variables(s, gemm(DataType::F32, DataType::F32, false, false, 64, 64, 64), dev));
  ASSERT_TRUE(sh);
  EXPECT_EQ(sh->stages, 3);
  EXPECT_EQ(sh->math_percent, 100);
  EXPECT_EQ(sh->prefer, (std::vector<std::int64_t>{2, -2}));
  EXPECT_NE(tiletune::testing::error_of([&] { KernelTemplate::from_json(spec(R"({"tile_m": "1", "tile_n": "1", "tile_k": "1", "threads": "1", "stagse": "2"})")); })
                .find("unknown key 'stagse'"),
            std::string::npos);
  EXPECT_NE(tiletune::testing::error_of([&] { KernelTemplate::from_json(spec(R"({"tile_n": "1", "tile_k": "1", "threads": "1"})")); })
                .find("needs 'tile_m'"),
            std::string::npos);
}

namespace {

// simt_gemm's whole space as search candidates of a 1000^3 f32 GEMM on a fake CUDA device.
struct SimtSpace {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const KernelTemplate& t = find_template("simt_gemm");
  const std::vector<Solution> sols = tuner::cartesian(t);
  std::vector<tuner::SearchCandidate> cands;
  const GemmProblem p = gemm(DataType::F32, DataType::F32, false, false, 1000, 1000, 1000);
  SimtSpace() {
    for (const auto& s : sols) cands.push_back({&t, &s});
  }
  SimtSpace(const SimtSpace&) = delete;  // cands point into sols
  SimtSpace& operator=(const SimtSpace&) = delete;
  std::vector<std::size_t> select(const char* strategy, std::size_t budget, std::uint64_t seed = 0) const {
    tuner::SearchOptions o;
    o.strategy = strategy;
    o.budget = budget;
    o.seed = seed;
    return tuner::select_candidates(o, cands, p, dev);
  }
};

}  // namespace

TEST(SearchSelect, RandomIsSeededAndBudgeted) {
  const SimtSpace sp;
  auto a = sp.select("random", 20, 1), b = sp.select("random", 20, 1);
  EXPECT_EQ(a.size(), 20u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(std::set<std::size_t>(a.begin(), a.end()).size(), 20u);
  EXPECT_NE(sp.select("random", 20, 2), a);
}

TEST(SearchSelect, ListedInMeasuringOrderWithTheModelsEstimate) {
  const SimtSpace sp;
  const std::vector<std::size_t> pick = sp.select("model", 5);
  ASSERT_EQ(pick.size(), 5u);
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  ASSERT_NE(f, nullptr);
  tuner::print_selection(f, sp.p, sp.cands, pick, sp.dev);
  std::fclose(f);
  const std::string out(buf, len);
  std::free(buf);
  const std::string head = "selected 5 of " + std::to_string(sp.cands.size()) + " candidates for " + sp.p.key();
  EXPECT_NE(out.find(head), std::string::npos) << out;
  // A row per pick, in the strategy's order, each with the model's estimate (the model ranks lower first).
  std::istringstream lines(out);
  std::string line;
  std::getline(lines, line);
  double previous = 0;
  for (std::size_t r = 0; r < pick.size(); ++r) {
    ASSERT_TRUE(std::getline(lines, line)) << out;
    std::istringstream row(line);
    std::size_t rank = 0;
    double ms = 0;
    std::string kernel;
    row >> rank >> ms >> kernel;
    EXPECT_EQ(rank, r + 1) << line;
    EXPECT_EQ(kernel, sp.sols[pick[r]].kernel_name()) << line;
    const double model_ms = model_estimate(sp.t, sp.sols[pick[r]], sp.p, sp.dev).seconds * 1e3;
    EXPECT_GT(ms, 0) << line;
    EXPECT_NEAR(ms, model_ms, 1e-3 * model_ms) << line;
    EXPECT_GE(ms, previous) << line;
    previous = ms;
  }
  EXPECT_FALSE(std::getline(lines, line)) << out;
}

TEST(SearchSelect, HalvingContenders) {
  std::vector<double> ms = {5, NAN, 1, 4, 3, 2, 6};  // 6 ok: keep 2, best first
  EXPECT_EQ(tuner::halving_contenders(ms, 0), (std::vector<std::size_t>{2, 5}));
  EXPECT_EQ(tuner::halving_contenders(ms, 1), (std::vector<std::size_t>{2}));
  EXPECT_EQ(tuner::halving_contenders({NAN, 7}, 0), (std::vector<std::size_t>{1}));
  EXPECT_TRUE(tuner::halving_contenders({NAN}, 0).empty());
  tuner::BenchmarkOptions full;
  tuner::BenchmarkOptions s = tuner::short_benchmark(full);
  EXPECT_EQ(s.min_iterations, 2);
  EXPECT_DOUBLE_EQ(s.target_ms, full.target_ms / 8);
}

// Finals are timed under sustained load on a GPU (do_bench's 100 ms), as long as the first timing
// on the host, and as a config says where it says.
TEST(SearchSelect, FinalBenchmark) {
  tuner::BenchmarkOptions full;
  full.target_ms = 25, full.max_iterations = 20;
  const tuner::BenchmarkOptions gpu = tuner::final_benchmark(full, gpu::BackendKind::Cuda);
  EXPECT_DOUBLE_EQ(gpu.target_ms, 100);
  EXPECT_GE(gpu.max_iterations, 10000) << "a 10 us kernel must be able to fill the 100 ms";
  EXPECT_DOUBLE_EQ(tuner::final_benchmark(full, gpu::BackendKind::Host).target_ms, 25);
  full.final_ms = 300;
  EXPECT_DOUBLE_EQ(tuner::final_benchmark(full, gpu::BackendKind::Host).target_ms, 300);
  full.final_ms = 0;  // never shorter than the first timing
  EXPECT_DOUBLE_EQ(tuner::final_benchmark(full, gpu::BackendKind::Cuda).target_ms, 25);
  const std::string cfg = R"({"problems": [{"m": 8, "n": 8, "k": 8}], "benchmark": {"final_ms": )";
  EXPECT_DOUBLE_EQ(tuner::parse_config(cfg + "250}}", ".").benchmark.final_ms, 250);
  EXPECT_THROW(tuner::parse_config(cfg + "-5}}", "."), Error);
}

TEST_F(Search, EveryStrategyFindsAWinner) {
  const std::size_t space = space_per_problem();
  ASSERT_GE(space, 6u);
  for (std::string strategy : {"exhaustive", "random", "model", "halving"}) {
    SCOPED_TRACE(strategy);
    tuner::SearchOptions s;
    s.strategy = strategy;
    if (strategy == "random") s.budget = 3;
    SweepRun r = sweep(s, strategy);
    expect_valid(r);
    auto all = rows(r.db);
    for (const auto& [key, ms] : all) {
      if (strategy == "random") EXPECT_EQ(ms.size(), 3u) << key;
      else EXPECT_EQ(ms.size(), space) << key;
      expect_finals(ms, key);  // every strategy ends with the finals (test_util.h)
    }
    EXPECT_GE(r.summary.remeasured, 2 * tuner::kFinalists);
    SweepRun again = sweep(s, strategy);
    EXPECT_EQ(again.summary.benchmarked + again.summary.remeasured, 0u) << "a rerun finds the finals done";
  }
}

TEST(HeadToHead, EachRoundIsAnOrderThatStartsElsewhere) {
  for (std::size_t n = 1; n <= 7; ++n) {
    std::set<std::size_t> starts;
    for (std::size_t r = 0; r < n; ++r) {
      std::vector<std::size_t> order = tuner::head_to_head_order(n, r);
      ASSERT_EQ(order.size(), n);
      EXPECT_EQ(std::set<std::size_t>(order.begin(), order.end()).size(), n) << n << " contenders, round " << r;
      EXPECT_LT(*std::max_element(order.begin(), order.end()), n);
      starts.insert(order[0]);
    }
    EXPECT_EQ(starts.size(), n) << "each of " << n << " contenders starts one of the first " << n << " rounds";
  }
  // Two contenders, the kernel's and the vendor's: each goes first in turn.
  EXPECT_EQ(tuner::head_to_head_order(2, 0), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(tuner::head_to_head_order(2, 1), (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(tuner::head_to_head_order(3, 1), (std::vector<std::size_t>{1, 0, 2}));
}

// With the vendor compared, each problem ends with the finalists of both sides timed together in
// rounds: the fastest kernel and the fastest vendor choice carry that timing, and so does the
// winner, whichever side it is, and the fastest few are all finalists.
TEST_F(Search, FinalistsOfBothSidesMeetHeadToHead) {
  tuner::SearchOptions s;
  s.strategy = "exhaustive";
  SweepRun r = sweep(s, "h2h", true);
  expect_valid(r);
  EXPECT_GE(r.summary.head_to_head, 2 * 2u) << "at least a kernel and a vendor choice a problem";
  db::Database d = db::Database::open(r.db, db::Mode::ReadOnly);
  for (const auto& [key, ms] : rows(r.db)) {
    expect_finals(ms, key);
    const db::MeasurementRow *kernel = nullptr, *vendor = nullptr;
    for (const auto& [name, m] : ms) {
      if (m.status != db::Status::Ok) continue;
      auto& side = name.rfind(kVendorTemplate, 0) == 0 ? vendor : kernel;
      if (!side || m.median_ms < side->median_ms) side = &m;
    }
    ASSERT_TRUE(kernel && vendor) << key;
    EXPECT_EQ(kernel->reason, db::kHeadToHeadReason) << key << " " << kernel->kernel_name;
    EXPECT_EQ(vendor->reason, db::kHeadToHeadReason) << key << " " << vendor->kernel_name;
    auto w = d.find_winner(kernel->arch, key);
    ASSERT_TRUE(w) << key;
    EXPECT_EQ(d.find_measurement(w->problem_id, w->solution_id, w->arch)->reason, db::kHeadToHeadReason) << key;
  }
  // Each vendor choice's timings, the head-to-head's included, sit on the solution of the source
  // it runs under (the default: the library's name; a thread count: OpenBLAS's choice source), which
  // the runtime checks before running a tuned choice; recorded under the default's source, a
  // winning cuBLASLt algorithm was served as the default (2026-12-08).
  std::size_t choices = 0;
  for (const db::SolutionRow& s : d.solutions()) {
    if (s.solution.template_name != kVendorTemplate) continue;
    const bool is_default = s.solution.params.empty();
    EXPECT_EQ(s.source_hash, is_default ? "OpenBLAS" : "OpenBLAS, threads set") << s.solution.kernel_name();
    choices += !is_default;
  }
  if (choices == 0) GTEST_SKIP() << "OpenBLAS runs on one thread here: no other choice to check";
}

// A sweep stopped before a problem's finals (here: their rows as plain first timings again) does
// them on the rerun, from every timing the database holds, and measures nothing else.
TEST_F(Search, FinalsMissedByAStoppedSweepRunOnRerun) {
  SweepRun again = exhaustive_edited_rerun(
      "finals", std::string("UPDATE measurements SET reason = '' WHERE reason = '") + tuner::kFinalTimingReason + "';");
  EXPECT_EQ(again.summary.benchmarked, 0u);
  EXPECT_GE(again.summary.remeasured, 2 * tuner::kFinalists);
  for (const auto& [key, ms] : rows(again.db)) expect_finals(ms, key);
}

// Finals missed by a stopped sweep whose database has since lost its code objects (packed for
// shipping): the finalists are compiled again for their re-timing instead of skipped on every rerun.
TEST_F(Search, FinalsCompileAFinalistWhoseCodeObjectIsGone) {
  SweepRun again = exhaustive_edited_rerun(
      "gone", std::string("UPDATE measurements SET reason = '' WHERE reason = '") + tuner::kFinalTimingReason +
                  "'; UPDATE measurements SET code_object_id = NULL; DELETE FROM code_objects;");
  EXPECT_EQ(again.summary.benchmarked, 0u);
  EXPECT_GE(again.summary.remeasured, 2 * tuner::kFinalists);
  EXPECT_GE(again.summary.recompiled, 2 * tuner::kFinalists) << "the finalists, compiled again";
  for (const auto& [key, ms] : rows(again.db)) expect_finals(ms, key);
}

// A database a halving sweep began holds a promotion (a short-timed winner fully timed after its
// finals), which tells halving its rounds are done; another strategy resuming it still gives the
// fastest few, the promoted one among them, their finals.
TEST_F(Search, AnotherStrategyGivesAHalvingPromotionItsFinals) {
  // No finals yet, and each problem's fastest row marked as promoted.
  SweepRun again = exhaustive_edited_rerun(
      "promoted", std::string("UPDATE measurements SET reason = '' WHERE reason = '") + tuner::kFinalTimingReason +
                      "'; UPDATE measurements SET reason = '" + tuner::kPromotedReason +
                      "' WHERE id IN (SELECT id FROM measurements m WHERE status = 'ok' AND median_ms = "
                      "(SELECT min(median_ms) FROM measurements WHERE problem_id = m.problem_id AND status = 'ok'));");
  EXPECT_EQ(again.summary.benchmarked, 0u);
  EXPECT_GE(again.summary.remeasured, 2 * tuner::kFinalists);
  for (const auto& [key, ms] : rows(again.db)) {
    for (const auto& [kernel, m] : ms) EXPECT_NE(m.reason, tuner::kPromotedReason) << key << " " << kernel << ": re-timed";
    expect_finals(ms, key);
  }
}

// A halving sweep stopped after its short round leaves only short timings; another strategy
// resuming it fully times the short-timed winner (promotes it), then runs the finals over what is
// fully timed, and again while a short timing is on top: no winner is left a short timing.
TEST_F(Search, AnotherStrategyPromotesAShortTimedWinner) {
  SweepRun again = exhaustive_edited_rerun(
      "short", std::string("UPDATE measurements SET reason = '") + tuner::kShortTimingReason + "' WHERE status = 'ok';");
  EXPECT_EQ(again.summary.benchmarked, 0u);
  EXPECT_GE(again.summary.promoted, 2u) << "one per problem at least";
  expect_valid(again);  // no winner a short timing
}

TEST_F(Search, RandomRespectsBudgetAndSeedAndResumes) {
  tuner::SearchOptions s;
  s.strategy = "random";
  s.budget = 3;
  s.seed = 42;
  SweepRun a = sweep(s, "a"), b = sweep(s, "b");
  EXPECT_EQ(a.summary.benchmarked, 6u);
  auto ra = rows(a.db), rb = rows(b.db);
  ASSERT_EQ(ra.size(), 2u);
  for (const auto& [key, ms] : ra) {
    std::set<std::string> ka, kb;
    for (const auto& [k, m] : ms) ka.insert(k);
    for (const auto& [k, m] : rb[key]) kb.insert(k);
    EXPECT_EQ(ka, kb) << "same seed, same subset";
  }
  // A rerun of the same config on the same database measures nothing new.
  SweepRun again = sweep(s, "a");
  EXPECT_EQ(again.summary.already_done, 6u);
  EXPECT_EQ(again.summary.benchmarked, 0u);
}

TEST_F(Search, HalvingTimesAllBrieflyAndAtMostTheBudgetFully) {
  const std::size_t space = space_per_problem();
  tuner::SearchOptions s;
  s.strategy = "halving";
  s.budget = 1;
  SweepRun r = sweep(s, "halving");
  expect_valid(r);
  EXPECT_LE(r.summary.fully_timed, 2 * s.budget);  // two problems
  std::size_t full_rows = 0, total = 0;
  for (const auto& [key, ms] : rows(r.db)) {
    EXPECT_EQ(ms.size(), space) << "every candidate measured at least briefly";
    for (const auto& [k, m] : ms) {
      ++total;
      if (m.status == db::Status::Ok && m.reason != tuner::kShortTimingReason) ++full_rows;
    }
  }
  EXPECT_EQ(full_rows, r.summary.fully_timed + r.summary.promoted);
  EXPECT_EQ(total, r.summary.benchmarked + r.summary.invalid + r.summary.launch_failed);
  // Resume: the short-timed losers are not retried, and no round is run again.
  SweepRun again = sweep(s, "halving");
  EXPECT_EQ(again.summary.benchmarked, 0u);
  EXPECT_EQ(again.summary.remeasured, 0u);
  EXPECT_EQ(again.summary.already_done, 2 * space);
}

TEST(HalvingRounds, PlannedFromWhatIsRecorded) {
  auto row = [](double short_ms, double full_ms = NAN, bool final = false) {
    tuner::HalvingRow r;
    r.measured = true;
    r.short_ms = short_ms;
    r.full_ms = full_ms;
    r.final = final;
    return r;
  };
  // 6 timed: 2 contenders; one is already fully timed, so only the best short one is left.
  std::vector<tuner::HalvingRow> rows = {row(5), row(NAN, 1), row(3), row(NAN), row(4), row(6), row(7)};
  EXPECT_EQ(tuner::halving_round2(rows, 0), (std::vector<std::size_t>{2}));
  rows[2] = row(NAN, 2);
  EXPECT_TRUE(tuner::halving_round2(rows, 0).empty()) << "round two is done";
  // The finals: the best few fully timed, minus those already re-timed.
  EXPECT_EQ(tuner::finalists(rows, true), (std::vector<std::size_t>{1, 2}));
  rows[1].final = true;
  EXPECT_EQ(tuner::finalists(rows, true), (std::vector<std::size_t>{2}));
  rows[2].final = true;
  EXPECT_TRUE(tuner::finalists(rows, true).empty()) << "the finals are done";
  EXPECT_TRUE(tuner::finalists({row(NAN, 1)}, true).empty()) << "one contender is not re-timed";
  // A short-timed winner fully timed after the rounds: they were finished.
  std::vector<tuner::HalvingRow> promoted = {row(NAN, 2), row(NAN, 1)};
  promoted[1].promoted = true;
  EXPECT_TRUE(tuner::finalists(promoted, true).empty()) << "halving's rounds are done";
  EXPECT_EQ(tuner::finalists(promoted, false), (std::vector<std::size_t>{1, 0})) << "other strategies re-time it";
}

// A sweep stopped between halving's rounds: on the rerun, the short timings are not taken for
// finished work; round two and the finals run for that problem, and nothing else is measured.
TEST_F(Search, HalvingStoppedAfterTheShortRoundFinishesItsRoundsOnRerun) {
  const std::size_t space = space_per_problem();
  tuner::SearchOptions s;
  s.strategy = "halving";
  SweepRun r = sweep(s, "stopped");
  const std::size_t keep = (space + 2) / 3;
  ASSERT_EQ(r.summary.fully_timed, 2 * keep);
  // What a kill right after the first problem's short round leaves: every 'ok' row of it a short timing.
  const std::string stopped_key = rows(r.db).begin()->first;
  {
    db::Database d = db::Database::open(r.db, db::Mode::ReadWrite);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(d.native_handle(),
                                 "UPDATE measurements SET reason = ?1 WHERE status = 'ok' AND "
                                 "problem_id = (SELECT id FROM problems WHERE key = ?2)",
                                 -1, &st, nullptr),
              SQLITE_OK);
    sqlite3_bind_text(st, 1, tuner::kShortTimingReason, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, stopped_key.c_str(), -1, SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
  }
  SweepRun again = sweep(s, "stopped");
  EXPECT_EQ(again.summary.benchmarked, 0u) << "round one is not redone";
  EXPECT_EQ(again.summary.fully_timed, keep) << "round two runs for the stopped problem only";
  // Round two, then the finals: the fastest few re-timed, more when a re-timing lets the next in
  // (each fully timed candidate at most once).
  EXPECT_GE(again.summary.remeasured, keep + std::min(keep, tuner::kFinalists) + again.summary.promoted);
  EXPECT_LE(again.summary.remeasured, 2 * keep + again.summary.promoted);
  for (const auto& [key, ms] : rows(again.db)) {
    std::size_t full = 0;
    for (const auto& [k, m] : ms) full += m.status == db::Status::Ok && m.reason != tuner::kShortTimingReason;
    EXPECT_GE(full, keep) << key;
    expect_finals(ms, key);
  }
  for (const auto& w : again.summary.winners) {
    db::Database d = db::Database::open(again.db, db::Mode::ReadOnly);
    auto win = d.find_winner(again.summary.arch, w.problem.key());
    ASSERT_TRUE(win);
    auto m = d.find_measurement(*d.find_problem(w.problem.key()), win->solution_id, again.summary.arch);
    ASSERT_TRUE(m);
    EXPECT_NE(m->reason, tuner::kShortTimingReason) << "a winner is never a short timing";
  }
  // And once finished, a rerun times nothing.
  SweepRun third = sweep(s, "stopped");
  EXPECT_EQ(third.summary.benchmarked + third.summary.remeasured, 0u);
}

TEST_F(Search, SecondsBudgetMeasuresAtLeastOnePerProblem) {
  tuner::SearchOptions s;
  s.strategy = "model";
  s.budget_seconds = 1e-9;
  SweepRun r = sweep(s, "seconds");
  EXPECT_EQ(r.summary.benchmarked, 2u);
  EXPECT_EQ(r.summary.over_budget, 2 * (space_per_problem() - 1));
  EXPECT_EQ(r.summary.winners.size(), 2u);
}

}  // namespace
