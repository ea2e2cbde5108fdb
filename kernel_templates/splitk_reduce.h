// Deterministic split-K reduction through a workspace, shared by the templates with a SPLITK
// parameter (mma_gemm, mma_conv through mma_common.h; wgmma_gemm; mfma_conv on HIP). One contract
// for all of them:
//
// Workspace (TtGemmParams::workspace, zero-filled when allocated, left zeroed by every launch):
//   int counters[all_tiles], padded to 256 bytes, then float slots[all_tiles][SPLITK][TILE].
// Every split stores its fp32 partial tile into its own slot, then bumps the tile's counter; the
// group of threads that arrives last sums the slots in split order (the same result whatever the
// arrival order), zeroes them and the counter again and returns true with the sum in its
// accumulators; the others return false and go on. No group waits for another, so this cannot
// deadlock, whatever else the block's threads (e.g. a producer warpgroup) are doing. Splits of 16
// and more (where a thread holds fewer than 128 accumulators) meet in two levels of the same kind
// (splitk_tree.h): runs of parts, then the runs.
//
// The slot of a tile is laid out per thread: float4 q of thread tid at q * THREADS + tid, for the
// R accumulators each of the THREADS threads holds (R * THREADS == TILE). Any fragment layout fits,
// as long as every split's threads hold the same elements in the same registers.
#ifndef TILETUNE_SPLITK_REDUCE_H
#define TILETUNE_SPLITK_REDUCE_H

#include "splitk_tree.h"
#include "tt_types.h"

