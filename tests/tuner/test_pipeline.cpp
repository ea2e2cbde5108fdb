// The whole product on the host backend: a sweep writes a database, a rerun resumes without redoing
// anything, and the runtime opens the database and dispatches the winners (and a fallback for an
// untuned problem) with correct results.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <cstdint>
#include <fstream>

#include "common/error.h"
#include "db/database.h"
#include "gpu/backend.h"
#include "runtime/runtime.h"
#include "runtime/tiletune.hpp"
#include "tuner/config.h"
#include "tuner/enumerator.h"
#include "ops/gemm/inputs.h"
#include "ops/launch.h"
#include "tuner/sweep.h"
#include "tests/runtime_test_util.h"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

// Two problems (an odd f32 NN with padded lda, a batched bf16 TN with beta) and a small host space.
const char* kPipelineConfig = R"({
  "name": "pipeline-test",
  "problems": [
    {"dtype": "f32", "transA": "N", "transB": "N", "m": 70, "n": 45, "k": 33, "lda": 75},
    {"a_type": "bf16", "c_type": "f32", "transA": "T", "transB": "N", "m": 40, "n": 24, "k": 50, "batch": 2, "beta_zero": false},
    {"dtype": "tf32", "transA": "N", "transB": "T", "m": 20, "n": 30, "k": 40}
  ],
  "templates": {"host_gemm": {"parameters": {"MT0": [16, 32], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [2, 4]}}},
  "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 5}
})";

class Pipeline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // These tests are about the generated kernels' rungs; test_ladder covers the vendor's.
    ::setenv("TILETUNE_VENDOR", "off", 1);
    dir_ = fs::temp_directory_path() / ("tiletune-pipeline-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    db_ = (dir_ / "tuned.db").string();
    config_ = tuner::parse_config(kPipelineConfig, dir_.string());
    tuner::SweepOptions o;
    o.backend = gpu::BackendKind::Host;
    o.db_path = db_;
    first_ = tuner::run_sweep(config_, o, stderr);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // Runs `problem` through the runtime on fresh random data and checks it against fp64.
  static ops::ValidationResult dispatch(Handle& h, const GemmProblem& problem) {
    return testing_util::dispatch_host(h.get(), problem);
  }

  static fs::path dir_;
  static std::string db_;
  static tuner::TuningConfig config_;
  static tuner::SweepSummary first_;
};
fs::path Pipeline::dir_;
std::string Pipeline::db_;
tuner::TuningConfig Pipeline::config_;
tuner::SweepSummary Pipeline::first_;

TEST_F(Pipeline, SweepMeasuresEveryCandidateAndPicksAWinnerPerProblem) {
  EXPECT_EQ(first_.total, 3u * 2 * 2);
  EXPECT_EQ(first_.candidates + first_.pruned, first_.total);
  EXPECT_EQ(first_.benchmarked, first_.candidates);
  EXPECT_EQ(first_.invalid, 0u);
  ASSERT_EQ(first_.winners.size(), 3u);
  for (const auto& w : first_.winners) {
    EXPECT_GT(w.tflops, 0);
    EXPECT_EQ(w.kernel_name.rfind("host_gemm_", 0), 0u);
  }
  db::Database d = db::Database::open(db_, db::Mode::ReadOnly);
  EXPECT_EQ(d.integrity_check(), "ok");
  EXPECT_EQ(d.winners("").size(), 3u);
  // The compile side's account: time inside compile calls fits in its wall time on its threads.
  EXPECT_GT(first_.compiled, 0u);
  EXPECT_GE(first_.compile_threads, 1u);
  EXPECT_GT(first_.compile_wall_s, 0);
  EXPECT_GT(first_.compile_busy_s, 0);
  EXPECT_LE(first_.compile_busy_s, first_.compile_wall_s * first_.compile_threads * 1.01 + 0.01);
  EXPECT_FALSE(first_.compile_cpu_known);  // the host compiler runs in child processes
}

TEST_F(Pipeline, RerunResumesWithoutRedoingAnything) {
  tuner::SweepOptions o;
  o.backend = gpu::BackendKind::Host;
  o.db_path = db_;
  tuner::SweepSummary again = tuner::run_sweep(config_, o, stderr);
  EXPECT_EQ(again.already_done, first_.candidates);
  EXPECT_EQ(again.compiled, 0u);
  EXPECT_EQ(again.benchmarked, 0u);
  EXPECT_EQ(again.winners.size(), 3u);
}

