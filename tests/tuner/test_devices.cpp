// Several devices measuring one sweep (`tune --devices`), on the host backend where the devices
// are logical workers on the CPU: every candidate measured exactly once, by whichever worker was
// free, into the one database; a rerun measures nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/error.h"
#include "db/database.h"
#include "tests/process_util.h"
#include "tests/test_util.h"
#include "tuner/config.h"
#include "tuner/device_list.h"
#include "tuner/measure_slots.h"
#include "tuner/search.h"
#include "tuner/sweep.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::testing;

namespace {

const char* kDevicesConfig = R"({
  "name": "devices-test",
  "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 96, "n": 80, "k": 64},
               {"dtype": "bf16", "transA": "T", "transB": "N", "m": 50, "n": 70, "k": 90}],
  "templates": {"host_gemm": {"parameters": {"MT0": [16, 32], "MT1": [16, 32], "KU": [16], "TT0": [8, 16], "TT1": [2]}}},
  "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 4}
})";

class Devices : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tiletune-devices-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  tuner::SweepSummary sweep(const std::string& strategy) {
    tuner::TuningConfig c = tuner::parse_config(kDevicesConfig, dir_.string());
    c.search.strategy = strategy;
    tuner::SweepOptions o;
    o.backend = gpu::BackendKind::Host;
    o.db_path = (dir_ / "tuned.db").string();
    o.devices = {0, 1};
    o.isolation = tuner::Isolation::Process;
    o.worker_exe = TILETUNE_EXE;
    o.compare_vendor = false;
    return tuner::run_sweep(c, o, stderr);
  }

  // Measurement rows and their kernels, all problems.
  std::size_t rows() {
    db::Database d = db::Database::open((dir_ / "tuned.db").string(), db::Mode::ReadOnly);
    std::size_t n = 0;
    for (const auto& p : d.problems()) n += d.measurements(p.id).size();
    return n;
  }

  fs::path dir_;
};

TEST_F(Devices, TwoWorkersMeasureEveryCandidateOnceAndARerunNothing) {
  tuner::SweepSummary s = sweep("exhaustive");
  ASSERT_EQ(s.candidates, 16u);
  EXPECT_EQ(s.benchmarked, 16u) << "each candidate measured exactly once";
  EXPECT_GE(s.remeasured, 2 * tuner::kFinalists) << "then each problem's finalists once more";
  ASSERT_EQ(s.per_device.size(), 2u);
  EXPECT_EQ(s.per_device[0].device, 0);
  EXPECT_EQ(s.per_device[1].device, 1);
  EXPECT_EQ(s.per_device[0].measured + s.per_device[1].measured, 16u + s.remeasured);
  {
    // The finalists of a problem were compared on one device, and taken once all of its
    // candidates were measured (the fastest few are all finals), however the two shared them.
    db::Database d = db::Database::open((dir_ / "tuned.db").string(), db::Mode::ReadOnly);
    for (const auto& p : d.problems()) {
      std::set<std::int64_t> devices;
      std::map<std::int64_t, db::MeasurementRow> ms;
      for (const auto& m : d.measurements(p.id)) {
        if (m.reason == tuner::kFinalTimingReason) devices.insert(m.device_id);
        ms[m.id] = m;
      }
      EXPECT_EQ(devices.size(), 1u) << p.key;
      expect_finals(ms, p.key);
    }
  }
  EXPECT_GT(s.per_device[0].measured, 0u) << "a shared queue: both workers take candidates";
  EXPECT_GT(s.per_device[1].measured, 0u) << "a shared queue: both workers take candidates";
  EXPECT_EQ(rows(), 16u);
  ASSERT_EQ(s.winners.size(), 2u);
  {
    db::Database d = db::Database::open((dir_ / "tuned.db").string(), db::Mode::ReadOnly);
    EXPECT_EQ(d.integrity_check(), "ok");
    EXPECT_EQ(d.winners("").size(), 2u);
  }
  tuner::SweepSummary again = sweep("exhaustive");
  EXPECT_EQ(again.already_done, 16u);
  EXPECT_EQ(again.compiled, 0u);
  EXPECT_EQ(again.benchmarked + again.invalid + again.launch_failed + again.crashed + again.timed_out, 0u);
  EXPECT_EQ(again.per_device[0].measured + again.per_device[1].measured, 0u);
  EXPECT_EQ(again.winners.size(), 2u);
}

TEST_F(Devices, HalvingRoundsShareTheWorkersAndWaitForEachOther) {
  tuner::SweepSummary s = sweep("halving");
  EXPECT_EQ(s.benchmarked, 16u) << "one short timing each";
  EXPECT_EQ(s.per_device[0].measured + s.per_device[1].measured, s.benchmarked + s.remeasured);
  EXPECT_EQ(s.fully_timed, 6u) << "ceil(8 / 3) per problem";
  EXPECT_EQ(s.crashed, 0u);
  for (const auto& d : s.per_device)
    EXPECT_EQ(d.worker_starts, 1) << "device " << d.device << ": a worker outlives the rounds (and their threads)";
  EXPECT_EQ(rows(), 16u);
  ASSERT_EQ(s.winners.size(), 2u);
  tuner::SweepSummary again = sweep("halving");
  EXPECT_EQ(again.benchmarked + again.remeasured, 0u);
}

