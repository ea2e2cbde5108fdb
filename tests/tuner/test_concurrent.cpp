// Several tuner processes writing one database at once: every result present, none of them fails
// with "database is locked".
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "db/database.h"
#include "tests/process_util.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::testing;

TEST(Concurrent, FourTunerProcessesShareOneDatabase) {
  fs::path dir = fs::temp_directory_path() / ("tiletune-concurrent-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string db = (dir / "shared.db").string();
  std::vector<Child> children;
  std::vector<std::string> logs;
  for (int i = 0; i < 4; ++i) {
    std::string config = (dir / ("c" + std::to_string(i) + ".json")).string();
    // Distinct problems per process, the same kernels: the code-object cache is shared too.
    std::ofstream(config) << R"({"problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": )" << 40 + i
                          << R"(, "n": 33, "k": 21}, {"dtype": "f32", "transA": "T", "transB": "N", "m": 17, "n": )" << 30 + i
                          << R"(, "k": 45}],
      "templates": {"host_gemm": {"parameters": {"MT0": [16, 32], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [2, 4]}}},
      "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 5}})";
    logs.push_back((dir / ("log" + std::to_string(i) + ".txt")).string());
    children.push_back(spawn({TILETUNE_EXE, "tune", config, "--db", db, "--backend", "host", "--no-vendor", "--jobs", "1"},
                             logs.back()));
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(wait_for(children[i]), 0) << read_file(logs[i]);
    EXPECT_EQ(read_file(logs[i]).find("locked"), std::string::npos) << read_file(logs[i]);
  }
  db::Database d = db::Database::open(db, db::Mode::ReadOnly);
  EXPECT_EQ(d.integrity_check(), "ok");
  auto problems = d.problems();
  ASSERT_EQ(problems.size(), 8u);
  for (const auto& p : problems) EXPECT_EQ(p.measurements, 4) << p.key;
  EXPECT_EQ(d.winners("").size(), 8u);
  fs::remove_all(dir);
}
