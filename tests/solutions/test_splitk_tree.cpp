// splitk_reduce.h's two-level meeting of deep splits (kernel_templates/splitk_tree.h) replayed on
// the host: every part's arrival, every run's finish as separate atomic steps in random
// interleavings. Exactly one part finishes the tile, its sum is the fixed run-by-run order's (bit
// for bit, whatever the interleaving), and the slots and the counter are left zeroed. No GPU needed.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernel_templates/splitk_tree.h"

namespace {

using tt_splitk::Tree;

constexpr int kElems = 3;  // elements a slot (the device's slot is a tile; the order is per element)

struct Meeting {
  int parts;
  Tree t;
  int counter = 0;
  std::vector<std::vector<float>> slots;
  int finals = 0;
  std::vector<float> result;

  explicit Meeting(int p) : parts(p), t(tt_splitk::tree(p)), slots(p, std::vector<float>(kElems, 0.f)) {}

  // The sum of `count` slots `stride` apart from `first`, in order, each zeroed but the first when keep_first
  // (splitk_reduce.h's sum_slots).
  std::vector<float> sum(int first, int count, int stride, bool keep_first) {
    std::vector<float> s(kElems, 0.f);
    for (int i = 0; i < count; ++i) {
      std::vector<float>& slot = slots[first + i * stride];
      for (int e = 0; e < kElems; ++e) s[e] += slot[e];
      if (i > 0 || !keep_first) slot.assign(kElems, 0.f);
    }
    return s;
  }
};

// The fixed order: each run's parts in order, then the runs in order.
std::vector<float> expected(const std::vector<std::vector<float>>& partials) {
  const int parts = (int)partials.size();
  const Tree t = tt_splitk::tree(parts);
  std::vector<float> total(kElems, 0.f);
  for (int r = 0; r < t.runs; ++r) {
    std::vector<float> run(kElems, 0.f);
    for (int i = 0; i < tt_splitk::run_parts(t, parts, r); ++i)
      for (int e = 0; e < kElems; ++e) run[e] += partials[r * t.size + i][e];
    for (int e = 0; e < kElems; ++e) total[e] += run[e];
  }
  return total;
}

TEST(SplitkTree, RunsFitTheirCounterFields) {
  for (int parts = 16; parts <= 4 * 63; ++parts) {
    const Tree t = tt_splitk::tree(parts);
    ASSERT_GE(t.runs, 1);
    ASSERT_LE(t.runs, 4) << parts;
    ASSERT_LE(t.size, 63) << parts;
    int covered = 0;
    for (int r = 0; r < t.runs; ++r) {
      ASSERT_GE(tt_splitk::run_parts(t, parts, r), 1) << parts << " run " << r;
      covered += tt_splitk::run_parts(t, parts, r);
    }
    ASSERT_EQ(covered, parts);
  }
  // 132 parts: runs of 33, so the longest read is 33 + 4 slots where one level read 132.
  EXPECT_EQ(tt_splitk::tree(132).size, 33);
  EXPECT_EQ(tt_splitk::tree(132).runs, 4);
}

TEST(SplitkTree, EveryInterleavingMeetsOnceInTheFixedOrder) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  for (int parts : {16, 17, 22, 23, 32, 33, 44, 64, 66, 128, 132, 252}) {
    std::vector<std::vector<float>> partials(parts, std::vector<float>(kElems));
    for (auto& p : partials)
      for (float& x : p) x = value(rng) * (1 << (rng() % 20));  // magnitudes apart: the order shows in the bits
    const std::vector<float> want = expected(partials);
    for (int trial = 0; trial < 200; ++trial) {
      Meeting m(parts);
      // Pending atomic steps: a part's arrival (its slot stored first), or a run's finish once its
      // last arrival summed the run. Each step is taken at a random time after it becomes pending.
      struct Step {
        bool finish;
        int who;  // part, or run
      };
      std::vector<Step> pending;
      for (int p = 0; p < parts; ++p) pending.push_back({false, p});
      while (!pending.empty()) {
        const size_t i = rng() % pending.size();
        const Step s = pending[i];
        pending.erase(pending.begin() + (long)i);
        if (!s.finish) {
          const int run = s.who / m.t.size, n = tt_splitk::run_parts(m.t, parts, run);
          m.slots[s.who] = partials[s.who];
          const int old = m.counter;
          m.counter += tt_splitk::run_arrival(run);
          if (!tt_splitk::run_complete(old, run, n)) continue;
          m.slots[run * m.t.size] = m.sum(run * m.t.size, n, 1, true);
          pending.push_back({true, run});
        } else {
          const int old = m.counter;
          m.counter += tt_splitk::RUN_FINISHED;
          if (!tt_splitk::tree_complete(old, m.t)) continue;
          m.result = m.sum(0, m.t.runs, m.t.size, false);
          m.counter = 0;
          ++m.finals;
        }
      }
      ASSERT_EQ(m.finals, 1) << parts << " parts, trial " << trial;
      ASSERT_EQ(0, std::memcmp(m.result.data(), want.data(), sizeof(float) * kElems))
          << parts << " parts, trial " << trial << ": not the fixed order's sum";
      EXPECT_EQ(m.counter, 0);
      for (int p = 0; p < parts; ++p)
        for (float x : m.slots[p]) ASSERT_EQ(x, 0.f) << "slot " << p << " of " << parts << " left non-zero";
    }
  }
}

}  // namespace
