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

}  // namespace