TEST_F(Pipeline, RuntimeDispatchesTunedWinnersCorrectly) {
  Handle h(db_, "host");
  EXPECT_EQ(h.arch(), gpu::list_devices(gpu::BackendKind::Host)[0].arch);
  for (const auto& p : config_.problems) {
    auto r = dispatch(h, p.gemm());
    EXPECT_TRUE(r.ok) << p.key() << ": " << r.reason;
  }
  auto s = h.stats();
  EXPECT_EQ(s.tuned, 3u);
  EXPECT_EQ(s.fallbacks, 0u);
  EXPECT_EQ(s.jit_compiles, 0u) << "winners must load from the database's code objects";
}

TEST_F(Pipeline, UntunedProblemFallsBackToTheDefaultKernelAndIsCounted) {
  Handle h(db_, "host");
  GemmProblem p;
  p.a_type = DataType::F16;
  p.c_type = DataType::F16;
  p.trans_b = true;
  p.m = 33;
  p.n = 17;
  p.k = 9;
  auto r = dispatch(h, p);
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(h.stats().fallbacks, 1u);
  EXPECT_EQ(h.stats().tuned, 0u);
  EXPECT_EQ(h.stats().jit_compiles, 1u);
}

TEST_F(Pipeline, NearbyUntunedProblemRunsTheNearestWinner) {
  Handle h(db_, "host");
  GemmProblem p = config_.problems[0].gemm();  // tuned: f32 NN 70x45x33, lda 75
  p.m = 64;
  p.n = 50;
  p.k = 30;
  p.lda = 0;
  auto r = dispatch(h, p);
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(h.stats().nearest, 1u);
  EXPECT_EQ(h.stats().fallbacks, 0u);
  EXPECT_EQ(h.stats().jit_compiles, 0u) << "the neighbour's code object serves";

  char why[512];
  p = p.canonical();
  ASSERT_EQ(tiletune_explain(h.get(), TILETUNE_OP_N, TILETUNE_OP_N, p.m, p.n, p.k, TILETUNE_R_32F, p.lda, p.ldb,
                             TILETUNE_R_32F, p.ldc, 1, 1, TILETUNE_COMPUTE_32F, why, sizeof why),
            TILETUNE_SUCCESS);
  EXPECT_NE(std::string(why).find("nearest"), std::string::npos) << why;
  // Far away (m 20x larger): the general default, not a kernel tuned for another scale.
  ASSERT_EQ(tiletune_explain(h.get(), TILETUNE_OP_N, TILETUNE_OP_N, 1400, 45, 33, TILETUNE_R_32F, 1400, 33,
                             TILETUNE_R_32F, 1400, 1, 1, TILETUNE_COMPUTE_32F, why, sizeof why),
            TILETUNE_SUCCESS);
  EXPECT_NE(std::string(why).find("default"), std::string::npos) << why;
  const GemmProblem& t = config_.problems[0].gemm();
  ASSERT_EQ(tiletune_explain(h.get(), TILETUNE_OP_N, TILETUNE_OP_N, t.m, t.n, t.k, TILETUNE_R_32F, t.lda, t.ldb,
                             TILETUNE_R_32F, t.ldc, 1, 1, TILETUNE_COMPUTE_32F, why, sizeof why),
            TILETUNE_SUCCESS);
  EXPECT_NE(std::string(why).find("exact winner"), std::string::npos) << why;
}

