// A sweep killed with SIGKILL at any moment and started again with the same config redoes nothing
// it finished, loses nothing, and leaves a database that passes PRAGMA integrity_check.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "db/database.h"
#include "tests/process_util.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::testing;

namespace {

std::int64_t count(db::Database& d, const char* sql) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(d.native_handle(), sql, -1, &st, nullptr);
  std::int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return n;
}

TEST(Resume, SigkillAtSeveralPointsThenResumeLosesAndRedoesNothing) {
  fs::path dir = fs::temp_directory_path() / ("tiletune-resume-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string config = (dir / "sweep.json").string(), db = (dir / "resume.db").string(), log = (dir / "log.txt").string();
  // 2 problems x 16 variants: long enough on two cores to be killed in compile and in measure.
  std::ofstream(config) << R"({
    "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 256, "n": 192, "k": 256},
                 {"dtype": "bf16", "transA": "T", "transB": "N", "m": 50, "n": 70, "k": 90}],
    "templates": {"host_gemm": {"parameters": {"MT0": [16, 32], "MT1": [16, 32], "KU": [16, 64], "TT0": [8, 16], "TT1": [2]}}},
    "benchmark": {"warmup": 1, "min_iterations": 5, "max_iterations": 20, "target_ms": 40}
  })";
  const std::vector<std::string> cmd = {TILETUNE_EXE, "tune", config, "--db", db, "--backend", "host", "--no-vendor"};

  // Kill points by progress, not by clock, so that they land in both phases on any machine:
  // while compiling (code objects written) and while measuring (measurements written).
  struct KillPoint {
    const char* what;
    const char* sql;
    std::int64_t at_least;
  };
  const KillPoint points[] = {{"compile", "SELECT COUNT(*) FROM code_objects", 3},
                              {"compile", "SELECT COUNT(*) FROM code_objects", 20},
                              {"measure", "SELECT COUNT(*) FROM measurements", 2},
                              {"measure", "SELECT COUNT(*) FROM measurements", 12},
                              {"measure", "SELECT COUNT(*) FROM measurements", 25}};
  std::int64_t measured_before = 0;
  for (const auto& point : points) {
    Child c = spawn(cmd, log);
    bool reached = false;
    for (int i = 0; i < 6000 && !reached; ++i) {  // at most 60 s
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (!fs::exists(db)) continue;
      try {
        db::Database d = db::Database::open(db, db::Mode::ReadOnly);
        reached = count(d, point.sql) >= point.at_least;
      } catch (const std::exception&) {
        // not created or migrated yet
      }
    }
    ::kill(c.pid, SIGKILL);
    wait_for(c);
    ASSERT_TRUE(reached) << "the sweep never reached the " << point.what << " kill point";
    db::Database d = db::Database::open(db, db::Mode::ReadWrite);
    ASSERT_EQ(d.integrity_check(), "ok") << "after SIGKILL during " << point.what;
    std::int64_t measured = count(d, "SELECT COUNT(*) FROM measurements");
    std::printf("killed during %s: %lld code objects, %lld measurements\n", point.what,
                (long long)count(d, "SELECT COUNT(*) FROM code_objects"), (long long)measured);
    EXPECT_GE(measured, measured_before) << "a kill lost finished measurements";
    measured_before = measured;
  }

  ASSERT_EQ(wait_for(spawn(cmd, log)), 0) << read_file(log);
  {
    db::Database d = db::Database::open(db, db::Mode::ReadOnly);
    EXPECT_EQ(d.integrity_check(), "ok");
    EXPECT_EQ(count(d, "SELECT COUNT(*) FROM measurements"), 32);
    EXPECT_EQ(count(d, "SELECT COUNT(*) FROM measurements WHERE status = 'ok'"), 32);
    EXPECT_EQ(count(d, "SELECT COUNT(*) FROM winners"), 2);
  }
  // Once finished, a rerun compiles and measures nothing.
  std::string again_log = (dir / "again.txt").string();
  ASSERT_EQ(wait_for(spawn(cmd, again_log)), 0);
  std::string out = read_file(again_log);
  EXPECT_NE(out.find("32 already measured, 0 compiled"), std::string::npos) << out;
  EXPECT_NE(out.find("0 benchmarked"), std::string::npos) << out;
  fs::remove_all(dir);
}

// A tiny host sweep in `dir`: the config and the command that tunes it into dir/sweep.db.
std::vector<std::string> small_sweep(const fs::path& dir, const char* variants) {
  const std::string config = (dir / "sweep.json").string();
  std::ofstream(config) << R"({
    "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 128, "n": 96, "k": 128}],
    "templates": {"host_gemm": {"parameters": )" << variants << R"(}},
    "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 5}
  })";
  return {TILETUNE_EXE, "tune", config, "--db", (dir / "sweep.db").string(), "--backend", "host", "--no-vendor"};
}

