// The program's exit codes (tools/commands.h, docs/cli-json.md): 0 done, 1 bad input or failed
// work named on stderr, 64 the command line itself; --help and --version 0.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/process_util.h"

namespace fs = std::filesystem;
using namespace tiletune::testing;

namespace {

class ExitCodes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tiletune-exit-codes-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Output run(std::vector<std::string> args) {
    args.insert(args.begin(), TILETUNE_EXE);
    return run_to_end(args, dir_.string());
  }
  fs::path dir_;
};

TEST_F(ExitCodes, HelpAndVersionAreZero) {
  EXPECT_EQ(run({"--help"}).code, 0);
  EXPECT_EQ(run({"tune", "--help"}).code, 0);
  EXPECT_EQ(run({"db", "winners", "--help"}).code, 0);
  const Output v = run({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind("tiletune ", 0), 0u) << v.out;
}

TEST_F(ExitCodes, UsageErrorsAre64) {
  EXPECT_EQ(run({}).code, 64);                                         // no subcommand
  EXPECT_EQ(run({"frobnicate"}).code, 64);                             // unknown subcommand
  EXPECT_EQ(run({"db"}).code, 64);                                     // db without its subcommand
  EXPECT_EQ(run({"db", "winners"}).code, 64);                          // missing argument
  EXPECT_EQ(run({"db", "winners", "x.db", "--bogus"}).code, 64);       // unknown option
  EXPECT_EQ(run({"tune", "c.json", "--isolation", "sideways"}).code, 64);  // a value it does not take
  EXPECT_EQ(run({"tune", "c.json", "--budget", "-3"}).code, 64);
  EXPECT_EQ(run({"devices", "--json", "--bogus"}).code, 64);
  // A usage error prints no document, whatever --json says: the command never ran.
  const Output o = run({"db", "problems", "--json"});
  EXPECT_EQ(o.code, 64);
  EXPECT_TRUE(o.out.empty()) << o.out;
  EXPECT_FALSE(o.err.empty());
}

TEST_F(ExitCodes, BadInputIsOneWithTheCauseOnStderr) {
  const Output missing_config = run({"tune", (dir_ / "missing.json").string()});
  EXPECT_EQ(missing_config.code, 1);
  EXPECT_NE(missing_config.err.find("cannot open config file"), std::string::npos) << missing_config.err;

  const std::string bad = (dir_ / "bad.json").string();
  std::ofstream(bad) << "{\"problems\": [";
  const Output bad_config = run({"tune", bad, "--backend", "host"});
  EXPECT_EQ(bad_config.code, 1);
  EXPECT_NE(bad_config.err.find("not valid JSON"), std::string::npos) << bad_config.err;

  const Output missing_db = run({"db", "winners", (dir_ / "missing.db").string()});
  EXPECT_EQ(missing_db.code, 1);
  EXPECT_NE(missing_db.err.find("does not exist"), std::string::npos) << missing_db.err;

  const std::string not_db = (dir_ / "not.db").string();
  std::ofstream(not_db) << "this is not SQLite";
  EXPECT_EQ(run({"db", "check", not_db}).code, 1);

  const Output no_problem = run({"db", "explain", (dir_ / "missing.db").string(), "--problem", "{not json"});
  EXPECT_EQ(no_problem.code, 1);
  EXPECT_FALSE(no_problem.err.empty());
}

}  // namespace
