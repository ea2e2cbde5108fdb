// A sweep whose compiler fails, through the program: it exits non-zero with the compiler's first
// message on stderr, also on a rerun that resumes it; a rerun under a mended compiler skips the
// recorded failures unless --retry-failed; a TMPDIR with a space in it changes nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/process_util.h"

namespace fs = std::filesystem;
using namespace tiletune::testing;

namespace {

// Two problems, one candidate each: f32 and bf16.
const char* kFailuresConfig = R"({"name": "failures",
  "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 40, "n": 24, "k": 16},
               {"dtype": "bf16", "transA": "N", "transB": "N", "m": 40, "n": 24, "k": 16}],
  "templates": {"host_gemm": {"parameters": {"MT0": [16], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [4]}}},
  "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 3, "target_ms": 2}})";

class TuneFailures : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tiletune-failures-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_ = (dir_ / "config.json").string();
    std::ofstream(config_) << kFailuresConfig;
    db_ = (dir_ / "tuned.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A compiler: c++, except that it fails with `message` while the file `broken` exists in the
  // test's folder (for every source, or only those that contain `only`). Its name and --version
  // stay the same whether it works or not: to the sweep it is one compiler throughout.
  std::string compiler(const std::string& message, const std::string& only = "") {
    const std::string path = (dir_ / "cxx.sh").string();
    std::ofstream f(path);
    f << "#!/bin/sh\n"
      << "if [ \"$1\" != --version ] && [ -e '" << (dir_ / "broken").string() << "' ]; then\n"
      << "  fail=1\n";
    if (!only.empty())
      f << "  fail=0; for a in \"$@\"; do case \"$a\" in *.cpp) grep -q '" << only << "' \"$a\" && fail=1;; esac; done\n";
    f << "  if [ $fail = 1 ]; then echo '" << message << "' >&2; exit 1; fi\n"
      << "fi\n"
      << "exec c++ \"$@\"\n";
    f.close();
    ::chmod(path.c_str(), 0755);
    return path;
  }
  void set_broken(bool broken) {
    if (broken) std::ofstream(dir_ / "broken") << "";
    else fs::remove(dir_ / "broken");
  }

  Output tune(const std::string& cxx, const std::vector<std::string>& extra = {},
              const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {TILETUNE_EXE, "tune", config_, "--db", db_, "--backend", "host", "--no-vendor",
                                     "--json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::vector<std::string> e = {"TILETUNE_HOST_CXX=" + cxx, "TILETUNE_VENDOR=off"};
    e.insert(e.end(), env.begin(), env.end());
    return run_to_end(argv, dir_.string(), e);
  }

  static nlohmann::json doc(const Output& o) {
    try {
      return nlohmann::json::parse(o.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "stdout is not one JSON document (" << e.what() << "):\n" << o.out << "\nstderr:\n" << o.err;
      return nlohmann::json::object();
    }
  }

  fs::path dir_;
  std::string config_, db_;
};

TEST_F(TuneFailures, NothingCompiledExitsOneWithTheFirstCompilerMessageOnStderr) {
  set_broken(true);
  const Output o = tune(compiler("cxx.sh: error: MARKER-7 the compiler is broken"));
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("no candidate compiled"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("MARKER-7"), std::string::npos) << o.err;
  const nlohmann::json d = doc(o);
  EXPECT_EQ(d.value("exit_code", -1), 1);
  EXPECT_EQ(d.value("status", ""), "error");
  EXPECT_EQ(d["candidates"].value("compile_failed", 0), 2);
  EXPECT_NE(d.value("first_compile_error", "").find("MARKER-7"), std::string::npos);
  for (const auto& p : d["problems"]) {
    EXPECT_EQ(p.value("status", ""), "uncompiled");
    EXPECT_TRUE(p["winner"].is_null());
  }
}

TEST_F(TuneFailures, AResumedSweepWhoseFailuresAreRecordedStillExitsOne) {
  set_broken(true);
  const std::string cxx = compiler("cxx.sh: error: MARKER-8");
  ASSERT_EQ(tune(cxx).code, 1);
  const Output again = tune(cxx);  // compiles nothing: every candidate is recorded
  EXPECT_EQ(again.code, 1) << again.err;
  EXPECT_NE(again.err.find("MARKER-8"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("--retry-failed"), std::string::npos) << again.err;
  EXPECT_EQ(doc(again)["candidates"].value("already_measured", 0), 2);
}

TEST_F(TuneFailures, OneProblemWithNoCandidateCompiledExitsOne) {
  set_broken(true);
  const Output o = tune(compiler("cxx.sh: error: MARKER-9 no bf16 today", "tt_bf16"));
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("MARKER-9"), std::string::npos) << o.err;
  const nlohmann::json d = doc(o);
  ASSERT_EQ(d["problems"].size(), 2u);
  EXPECT_EQ(d["problems"][0].value("status", ""), "tuned");
  EXPECT_FALSE(d["problems"][0]["winner"].is_null());
  EXPECT_EQ(d["problems"][1].value("status", ""), "uncompiled");
  EXPECT_NE(d["problems"][1].value("note", "").find("MARKER-9"), std::string::npos);
}

TEST_F(TuneFailures, AMissingCompilerIsAnErrorNamingIt) {
  const Output o = tune((dir_ / "no-such-c++").string());
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("no-such-c++"), std::string::npos) << o.err;
  EXPECT_NE(doc(o).value("error", "").find("no-such-c++"), std::string::npos);
}

TEST_F(TuneFailures, ACompilerThatFailsSilentlyIsReportedByItsStatus) {
  const Output o = tune("/bin/false");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("compiler exited with status 1"), std::string::npos) << o.err;
}

