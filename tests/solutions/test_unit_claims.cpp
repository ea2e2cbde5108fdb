// wgmma_conv's unit claims (kernel_templates/unit_claims.h) on the host: blocks as threads claim
// units through the protocol's own functions, and every unit goes to one block, launch after
// launch, the counters left zeroed; and the schedule the claims make, replayed on a strided input
// gradient's phases in the kernel's order (wgmma_conv_index.h), ends earlier than every
// grid-th unit per block. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <thread>
#include <tuple>
#include <vector>

#include "kernel_templates/unit_claims.h"
#include "kernel_templates/wgmma_conv_index.h"

namespace {

// One launch: `grid` threads each take units as the kernel's producer does (the first its own,
// each next claimed at the start of the one before); returns how many times each unit was taken.
std::vector<int> claim_launch(int* claims, int grid, int units) {
  std::vector<std::vector<int>> taken(std::size_t(grid), std::vector<int>(std::size_t(units), 0));
  std::vector<std::thread> blocks;
  for (int b = 0; b < grid; ++b)
    blocks.emplace_back([&, b] {
      for (int u = b; u < units;) {
        const int next = tt_claims::next(claims, grid);
        ++taken[std::size_t(b)][std::size_t(u)];
        std::this_thread::yield();  // let the others claim in between
        u = next;
      }
      tt_claims::done(claims, grid);
    });
  for (auto& t : blocks) t.join();
  std::vector<int> count(std::size_t(units), 0);
  for (const auto& t : taken)
    for (int u = 0; u < units; ++u) count[std::size_t(u)] += t[std::size_t(u)];
  return count;
}

TEST(UnitClaims, EveryUnitGoesToOneBlockAndTheCountersEndZeroed) {
  int claims[2] = {0, 0};
  for (const auto& [grid, units] : std::vector<std::pair<int, int>>{{7, 50}, {16, 16}, {13, 200}, {1, 9}})
    for (int launch = 0; launch < 3; ++launch) {  // each launch starts from the counters the last left
      const std::vector<int> count = claim_launch(claims, grid, units);
      for (int u = 0; u < units; ++u) ASSERT_EQ(count[std::size_t(u)], 1) << grid << " blocks, unit " << u;
      ASSERT_EQ(claims[0], 0) << grid << " blocks, launch " << launch;
      ASSERT_EQ(claims[1], 0) << grid << " blocks, launch " << launch;
    }
}

// When the last unit ends: each block's units in the given order (cost[u] each), either every
// grid-th unit (claims false) or as the claims hand them out: a block claims its next unit when it
// starts one, the earliest start first (ties: the lower block).
double makespan(const std::vector<double>& cost, int grid, bool claims) {
  const int units = int(cost.size());
  if (!claims) {
    double end = 0;
    for (int b = 0; b < grid; ++b) {
      double t = 0;
      for (int u = b; u < units; u += grid) t += cost[std::size_t(u)];
      end = std::max(end, t);
    }
    return end;
  }
  using Start = std::tuple<double, int, int>;  // time, block, unit
  std::priority_queue<Start, std::vector<Start>, std::greater<Start>> starts;
  for (int b = 0; b < std::min(grid, units); ++b) starts.emplace(0.0, b, b);
  int claimed = grid;
  double end = 0;
  while (!starts.empty()) {
    const auto [t, b, u] = starts.top();
    starts.pop();
    const int next = claimed++;
    const double finish = t + cost[std::size_t(u)];
    end = std::max(end, finish);
    if (next < units) starts.emplace(finish, b, next);
  }
  return end;
}

// The other nets' stride-2 3x3 input gradient (n32, 128 channels, 56x56, pad 1) in 256-row tiles on
// 132 multiprocessors: 98 tiles a phase, its taps 4, 2, 2 and 1 in the kernel's order. A unit costs
// its K steps (taps x 2 channel chunks) plus an epilogue of e steps; the busiest block runs three
// units either way: claimed, the last unit ends at 14 + 3e steps (7 taps' worth) where every 132nd
// unit per block ends at 16 + 3e (8 taps').
TEST(UnitClaims, APhasedDgradEndsEarlierClaimed) {
  TtConvParams p{};
  p.n = 32, p.c = 128, p.h = 56, p.w = 56, p.k = 128, p.r = 3, p.s = 3;
  p.stride_h = p.stride_w = 2, p.pad_h = p.pad_w = 1, p.dil_h = p.dil_w = 1, p.groups = 1;
  p.p = p.q = 28;
  const tt_wgconv::PhaseGrid g = tt_wgconv::phase_grid(p);
  const int tpp = (p.n * g.rows * g.cols + 255) / 256, chunks = p.k / 64, grid = 132;
  ASSERT_EQ(tpp, 98);
  for (double e : {0.0, 1.0, 2.0}) {
    std::vector<double> cost;
    for (int ph = 0; ph < p.stride_h * p.stride_w; ++ph) {
      const tt_conv::Phase x = tt_wgconv::phase_of(p, g, ph);
      cost.insert(cost.end(), std::size_t(tpp), double(x.nr * x.ns * chunks) + e);
    }
    EXPECT_EQ(makespan(cost, grid, false), 16 + 3 * e) << "epilogue " << e;
    EXPECT_EQ(makespan(cost, grid, true), 14 + 3 * e) << "epilogue " << e;
    std::reverse(cost.begin(), cost.end());  // lightest first: claiming gains nothing
    EXPECT_EQ(makespan(cost, grid, true), makespan(cost, grid, false)) << "epilogue " << e;
  }
}

}  // namespace
