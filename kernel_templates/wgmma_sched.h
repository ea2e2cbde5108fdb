// wgmma_gemm's work schedule as plain functions, shared by the kernel (SCHED), its JSON (the
// workspace it sizes) and a host test (tests/solutions/test_wgmma_sched_index.cpp) that replays
// every worker's items and checks that they cover every (tile, K tile) once and meet in the
// workspace in K order.
//
// SCHED 0: worker w (a block, or a cluster) takes tiles w, w + P, w + 2P, ... whole, P workers.
// SCHED 1 (data-parallel waves, then the last partial wave streamed along K): the W = T / P full
// waves go as with SCHED 0; the S = T % P tiles left, S * KT K tiles in all, are cut into P
// contiguous runs of the iteration axis (tile-major), one per worker, so that every worker ends
// within one K tile of the others where SCHED 0 leaves P - S of them idle for the last wave. A
// tile whose K tiles fall to several workers ("parts", in K order) meets in the workspace as a
// split-K tile does (splitk_reduce.h), the last part to arrive summing the parts in K order:
// deterministic for a given P. Counter of streamed tile ts: ts; its part i's slot: ts + lo + i,
// lo its first worker (slots increase along the iteration axis: fewer than S + P).
// Precondition: S * KT >= P (every worker has K tiles; otherwise a tile would count a worker with
// none among its parts and never complete): sched_streams() says when SCHED 1 applies, and the
// kernel falls back to SCHED 0 where it does not.
#ifndef TILETUNE_WGMMA_SCHED_H
#define TILETUNE_WGMMA_SCHED_H

#if defined(TT_CUDA) || defined(TT_HIP)
#define TT_SCHED_FN __host__ __device__ inline
#else
#define TT_SCHED_FN inline
#endif

namespace tt_sched {

struct Item {
  int t;      // tile unit (before rasterisation)
  int kb, ke; // its K tiles [kb, ke)
  int ts;     // streamed tile index (counter), -1 for a whole tile
  int part;   // this worker's part of the tile, in K order
  int parts;  // the tile's parts (1: no reduction)
  int slot;   // workspace slot of this part
};

// Whether SCHED 1 streams anything: a partial last wave whose K tiles give every worker some.
TT_SCHED_FN bool sched_streams(int T, int P, int KT) {
  const int S = T % P;
  return S > 0 && (long long)S * KT >= P;
}

// The iteration axis of the streamed tiles: worker w's run [a, b).
TT_SCHED_FN long long run_begin(int T, int P, int KT, int w) {
  return (long long)w * ((long long)(T % P) * KT) / P;
}
// The worker whose run holds iteration x.
TT_SCHED_FN int run_owner(int T, int P, int KT, long long x) {
  const long long L = (long long)(T % P) * KT;
  return (int)(((x + 1) * P - 1) / L);
}

// Items of worker w (0 <= w < P) of T tiles of KT K tiles each.
TT_SCHED_FN int items(int sched, int T, int P, int KT, int w) {
  if (sched == 0 || !sched_streams(T, P, KT)) return w < T ? (T - w + P - 1) / P : 0;
  const long long a = run_begin(T, P, KT, w), b = run_begin(T, P, KT, w + 1);
  return T / P + (b > a ? (int)((b - 1) / KT - a / KT) + 1 : 0);
}

// Item j of worker w.
TT_SCHED_FN Item item(int sched, int T, int P, int KT, int w, int j) {
  Item it;
  it.kb = 0, it.ke = KT, it.ts = -1, it.part = 0, it.parts = 1, it.slot = 0;
  const int W = T / P;
  if (sched == 0 || !sched_streams(T, P, KT) || j < W) {
    it.t = w + j * P;
    return it;
  }
  const long long a = run_begin(T, P, KT, w), b = run_begin(T, P, KT, w + 1);
  const int ts = (int)(a / KT) + (j - W);
  const long long t0 = (long long)ts * KT, t1 = t0 + KT;
  it.t = W * P + ts;
  it.ts = ts;
  it.kb = (int)((a > t0 ? a : t0) - t0);
  it.ke = (int)((b < t1 ? b : t1) - t0);
  const int lo = run_owner(T, P, KT, t0), hi = run_owner(T, P, KT, t1 - 1);
  it.parts = hi - lo + 1;
  it.part = w - lo;
  it.slot = ts + w;
  return it;
}

// The stream-K workspace: an int counter per streamed tile (P of them at most, padded to 256
// bytes), then a slot of `tile_floats` floats per part; the first of item `it`'s tile's slots.
TT_SCHED_FN float* part_slots(void* workspace, int P, const Item& it, long long tile_floats) {
  const long long cnt_bytes = ((long long)P * 4 + 255) / 256 * 256;
  float* slots = reinterpret_cast<float*>(static_cast<char*>(workspace) + cnt_bytes);
  return slots + (long long)(it.slot - it.part) * tile_floats;
}
TT_SCHED_FN int* part_counter(void* workspace, const Item& it) { return static_cast<int*>(workspace) + it.ts; }
// Its size for P workers of T tiles: the counters and the slots (fewer than T % P + P). A kernel whose
// clusters stream a tile of each rank (wgmma_conv's CLUSTERN) gives every rank a region of this size.
TT_SCHED_FN long long workspace_bytes(int P, int T, long long tile_floats) {
  return ((long long)P * 4 + 255) / 256 * 256 + ((long long)(T % P) + P) * tile_floats * 4;
}

}  // namespace tt_sched

#endif