// SIGKILL in the middle of a two-worker sweep (its workers die with it), then a rerun: every
// candidate ends with one row, the database is intact, and a third run measures nothing.
TEST_F(Devices, KilledWhileTwoWorkersMeasureThenResumed) {
  std::string config = (dir_ / "c.json").string(), db = (dir_ / "killed.db").string(), log = (dir_ / "log.txt").string();
  std::ofstream(config) << kDevicesConfig;
  const std::vector<std::string> cmd = {TILETUNE_EXE, "tune", config, "--db", db, "--backend", "host", "--no-vendor",
                                        "--devices", "0,1"};
  Child c = spawn(cmd, log);
  bool reached = false;
  for (int i = 0; i < 6000 && !reached; ++i) {  // at most 60 s
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    try {
      db::Database d = db::Database::open(db, db::Mode::ReadOnly);
      std::size_t n = 0;
      for (const auto& p : d.problems()) n += d.measurements(p.id).size();
      reached = n >= 5;
    } catch (const std::exception&) {
      // not created or migrated yet
    }
  }
  ::kill(c.pid, SIGKILL);
  wait_for(c);
  ASSERT_TRUE(reached) << read_file(log);
  ASSERT_EQ(wait_for(spawn(cmd, log)), 0) << read_file(log);
  {
    db::Database d = db::Database::open(db, db::Mode::ReadOnly);
    EXPECT_EQ(d.integrity_check(), "ok");
    std::size_t n = 0;
    for (const auto& p : d.problems()) n += d.measurements(p.id).size();
    EXPECT_EQ(n, 16u);
    EXPECT_EQ(d.winners("").size(), 2u);
  }
  std::string again = (dir_ / "again.txt").string();
  ASSERT_EQ(wait_for(spawn(cmd, again)), 0);
  EXPECT_NE(read_file(again).find("16 already measured, 0 compiled"), std::string::npos) << read_file(again);
  EXPECT_NE(read_file(again).find("0 benchmarked"), std::string::npos) << read_file(again);
}

// The shared list with groups (a sweep's problems): two slots start on different groups, each
// stays on its group while it has tasks, and a group's data is prepared by as few slots as the
// tail allows: at most groups + slots - 1 (slot, group) pairs. Every task runs once.
TEST(SlotRunner, SlotsSpreadOverGroupsAndEveryTaskRunsOnce) {
  std::vector<tuner::MeasureSlot> slots(2);
  tuner::SlotRunner runner(slots);
  constexpr std::size_t kGroups = 3, kPerGroup = 12;
  std::mutex mu;
  std::vector<int> runs(kGroups * kPerGroup, 0);
  std::map<const tuner::MeasureSlot*, std::vector<std::size_t>> groups_of_slot;  // in the order taken
  runner.run(
      runs.size(), [](std::size_t) { return true; },
      [&](tuner::MeasureSlot& slot, std::size_t t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::lock_guard<std::mutex> lock(mu);
        ++runs[t];
        auto& g = groups_of_slot[&slot];
        if (g.empty() || g.back() != t / kPerGroup) g.push_back(t / kPerGroup);
      },
      [&](std::size_t t) { return t / kPerGroup; });
  for (int r : runs) EXPECT_EQ(r, 1);
  ASSERT_EQ(groups_of_slot.size(), 2u);
  std::size_t pairs = 0;
  for (const auto& [slot, gs] : groups_of_slot) {
    EXPECT_EQ(std::set<std::size_t>(gs.begin(), gs.end()).size(), gs.size()) << "a slot came back to a group";
    pairs += gs.size();
  }
  EXPECT_LE(pairs, kGroups + 2 - 1);
  EXPECT_NE(groups_of_slot.begin()->second.front(), std::next(groups_of_slot.begin())->second.front());

  // Without groups every slot helps, down to the last task: two slow tasks run on both slots.
  std::set<const tuner::MeasureSlot*> ran_on;
  runner.run(
      2, [](std::size_t) { return true; },
      [&](tuner::MeasureSlot& slot, std::size_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        std::lock_guard<std::mutex> lock(mu);
        ran_on.insert(&slot);
      });
  EXPECT_EQ(ran_on.size(), 2u);

  // Without groups: the lowest task first, as before.
  std::vector<std::size_t> order;
  std::vector<tuner::MeasureSlot> one(1);
  tuner::SlotRunner single(one);
  single.run(5, [](std::size_t t) { return t != 2; }, [&](tuner::MeasureSlot&, std::size_t t) { order.push_back(t); });
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 3, 4}));
}

