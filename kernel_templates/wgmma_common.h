// Device helpers of the Hopper (sm_90a) templates, wgmma_gemm.cuh and wgmma_conv.cuh (namespace
// tt_wg): mbarriers, TMA copies, cp.async, wgmma fences and shared-memory descriptors, named
// barriers, the grouped tile raster and 16-byte vectors of C.
#ifndef TILETUNE_WGMMA_COMMON_H
#define TILETUNE_WGMMA_COMMON_H

#include "tt_types.h"
#include "wgmma_ops.h"

namespace tt_wg {

typedef unsigned int u32;
typedef unsigned long long u64;

template <bool C, class A, class B> struct Pick { typedef A type; };
template <class A, class B> struct Pick<false, A, B> { typedef B type; };

template <class T> struct IsBf16 { static constexpr bool value = false; };
template <> struct IsBf16<tt_bf16> { static constexpr bool value = true; };

TT_DEVICE u32 smem_addr(const void* p) {
  u32 r;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}

TT_DEVICE void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
TT_DEVICE void mbar_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
TT_DEVICE void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
TT_DEVICE void mbar_wait(u32 bar, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "TT_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@!P1 bra TT_WAIT;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

TT_DEVICE void tma_load_3d(u32 dst, const TtTensorMap* map, u32 bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// The same, delivered to the shared memory (and mbarrier) at the same offsets in every CTA of `mask`.
TT_DEVICE void tma_load_3d_multicast(u32 dst, const TtTensorMap* map, u32 bar, int c0, int c1, int c2,
                                     unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "h"(mask)
      : "memory");
}

TT_DEVICE u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
TT_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
// Arrive on the mbarrier at the same offset in CTA `rank` of the cluster.
TT_DEVICE void mbar_arrive_in(u32 bar, u32 rank) {
  asm volatile(
      "{ .reg .b32 r; mapa.shared::cluster.u32 r, %0, %1; mbarrier.arrive.release.cluster.shared::cluster.b64 _, [r]; }" ::"r"(bar),
      "r"(rank)
      : "memory");
}

TT_DEVICE void prefetch_map(const TtTensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

TT_DEVICE void cp_async16(u32 dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
TT_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> TT_DEVICE void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
TT_DEVICE void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

TT_DEVICE void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
TT_DEVICE void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> TT_DEVICE void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

TT_DEVICE void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
TT_DEVICE void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// The consumer threads that share a tile, synchronised by a named barrier that the producer
// warpgroup never touches (the split-K reduction's group, see splitk_reduce.h).
struct NamedGroup {
  int id, threads;
  TT_DEVICE void sync() const { named_sync(id, threads); }
  TT_DEVICE bool any(bool pred) const {
    u32 r;
    asm volatile(
        "{ .reg .pred p, q;\n"
        "setp.ne.u32 p, %1, 0;\n"
        "bar.red.or.pred q, %2, %3, p;\n"
        "selp.u32 %0, 1, 0, q; }"
        : "=r"(r)
        : "r"((u32)pred), "r"(id), "r"(threads)
        : "memory");
    return r != 0;
  }
};

// Keeps the compiler from moving accumulator reads / writes across wgmma waits.
template <int R> TT_DEVICE void fence_regs(float* d) {
  TT_UNROLL
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Shared-memory matrix descriptor, 128-byte swizzle.
TT_DEVICE u64 desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)((lbo >> 4) & 0x3FFF) << 16) |
         ((u64)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

// V consecutive elements of C: load / store as one 16-byte vector (caller checked alignment).
template <class T, int V> struct CVec;
template <int V> struct CVec<float, V> {
  static TT_DEVICE void load(const float* p, float* v) {
    float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
  }
  static TT_DEVICE void store(float* p, const float* v) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  }
};
template <class T16, int V> struct CVec {
  static TT_DEVICE void load(const T16* p, float* v) {
    uint4 x = *reinterpret_cast<const uint4*>(p);
    u32 w[4] = {x.x, x.y, x.z, x.w};
    TT_UNROLL
    for (int i = 0; i < 4; ++i) {
      T16 lo, hi;
      lo.bits = (unsigned short)(w[i] & 0xffffu);
      hi.bits = (unsigned short)(w[i] >> 16);
      v[2 * i] = tt_to_float(lo);
      v[2 * i + 1] = tt_to_float(hi);
    }
  }
  static TT_DEVICE void store(T16* p, const float* v) {
    u32 w[4];
    TT_UNROLL
    for (int i = 0; i < 4; ++i)
      w[i] = (u32)tt_from_float<T16>(v[2 * i]).bits | ((u32)tt_from_float<T16>(v[2 * i + 1]).bits << 16);
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  }
};

// Tile index -> (tile row, tile column, batch), grouped raster.
template <int RASTER, int GROUP>
TT_DEVICE void tile_coords(int t, int tiles_m, int tiles_n, int& mb, int& nb, int& b) {
  const int per_batch = tiles_m * tiles_n;
  b = t / per_batch;
  t -= b * per_batch;
  const int major = RASTER == 0 ? tiles_m : tiles_n;  // dimension grouped
  const int minor = RASTER == 0 ? tiles_n : tiles_m;  // dimension walked inside a group
  const int in_group = GROUP * minor;
  const int g = t / in_group;
  const int first = g * GROUP;
  const int gs = (major - first) < GROUP ? (major - first) : GROUP;
  const int r = t - g * in_group;
  const int x = first + r % gs, y = r / gs;
  if (RASTER == 0) { mb = x; nb = y; } else { nb = x; mb = y; }
}

}  // namespace tt_wg

#endif  // TILETUNE_WGMMA_COMMON_H
