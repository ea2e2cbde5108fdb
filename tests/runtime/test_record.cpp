// tiletune_record: the problems handles served untuned, merged into one tuning config however many
// handles (a data-parallel job's ranks) record into it and however often, each problem once with
// its calls summed; a file there that is no such config is refused and left alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "solutions/problem.h"
#include "tests/process_util.h"
#include "tests/runtime_test_util.h"
#include "tuner/config.h"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

class Record : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tiletune-record-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "untuned.json").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  static tiletune_handle_t handle() {
    tiletune_handle_t h = nullptr;
    EXPECT_EQ(tiletune_create_ex(&h, nullptr, nullptr, "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
    return h;
  }
  static GemmProblem gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
    GemmProblem p;
    p.m = m, p.n = n, p.k = k;
    return p;
  }
  static void run(tiletune_handle_t h, const GemmProblem& p, int times) {
    for (int i = 0; i < times; ++i) {
      auto r = testing_util::dispatch_host(h, p);
      EXPECT_TRUE(r.ok) << r.reason;
    }
  }
  // The recorded calls by problem key; each problem must appear once.
  std::map<std::string, std::int64_t> recorded(const std::string& path) const {
    std::map<std::string, std::int64_t> calls;
    const nlohmann::json config = nlohmann::json::parse(tiletune::testing::read_file(path));
    for (const auto& j : config.at("problems")) {
      const std::string key = j.get<Problem>().canonical().key();
      EXPECT_EQ(calls.count(key), 0u) << key << " recorded twice";
      calls[key] = j.at("calls").get<std::int64_t>();
    }
    return calls;
  }
  static std::string key(const GemmProblem& p) { return Problem(p).canonical().key(); }

  fs::path dir_;
  std::string path_;
};

TEST_F(Record, HandlesRecordingIntoOneFileAtOnceGiveTheUnionWithCallsSummed) {
  constexpr int kHandles = 4;
  const GemmProblem shared = gemm(24, 20, 12), even = gemm(8, 40, 16);
  std::vector<std::thread> threads;
  std::vector<tiletune_status_t> status(kHandles * 3, TILETUNE_SUCCESS);
  for (int t = 0; t < kHandles; ++t)
    threads.emplace_back([&, t] {
      tiletune_handle_t h = handle();
      if (!h) return;
      // Three records each, calls between them: the records of all handles interleave.
      for (int round = 0; round < 3; ++round) {
        run(h, shared, t + 1);
        run(h, gemm(16 + t, 16, 8), 1);  // this handle's own
        if (t % 2 == 0) run(h, even, 2);
        status[t * 3 + round] = tiletune_record(h, path_.c_str());
      }
      tiletune_destroy(h);
    });
  for (auto& th : threads) th.join();
  for (auto s : status) EXPECT_EQ(s, TILETUNE_SUCCESS);
  std::map<std::string, std::int64_t> expected = {{key(shared), 3 * (1 + 2 + 3 + 4)}, {key(even), 2 * 2 * 3}};
  for (int t = 0; t < kHandles; ++t) expected[key(gemm(16 + t, 16, 8))] = 3;
  EXPECT_EQ(recorded(path_), expected);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path() << " left behind";
  // The tuner takes it as it is.
  const tuner::TuningConfig config = tuner::load_config(path_);
  EXPECT_EQ(config.problems.size(), expected.size());
  EXPECT_EQ(config.duplicates_dropped, 0u);
}

