// Device helpers of the Hopper (sm_90a) templates, wgmma_gemm.cuh and wgmma_conv.cuh (namespace
// tt_wg): mbarriers, TMA copies, cp.async, wgmma fences and shared-memory descriptors, named
// barriers, the grouped tile raster and 16-byte vectors of C; and the pipeline the two share: one
// producer warpgroup filling a STAGES-deep ring of operand stages in shared memory (Ring), consumer
// warpgroups reading them with wgmma (mma_k_tiles, finish_k_tiles), and ping-pong turns between two
// consumers.
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
template <class T> struct IsInt8 { static constexpr bool value = false; };
template <> struct IsInt8<signed char> { static constexpr bool value = true; };

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

// A tiled 4-D box (an NHWC patch: {c, w, h, n}), zero fill wherever it leaves the tensor.
TT_DEVICE void tma_load_4d(u32 dst, const TtTensorMap* map, u32 bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// TMA store of one box of shared memory (written through the generic proxy, then fenced with
// fence_async_smem by every writer and synchronised) to the tensor map's box at the coordinates;
// one bulk group per commit; wait_read<N>: at most N of this thread's groups still read shared memory.
TT_DEVICE void tma_store_3d(const TtTensorMap* map, u32 src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(map),
               "r"(src), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
TT_DEVICE void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N> TT_DEVICE void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory"); }

// Four 8x8 tiles of 16-bit elements from mma fragments (register q: tile q, a thread's two
// elements of its row), stored transposed: lane 8 q + i gives the address of tile q's column i.
TT_DEVICE void stmatrix_x4_trans(u32 addr, u32 r0, u32 r1, u32 r2, u32 r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}

// Four 8x8 tiles of 16-bit elements from mma fragments, stored as they are (rows): lane 8 q + i gives
// the address of tile q's row i.
TT_DEVICE void stmatrix_x4(u32 addr, u32 r0, u32 r1, u32 r2, u32 r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1), "r"(r2),
               "r"(r3)
               : "memory");
}

// 16 bytes of shared memory into registers (after stmatrix and __syncwarp: a warp reading back its own box).
TT_DEVICE uint4 lds_v4(u32 addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
  return v;
}

// Two bytes of shared memory (EPI 3's scalar rows).
TT_DEVICE unsigned short lds_u16(u32 addr) {
  unsigned short v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr) : "memory");
  return v;
}

// The same for two 8x8 tiles (lanes 0-15 give the addresses).
TT_DEVICE void stmatrix_x2_trans(u32 addr, u32 r0, u32 r1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(addr), "r"(r0), "r"(r1) : "memory");
}

TT_DEVICE u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every CTA of the cluster has started and initialised its mbarriers (Ring::init's
// fence.mbarrier_init orders the init): a relaxed arrive, because a release arrive costs every
// thread a GPU-scope memory barrier (MEMBAR.ALL.GPU in the SASS).
TT_DEVICE void cluster_sync_after_init() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;" ::: "memory");
}
// Arrive on the mbarrier at the same offset in CTA `rank` of the cluster. Default semantics
// (release at CTA scope), as for a local arrive: the stage's reads by wgmma have retired before
// it (wgmma.wait_group); a cluster-scope release would order every earlier memory access of the
// thread cluster-wide on each K step.
TT_DEVICE void mbar_arrive_in(u32 bar, u32 rank) {
  asm volatile(
      "{ .reg .b32 r; mapa.shared::cluster.u32 r, %0, %1; mbarrier.arrive.shared::cluster.b64 _, [r]; }" ::"r"(bar),
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

// Shared-memory matrix descriptor, the 128-byte swizzle (layout type 1) or, for a line of 64 bytes
// (wgmma_gemm's 32-column MN-major B), the 64-byte one (type 2).
TT_DEVICE u64 desc(u32 addr, u32 lbo, u32 sbo, u32 line = 128) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)((lbo >> 4) & 0x3FFF) << 16) |
         ((u64)((sbo >> 4) & 0x3FFF) << 32) | ((line == 128 ? 1ull : 2ull) << 62);
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

