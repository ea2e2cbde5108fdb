// Hostile environment variables (issue 17): every variable tiletune reads, set to what it does not
// take. The runtime (in this process) and `tiletune tune` (a child) either work - and every result
// is right, checked against fp64 - or refuse with a message naming the variable or its value; they
// never crash, hang or return a wrong result as success. Host backend.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "tests/process_util.h"
#include "tests/runtime_test_util.h"
#include "tests/tiny_sweep.h"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

struct Case {
  std::vector<std::pair<std::string, std::string>> env;  // set together
  std::string cause;  // what a refusal must name ("" : the first variable's name or value)
};

class HostileEnvironment : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tiletune-environment-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "a dir;touch INJECTED");
    db_ = (dir_ / "tuned.db").string();
    problem_ = tiletune::testing::tune_tiny_host_database(db_, dir_.string());
    std::ofstream(dir_ / "junk") << "not a database, not a key, not JSON\n";
    fs::create_directories(dir_ / "open");
    fs::permissions(dir_ / "open", fs::perms::all);  // a compile cache others may write
    std::ofstream(dir_ / "sweep.json") << R"({"problems": [{"dtype": "f32", "transA": "T", "transB": "N", "m": 33, "n": 17, "k": 9}],
      "templates": {"host_gemm": {"parameters": {"MT0": [16], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [2]}}},
      "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 3, "target_ms": 2}})";
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::vector<Case> cases() {
    const std::string d = dir_.string(), junk = (dir_ / "junk").string(), odd = (dir_ / "a dir;touch INJECTED").string();
    const std::string missing = d + "/no/such/dir/x";
    std::vector<Case> c;
    for (const char* v : {"abc", "-3", "0", "99999999999999999999", "4.5", " 2"}) c.push_back({{{"TILETUNE_HOST_THREADS", v}}, ""});
    for (const std::string& v : {missing, d, junk}) c.push_back({{{"TILETUNE_USER_DB", v}}, ""});
    for (const std::string& v : {missing, d, junk}) c.push_back({{{"TILETUNE_TRUSTED_KEY", v}}, ""});
    for (const char* v : {"maybe", "2", "-1"}) c.push_back({{{"TILETUNE_ONLINE", v}}, ""});
    const std::string user = d + "/user.db";
    for (const char* var : {"TILETUNE_ONLINE_AFTER", "TILETUNE_ONLINE_BUDGET", "TILETUNE_ONLINE_SECONDS", "TILETUNE_ONLINE_TIMEOUT"})
      for (const char* v : {"-1", "1e99", "nan", "x"})
        c.push_back({{{var, v}, {"TILETUNE_ONLINE", "1"}, {"TILETUNE_USER_DB", user}}, ""});
    for (const std::string& v : {std::string("/bin/false"), missing, junk})
      c.push_back({{{"TILETUNE_EXE", v}, {"TILETUNE_ONLINE", "1"}, {"TILETUNE_USER_DB", user}}, ""});
    c.push_back({{{"TILETUNE_ONLINE_SEARCH", "nonsense"}, {"TILETUNE_ONLINE", "1"}, {"TILETUNE_USER_DB", user}}, ""});
    c.push_back({{{"TILETUNE_ONLINE", "1"}, {"TILETUNE_USER_DB", ""}, {"HOME", missing}, {"XDG_CACHE_HOME", junk}}, ""});
    for (const std::string& v : {missing, d}) c.push_back({{{"TILETUNE_RECORD_UNTUNED", v}}, ""});
    for (const std::string& v : {missing, junk, odd, std::string("/")}) c.push_back({{{"TMPDIR", v}}, ""});
    for (const std::string& v : {missing, junk, std::string("false"), std::string("sh -c 'touch INJECTED'"), std::string("   ")})
      c.push_back({{{"TILETUNE_HOST_CXX", v}}, ""});
    for (const std::string& v : {missing, junk, d}) c.push_back({{{"TILETUNE_TEMPLATE_PATH", v}}, ""});
    for (const std::string& v : {missing, junk}) c.push_back({{{"TILETUNE_SHAPES_DIR", v}}, ""});
    for (const std::string& v : {junk, junk + "/below", (dir_ / "open").string()})
      c.push_back({{{"TILETUNE_COMPILE_CACHE", v}}, ""});
    c.push_back({{{"TILETUNE_VENDOR", "sometimes"}}, ""});
    c.push_back({{{"TILETUNE_CUDNN_API", "none"}}, ""});
    c.push_back({{{"PATH", ""}}, "compiler"});
    return c;
  }

  static bool names_cause(const Case& c, const std::string& message) {
    if (!c.cause.empty()) return message.find(c.cause) != std::string::npos;
    const auto& [name, value] = c.env.front();
    const std::string trimmed = value.substr(0, value.find_last_not_of(' ') + 1);
    return message.find(name) != std::string::npos || (!trimmed.empty() && message.find(trimmed) != std::string::npos);
  }

  static fs::path dir_;
  static std::string db_;
  static GemmProblem problem_;
};
fs::path HostileEnvironment::dir_;
std::string HostileEnvironment::db_;
GemmProblem HostileEnvironment::problem_;

