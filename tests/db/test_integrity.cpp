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
#include "tests/process_util.h"
#include "tests/runtime_test_util.h"
#include "tests/tiny_sweep.h"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

void sql(const std::string& path, const std::string& statement) {
  db::Database d = db::Database::open(path, db::Mode::ReadWrite);
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(d.native_handle(), statement.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
}

// A host code object whose constructor creates `marker`: what an attacker would swap in.
std::vector<std::uint8_t> payload_library(const fs::path& dir, const fs::path& marker) {
  const fs::path src = dir / "payload.cpp", so = dir / "payload.so";
  std::ofstream(src) << "#include <cstdio>\n__attribute__((constructor)) static void payload() { std::FILE* f = "
                        "std::fopen(\"" << marker.string() << "\", \"w\"); if (f) std::fclose(f); }\n"
                     << "extern \"C\" void tt_entry(const void*, unsigned, unsigned, unsigned) {}\n";
  EXPECT_EQ(std::system(("c++ -shared -fPIC -o '" + so.string() + "' '" + src.string() + "'").c_str()), 0);
  std::ifstream in(so, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string hex(const std::vector<std::uint8_t>& bytes) {
  std::string out;
  for (std::uint8_t b : bytes) out += "0123456789abcdef"[b >> 4], out += "0123456789abcdef"[b & 15];
  return out;
}

class Integrity : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TILETUNE_VENDOR", "off", 1);  // the kernel is the winner under test
    dir_ = fs::temp_directory_path() / ("tiletune-integrity-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    db_ = (dir_ / "tuned.db").string();
    problem_ = tiletune::testing::tune_tiny_host_database(db_, dir_.string());
  }
  void TearDown() override {
    ::unsetenv("TILETUNE_VENDOR");
    fs::remove_all(dir_);
  }

  // Serves the problem once through a fresh runtime: right or not, and how many kernels it compiled.
  std::pair<bool, std::uint64_t> serve() { return serve(db_); }
  std::pair<bool, std::uint64_t> serve(const std::string& path) {
    tiletune_handle_t h = nullptr;
    EXPECT_EQ(tiletune_create(&h, path.c_str(), "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
    const auto r = testing_util::dispatch_host(h, problem_);
    tiletune_stats_t s{};
    EXPECT_EQ(tiletune_get_stats(h, &s), TILETUNE_SUCCESS);
    EXPECT_EQ(s.tuned, 1u);
    tiletune_destroy(h);
    EXPECT_TRUE(r.ok) << r.reason;
    return {r.ok, s.jit_compiles};
  }
  std::string check() { return tool({"db", "check", db_}); }
  // Runs `tiletune ARGS...`: "<exit status>: <what it printed>".
  std::string tool(const std::vector<std::string>& args) {
    const std::string log = (dir_ / "tool.log").string();
    fs::remove(log);
    std::vector<std::string> argv = {TILETUNE_EXE};
    argv.insert(argv.end(), args.begin(), args.end());
    const int rc = tiletune::testing::wait_for(tiletune::testing::spawn(argv, log));
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

// A kernel built from source is built once per process: a second handle loads it from the
// runtime's in-process cache (the compiler, a counting wrapper here, runs once).
TEST_F(Integrity, ARefusedKernelIsCompiledOncePerProcessNotOncePerHandle) {
  sql(db_, "UPDATE code_objects SET sha256 = '" + std::string(64, '0') + "' WHERE ok = 1");
  const fs::path count = dir_ / "compiles", wrapper = dir_ / "counting-cxx";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \"$*\" in *--version*) ;; *) echo x >> '" << count.string()
                         << "' ;; esac\nexec c++ \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  ::setenv("TILETUNE_HOST_CXX", wrapper.c_str(), 1);
  // The compiler counts its runs: no compile cache on disk (the tests' one may hold this kernel).
  const char* disk = std::getenv("TILETUNE_COMPILE_CACHE");
  const std::string saved = disk ? disk : "";
  ::unsetenv("TILETUNE_COMPILE_CACHE");
  EXPECT_EQ(serve().second, 1u);
  EXPECT_EQ(serve().second, 1u) << "each handle counts the kernel it built from source";
  ::unsetenv("TILETUNE_HOST_CXX");
  if (disk) ::setenv("TILETUNE_COMPILE_CACHE", saved.c_str(), 1);
  std::ifstream in(count);
  const std::string lines((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(lines, "x\n") << "the compiler ran more than once for one kernel";
}

TEST_F(Integrity, ALibrarySwappedInWithAPayloadNeverRuns) {
  const fs::path marker = dir_ / "PAYLOAD-RAN";
  const std::vector<std::uint8_t> bytes = payload_library(dir_, marker);
  sql(db_, "UPDATE code_objects SET bytes = x'" + hex(bytes) + "' WHERE ok = 1");
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
  // Make it a schema 4 database: no hash, no compiled_from, no signatures.
  sql(db_, "DROP TABLE compiled; DROP TABLE pool; DROP TABLE signatures; "
           "ALTER TABLE code_objects DROP COLUMN sha256; "
           "ALTER TABLE code_objects DROP COLUMN compiled_from; PRAGMA user_version = 4");
  EXPECT_EQ(serve().second, 1u) << "read-only, unmigrated: its code objects are unverified and not loaded";
  { db::Database d = db::Database::open(db_, db::Mode::ReadWrite); }  // migrates to the latest, hashing them
  EXPECT_EQ(serve().second, 0u);
  EXPECT_EQ(check().rfind("0: ", 0), 0u) << check();
}

// Signed databases (issue 17): with a trusted key, only code objects signed by it load; anything
// else (unsigned, another key's, or rewritten with its hash recomputed) is built from the
// library's own template source, and the result is still right.
class Signed : public Integrity {
 protected:
  void SetUp() override {
    Integrity::SetUp();
    key_ = (dir_ / "key.pem").string(), pub_ = (dir_ / "key.pub").string();
    shipped_ = (dir_ / "shipped.db").string();
    ASSERT_EQ(tool({"db", "keygen", key_, pub_}).rfind("0: ", 0), 0u);
    ASSERT_EQ(fs::status(key_).permissions() & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
    const std::string packed = tool({"db", "pack", db_, shipped_, "--sign", key_});
    ASSERT_EQ(packed.rfind("0: ", 0), 0u) << packed;
    EXPECT_NE(packed.find("1 code objects signed by key"), std::string::npos) << packed;
  }
  void TearDown() override {
    ::unsetenv("TILETUNE_TRUSTED_KEY");
    Integrity::TearDown();
  }
  void trust(const std::string& pub) { ::setenv("TILETUNE_TRUSTED_KEY", pub.c_str(), 1); }

  std::string key_, pub_, shipped_;
};

TEST_F(Signed, ASignedCodeObjectLoadsAndAnUnsignedOneIsBuiltFromSource) {
  trust(pub_);
  EXPECT_EQ(serve(shipped_).second, 0u) << "signed by the trusted key: loaded";
  EXPECT_EQ(serve(db_).second, 1u) << "the tuning database is not signed";
  EXPECT_EQ(tool({"db", "check", shipped_, "--trusted-key", pub_}).rfind("0: ", 0), 0u);
  const std::string c = tool({"db", "check", db_, "--trusted-key", pub_});
  EXPECT_EQ(c.rfind("1: ", 0), 0u) << c;
  EXPECT_NE(c.find("not signed"), std::string::npos) << c;
}

// A code object that does not say what it was compiled as (tuned before schema 5) is not signed:
// nothing would tie it to the parameters of the solution that runs it.
TEST_F(Signed, AnObjectWithoutItsInstantiationIsNotSignedAndNotTrusted) {
  sql(db_, "UPDATE code_objects SET compiled_from = ''");
  const std::string old = (dir_ / "old.db").string();
  const std::string packed = tool({"db", "pack", db_, old, "--sign", key_});
  ASSERT_EQ(packed.rfind("0: ", 0), 0u) << packed;
  EXPECT_NE(packed.find("1 code objects not signed"), std::string::npos) << packed;
  trust(pub_);
  EXPECT_EQ(serve(old).second, 1u) << "built from source";
}

TEST_F(Signed, AnotherKeysSignatureIsRefused) {
  const std::string other = (dir_ / "other.pem").string(), other_pub = (dir_ / "other.pub").string();
  ASSERT_EQ(tool({"db", "keygen", other, other_pub}).rfind("0: ", 0), 0u);
  trust(other_pub);
  EXPECT_EQ(serve(shipped_).second, 1u);
  const std::string c = tool({"db", "check", shipped_, "--trusted-key", other_pub});
  EXPECT_NE(c.find("not by the trusted key"), std::string::npos) << c;
}

TEST_F(Signed, ALibrarySwappedInWithItsHashRecomputedNeverRunsUnderATrustedKey) {
  // A writer who recomputes the SHA-256 passes the hash check; the signature still fails.
  const fs::path marker = dir_ / "PAYLOAD-RAN";
  const std::vector<std::uint8_t> bytes = payload_library(dir_, marker);
  fs::permissions(shipped_, fs::perms::owner_write, fs::perm_options::add);
  sql(shipped_, "PRAGMA journal_mode = DELETE; UPDATE code_objects SET bytes = x'" + hex(bytes) + "', sha256 = '" +
                    db::sha256_hex(bytes) + "' WHERE ok = 1");
  EXPECT_EQ(tool({"db", "check", shipped_}).rfind("0: ", 0), 0u) << "the hash alone cannot see it";
  trust(pub_);
  EXPECT_EQ(serve(shipped_).second, 1u);
  EXPECT_FALSE(fs::exists(marker)) << "the swapped-in library's constructor ran";
  const std::string c = tool({"db", "check", shipped_, "--trusted-key", pub_});
  EXPECT_NE(c.find("does not match"), std::string::npos) << c;
}

TEST_F(Signed, AKeyThatCannotBeReadRefusesTheHandleAndSaysWhy) {
  const std::string junk = (dir_ / "junk.pem").string();
  std::ofstream(junk) << "not a key\n";
  for (const std::string& bad : {junk, (dir_ / "missing.pem").string(), dir_.string()}) {
    trust(bad);
    tiletune_handle_t h = nullptr;
    EXPECT_NE(tiletune_create(&h, shipped_.c_str(), "host", 0), TILETUNE_SUCCESS);
    EXPECT_NE(std::string(tiletune_last_error()).find(bad), std::string::npos) << tiletune_last_error();
  }
  const std::string c = tool({"db", "pack", db_, (dir_ / "x.db").string(), "--sign", pub_});
  EXPECT_NE(c.rfind("0: ", 0), 0u) << "a public key cannot sign";
}

TEST(IntegrityHash, Sha256OfKnownInputs) {
  EXPECT_EQ(db::sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(db::sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