// int32 C (the int8 GEMM): its elements travel through the fp32 paths as raw bits (see Epi).
template <int V> struct CVec<int, V> {
  static TT_DEVICE void load(const int* p, float* v) { CVec<float, V>::load(reinterpret_cast<const float*>(p), v); }
  static TT_DEVICE void store(int* p, const float* v) { CVec<float, V>::store(reinterpret_cast<float*>(p), v); }
};

// The epilogue's arithmetic on one element of C, in the fp32 registers and staging it shares with
// every type: scale(alpha, acc) is what is staged, add_c(x, beta, c) adds beta * C to a staged
// value (c as CVec loads it), out(x) converts a staged value to C's type, in(c) reads C back.
// Floating-point C: fp32 arithmetic, rounded to C's type on the way out. int32 C (s8 inputs): the
// accumulators, the staged values and C's loaded elements are int32 bits in float registers, and
// alpha and beta integers (the runtime admits no others), so the sum is exact int32 arithmetic,
// wrapping like cuBLASLt's.
template <class TC> struct Epi {
  static TT_DEVICE float scale(float alpha, float acc) { return alpha * acc; }
  static TT_DEVICE float add_c(float x, float beta, float c) { return x + beta * c; }
  static TT_DEVICE float in(TC c) { return tt_to_float(c); }
  static TT_DEVICE TC out(float x) { return tt_from_float<TC>(x); }
};
template <> struct Epi<int> {
  static TT_DEVICE float scale(float alpha, float acc) {
    return __uint_as_float((u32)(int)alpha * __float_as_uint(acc));
  }
  static TT_DEVICE float add_c(float x, float beta, float c) {
    return __uint_as_float(__float_as_uint(x) + (u32)(int)beta * __float_as_uint(c));
  }
  static TT_DEVICE float in(int c) { return __int_as_float(c); }
  static TT_DEVICE int out(float x) { return __float_as_int(x); }
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

// ------------------------------------------------------------------------------------------------
// The pipeline.

// Bytes from shared address `a` (a dynamic allocation's start) to the next 1024-byte boundary, the
// 128-byte swizzle's period (__align__ on the extern array does not place it there): kernels size
// their allocation 1024 bytes over.
TT_DEVICE u32 pad_to_1024(u32 a) { return ((a + 1023u) & ~1023u) - a; }

// Shared memory of a wgmma kernel, from the dynamic allocation's first 1024-byte boundary: STAGES A
// stages of A_STAGE bytes, STAGES B stages of B_STAGE bytes, `staging_bytes` of fp32 epilogue
// staging, then the ring's mbarriers: full[s] at bars + 8 s,
// empty[s] at bars + 8 (STAGES + s). CLUSTER here counts the CTAs of a cluster (wgmma_gemm passes
// CLUSTER x CLUSTERN); with more than one a stage is filled by the producers of several CTAs of the
// cluster (TMA multicast) and released to all of them.
// EVERY_LANE: every lane of a consuming warp arrives on a stage's empty barrier (32 arrivals per
// warp), for consumers that read a stage with ld.shared (A from registers, wgmma_gemm's AREG): an
// arrive releases only its own thread's accesses, so one lane's arrive behind a __syncwarp orders the
// others' reads only through the warp barrier, which compute-sanitizer racecheck does not follow (it
// reported the cp.async producers' refills as racing them). Without a cluster only.
template <int STAGES, u32 A_STAGE, u32 B_STAGE, int CLUSTER = 1, bool EVERY_LANE = false>
struct Ring {
  static_assert(!EVERY_LANE || CLUSTER == 1, "every lane arrives on this CTA's barriers only");
  static constexpr u32 A_BYTES = A_STAGE, B_BYTES = B_STAGE;
  static constexpr int ARRIVALS_PER_WARP = EVERY_LANE ? 32 : 1;
  u32 sA, sB, bars;
  float* staging;

  TT_DEVICE Ring(unsigned char* smem_raw, u32 staging_bytes) {
    const u32 raw = smem_addr(smem_raw);
    const u32 pad = pad_to_1024(raw);
    unsigned char* smem = smem_raw + pad;
    sA = raw + pad;
    sB = sA + STAGES * A_STAGE;
    staging = reinterpret_cast<float*>(smem + STAGES * (A_STAGE + B_STAGE));
    bars = sB + STAGES * B_STAGE + staging_bytes;
  }

  TT_DEVICE u32 a(int s) const { return sA + s * A_STAGE; }
  TT_DEVICE u32 b(int s) const { return sB + s * B_STAGE; }
  TT_DEVICE u32 full(int s) const { return bars + 8 * s; }
  TT_DEVICE u32 empty(int s) const { return bars + 8 * (STAGES + s); }

  // Thread 0, before the block's (cluster's) first barrier: full[s] completes on `full_count`
  // arrivals (and the bytes announced), empty[s] on `empty_count`.
  TT_DEVICE void init(u32 full_count, u32 empty_count) const {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full(s), full_count);
      mbar_init(empty(s), empty_count);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }

  // A consuming warp (every lane calls) is done with `stage`: lane 0 arrives on its empty barrier;
  // in a cluster lane r arrives on CTA r's, every CTA's (a superset of those of its tile row and
  // column, which multicast into it: simpler; arriving on those alone would save 3 of 8 remote
  // arrives per warp and stage in a 4 x 2 cluster, not tried), one
  // instruction for the warp where a loop on lane 0 issued CLUSTER remote arrives one by one.
  TT_DEVICE void release(int stage, int lane) const {
    if (CLUSTER == 1) {
      if (EVERY_LANE || lane == 0) mbar_arrive(empty(stage));
    } else if (lane < CLUSTER) {
      mbar_arrive_in(empty(stage), (u32)lane);
    }
  }

  // The producer of a cluster's CTA before it leaves, from its ring position on: waits until the consumers of
  // every CTA released every stage it filled, so that no peer still multicasts into this CTA or arrives on it
  // (the peers walk the same units, so their multicasts into this CTA were all consumed here).
  TT_DEVICE void drain(int& s, u32& ph) const {
    for (int i = 0; i < STAGES; ++i) {
      mbar_wait(empty(s), ph ^ 1);
      advance(s, ph);
    }
  }

  // Ring position (stage s, parity ph): on to the next stage, or n stages on.
  static TT_DEVICE void advance(int& s, u32& ph) {
    if (++s == STAGES) { s = 0; ph ^= 1; }
  }
  static TT_DEVICE void skip(int& s, u32& ph, int n) {
    const int pos = s + n;
    ph ^= (u32)((pos / STAGES) & 1);
    s = pos % STAGES;
  }
};