TEST_F(TuneFailures, ATemporaryDirectoryWithASpaceWorks) {
  const fs::path tmp = dir_ / "with space" / "tmp";
  fs::create_directories(tmp);
  const Output o = tune("c++", {}, {"TMPDIR=" + tmp.string()});
  EXPECT_EQ(o.code, 0) << o.err;
  const nlohmann::json d = doc(o);
  EXPECT_EQ(d["candidates"].value("compiled", 0), 2);
  for (const auto& p : d["problems"]) EXPECT_FALSE(p["winner"].is_null()) << p.dump();
}

// Recorded failures are finished work: a rerun under the mended (same) compiler compiles nothing;
// --retry-failed forgets them and the winners appear.
TEST_F(TuneFailures, RetryFailedTriesRecordedFailuresAgain) {
  const std::string cxx = compiler("cxx.sh: error: broken for now");
  set_broken(true);
  ASSERT_EQ(tune(cxx).code, 1);
  set_broken(false);

  const Output plain = tune(cxx);
  EXPECT_EQ(plain.code, 1) << plain.err;
  const nlohmann::json p = doc(plain);
  EXPECT_EQ(p["candidates"].value("compiled", -1), 0);
  EXPECT_EQ(p["candidates"].value("retried", -1), 0);
  for (const auto& problem : p["problems"]) EXPECT_TRUE(problem["winner"].is_null());

  const Output retried = tune(cxx, {"--retry-failed"});
  EXPECT_EQ(retried.code, 0) << retried.err;
  const nlohmann::json r = doc(retried);
  EXPECT_EQ(r["candidates"].value("retried", 0), 2);
  EXPECT_EQ(r["candidates"].value("compiled", 0), 2);
  EXPECT_EQ(r["candidates"].value("measured", 0), 2);
  for (const auto& problem : r["problems"]) {
    EXPECT_EQ(problem.value("status", ""), "tuned");
    EXPECT_FALSE(problem["winner"].is_null());
  }

  // Done now: a later rerun (with or without the flag) has nothing left to retry.
  const Output after = tune(cxx, {"--retry-failed"});
  EXPECT_EQ(after.code, 0) << after.err;
  EXPECT_EQ(doc(after)["candidates"].value("retried", -1), 0);
  EXPECT_EQ(doc(after)["candidates"].value("already_measured", 0), 2);
}

}  // namespace
