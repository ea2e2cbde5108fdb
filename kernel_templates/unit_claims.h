// Work units claimed from a counter (wgmma_conv's CLAIM), as plain functions shared by the kernel
// and a host test (tests/solutions/test_unit_claims.cpp) that runs the protocol on threads and
// replays the schedule it makes.
//
// Block b's first unit is b. At the start of each unit its producer claims the next one: the grid
// size plus the counter's old value (one unit ahead, so that the atomic's latency hides behind the
// unit's copies); a claim past the last unit is the block's last. Every block makes that claim
// once, before it counts itself done, so the block that counts last finds every claim made and
// zeroes both counters: the workspace is left as zeroed as it came (splitk_reduce.h's contract).
#ifndef TILETUNE_UNIT_CLAIMS_H
#define TILETUNE_UNIT_CLAIMS_H

#if defined(TT_CUDA) || defined(TT_HIP)
#define TT_CLAIM_FN __device__ inline
TT_CLAIM_FN int tt_claim_add(int* p, int v) { return atomicAdd(p, v); }
TT_CLAIM_FN void tt_claim_fence() { __threadfence(); }
#else
#define TT_CLAIM_FN inline
inline int tt_claim_add(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline void tt_claim_fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif

namespace tt_claims {

// claims[0]: units claimed after the first grid's; claims[1]: blocks done. Both start at zero.
TT_CLAIM_FN int next(int* claims, int grid) { return grid + tt_claim_add(claims, 1); }

// After the block's claim past the end. The fence orders that claim before the count.
TT_CLAIM_FN void done(int* claims, int grid) {
  tt_claim_fence();
  if (tt_claim_add(claims + 1, 1) == grid - 1) {
    claims[0] = 0;
    claims[1] = 0;
  }
}

}  // namespace tt_claims

#endif