// While the compiler is behind (`ready` false for a task whose code object is not built yet), a
// slot takes a ready task of another group, up to `groups_per_slot` groups, instead of waiting:
// one code object then feeds it one task per group it holds. Simulated: 3 groups of 4 tasks, task
// t needs code object t % 4, and one more object is ready after every 3 tasks run.
TEST(SlotRunner, WhileTheCompilerIsBehindASlotTakesReadyTasksOfOtherGroups) {
  std::vector<tuner::MeasureSlot> one(1);
  tuner::SlotRunner runner(one);
  auto order_with = [&](std::size_t groups_per_slot) {
    std::vector<std::size_t> order;
    std::size_t built = 1;  // code objects ready
    runner.run(
        12, [](std::size_t) { return true; },
        [&](tuner::MeasureSlot&, std::size_t t) {
          order.push_back(t);
          if (order.size() % 3 == 0) ++built;
        },
        [](std::size_t t) { return t / 4; }, [&](std::size_t t) { return t % 4 < built; }, groups_per_slot);
    return order;
  };
  EXPECT_EQ(order_with(3), (std::vector<std::size_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  // Two groups: with nothing ready it waits on its first group; a group it finished makes room.
  EXPECT_EQ(order_with(2), (std::vector<std::size_t>{0, 4, 1, 5, 2, 3, 6, 8, 9, 7, 10, 11}));
  // One group per slot: it waits on its group (the task blocks on its code object), as before.
  EXPECT_EQ(order_with(1), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));

  // Two slots, some tasks refused by may_start, group 0's first task not ready at first: every
  // accepted task runs once and the refused ones never.
  std::vector<tuner::MeasureSlot> two(2);
  tuner::SlotRunner pair(two);
  std::mutex mu;
  std::vector<int> runs(24, 0);
  std::size_t built = 0;
  pair.run(
      runs.size(), [](std::size_t t) { return t % 7 != 3; },
      [&](tuner::MeasureSlot&, std::size_t t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::lock_guard<std::mutex> lock(mu);
        ++runs[t];
        ++built;
      },
      [](std::size_t t) { return t / 6; },
      [&](std::size_t t) {
        std::lock_guard<std::mutex> lock(mu);
        return t / 6 != 0 || t % 6 < built / 2;
      },
      3);
  for (std::size_t t = 0; t < runs.size(); ++t) EXPECT_EQ(runs[t], t % 7 == 3 ? 0 : 1) << "task " << t;
}

TEST(DeviceList, ParsesAllAndListsAndRefusesBadInput) {
  EXPECT_EQ(tuner::parse_device_list("all", gpu::BackendKind::Host), (std::vector<int>{0}));
  EXPECT_EQ(tuner::parse_device_list("0,1,3", gpu::BackendKind::Host), (std::vector<int>{0, 1, 3}));
  EXPECT_NE(error_of([] { tuner::parse_device_list("0,x", gpu::BackendKind::Host); }).find("'x'"), std::string::npos);
  EXPECT_NE(error_of([] { tuner::parse_device_list("1,1", gpu::BackendKind::Host); }).find("twice"), std::string::npos);
  EXPECT_NE(error_of([] { tuner::parse_device_list("", gpu::BackendKind::Host); }).find("no device"), std::string::npos);
  EXPECT_NE(error_of([] { tuner::parse_device_list("-1", gpu::BackendKind::Host); }).find("'-1'"), std::string::npos);
}

TEST_F(Devices, TheCommandLinePrintsPerDeviceCountsAndRefusesBadLists) {
  std::string config = (dir_ / "c.json").string(), db = (dir_ / "cli.db").string(), log = (dir_ / "log.txt").string();
  std::ofstream(config) << kDevicesConfig;
  ASSERT_EQ(wait_for(spawn({TILETUNE_EXE, "tune", config, "--db", db, "--backend", "host", "--no-vendor", "--devices", "0,1"},
                           log)),
            0)
      << read_file(log);
  std::string out = read_file(log);
  EXPECT_NE(out.find("per device:  0: "), std::string::npos) << out;
  EXPECT_NE(out.find("2 worker processes"), std::string::npos) << out;
  std::string bad = (dir_ / "bad.txt").string();
  EXPECT_NE(wait_for(spawn({TILETUNE_EXE, "tune", config, "--db", db, "--backend", "host", "--devices", "0,zero"}, bad)), 0);
  EXPECT_NE(read_file(bad).find("'zero' is not a device index"), std::string::npos) << read_file(bad);
  EXPECT_NE(wait_for(spawn({TILETUNE_EXE, "tune", config, "--db", db, "--backend", "host", "--devices", "0,1", "--isolation",
                            "none"},
                           bad)),
            0);
  EXPECT_NE(read_file(bad).find("--isolation process"), std::string::npos) << read_file(bad);
}

}  // namespace