namespace tt_splitk {

// The slots are read and written past L1: cache-global hints on CUDA; HIP has none for float4, and
// the agent-scope fences order its plain accesses (AMDGPU's memory model writes back and
// invalidates the caches a fence needs).
#if defined(TT_HIP)
TT_DEVICE void store_cg(float4* p, float4 v) { *p = v; }
TT_DEVICE float4 load_cg(const float4* p) { return *p; }
#else
TT_DEVICE void store_cg(float4* p, float4 v) { __stcg(p, v); }
TT_DEVICE float4 load_cg(const float4* p) { return __ldcg(p); }
#endif

// Synchronises all threads of a block (the group is the whole block).
struct BlockGroup {
  TT_DEVICE void sync() const { __syncthreads(); }
  TT_DEVICE bool any(bool pred) const { return __syncthreads_or(pred) != 0; }
};

// K tiles [begin, end) of split `split` of KT: contiguous ranges whose lengths differ by at most
// one, none empty while KT >= SPLITK.
template <int SPLITK>
TT_DEVICE void k_range(int KT, int split, int& begin, int& end) {
  begin = split * KT / SPLITK;  // KT < 2^31 / SPLITK: K below half a billion
  end = (split + 1) * KT / SPLITK;
}

// The sum, in order, of `count` slots `stride` slots apart from `slots` (float4 q of thread tid at
// q * THREADS + tid): into acc, every slot read zeroed; or (TO_FIRST) into the first slot, the
// others zeroed (a run's sum in two-level meetings). U: float4 loads in flight at once.
template <int R, int THREADS, int TILE, int U, bool TO_FIRST = false, bool WHOLE = false>
TT_DEVICE void sum_slots(float* acc, float4* slots, int count, int stride, int tid) {
  const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
#if defined(TT_HIP)
  // Slot by slot (not unrolled), the whole tile each: clang hoists the loads of unrolled loops,
  // and with the slots innermost it held every slot at once (clang-22, mfma_conv: 32 splits took
  // all 512 VGPRs and scratch; 4 splits of a 128x128 tile 276 VGPRs, which cap the whole kernel's
  // occupancy; this way 156, against 133 unsplit). The same sums in the same order as below.
  if (TO_FIRST) {  // the first slot is the running sum
#pragma unroll 1
    for (int sp = 1; sp < count; ++sp) {
      TT_UNROLL
      for (int q = 0; q < R / 4; ++q) {
        float4* x = slots + (long long)sp * stride * (TILE / 4) + q * THREADS + tid;
        float4* f = slots + q * THREADS + tid;
        const float4 v = load_cg(x), a = load_cg(f);
        store_cg(f, make_float4(a.x + v.x, a.y + v.y, a.z + v.z, a.w + v.w));
        store_cg(x, zero);
      }
    }
    return;
  }
  TT_UNROLL
  for (int i = 0; i < R; ++i) acc[i] = 0.0f;
#pragma unroll 1
  for (int sp = 0; sp < count; ++sp) {
    TT_UNROLL
    for (int q = 0; q < R / 4; ++q) {
      float4* x = slots + (long long)sp * stride * (TILE / 4) + q * THREADS + tid;
      const float4 v = load_cg(x);
      acc[4 * q] += v.x; acc[4 * q + 1] += v.y; acc[4 * q + 2] += v.z; acc[4 * q + 3] += v.w;
      store_cg(x, zero);
    }
  }
#else
  // U float4 reads are issued before their sums and zeroing stores, so that U are in flight at once
  // (the last group reads its tile's partials alone, and one read at a time made this tail as long
  // as the main loop): with WHOLE, U / Q whole slots a batch where a slot holds fewer than U of this
  // thread's float4s (Q), e.g. a 64 x 64 tile's run of 8 parts in 2 L2 round trips at U = 32, not 8;
  // else U slots of one float4 each (kernels held to few registers: narrow_wgrad spilled with whole
  // slots at its U = 8; their shallow splits pass U = 1). acc holds
  // the running sums in either mode (at a meeting the group's own partial is already in its slot),
  // zeroed a batch at a time so that TO_FIRST keeps only the batch's live. Summed in slot order.
  constexpr int Q = R / 4;
  constexpr bool W = WHOLE && Q < U;
  constexpr int QB = W ? Q : 1;      // float4s of a slot per batch
  constexpr int SB = W ? U / Q : U;  // slots per batch
  TT_UNROLL
  for (int q0 = 0; q0 < Q; q0 += QB) {
    TT_UNROLL  // zeroed batch by batch: only the batch's sums are live before their stores (TO_FIRST)
    for (int i = 4 * q0; i < 4 * (q0 + QB) && i < R; ++i) acc[i] = 0.0f;
    for (int sp0 = 0; sp0 < count; sp0 += SB) {
      float4 v[SB][QB];
      TT_UNROLL
      for (int b = 0; b < SB; ++b)
        TT_UNROLL
        for (int u = 0; u < QB; ++u)
          if (sp0 + b < count && q0 + u < Q)
            v[b][u] = load_cg(slots + (long long)(sp0 + b) * stride * (TILE / 4) + (q0 + u) * THREADS + tid);
      TT_UNROLL
      for (int b = 0; b < SB; ++b)
        TT_UNROLL
        for (int u = 0; u < QB; ++u)
          if (sp0 + b < count && q0 + u < Q) {
            const int q = q0 + u;
            const float4 x = v[b][u];
            acc[4 * q] += x.x; acc[4 * q + 1] += x.y; acc[4 * q + 2] += x.z; acc[4 * q + 3] += x.w;
            if (sp0 + b > 0 || !TO_FIRST)
              store_cg(slots + (long long)(sp0 + b) * stride * (TILE / 4) + q * THREADS + tid,
                       make_float4(0.f, 0.f, 0.f, 0.f));
          }
    }
    if (TO_FIRST) {
      TT_UNROLL
      for (int q = q0; q < q0 + QB && q < Q; ++q)
        store_cg(slots + q * THREADS + tid, make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
    }
  }
#endif
}

// acc = the sum, in order, of `count` slots, slot by slot: each slot's float4s of this thread (float4 q
// at q * THREADS + tid) read QB at a time, then added and zeroed. The same sums as sum_slots (slot
// order per element), with QB reads in flight whatever the count: for the few parts of a stream-K
// tile, where one read at a time (sum_slots with U = 1) made the last part's sum, a tile's
// R / 4 x parts L2 round trips one after another, longer than the tile's main loop.
template <int R, int THREADS, int TILE, int QB>
TT_DEVICE void sum_slots_batched(float* acc, float4* slots, int count, int tid) {
  TT_UNROLL
  for (int i = 0; i < R; ++i) acc[i] = 0.0f;
  for (int sp = 0; sp < count; ++sp) {
    float4* slot = slots + (long long)sp * (TILE / 4) + tid;
    TT_UNROLL
    for (int q0 = 0; q0 < R / 4; q0 += QB) {
      float4 v[QB];
      TT_UNROLL
      for (int u = 0; u < QB; ++u)
        if (q0 + u < R / 4) v[u] = load_cg(slot + (q0 + u) * THREADS);
      TT_UNROLL
      for (int u = 0; u < QB; ++u)
        if (q0 + u < R / 4) {
          const int q = q0 + u;
          acc[4 * q] += v[u].x; acc[4 * q + 1] += v[u].y; acc[4 * q + 2] += v[u].z; acc[4 * q + 3] += v[u].w;
          store_cg(slot + q * THREADS, make_float4(0.f, 0.f, 0.f, 0.f));
        }
    }
  }
}

// The meeting of one tile's `parts` partials (a run-time count): this group's is part `part`,
// stored in slots[part]; `counter` counts the arrivals. The contract above, with SPLITK = parts;
// TREE: in two levels (splitk_tree.h; parts <= 4 * 63); QB > 0 (one level): the last group's sum
// slot by slot, QB reads in flight (sum_slots_batched). WHOLE: sum_slots'.
template <int R, int THREADS, int TILE, int U, bool TREE, int QB = 0, bool WHOLE = false, class Group>
TT_DEVICE bool reduce_slots(float* acc, int* counter, float4* slots, int part, int parts, int tid, const Group& group) {
  static_assert(R % 4 == 0 && R * THREADS == TILE, "the group's accumulators cover the tile");
  float4* mine = slots + (long long)part * (TILE / 4);
  TT_UNROLL
  for (int q = 0; q < R / 4; ++q)
    store_cg(mine + q * THREADS + tid, make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
  __threadfence();
  group.sync();
  if constexpr (!TREE) {
    const bool last = group.any(tid == 0 && atomicAdd(counter, 1) == parts - 1);
    if (!last) return false;
    __threadfence();
    if constexpr (QB > 0)
      sum_slots_batched<R, THREADS, TILE, QB>(acc, slots, parts, tid);
    else
      sum_slots<R, THREADS, TILE, U, false, WHOLE>(acc, slots, parts, 1, tid);
  } else {
    const Tree t = tree(parts);
    const int run = part / t.size;
    float4* first = slots + (long long)run * t.size * (TILE / 4);
    if (!group.any(tid == 0 && run_complete(atomicAdd(counter, run_arrival(run)), run, run_parts(t, parts, run))))
      return false;
    __threadfence();
    sum_slots<R, THREADS, TILE, U, true, WHOLE>(acc, first, run_parts(t, parts, run), 1, tid);
    __threadfence();
    group.sync();
    if (!group.any(tid == 0 && tree_complete(atomicAdd(counter, RUN_FINISHED), t))) return false;
    __threadfence();
    sum_slots<R, THREADS, TILE, U, false, WHOLE>(acc, slots, t.runs, t.size, tid);
  }
  if (tid == 0) *counter = 0;
  return true;
}

// The float4 reads in flight a wgmma consumer can hold beside R accumulators without a spill
// (compiled at 168 registers a thread for two consumers, 255 for one; R = 64 spilled at 8), else
// `otherwise`: a 64 x 64 tile's run of 8 parts is read in 2 L2 round trips, not 8.
constexpr int loads_beside(int R, int otherwise) { return R <= 32 ? 32 : otherwise; }

// acc: the R fp32 accumulators of thread `tid` (0 <= tid < THREADS) of the group that computed
// split `split` of tile `tile_id`. Group: sync() is a barrier of the group's threads, any(p) a
// barrier returning whether p held on any of them; any() must work again and again (the two-level
// meeting asks twice).
// LOADS: the float4 reads in flight in the last groups' sums; 0 is 8 for splits of 8 and more, else
// 1 (kernels held to few registers: a 4 * LOADS register array lives beside the accumulators).
template <int R, int THREADS, int SPLITK, int TILE, int LOADS = 0, class Group>
TT_DEVICE bool reduce(float* acc, void* workspace, long long tile_id, long long all_tiles, int split, int tid,
                      const Group& group) {
  const long long cnt_bytes = (all_tiles * 4 + 255) / 256 * 256;
  float4* slots = reinterpret_cast<float4*>(static_cast<char*>(workspace) + cnt_bytes) +
                  tile_id * (long long)SPLITK * (TILE / 4);
  // Two levels for deep splits, but not where a thread holds 128 accumulators: those kernels sit at
  // 168 registers, and the second level spilled them (wgmma_gemm 128 x 128 ping-pong: 8-36 bytes).
  // Nor past 4 runs of 63 parts, what the counter's 6-bit fields count: narrow_wgrad's 264 and 528
  // and tap_wgrad's 264 rows of blocks (more than a wave) meet in one level, as before the tree.
  constexpr bool TREE = SPLITK >= 16 && SPLITK <= 4 * 63 && R < 128;
  constexpr int U = LOADS > 0 ? LOADS : SPLITK >= 8 ? 8 : 1;
  return reduce_slots<R, THREADS, TILE, U, TREE, 0, (LOADS > 0)>(acc, static_cast<int*>(workspace) + tile_id, slots,
                                                                split, SPLITK, tid, group);
}

}  // namespace tt_splitk

#endif
