// Bounded in-process fuzzing of what comes from outside (issue 17): tuning configs, constraint
// expressions, database files and the runtime's load path, mutated from seeds (the shipped configs,
// a real tuned database). Every input must end in a result or a tiletune::Error naming its cause:
// no crash, no hang, no other exception, and the runtime never returns a wrong result as success.
// Bounded by TILETUNE_FUZZ_SECONDS per target (default 10) and TILETUNE_FUZZ_ITERATIONS (default
// unlimited within the time); the seed is TILETUNE_FUZZ_SEED (default fixed) so a failure replays.
// The counts reached are printed; benchmarks/results holds an offline run of 10^6 per target.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "common/error.h"
#include "db/database.h"
#include "db/integrity.h"
#include "gpu/backend.h"
#include "tests/runtime_test_util.h"
#include "solutions/expression.h"
#include "tests/tiny_sweep.h"
#include "tuner/config.h"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

double budget_seconds() {
  const char* s = std::getenv("TILETUNE_FUZZ_SECONDS");
  return s ? std::atof(s) : 10.0;
}
std::uint64_t max_iterations() {
  const char* s = std::getenv("TILETUNE_FUZZ_ITERATIONS");
  return s ? std::strtoull(s, nullptr, 10) : ~std::uint64_t(0);
}
std::uint64_t seed() {
  const char* s = std::getenv("TILETUNE_FUZZ_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20261201;
}

// Runs `one` until the time or iteration budget is spent; returns the iterations run.
template <class F>
std::uint64_t fuzz(const char* target, F&& one) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(budget_seconds());
  std::uint64_t n = 0;
  for (; n < max_iterations() && std::chrono::steady_clock::now() < end; ++n) one(n);
  std::printf("fuzz %s: %llu executions, seed %llu\n", target, static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(seed()));
  return n;
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A mutation of `s`: bytes flipped, tokens inserted, ranges dropped or doubled, a nesting bomb.
std::string mutate(std::string s, std::mt19937_64& rng) {
  static const std::vector<std::string> tokens = {
      "[", "]", "{", "}", ",", ":", "\"", "-", ".", "e", "0", "1", "1.5", "-1", "1e308", "-1e308", "9223372036854775807",
      "18446744073709551615", "-9223372036854775808", "null", "true", "false", "\"\"", "(", ")", "&&", "||", "/", "%",
      "\"m\": [1, 9223372036854775807, 1]", "\"batch\": 1.99", "\"KU\": [1.5]", "\\u0000", "\"x\": {\"y\": [[[[]]]]}"};
  const int steps = 1 + int(rng() % 4);
  for (int i = 0; i < steps && !s.empty(); ++i) {
    const std::size_t at = rng() % s.size();
    switch (rng() % 6) {
      case 0: s[at] = char(rng()); break;
      case 1: s.insert(at, tokens[rng() % tokens.size()]); break;
      case 2: s.erase(at, rng() % 16); break;
      case 3: s.insert(at, s.substr(at, rng() % 64)); break;
      case 4: s.insert(at, std::string(1 + rng() % 5000, "[({"[rng() % 3])); break;
      case 5: s[at] = "0123456789-.e,:"[rng() % 15]; break;
    }
  }
  return s;
}

// Anything but tiletune::Error (which names a cause) is a finding; the first few are reported.
int findings = 0;
template <class F>
void expect_clean(const std::string& input, F&& f) {
  try {
    f();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    if (++findings <= 5)
      ADD_FAILURE() << "escaped as " << typeid(e).name() << ": " << std::string(e.what()).substr(0, 300)
                    << "\ninput: " << input.substr(0, 300);
  }
}

TEST(Fuzz, ConfigParser) {
  // Every shipped config (configs/examples, h200, probes), each parsed from its own folder so
  // that its relative shapes path resolves; the shapes files themselves are not configs.
  const fs::path configs = fs::path(TILETUNE_SOURCE_DIR) / "configs";
  std::vector<std::pair<std::string, std::string>> seeds;  // text, folder
  for (const auto& f : fs::recursive_directory_iterator(configs))
    if (f.path().extension() == ".json" && f.path().parent_path().filename() != "shapes")
      seeds.emplace_back(read(f.path()), f.path().parent_path().string());
  ASSERT_GE(seeds.size(), 3u);
  std::mt19937_64 rng(seed());
  const std::uint64_t n = fuzz("config parser", [&](std::uint64_t) {
    const auto& [original, folder] = seeds[rng() % seeds.size()];
    const std::string text = mutate(original, rng);
    expect_clean(text, [&] { tuner::parse_config(text, folder); });
  });
  EXPECT_GT(n, 0u);
}

TEST(Fuzz, Expressions) {
  static const std::vector<std::string> atoms = {"M", "N", "K", "BM", "0", "1", "7", "9223372036854775807", "(", ")",
                                                 "+", "-", "*", "/", "%", "<", "<=", "==", "!=", "&&", "||", "!",
                                                 "min(", "max(", ",", " ", "x", "99999999999999999999"};
  std::mt19937_64 rng(seed());
  const Variables vars = {{"M", 1000}, {"N", -3}, {"K", 0}, {"BM", 128}};
  const std::uint64_t n = fuzz("expressions", [&](std::uint64_t) {
    std::string text;
    const int len = 1 + int(rng() % 40);
    for (int i = 0; i < len; ++i) text += atoms[rng() % atoms.size()];
    if (rng() % 50 == 0) text = std::string(1 + rng() % 10000, '(') + text;
    expect_clean(text, [&] { Expression::parse(text).eval(vars); });
  });
  EXPECT_GT(n, 0u);
}

// A small tuned database (a real code object, measurements, a winner) as the seed.
class FuzzDatabase : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("TILETUNE_VENDOR", "off", 1);
    dir_ = fs::temp_directory_path() / ("tiletune-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    seed_db_ = (dir_ / "seed.db").string();
    problem_ = tiletune::testing::tune_tiny_host_database(seed_db_, dir_.string());
    { db::Database d = db::Database::open(seed_db_, db::Mode::ReadWrite); }  // checkpoint the WAL into the file
    for (const char* side : {"-wal", "-shm"}) fs::remove(seed_db_ + side);
    bytes_ = read(seed_db_);
  }
  static void TearDownTestSuite() {
    ::unsetenv("TILETUNE_VENDOR");
    fs::remove_all(dir_);
  }
  // A mutated copy of the seed database at a fresh path.
  static std::string mutated(std::mt19937_64& rng, std::uint64_t i) {
    std::string b = bytes_;
    const int flips = 1 + int(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      // Mostly past the 100-byte header (which SQLite refuses at once), sometimes in it.
      const std::size_t at = rng() % 10 == 0 ? rng() % 100 : 100 + rng() % (b.size() - 100);
      b[at] = char(rng());
    }
    const std::string path = (dir_ / ("m" + std::to_string(i % 4) + ".db")).string();
    for (const char* side : {"", "-wal", "-shm"}) fs::remove(path + side);
    std::ofstream(path, std::ios::binary).write(b.data(), std::streamsize(b.size()));
    return path;
  }
  static fs::path dir_;
  static std::string seed_db_, bytes_;
  static GemmProblem problem_;
};
fs::path FuzzDatabase::dir_;
std::string FuzzDatabase::seed_db_, FuzzDatabase::bytes_;
GemmProblem FuzzDatabase::problem_;