// Issue 17: a compile failure belongs to the compiler that produced it. Rerun under the same
// broken compiler, nothing is tried again; under a working one, every candidate is compiled,
// measured and a winner found.
TEST(Resume, ACompileFailureIsRetriedUnderAnotherCompilerNotUnderTheSame) {
  const fs::path dir = fs::temp_directory_path() / ("tiletune-retry-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path broken = dir / "broken-cxx";
  std::ofstream(broken) << "#!/bin/sh\necho 'tiletune test: this compiler always fails' >&2\nexit 1\n";
  fs::permissions(broken, fs::perms::owner_all);
  const auto cmd = small_sweep(dir, R"({"MT0": [16, 32], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [2]})");
  const std::vector<std::string> env = {"TILETUNE_HOST_CXX=" + broken.string()};
  const std::string log = (dir / "log.txt").string();
  // Nothing compiled: an error (exit 1) that shows the first compiler message (issue 19).
  EXPECT_EQ(wait_for(spawn(cmd, log, env)), 1) << read_file(log);
  EXPECT_NE(read_file(log).find("no candidate compiled"), std::string::npos) << read_file(log);
  EXPECT_NE(read_file(log).find("first compile failure of 2:"), std::string::npos) << read_file(log);
  EXPECT_NE(read_file(log).find("this compiler always fails"), std::string::npos) << read_file(log);
  auto counts = [&] {
    db::Database d = db::Database::open((dir / "sweep.db").string(), db::Mode::ReadOnly);
    return std::make_pair(count(d, "SELECT COUNT(*) FROM measurements WHERE status = 'compile_failed'"),
                          count(d, "SELECT COUNT(*) FROM winners"));
  };
  ASSERT_EQ(counts(), std::make_pair(std::int64_t(2), std::int64_t(0))) << read_file(log);
  {
    db::Database d = db::Database::open((dir / "sweep.db").string(), db::Mode::ReadOnly);
    EXPECT_EQ(count(d, "SELECT COUNT(*) FROM measurements WHERE reason LIKE '%this compiler always fails%'"), 2);
  }

  const std::string same_log = (dir / "same.txt").string();
  wait_for(spawn(cmd, same_log, env));
  EXPECT_NE(read_file(same_log).find("2 already measured, 0 compiled"), std::string::npos) << read_file(same_log);

  const std::string fixed_log = (dir / "fixed.txt").string();
  ASSERT_EQ(wait_for(spawn(cmd, fixed_log)), 0) << read_file(fixed_log);
  EXPECT_NE(read_file(fixed_log).find("0 already measured, 2 compiled"), std::string::npos) << read_file(fixed_log);
  EXPECT_EQ(counts(), std::make_pair(std::int64_t(0), std::int64_t(1))) << read_file(fixed_log);
  fs::remove_all(dir);
}

// Issue 17: a tune stopped by SIGTERM or SIGINT while it compiles leaves no temporary directory
// (nor a compiler's own temporary files, which go into ours) and dies of that signal.
TEST(Resume, ATuneStoppedBySigtermOrSigintLeavesNoTemporaryFiles) {
  for (int sig : {SIGTERM, SIGINT}) {
    const fs::path dir = fs::temp_directory_path() / ("tiletune-stop-" + std::to_string(::getpid()));
    const fs::path tmp = dir / "tmp";
    fs::create_directories(tmp);
    const auto cmd = small_sweep(dir, R"({"MT0": [16, 32, 64], "MT1": [16, 32], "KU": [16, 32, 64], "TT0": [8, 16], "TT1": [2]})");
    const std::string log = (dir / "log.txt").string();
    // Without the compile cache on disk: with it, these kernels may come from earlier runs and
    // no compiler ever runs.
    Child c = spawn(cmd, log, {"TMPDIR=" + tmp.string(), "TILETUNE_COMPILE_CACHE="});
    // Stopped while a compiler is running: a directory of ours exists.
    bool compiling = false;
    for (int i = 0; i < 6000 && !compiling; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      for (const auto& e : fs::directory_iterator(tmp))
        compiling |= e.path().filename().string().rfind("tiletune-host-", 0) == 0;
    }
    ASSERT_TRUE(compiling) << "no compile seen in 60 s: " << read_file(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::kill(c.pid, sig);
    EXPECT_EQ(wait_for(c), 128 + sig) << read_file(log);
    std::vector<std::string> left;
    for (const auto& e : fs::recursive_directory_iterator(tmp)) left.push_back(e.path().string());
    EXPECT_TRUE(left.empty()) << "left behind after signal " << sig << ": " << left.front();
    fs::remove_all(dir);
  }
}

// A tune started with SIGHUP ignored (nohup) keeps it ignored: closing the terminal does not stop it.
TEST(Resume, ATuneStartedUnderNohupIgnoresSighup) {
  const fs::path dir = fs::temp_directory_path() / ("tiletune-nohup-" + std::to_string(::getpid()));
  const fs::path tmp = dir / "tmp";
  fs::create_directories(tmp);
  const auto cmd = small_sweep(dir, R"({"MT0": [16, 32, 64], "MT1": [16, 32], "KU": [16, 32], "TT0": [8], "TT1": [2]})");
  const std::string log = (dir / "log.txt").string();
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGHUP, &ignore, &old);
  Child c = spawn(cmd, log, {"TMPDIR=" + tmp.string(), "TILETUNE_COMPILE_CACHE="});  // a compiler must run
  ::sigaction(SIGHUP, &old, nullptr);
  bool compiling = false;
  for (int i = 0; i < 6000 && !compiling; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (const auto& e : fs::directory_iterator(tmp))
      compiling |= e.path().filename().string().rfind("tiletune-host-", 0) == 0;
  }
  ASSERT_TRUE(compiling) << read_file(log);
  ::kill(c.pid, SIGHUP);
  EXPECT_EQ(wait_for(c), 0) << read_file(log);
  fs::remove_all(dir);
}

}  // namespace