TEST_F(Pipeline, ManyThreadsDispatchAtOnce) {
  Handle h(db_, "host");
  std::vector<GemmProblem> problems;
  for (const auto& p : config_.problems) problems.push_back(p.gemm());
  GemmProblem untuned;
  untuned.a_type = untuned.c_type = DataType::BF16;
  untuned.m = 21;
  untuned.n = 13;
  untuned.k = 17;
  problems.push_back(untuned);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 6; ++i) {
        try {
          if (!dispatch(h, problems[(t + i) % problems.size()]).ok) ++failures;
        } catch (const std::exception& e) {
          ADD_FAILURE() << e.what();
          ++failures;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto s = h.stats();
  EXPECT_EQ(s.calls, 48u);
  EXPECT_EQ(s.tuned + s.nearest + s.fallbacks, 48u);
  EXPECT_EQ(s.jit_compiles, 1u) << "the untuned problem's default compiles once, whichever thread comes first";
}

TEST_F(Pipeline, UntunedProblemsAreRecordedAsATuningConfig) {
  std::string path = (dir_ / "untuned.json").string();
  ::setenv("TILETUNE_RECORD_UNTUNED", path.c_str(), 1);
  {
    Handle h(db_, "host");
    GemmProblem p;
    p.m = 19;
    p.n = 23;
    p.k = 29;
    p.trans_a = true;
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(dispatch(h, p).ok);
    EXPECT_TRUE(dispatch(h, config_.problems[0].gemm()).ok);  // tuned: not recorded
  }
  ::unsetenv("TILETUNE_RECORD_UNTUNED");
  tuner::TuningConfig recorded = tuner::load_config(path);
  ASSERT_EQ(recorded.problems.size(), 1u);
  EXPECT_EQ(recorded.problems[0].gemm().m, 19);
  EXPECT_TRUE(recorded.problems[0].gemm().trans_a);
}

TEST_F(Pipeline, BadInputGetsAStatusAndAMessageNeverACrash) {
  tiletune_handle_t h = nullptr;
  EXPECT_EQ(tiletune_create(&h, (dir_ / "missing.db").c_str(), "host", 0), TILETUNE_ERROR_DATABASE);
  EXPECT_NE(std::string(tiletune_last_error()).find("missing.db"), std::string::npos) << tiletune_last_error();
  EXPECT_EQ(h, nullptr);

  std::ofstream(dir_ / "text.db") << "not a database";
  EXPECT_EQ(tiletune_create(&h, (dir_ / "text.db").c_str(), "host", 0), TILETUNE_ERROR_DATABASE);
  EXPECT_EQ(tiletune_create(&h, db_.c_str(), "nonsense", 0), TILETUNE_ERROR_DEVICE);
  EXPECT_EQ(tiletune_create(&h, db_.c_str(), "host", 7), TILETUNE_ERROR_DEVICE);

  ASSERT_EQ(tiletune_create(&h, db_.c_str(), "host", 0), TILETUNE_SUCCESS);
  float x[4] = {1, 2, 3, 4};
  EXPECT_EQ(tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, 0, 2, 2, 1.f, x, TILETUNE_R_32F, 2, x, 2, 0.f, x,
                          TILETUNE_R_32F, 2, nullptr),
            TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("m, n and k"), std::string::npos) << tiletune_last_error();
  EXPECT_EQ(tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, 2, 2, 2, 1.f, x, TILETUNE_R_32F, 1, x, 2, 0.f, x,
                          TILETUNE_R_32F, 2, nullptr),
            TILETUNE_ERROR_INVALID_VALUE);  // lda < m
  // A null operand is an invalid value, as the header says (it was a launch failure).
  EXPECT_EQ(tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, 2, 2, 2, 1.f, nullptr, TILETUNE_R_32F, 2, x, 2, 0.f, x,
                          TILETUNE_R_32F, 2, nullptr),
            TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("null pointer"), std::string::npos) << tiletune_last_error();
  EXPECT_EQ(tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, 2, 2, 2, 1.f, x, tiletune_datatype_t(999), 2, x, 2, 0.f, x,
                          TILETUNE_R_32F, 2, nullptr),
            TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("999"), std::string::npos) << tiletune_last_error();
  // The memory calls: sizes that wrap, foreign pointers, null pointers (each crashed or lied before).
  void* mem = nullptr;
  EXPECT_EQ(tiletune_malloc(h, &mem, SIZE_MAX), TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiletune_malloc(h, &mem, 64), TILETUNE_SUCCESS);
  EXPECT_EQ(tiletune_free(h, x), TILETUNE_ERROR_INVALID_VALUE) << "not tiletune_malloc's";
  EXPECT_EQ(tiletune_memcpy_to_device(h, nullptr, x, 16), TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiletune_memcpy_to_host(h, x, nullptr, 16), TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiletune_memcpy_to_device(h, mem, x, 16), TILETUNE_SUCCESS);
  EXPECT_EQ(tiletune_free(h, mem), TILETUNE_SUCCESS);
  EXPECT_EQ(tiletune_free(h, mem), TILETUNE_ERROR_INVALID_VALUE) << "freed already";
  const void* off = reinterpret_cast<const char*>(x) + 1;  // not on a float boundary
  EXPECT_NE(tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, 2, 2, 2, 1.f, off, TILETUNE_R_32F, 2, x, 2, 0.f, x,
                          TILETUNE_R_32F, 2, nullptr),
            TILETUNE_SUCCESS);
  EXPECT_NE(std::string(tiletune_last_error()).find("pointer A is not aligned"), std::string::npos)
      << tiletune_last_error();
  EXPECT_EQ(tiletune_gemm(h, tiletune_operation_t(5), TILETUNE_OP_N, 2, 2, 2, 1.f, x, TILETUNE_R_32F, 2, x, 2, 0.f, x,
                          TILETUNE_R_32F, 2, nullptr),
            TILETUNE_ERROR_INVALID_VALUE);
  tiletune_destroy(h);
  EXPECT_EQ(tiletune_gemm(nullptr, TILETUNE_OP_N, TILETUNE_OP_N, 2, 2, 2, 1.f, x, TILETUNE_R_32F, 2, x, 2, 0.f, x,
                          TILETUNE_R_32F, 2, nullptr),
            TILETUNE_ERROR_INVALID_VALUE);
}

