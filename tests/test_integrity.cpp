// A database is code (issue 17): every code object's bytes carry a SHA-256 recorded when stored and
// checked before any load, and the instantiation it was compiled as, checked against the solution
// that runs it. A corrupted blob, a blob swapped for a library with a payload, or an edited params
// row never loads: the runtime builds the kernel from its own template source instead, results
// stay right, and `db check` names the fault. Host backend; every call checked against fp64.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

#include "db/database.h"
#include "db/integrity.h"
#include "gpu/backend.h"
#include "process_util.h"
#include "runtime_test_util.h"
#include "tuner/config.h"
#include "tuner/sweep.h"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

void sql(const std::string& path, const std::string& statement) {
  db::Database d = db::Database::open(path, db::Mode::ReadWrite);
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(d.native_handle(), statement.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
}

class Integrity : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TILETUNE_VENDOR", "off", 1);  // the kernel is the winner under test
    dir_ = fs::temp_directory_path() / ("tiletune-integrity-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    db_ = (dir_ / "tuned.db").string();
    const tuner::TuningConfig cfg = tuner::parse_config(R"({"name": "integrity",
        "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 40, "n": 24, "k": 16}],
        "templates": {"host_gemm": {"parameters": {"MT0": [16], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [4]}}},
        "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 3, "target_ms": 2}})",
                                                        dir_.string());
    problem_ = cfg.problems[0].gemm();
    tuner::SweepOptions o;
    o.backend = gpu::BackendKind::Host;
    o.db_path = db_;
    ASSERT_EQ(tuner::run_sweep(cfg, o, stderr).winners.size(), 1u);
  }
  void TearDown() override {
    ::unsetenv("TILETUNE_VENDOR");
    fs::remove_all(dir_);
  }

  // Serves the problem once through a fresh runtime: right or not, and how many kernels it compiled.
  std::pair<bool, std::uint64_t> serve() {
    tiletune_handle_t h = nullptr;
    EXPECT_EQ(tiletune_create(&h, db_.c_str(), "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
    const auto r = testing_util::dispatch_host(h, problem_);
    tiletune_stats_t s{};
    EXPECT_EQ(tiletune_get_stats(h, &s), TILETUNE_SUCCESS);
    EXPECT_EQ(s.tuned, 1u);
    tiletune_destroy(h);
    EXPECT_TRUE(r.ok) << r.reason;
    return {r.ok, s.jit_compiles};
  }
  std::string check() {
    const std::string log = (dir_ / "check.log").string();
    const int rc = tiletune::testing::wait_for(tiletune::testing::spawn({TILETUNE_EXE, "db", "check", db_}, log));
    return std::to_string(rc) + ": " + tiletune::testing::read_file(log);
  }

  fs::path dir_;
  std::string db_;
  GemmProblem problem_;
};

TEST_F(Integrity, AnIntactCodeObjectLoadsWithoutACompile) {
  EXPECT_EQ(serve().second, 0u);
  EXPECT_EQ(check().rfind("0: ", 0), 0u) << check();
}

TEST_F(Integrity, ACorruptedCodeObjectIsNeverLoaded) {
  // One flipped byte in the middle of the library (before: SIGILL / SIGSEGV in the host program).
  sql(db_, "UPDATE code_objects SET bytes = substr(bytes, 1, length(bytes) / 2) || x'ff' || "
           "substr(bytes, length(bytes) / 2 + 2) WHERE ok = 1");
  EXPECT_EQ(serve().second, 1u) << "built from the template source instead";
  const std::string c = check();
  EXPECT_EQ(c.rfind("1: ", 0), 0u) << c;
  EXPECT_NE(c.find("SHA-256"), std::string::npos) << c;
}

TEST_F(Integrity, ALibrarySwappedInWithAPayloadNeverRuns) {
  const fs::path marker = dir_ / "PAYLOAD-RAN", src = dir_ / "payload.cpp", so = dir_ / "payload.so";
  {
    std::ofstream f(src);
    f << "#include <cstdio>\n__attribute__((constructor)) static void payload() { std::FILE* f = std::fopen(\""
      << marker.string() << "\", \"w\"); if (f) std::fclose(f); }\n"
      << "extern \"C\" void tt_entry(const void*, unsigned, unsigned, unsigned) {}\n";
  }
  ASSERT_EQ(std::system(("c++ -shared -fPIC -o '" + so.string() + "' '" + src.string() + "'").c_str()), 0);
  std::ifstream in(so, std::ios::binary);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  std::string hex;
  for (std::uint8_t b : bytes) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
  sql(db_, "UPDATE code_objects SET bytes = x'" + hex + "' WHERE ok = 1");
  EXPECT_EQ(serve().second, 1u);
  EXPECT_FALSE(fs::exists(marker)) << "the swapped-in library's constructor ran";
  EXPECT_EQ(check().rfind("1: ", 0), 0u) << check();
}

TEST_F(Integrity, AnEditedParamsRowDoesNotLoadTheCodeObjectBuiltForOthers) {
  // MT0 16 -> 32 (still valid): the stored code object was compiled as MT0 16 and must not run
  // with MT0 32's launch; the runtime builds MT0 32 from source (before: MT0 -64 returned SUCCESS
  // with C unwritten).
  sql(db_, "UPDATE solutions SET params = json_set(params, '$.MT0', 32), kernel_name = kernel_name || '-edited' "
           "WHERE template = 'host_gemm'");
  EXPECT_EQ(serve().second, 1u);
  const std::string c = check();
  EXPECT_EQ(c.rfind("1: ", 0), 0u) << c;
  EXPECT_NE(c.find("was compiled as"), std::string::npos) << c;
}

TEST_F(Integrity, ADatabaseFromBeforeHashesIsHashedWhenMigratedAndUnverifiedReadOnly) {
  // Make it a schema 4 database: no hash, no compiled_from.
  sql(db_, "ALTER TABLE code_objects DROP COLUMN sha256; ALTER TABLE code_objects DROP COLUMN compiled_from; "
           "PRAGMA user_version = 4");
  EXPECT_EQ(serve().second, 1u) << "read-only, unmigrated: its code objects are unverified and not loaded";
  { db::Database d = db::Database::open(db_, db::Mode::ReadWrite); }  // migrates to 5, hashing them
  EXPECT_EQ(serve().second, 0u);
  EXPECT_EQ(check().rfind("0: ", 0), 0u) << check();
}

TEST(IntegrityHash, Sha256OfKnownInputs) {
  EXPECT_EQ(db::sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(db::sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
