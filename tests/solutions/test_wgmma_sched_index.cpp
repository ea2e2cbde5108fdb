// wgmma_gemm's schedules (kernel_templates/wgmma_sched.h) replayed on the host: every worker's
// items, the K tiles they cover, and the parts a streamed tile meets in and their workspace slots.
// No GPU needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "kernel_templates/wgmma_sched.h"

namespace {

struct Replay {
  int T, P, KT, sched;
};

TEST(WgmmaSchedIndex, EveryTilesKTilesAreCoveredOnceAndPartsMeetInKOrder) {
  std::vector<Replay> cases;
  for (int T : {1, 2, 3, 7, 50, 99, 100, 131, 132, 133, 196, 263, 264, 265, 400})
    for (int P : {1, 2, 7, 66, 132, 264})
      for (int KT : {1, 2, 3, 4, 7, 16, 64, 100})
        for (int sched : {0, 1}) cases.push_back({T, P, KT, sched});
  for (const Replay& c : cases) {
    const bool streams = c.sched == 1 && tt_sched::sched_streams(c.T, c.P, c.KT);
    std::vector<std::vector<int>> cover(c.T, std::vector<int>(c.KT, 0));
    std::map<int, std::vector<std::pair<int, int>>> parts_of;  // streamed tile -> (kb, part) in item order
    std::set<int> slots;
    long long most = 0, least = 1LL << 40;
    for (int w = 0; w < c.P; ++w) {
      const int n = tt_sched::items(c.sched, c.T, c.P, c.KT, w);
      long long steps = 0;
      for (int j = 0; j < n; ++j) {
        const tt_sched::Item it = tt_sched::item(c.sched, c.T, c.P, c.KT, w, j);
        ASSERT_GE(it.t, 0);
        ASSERT_LT(it.t, c.T);
        ASSERT_LE(0, it.kb);
        ASSERT_LT(it.kb, it.ke) << "an empty item";
        ASSERT_LE(it.ke, c.KT);
        for (int k = it.kb; k < it.ke; ++k) ++cover[it.t][k];
        steps += it.ke - it.kb;
        if (it.parts == 1) {
          EXPECT_EQ(it.kb, 0);
          EXPECT_EQ(it.ke, c.KT);
          continue;
        }
        ASSERT_TRUE(streams);
        ASSERT_GE(it.ts, 0);
        ASSERT_LT(it.ts, c.T % c.P);  // counters: one per streamed tile
        ASSERT_GE(it.part, 0);
        ASSERT_LT(it.part, it.parts);
        parts_of[it.ts].push_back({it.kb, it.part});
        EXPECT_TRUE(slots.insert(it.slot).second) << "a slot shared";
        EXPECT_LT(it.slot, c.T % c.P + c.P);  // the workspace's bound (SK_SLOTS)
        // ... and workspace_bytes holds this part's slot (a tile of 16 floats here).
        std::vector<char> ws(std::size_t(tt_sched::workspace_bytes(c.P, c.T, 16)));
        const float* slot = tt_sched::part_slots(ws.data(), c.P, it, 16) + it.part * 16;
        EXPECT_LE(reinterpret_cast<std::uintptr_t>(slot + 16), reinterpret_cast<std::uintptr_t>(ws.data() + ws.size()));
      }
      if (streams) most = std::max(most, steps), least = std::min(least, steps);
    }
    for (int t = 0; t < c.T; ++t)
      for (int k = 0; k < c.KT; ++k)
        ASSERT_EQ(cover[t][k], 1) << "T " << c.T << " P " << c.P << " KT " << c.KT << " sched " << c.sched
                                  << ": tile " << t << " K tile " << k;
    // A streamed tile's parts: as many as its items, numbered 0.. in K order.
    for (const auto& [ts, ps] : parts_of) {
      for (std::size_t i = 0; i < ps.size(); ++i) {
        EXPECT_EQ(ps[i].second, int(i)) << "ts " << ts;
        if (i > 0) EXPECT_GT(ps[i].first, ps[i - 1].first);
      }
      const tt_sched::Item any = [&] {
        for (int w = 0; w < c.P; ++w)
          for (int j = 0, n = tt_sched::items(c.sched, c.T, c.P, c.KT, w); j < n; ++j) {
            const tt_sched::Item it = tt_sched::item(c.sched, c.T, c.P, c.KT, w, j);
            if (it.ts == ts) return it;
          }
        return tt_sched::Item{};
      }();
      EXPECT_EQ(any.parts, int(ps.size())) << "ts " << ts;
    }
    // Streamed: every worker within one K tile of the others.
    if (streams) EXPECT_LE(most - least, 1) << "T " << c.T << " P " << c.P << " KT " << c.KT;
  }
}

// SCHED 1 on the shapes it is for: 100 tiles on 132 multiprocessors (all streamed, every worker
// 100 * 64 / 132 K tiles), 196 (one full wave, 64 tiles streamed), 264 (two full waves, nothing to
// stream: SCHED 0's walk).
TEST(WgmmaSchedIndex, StreamsThePartialWaveOnly) {
  EXPECT_TRUE(tt_sched::sched_streams(100, 132, 64));
  EXPECT_EQ(tt_sched::items(1, 100, 132, 64, 0), 1);  // 48 K tiles of tile 0
  EXPECT_EQ(tt_sched::item(1, 100, 132, 64, 0, 0).ke, 48);
  EXPECT_EQ(tt_sched::item(1, 100, 132, 64, 1, 0).kb, 48);
  EXPECT_TRUE(tt_sched::sched_streams(196, 132, 64));
  EXPECT_EQ(tt_sched::item(1, 196, 132, 64, 5, 0).t, 5);  // the full wave first, whole
  EXPECT_EQ(tt_sched::item(1, 196, 132, 64, 5, 0).parts, 1);
  EXPECT_GE(tt_sched::item(1, 196, 132, 64, 5, 1).t, 132);
  EXPECT_FALSE(tt_sched::sched_streams(264, 132, 64));
  EXPECT_FALSE(tt_sched::sched_streams(1, 7, 2));  // 2 K tiles for 7 workers: SCHED 0's walk
  EXPECT_EQ(tt_sched::items(1, 1, 7, 2, 3), 0);
  EXPECT_EQ(tt_sched::items(1, 1, 7, 2, 0), 1);
}

}  // namespace
