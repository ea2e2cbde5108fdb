// The two-level meeting of deep split-K (splitk_reduce.h's reduce_slots with TREE, which reduce
// takes for SPLITK >= 16 where a thread holds fewer than 128 accumulators), as plain functions:
// the kernels' and a host test's (tests/solutions/test_splitk_tree.cpp), which replays the counter
// under every arrival order.
//
// Why: with one level, the group that arrives last reads every partial alone, a tail that grows
// with the split count (44 or 132 parts a tile, where a deep split is what fills the machine).
// The parts form up to four runs of consecutive parts; the last part of a run to arrive sums the
// run into the run's first slot, and the last run to finish sums the runs' sums: fixed runs summed
// in a fixed order, so the result does not depend on the arrival order. One int counter per tile,
// as for one level: a 6-bit arrival count per run (bits 6 r to 6 r + 5, runs of up to 63 parts),
// the finished runs in bits 24 and up. For 132 parts the longest read is 33 + 4 slots, not 132.
#ifndef TILETUNE_SPLITK_TREE_H
#define TILETUNE_SPLITK_TREE_H

#if defined(TT_CUDA) || defined(TT_HIP)
#define TT_SPLITK_FN __host__ __device__ inline
#else
#define TT_SPLITK_FN inline
#endif

namespace tt_splitk {

struct Tree {
  int size;  // parts per run; the last run may have fewer
  int runs;
};
TT_SPLITK_FN Tree tree(int parts) {
  const int size = (parts + 3) / 4;
  return {size, (parts + size - 1) / size};
}
TT_SPLITK_FN int run_parts(Tree t, int parts, int run) {
  const int left = parts - run * t.size;
  return t.size < left ? t.size : left;
}
TT_SPLITK_FN int run_arrival(int run) { return 1 << (6 * run); }
// old: the counter before this part's run_arrival.
TT_SPLITK_FN bool run_complete(int old, int run, int n) { return ((old >> (6 * run)) & 63) == n - 1; }
constexpr int RUN_FINISHED = 1 << 24;
// old: the counter before this run's RUN_FINISHED.
TT_SPLITK_FN bool tree_complete(int old, Tree t) { return (old >> 24) == t.runs - 1; }

}  // namespace tt_splitk

#endif