TEST_F(Record, RecordingAgainAddsOnlyTheCallsSinceTheHandlesLastRecordThere) {
  const GemmProblem p = gemm(20, 12, 8);
  tiletune_handle_t h = handle();
  ASSERT_TRUE(h);
  run(h, p, 3);
  ASSERT_EQ(tiletune_record(h, path_.c_str()), TILETUNE_SUCCESS) << tiletune_last_error();
  EXPECT_EQ(recorded(path_)[key(p)], 3);
  ASSERT_EQ(tiletune_record(h, path_.c_str()), TILETUNE_SUCCESS) << tiletune_last_error();
  EXPECT_EQ(recorded(path_)[key(p)], 3) << "nothing new: nothing added";
  run(h, p, 2);
  ASSERT_EQ(tiletune_record(h, (dir_ / "." / "untuned.json").c_str()), TILETUNE_SUCCESS) << "the same file, named otherwise";
  EXPECT_EQ(recorded(path_)[key(p)], 5);
  const std::string other = (dir_ / "other.json").string();
  ASSERT_EQ(tiletune_record(h, other.c_str()), TILETUNE_SUCCESS) << tiletune_last_error();
  EXPECT_EQ(recorded(other)[key(p)], 5) << "another file gets all the calls";

  // TILETUNE_RECORD_UNTUNED at destruction records the same way: only the calls since.
  ::setenv("TILETUNE_RECORD_UNTUNED", path_.c_str(), 1);
  run(h, p, 1);
  tiletune_destroy(h);
  ::unsetenv("TILETUNE_RECORD_UNTUNED");
  EXPECT_EQ(recorded(path_)[key(p)], 6);
  const nlohmann::json config = nlohmann::json::parse(tiletune::testing::read_file(path_));
  EXPECT_NE(config["problems"][0]["name"].get<std::string>().find("6 calls, untuned on "), std::string::npos)
      << config.dump();
}

TEST_F(Record, AConfigAlreadyThereIsAddedToAndKeptOtherwise) {
  const GemmProblem mine = gemm(28, 12, 8), theirs = gemm(12, 12, 12);
  nlohmann::json problem = Problem(mine);
  problem["name"] = "attention projection";
  problem["calls"] = 10;
  const nlohmann::json before = {{"name", "hand-made"},
                                 {"problems", {problem, nlohmann::json(Problem(theirs))}},
                                 {"templates", {{"host_gemm", nlohmann::json::object()}}}};
  std::ofstream(path_) << before.dump(2);
  tiletune_handle_t h = handle();
  ASSERT_TRUE(h);
  run(h, mine, 2);
  ASSERT_EQ(tiletune_record(h, path_.c_str()), TILETUNE_SUCCESS) << tiletune_last_error();
  tiletune_destroy(h);
  const nlohmann::json after = nlohmann::json::parse(tiletune::testing::read_file(path_));
  EXPECT_EQ(after["name"], "hand-made");
  EXPECT_EQ(after["templates"], before["templates"]);
  ASSERT_EQ(after["problems"].size(), 2u);
  EXPECT_EQ(after["problems"][0]["calls"], 12);
  EXPECT_EQ(after["problems"][0]["name"], "attention projection") << "a name someone gave stays";
  EXPECT_FALSE(after["problems"][1].contains("calls"));
  EXPECT_EQ(tuner::load_config(path_).problems.size(), 2u);
}

TEST_F(Record, AFileThatIsNoTuningConfigIsRefusedAndLeftAsItIs) {
  const GemmProblem p = gemm(20, 12, 8);
  tiletune_handle_t h = handle();
  ASSERT_TRUE(h);
  run(h, p, 2);
  for (const std::string bad : {"{\"problems\": [", "[1, 2]", "{\"name\": \"x\"}", "{\"problems\": 3}",
                                "{\"problems\": [{\"m\": \"x\", \"n\": 2, \"k\": 2}]}", "{\"problems\": [7]}"}) {
    std::ofstream(path_) << bad;
    EXPECT_EQ(tiletune_record(h, path_.c_str()), TILETUNE_ERROR_INVALID_VALUE) << bad;
    EXPECT_NE(std::string(tiletune_last_error()).find(path_), std::string::npos) << tiletune_last_error();
    EXPECT_EQ(tiletune::testing::read_file(path_), bad);
  }
  EXPECT_EQ(tiletune_record(h, nullptr), TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiletune_record(h, dir_.c_str()), TILETUNE_ERROR_INVALID_VALUE) << "a directory";
  EXPECT_EQ(tiletune_record(h, (dir_ / "no" / "such.json").c_str()), TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiletune_record(nullptr, path_.c_str()), TILETUNE_ERROR_INVALID_VALUE);
  // The refusals recorded nothing: the calls are all there once the path takes a config.
  fs::remove(path_);
  ASSERT_EQ(tiletune_record(h, path_.c_str()), TILETUNE_SUCCESS) << tiletune_last_error();
  EXPECT_EQ(recorded(path_)[key(p)], 2);
  tiletune_destroy(h);
}

}  // namespace
