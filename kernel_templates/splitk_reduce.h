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
// deadlock, whatever else the block's threads (e.g. a producer warpgroup) are doing.
//
// The slot of a tile is laid out per thread: float4 q of thread tid at q * THREADS + tid, for the
// R accumulators each of the THREADS threads holds (R * THREADS == TILE). Any fragment layout fits,
// as long as every split's threads hold the same elements in the same registers.
#ifndef TILETUNE_SPLITK_REDUCE_H
#define TILETUNE_SPLITK_REDUCE_H

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

// The meeting of one tile's `parts` partials (a run-time count): this group's is part `part`,
// stored in slots[part]; `counter` counts the arrivals. The contract above, with SPLITK = parts.
// U: slots whose loads are in flight at once in the last group's sum.
template <int R, int THREADS, int TILE, int U, class Group>
TT_DEVICE bool reduce_slots(float* acc, int* counter, float4* slots, int part, int parts, int tid, const Group& group) {
  static_assert(R % 4 == 0 && R * THREADS == TILE, "the group's accumulators cover the tile");
  float4* mine = slots + (long long)part * (TILE / 4);
  TT_UNROLL
  for (int q = 0; q < R / 4; ++q)
    store_cg(mine + q * THREADS + tid, make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
  __threadfence();
  group.sync();
  const bool last = group.any(tid == 0 && atomicAdd(counter, 1) == parts - 1);
  if (!last) return false;
  __threadfence();
#if defined(TT_HIP)
  // Split by split (not unrolled), the whole tile each: clang hoists the loads of unrolled loops,
  // and with the splits innermost it held every split's slots at once (clang-22, mfma_conv: 32
  // splits took all 512 VGPRs and scratch; 4 splits of a 128x128 tile 276 VGPRs, which cap the
  // whole kernel's occupancy; this way 156, against 133 unsplit). The same sums in the same order
  // as below.
  TT_UNROLL
  for (int i = 0; i < R; ++i) acc[i] = 0.0f;
#pragma unroll 1
  for (int sp = 0; sp < parts; ++sp) {
    TT_UNROLL
    for (int q = 0; q < R / 4; ++q) {
      float4* x = slots + (long long)sp * (TILE / 4) + q * THREADS + tid;
      const float4 v = load_cg(x);
      acc[4 * q] += v.x; acc[4 * q + 1] += v.y; acc[4 * q + 2] += v.z; acc[4 * q + 3] += v.w;
      store_cg(x, make_float4(0.f, 0.f, 0.f, 0.f));
    }
  }
#else
  TT_UNROLL
  for (int q = 0; q < R / 4; ++q) {
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    // Deep splits: the loads of U slots are issued before their sums and zeroing stores, so that U
    // reads are in flight at once (the last group reads SPLITK partial tiles alone, and one read at a
    // time made this tail as long as the main loop). Shallow splits read one at a time: their tail
    // is short, and the U registers would spill kernels held to 128 registers. Summed in split order.
    for (int sp0 = 0; sp0 < parts; sp0 += U) {
      float4 v[U];
      TT_UNROLL
      for (int u = 0; u < U; ++u)  // this split's own slot too: its registers need not stay live
        if (sp0 + u < parts) v[u] = load_cg(slots + (long long)(sp0 + u) * (TILE / 4) + q * THREADS + tid);
      TT_UNROLL
      for (int u = 0; u < U; ++u)
        if (sp0 + u < parts) {
          s.x += v[u].x; s.y += v[u].y; s.z += v[u].z; s.w += v[u].w;
          store_cg(slots + (long long)(sp0 + u) * (TILE / 4) + q * THREADS + tid, make_float4(0.f, 0.f, 0.f, 0.f));
        }
    }
    acc[4 * q] = s.x; acc[4 * q + 1] = s.y; acc[4 * q + 2] = s.z; acc[4 * q + 3] = s.w;
  }
#endif
  if (tid == 0) *counter = 0;
  return true;
}

// acc: the R fp32 accumulators of thread `tid` (0 <= tid < THREADS) of the group that computed
// split `split` of tile `tile_id`. Group: sync() is a barrier of the group's threads, any(p) a
// barrier returning whether p held on any of them.
template <int R, int THREADS, int SPLITK, int TILE, class Group>
TT_DEVICE bool reduce(float* acc, void* workspace, long long tile_id, long long all_tiles, int split, int tid,
                      const Group& group) {
  const long long cnt_bytes = (all_tiles * 4 + 255) / 256 * 256;
  float4* slots = reinterpret_cast<float4*>(static_cast<char*>(workspace) + cnt_bytes) +
                  tile_id * (long long)SPLITK * (TILE / 4);
  return reduce_slots<R, THREADS, TILE, (SPLITK >= 8 ? 8 : 1)>(acc, static_cast<int*>(workspace) + tile_id, slots,
                                                               split, SPLITK, tid, group);
}

}  // namespace tt_splitk

#endif