TEST_F(FuzzDatabase, Reader) {
  std::mt19937_64 rng(seed());
  const std::uint64_t n = fuzz("database reader", [&](std::uint64_t i) {
    const std::string path = mutated(rng, i);
    expect_clean(path, [&] {
      db::Database d = db::Database::open(path, db::Mode::ReadOnly);
      d.integrity_check();
      for (const auto& a : d.arches()) d.winners(a);
      d.problems();
      d.all_measurements();
      d.for_each_code_object([](const db::CodeObjectRecord& c) { c.integrity_problem(); });
      db::verify_code_objects(d);
    });
  });
  EXPECT_GT(n, 0u);
}

// The runtime on mutated databases: a handle is made or refused with a status, and every call it
// serves is right (checked against fp64) or returns an error; never a crash, never wrong success.
TEST_F(FuzzDatabase, RuntimeLoadPath) {
  std::mt19937_64 rng(seed() + 1);
  std::uint64_t served = 0, refused = 0;
  const std::uint64_t n = fuzz("runtime load path", [&](std::uint64_t i) {
    const std::string path = mutated(rng, i);
    tiletune_handle_t h = nullptr;
    if (tiletune_create(&h, path.c_str(), "host", 0) != TILETUNE_SUCCESS) {
      ++refused;
      return;
    }
    char why[512];
    tiletune_explain(h, TILETUNE_OP_N, TILETUNE_OP_N, problem_.m, problem_.n, problem_.k, TILETUNE_R_32F, 0, 0,
                     TILETUNE_R_32F, 0, 1, 1, TILETUNE_COMPUTE_32F, why, sizeof why);
    try {
      const auto r = testing_util::dispatch_host(h, problem_);
      EXPECT_TRUE(r.ok) << "wrong result returned as success on a mutated database: " << r.reason;
      ++served;
    } catch (const Error&) {
      ++refused;  // a status other than success, with its reason
    }
    tiletune_destroy(h);
  });
  std::printf("runtime load path: %llu served right, %llu refused with a status\n",
              static_cast<unsigned long long>(served), static_cast<unsigned long long>(refused));
  EXPECT_GT(n, 0u);
}

}  // namespace