// A consumer warpgroup's main loop over the K tiles [kb, ke), from ring position (s, ph) on. Per
// tile: wait for the stage to be full, 4 wgmma per m64 sub-tile (MI of them, from a_off bytes into
// the A stage), one per 32 bytes of the 128-byte swizzle atom (k16 for 16-bit inputs, k8 for
// tf32, k32 for 8-bit), one commit group per stage, one group left in flight: the stage the group
// before read is released once that group retired. The first tile overwrites the accumulators. Shared-memory
// operand layouts (descriptors): K-major [rows][128 B], SBO = 1024 (8-row groups), a k step 32 B
// into the atom; MN-major [rows/64][BK][128 B], LBO = BK * 128 (next 64 rows), SBO = 1024 (next
// 8 k), a k step 2048 B; an MN-major B of B_LINE 64 (32 columns, the 64-byte swizzle): [BK][64 B],
// SBO = 512, a k step 1024 B. b_off: this consumer's first column of B in the stage (consumers that
// split N). kstep 2: every other K tile from kb on (consumers splitting K), the ring position
// moving on past the other consumer's tiles. Returns the stage of the last group (-1 for none),
// for finish_k_tiles.
template <class Mma, bool A_K, bool B_K, int BK, int B_LINE = 128, int MI, int NACC, class R>
TT_DEVICE int mma_k_tiles(const R& ring, float (&acc)[MI][NACC], u32 a_off, int kb, int ke, int& s, u32& ph,
                          int lane, u32 b_off = 0, int kstep = 1) {
  static_assert(B_LINE == 128 || (B_LINE == 64 && !B_K), "B's lines: 128 bytes, or 64 for an MN-major B");
  // Descriptors are built once and advanced by adding address / 16 to their start field (all
  // shared addresses lie below 2^18, so the 14-bit field never carries): per wgmma only uniform
  // adds remain, where rebuilding each descriptor cost ~20 instructions per wgmma and, with
  // a per-consumer offset, a move from vector to uniform registers in front of every wgmma. The
  // offsets come from lane 0 so that the compiler knows them uniform (taking the warpgroup index
  // itself from lane 0 made every later use uniform and split-K variants spill).
  a_off = __shfl_sync(0xffffffffu, a_off, 0);
  b_off = __shfl_sync(0xffffffffu, b_off, 0);
  constexpr u32 KSTEP = A_K ? 32 : 2048, KSTEP_B = B_K ? 32 : 16 * B_LINE;
  const u64 da0 = A_K ? desc(ring.a(0) + a_off, 16, 1024) : desc(ring.a(0) + a_off, BK * 128, 1024);
  const u64 db0 = B_K ? desc(ring.b(0) + b_off, 16, 1024) : desc(ring.b(0) + b_off, BK * B_LINE, 8 * B_LINE, B_LINE);
  int prev = -1;
  for (int kt = kb; kt < ke; kt += kstep) {
    mbar_wait(ring.full(s), ph);
    const u64 da = da0 + (u64)((u32)s * (R::A_BYTES >> 4));
    const u64 db = db0 + (u64)((u32)s * (R::B_BYTES >> 4));
    wg_fence();
    TT_UNROLL
    for (int kk = 0; kk < 4; ++kk) {
      TT_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        Mma::mma(acc[mi], da + (mi * 64 * 128 + kk * KSTEP) / 16, db + kk * KSTEP_B / 16,
                 (kt > kb || kk > 0) ? 1 : 0);
    }
    wg_commit();
    if (prev >= 0) {
      wg_wait<1>();
      ring.release(prev, lane);
    }
    prev = s;
    for (int i = 0; i < kstep; ++i) R::advance(s, ph);
  }
  return prev;
}