// The runtime in this process: a handle refused, or calls served right or refused, each refusal
// naming the variable. The untuned problem needs a kernel built from source (the vendor is off).
TEST_F(HostileEnvironment, TheRuntimeServesRightOrRefusesNamingTheVariable) {
  GemmProblem untuned = problem_;
  untuned.m = 33, untuned.n = 17, untuned.k = 9, untuned.lda = 33, untuned.ldb = 9, untuned.ldc = 33;
  int served = 0, refused = 0;
  for (const Case& c : cases()) {
    std::vector<std::pair<std::string, std::string>> saved;
    for (const auto& [name, value] : c.env) {
      const char* old = std::getenv(name.c_str());
      saved.emplace_back(name, old ? old : std::string("\x01"));
      ::setenv(name.c_str(), value.c_str(), 1);
    }
    ::setenv("TILETUNE_ONLINE_SECONDS", std::getenv("TILETUNE_ONLINE_SECONDS") ? std::getenv("TILETUNE_ONLINE_SECONDS") : "1", 1);
    const std::string what = c.env.front().first + "='" + c.env.front().second + "'";
    tiletune_handle_t h = nullptr;
    if (tiletune_create(&h, db_.c_str(), "host", 0) != TILETUNE_SUCCESS) {
      EXPECT_TRUE(names_cause(c, tiletune_last_error())) << what << ": " << tiletune_last_error();
      ++refused;
    } else {
      for (const GemmProblem& p : {problem_, untuned}) {
        try {
          const auto r = testing_util::dispatch_host(h, p);
          EXPECT_TRUE(r.ok) << what << ": a wrong result returned as success: " << r.reason;
          ++served;
        } catch (const Error& e) {
          EXPECT_TRUE(names_cause(c, e.what())) << what << ": " << e.what();
          ++refused;
        }
      }
      EXPECT_EQ(tiletune_destroy(h), TILETUNE_SUCCESS) << what;
    }
    ::unsetenv("TILETUNE_ONLINE_SECONDS");
    for (const auto& [name, value] : saved)
      value == "\x01" ? ::unsetenv(name.c_str()) : ::setenv(name.c_str(), value.c_str(), 1);
  }
  EXPECT_FALSE(fs::exists("INJECTED"));
  EXPECT_FALSE(fs::exists(dir_ / "INJECTED"));
  std::printf("runtime: %zu environments, %d calls served right, %d refusals naming their cause\n", cases().size(),
              served, refused);
}

// `tiletune tune` in a child: finishes (exit 0) or exits non-zero naming the variable, within a
// minute, never killed by a signal.
TEST_F(HostileEnvironment, TheTunerFinishesOrExitsNamingTheVariable) {
  int done = 0, refused = 0;
  for (const Case& c : cases()) {
    std::vector<std::string> env;
    for (const auto& [name, value] : c.env) env.push_back(name + "=" + value);
    const std::string what = env.front(), log = (dir_ / "tune.log").string();
    fs::remove(log);
    const std::string db = (dir_ / "sweep.db").string();
    for (const char* side : {"", "-wal", "-shm"}) fs::remove(db + side);
    tiletune::testing::Child child = tiletune::testing::spawn(
        {TILETUNE_EXE, "tune", (dir_ / "sweep.json").string(), "--backend", "host", "--db", db}, log, env);
    int status = 0;
    bool ended = false;
    for (int i = 0; i < 6000 && !ended; ++i) {
      ended = ::waitpid(child.pid, &status, WNOHANG) == child.pid;
      if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!ended) {
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, &status, 0);
      ADD_FAILURE() << what << ": tiletune tune hung";
      continue;
    }
    const std::string out = tiletune::testing::read_file(log);
    ASSERT_TRUE(WIFEXITED(status)) << what << ": killed by signal " << WTERMSIG(status) << "\n" << out;
    if (WEXITSTATUS(status) == 0) {
      ++done;
    } else {
      EXPECT_TRUE(names_cause(c, out)) << what << ": exit " << WEXITSTATUS(status) << "\n" << out;
      ++refused;
    }
  }
  EXPECT_FALSE(fs::exists(dir_ / "INJECTED"));
  std::printf("tune: %zu environments, %d finished, %d exited non-zero naming their cause\n", cases().size(), done,
              refused);
}

}  // namespace