// A database tuned before a template grew a parameter: its winners lack it and take the
// template's default, still served as tuned (not skipped to the fallback).
TEST_F(Pipeline, WinnersMissingANewerParameterTakeItsDefault) {
  fs::path old = dir_ / "older-template.db";
  {
    db::Database src = db::Database::open(db_, db::Mode::ReadWrite);  // checkpoints the WAL into the file
  }
  fs::copy_file(db_, old, fs::copy_options::overwrite_existing);
  {
    db::Database d = db::Database::open(old.string(), db::Mode::ReadWrite);
    // The config tunes KU at 16 only, its default: drop it from every solution, as if the template
    // had not had it then.
    ASSERT_EQ(sqlite3_exec(d.native_handle(), "UPDATE solutions SET params = json_remove(params, '$.KU')", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    EXPECT_GT(sqlite3_changes(d.native_handle()), 0);
  }
  ASSERT_EQ(find_template("host_gemm").defaults().at("KU"), 16);
  Handle h(old.string(), "host");
  for (const auto& p : config_.problems) {
    auto r = dispatch(h, p.gemm());
    EXPECT_TRUE(r.ok) << r.reason;
  }
  EXPECT_EQ(h.stats().tuned, h.stats().calls);
  EXPECT_EQ(h.stats().fallbacks, 0u);
}

TEST_F(Pipeline, WinnersOfAnotherArchAreNeverLoaded) {
  // Copy the database and relabel every measurement and winner as another arch's.
  fs::path foreign = dir_ / "foreign.db";
  {
    db::Database src = db::Database::open(db_, db::Mode::ReadWrite);  // checkpoints the WAL into the file
  }
  fs::copy_file(db_, foreign, fs::copy_options::overwrite_existing);
  {
    db::Database d = db::Database::open(foreign.string(), db::Mode::ReadWrite);
    for (const char* sql : {"UPDATE measurements SET arch = 'gfx90a'", "UPDATE winners SET arch = 'gfx90a'",
                            "UPDATE code_objects SET arch = 'gfx90a'"})
      ASSERT_EQ(sqlite3_exec(d.native_handle(), sql, nullptr, nullptr, nullptr), SQLITE_OK);
  }
  Handle h(foreign.string(), "host");
  size_t tuned = 99;
  char arch[32];
  tiletune_get_arch(h.get(), arch, sizeof arch, &tuned);
  EXPECT_EQ(tuned, 0u);
  auto r = dispatch(h, config_.problems[0].gemm());
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(h.stats().fallbacks, 1u);
}

// Argument bytes built from the caller's pointers (TMA descriptors) are encoded again only when
// the parameters change, and an encoding that fails is not remembered.
TEST(ArgumentCache, EncodesOnlyWhenTheParametersChange) {
  ops::ArgumentCache cache;
  int encodes = 0;
  std::vector<std::uint8_t> seen;
  auto encode_from = [&](const TtGemmParams& p) {
    return [&encodes, p] {
      ++encodes;
      return std::vector<std::uint8_t>{std::uint8_t(p.m), std::uint8_t(encodes)};
    };
  };
  auto launch = [&](const std::vector<std::uint8_t>& bytes) { seen = bytes; };
  TtGemmParams p{};
  p.m = 7;
  cache.use(p, encode_from(p), launch);
  cache.use(p, encode_from(p), launch);
  EXPECT_EQ(encodes, 1);
  EXPECT_EQ(seen, (std::vector<std::uint8_t>{7, 1}));
  p.m = 9;  // another size (or pointer): encoded anew
  cache.use(p, encode_from(p), launch);
  EXPECT_EQ(encodes, 2);
  EXPECT_EQ(seen, (std::vector<std::uint8_t>{9, 2}));
  p.m = 11;
  EXPECT_THROW(cache.use(p, [] () -> std::vector<std::uint8_t> { throw Error("no driver"); }, launch), Error);
  cache.use(p, encode_from(p), launch);
  EXPECT_EQ(encodes, 3);
  EXPECT_EQ(seen, (std::vector<std::uint8_t>{11, 3}));
}

TEST(Config, AProblemNamedTwiceIsKeptOnce) {
  tuner::TuningConfig c = tuner::parse_config(R"({"problems": [
      {"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 32, "k": 16},
      {"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 32, "k": 16, "lda": 64, "ldb": 16, "ldc": 64},
      {"dtype": "f32", "transA": "T", "transB": "N", "m": 64, "n": 32, "k": 16}]})", ".");
  ASSERT_EQ(c.problems.size(), 2u);
  EXPECT_EQ(c.duplicates_dropped, 1u);
  EXPECT_FALSE(c.problems[0].gemm().trans_a);
  EXPECT_TRUE(c.problems[1].gemm().trans_a);
}

// Inputs that crashed, hung or were silently truncated (issue 17): each is refused with its cause.
TEST(Config, HostileConfigsAreRefusedWithTheirCauseNeverACrashOrAHang) {
  auto refused = [](const std::string& text, const std::string& cause) {
    try {
      tuner::parse_config(text, ".");
      ADD_FAILURE() << "accepted: " << text.substr(0, 200);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(cause), std::string::npos) << e.what();
    }
  };
  const std::string tmpl = R"(, "templates": {"host_gemm": {}}})";
  // A range near INT64_MAX overflowed and looped until out of memory.
  refused(R"({"problems": [{"m": [9223372036854775000, 9223372036854775807, 1], "n": 1, "k": 1}])" + tmpl, "within 1..");
  refused(R"({"problems": [{"m": [-9223372036854775807, 9223372036854775807, 1], "n": 1, "k": 1}])" + tmpl, "within 1..");
  refused(R"({"problems": [{"m": [1, 1000, 1], "n": [1, 1000, 1], "k": 1}])" + tmpl, "at most 100000");
  // Fractions were truncated.
  refused(R"({"problems": [{"m": 8, "n": 8, "k": 8, "batch": 1.99}])" + tmpl, "must be an integer");
  refused(R"({"problems": [{"m": 8.5, "n": 8, "k": 8}])" + tmpl, "must be an integer");
  refused(R"({"problems": [{"m": 8, "n": 8, "k": 8}], "templates": {"host_gemm": {"parameters": {"KU": [1.5]}}}})",
          "must be an integer");
  // Nonsense benchmark settings were accepted.
  refused(R"({"problems": [{"m": 8, "n": 8, "k": 8}], "benchmark": {"warmup": -5}})", "warmup");
  refused(R"({"problems": [{"m": 8, "n": 8, "k": 8}], "benchmark": {"target_ms": -1e308}})", "target_ms");
  // Nesting 100,000 deep overflowed the stack in dump() and in the expression parser.
  refused(R"({"problems": [{"m": 8, "n": 8, "k": 8, "lda": )" + std::string(100000, '[') + std::string(100000, ']') +
              "}]}",
          "nested deeper");
  refused(R"({"problems": [{"m": 8, "n": 8, "k": 8}], "templates": {"host_gemm": {"constraints": {"deep": ")" +
              std::string(100000, '(') + "1" + std::string(100000, ')') + R"("}}}})",
          "characters");
  refused(R"({"problems": [{"m": 8, "n": 8, "k": 8}], "templates": {"host_gemm": {"constraints": {"deep": ")" +
              std::string(300, '(') + "1" + std::string(300, ')') + R"("}}}})",
          "nested deeper");
  // A space too large to enumerate is refused before it is expanded.
  std::string wide = R"({"problems": [{"m": 8, "n": 8, "k": 8}], "templates": {"host_gemm": {"parameters": {)";
  std::string list = "[";
  for (int v = 1; v <= 300; ++v) list += std::to_string(v) + (v < 300 ? "," : "]");
  wide += "\"MT0\": " + list + ", \"MT1\": " + list + ", \"KU\": " + list + "}}}}";
  const tuner::TuningConfig cfg = tuner::parse_config(wide, ".");
  EXPECT_THROW(tuner::enumerate(cfg.templates, cfg.problems, gpu::list_devices(gpu::BackendKind::Host)[0]), Error);
}

TEST(Config, BadConfigFilesAreRefusedWithTheirCause) {
  EXPECT_THROW(tuner::load_config("/nonexistent/config.json"), Error);
  try {
    tuner::parse_config(R"({"problems": [{"m": 1, "n": 1, "k": 1}], "templates": {"host_gemm": {"parameters": {"NOPE": [1]}}}})", ".");
    FAIL() << "an unknown parameter must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NOPE"), std::string::npos) << e.what();
  }
}

}  // namespace