// A ring read with its operands' roles exchanged (wgmma_conv's SWAP): wgmma's A from the ring's B
// stages and its B from the A stages; barriers and releases the ring's own.
template <class R>
struct SwappedRing {
  static constexpr u32 A_BYTES = R::B_BYTES, B_BYTES = R::A_BYTES;
  const R& ring;
  TT_DEVICE u32 a(int s) const { return ring.b(s); }
  TT_DEVICE u32 b(int s) const { return ring.a(s); }
  TT_DEVICE u32 full(int s) const { return ring.full(s); }
  TT_DEVICE void release(int stage, int lane) const { ring.release(stage, lane); }
  TT_DEVICE static void advance(int& s, u32& ph) { R::advance(s, ph); }
};

// After the main loop: wait for the last group, keep the accumulators behind that wait, release
// its stage. MAY_BE_EMPTY: the loop may have run no K tile (prev == -1, no stage to release).
template <bool MAY_BE_EMPTY, int MI, int NACC, class R>
TT_DEVICE void finish_k_tiles(const R& ring, float (&acc)[MI][NACC], int prev, int lane) {
  wg_wait<0>();
  TT_UNROLL
  for (int mi = 0; mi < MI; ++mi) fence_regs<NACC>(acc[mi]);
  if (!MAY_BE_EMPTY || prev >= 0) ring.release(prev, lane);
}

// Ping-pong consumers (cw 0 and 1) run their main loops in turn, on named barriers 3 and 4 of the
// two warpgroups: a consumer waits for its turn before every main loop but its first, and passes
// the turn once it has passed all its full-barrier waits (tensor cores in turn, and no parity wait
// more than one phase ahead when a consumer skips the other's K tiles in the ring).
TT_DEVICE void pingpong_wait(int cw) { named_sync(3 + cw, 256); }
TT_DEVICE void pingpong_pass(int cw) { named_arrive(3 + (cw ^ 1), 256); }

}  // namespace tt_wg

#endif  // TILETUNE_WGMMA_COMMON_H
