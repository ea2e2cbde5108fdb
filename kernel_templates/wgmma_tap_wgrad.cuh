// Hopper (sm_90a) weight gradient of filters up to 5 wide (3x3 above all), stride 1 or 2, on
// wgmma, x's rows staged once per K step for all the taps of a filter row (of a column residue).
// NHWC x and dy, KRSC dw, bf16 / fp16 in, fp32 accumulation, dw in bf16, fp16 or fp32; C and K
// multiples of 8 (a tile's channels past them are the copies' zero fill, never stored), groups 1.
//
// Why a template of its own: wgmma_conv's weight gradient gathers one im2col copy of x per tap, S
// copies of nearly the same pixels for each filter row, and its 64-row dy tile (K = 64 in ResNet's
// first stage) reads each stage's B once per 64 x 64 x 64 of work. Here a K step packs whole output
// rows (wgmma_tap_wgrad_index.h): tap (r, s) pairs dy's lines with filter row r's copy of x shifted
// by s lines (at stride 2: the copy of s's column residue, s / 2 lines on), so a stage is one dy box
// and R (2R) x boxes, and the taps of a row (residue) read the same x.
//
// A block owns 64 output channels x 64 input channels x the taps of FR filter rows (a row group;
// R / FR of them): one producer warpgroup (one thread issuing the copies into a STAGES-deep mbarrier
// ring) and FR consumer warpgroups, consumer r computing taps (r, 0..S-1), S accumulators of
// m64n64 (S * 32 registers). Both operands are MN-major (channels contiguous): A is dy (64 channels
// of K per line), B is x (64 of C per line). SHIFT picks how tap s's B is placed: 0: the producer
// copies x once per tap, s columns further on (FR*S boxes a stage, every B at a 1024-byte
// boundary); 1: one copy per filter row and a descriptor s lines into it, its base-offset field 0
// (on the H100, 2026-12-05, the base offset set to the start's 128-byte row within the swizzle
// pattern, as the PTX text on starts inside a 1024-byte pattern reads, gave wrong sums; 0 is right).
// AREG 1: each consumer reads dy's k16 slice into registers once (ldmatrix.trans: the MN-major
// stage gives the K-major fragment, wgmma_afrag.h) and feeds it to its S taps' wgmma in their
// register-A form, so the tensor cores read only x from shared memory. The shared-memory pipe is
// this kernel's busiest (Nsight Compute on an H100: 55-60% of its cycles on ResNet-50's 3x3
// weight gradients); A from registers cuts its operand reads a K step by (S - 1) / (2 S).
//
// PACK 1 (small images, stride 1, "same" padding): a K step holds whole images, up to 128 lines
// in 5 to 8 k16 slices, and rows share their halo (wgmma_tap_wgrad_index.h): on 7x7 images 98
// pixels in 7 slices where PACK 0 puts 49 in 4. Its stages are twice as large.
//
// SCHED 1 (stream-K, wgmma_sched.h): the tiles of the last partial wave cut along the K steps
// into one even run per block, a cut tile's parts summed in K order by the last to arrive (the
// split-K reduction of splitk_reduce.h, which waits on nobody): ResNet-50's 7x7 layer has 192
// tiles of one filter row for 132 multiprocessors, where whole tiles leave 72 of them idle for
// half the time.
//
// Split-K (SPLITK > 1): the K steps are cut into SPLITK ranges, one block per (tile, range), which
// normally run at once (the constraints keep TILES * SPLITK within the multiprocessors). Every
// block stores its fp32 partial in its workspace slot (dw's order), waits briefly until all ranges
// of its tile have, then sums a 1 / SPLITK slice of the tile over the ranges in range order and
// writes it: the reduction is spread over the tile's blocks and its result does not depend on
// timing. A block that cannot see the others arrive (multiprocessors held by another kernel)
// leaves its slice to the last range to arrive, so nothing waits on a block that cannot start.
// Workspace: per tile int {arrived, exited, claims[SPLITK]} (all tiles', padded to 256 bytes), then
// float slots[TILES][SPLITK][64 * FR*S*64]; zeroed when allocated and left zeroed, as
// splitk_reduce.h's (a slice's claimer zeroes it, the last block to leave the counters).
#include "conv_tma_params.h"
#include "mma_common.h"
#include "splitk_reduce.h"
#include "wgmma_afrag.h"
#include "wgmma_common.h"
#include "wgmma_sched.h"
#include "wgmma_tap_wgrad_index.h"

namespace tt_tapr {

// Work unit u (tile-major within a split): its tile of 64 output x 64 input channels x a row
// group's filter rows, and its K steps.
struct Unit {
  int tile, split, k0, c0, r0, kb, ke;
};
template <int SPLITK, int FR>
TT_DEVICE Unit unit(int u, int tiles, int tiles_c, int groups, int ksteps) {
  Unit w;
  w.tile = u % tiles, w.split = u / tiles;
  const int ck = w.tile / groups;
  w.r0 = (w.tile - ck * groups) * FR;
  w.k0 = (ck / tiles_c) * 64, w.c0 = (ck % tiles_c) * 64;
  tt_splitk::k_range<SPLITK>(ksteps, w.split, w.kb, w.ke);
  return w;
}

TT_DEVICE int load_volatile(const int* p) {
  int v;
  asm volatile("ld.volatile.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace tt_tapr

template <typename TA, typename TC, int R, int S, int STAGES, int SPLITK, int SHIFT, int SW, int AREG = 0,
          int PACK = 0, int SCHED = 0>  // R, S: FR, FS
__global__ void __launch_bounds__(128 * (R + 1), 1) wgmma_tap_wgrad(const __grid_constant__ TtConvTmaParams p) {
  // R: the filter rows of a block (a row group of the filter's cv.r), S: the filter's width, SW: the
  // stride along W (the copies of x per filter row, one per column residue).
  using namespace tt_wg;
  static_assert(sizeof(TA) == 2, "wgmma_tap_wgrad: bf16 or fp16 inputs");
  static_assert(R >= 1 && R <= 3 && S >= 1 && S <= 5 && R * S <= 10, "up to 3 rows of 3 taps, or 2 of 5");
  static_assert(SHIFT == 0 || SHIFT == 1, "SHIFT: 0 a copy per tap, 1 a shifted descriptor");
  static_assert(SW == 1 || SW == 2, "stride 1 or 2 along W");
  static_assert(AREG == 0 || AREG == 1, "AREG: dy from shared memory (0) or registers (1)");
  static_assert(PACK == 0 || (PACK == 1 && SHIFT == 1 && SW == 1), "PACK 1: whole images, shifted reads, stride 1");
  static_assert(SCHED == 0 || (SCHED == 1 && SPLITK == 1), "SCHED 1: stream-K instead of split-K");
  constexpr int TAPS = R * S;
  constexpr int LINES = PACK ? 128 : 64;                       // a stage's lines (packing 1: whole images)
  constexpr int KK_MAX = LINES / 16;                           // k16 slices a stage holds
  constexpr u32 DY_BYTES = LINES * 128;                        // lines of 64 channels of K
  constexpr int COPIES = S < SW ? S : SW;                      // copies of x per filter row
  constexpr u32 XR_BYTES = SHIFT == 0 ? 64 * 128 : (LINES + 8) * 128;  // a copy (+ the lines read past it)
  constexpr int ROW_COPIES = SHIFT == 0 ? S : COPIES;         // x copies per filter row in a stage
  constexpr int XCOPIES = R * ROW_COPIES;
  constexpr int TILE = 64 * TAPS * 64;  // fp32 elements of a block's share of dw (its row group's taps)
  typedef TtWgmma<64, IsBf16<TA>::value, 1, 1> Mma;
  typedef TtWgmmaRs<64, IsBf16<TA>::value, 1> MmaRs;  // AREG 1

  // The ring of wgmma_common.h: A stages hold dy, B stages the x copies; no epilogue staging. With
  // AREG every lane of a consuming warp arrives when a stage is released (an arrive releases only
  // its own thread's ldmatrix reads).
  typedef Ring<STAGES, DY_BYTES, XCOPIES * XR_BYTES, 1, AREG != 0> RingT;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const RingT ring(smem_raw, 0);

  const TtConvParams& cv = p.c;
  const tt_tapr::Packing pk = tt_tapr::packing(cv, PACK);
  const int kk16 = PACK ? pk.kk16 : 4;  // the k16 slices of a K step
  const int tiles_c = (cv.c + 63) / 64, groups = cv.r / R, tiles = ((cv.k + 63) / 64) * tiles_c * groups;
  const int total = tiles * SPLITK;
  // SCHED 1 (wgmma_sched.h): the tiles past the last full wave streamed along the K steps over all
  // gridDim.x blocks; the loops walk this block's items 0, 1, ... instead of units (SCHED 0's loops
  // read blockIdx.x, total and gridDim.x as they always did: the same machine code).
  const bool streams = SCHED == 1 && tt_sched::sched_streams(tiles, gridDim.x, pk.ksteps);
  const int u_first = streams ? 0 : blockIdx.x, u_step = streams ? 1 : gridDim.x;
  const int u_total = streams ? tt_sched::items(1, tiles, gridDim.x, pk.ksteps, blockIdx.x) : total;
  // Item u of a streaming block: its tile and K steps, `it` its part.
  auto streamed = [&](int u, tt_sched::Item& it) {
    it = tt_sched::item(1, tiles, gridDim.x, pk.ksteps, blockIdx.x, u);
    tt_tapr::Unit w = tt_tapr::unit<1, R>(it.t, tiles, tiles_c, groups, pk.ksteps);
    w.kb = it.kb, w.ke = it.ke;
    return w;
  };

  // Lines no copy writes (a row's halo, past the last packed row, the lines read past a copy) hold
  // zeros for good: dy's zeros meet whatever x holds there and x's must be finite (0 * NaN).
  // (the stages end where the ring's empty staging area starts)
  uint4* const stages = reinterpret_cast<uint4*>(ring.staging) - STAGES * (RingT::A_BYTES + RingT::B_BYTES) / 16;
  for (u32 i = threadIdx.x; i < STAGES * (RingT::A_BYTES + RingT::B_BYTES) / 16; i += blockDim.x)
    stages[i] = make_uint4(0u, 0u, 0u, 0u);
  fence_async_smem();
  if (threadIdx.x == 0) ring.init(1, R * 4 * RingT::ARRIVALS_PER_WARP);  // empty: per consuming warp
  __syncthreads();

  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    // ------------------------------------------------------------------ producer
    // One consumer (256 threads) starts with all the registers it can use; more move them over.
    if (R > 1) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) {
      prefetch_map(&p.map_im2col);
      prefetch_map(&p.map_tiled);
      const u32 bytes = (u32)((pk.dy_box_w + XCOPIES * pk.pitch) * pk.rows * pk.imgs) * 128u;
      int s = 0;
      u32 ph = 0;
      for (int u = SCHED ? u_first : blockIdx.x; u < (SCHED ? u_total : total); u += SCHED ? u_step : gridDim.x) {
        tt_sched::Item it;
        const tt_tapr::Unit w =
            streams ? streamed(u, it) : tt_tapr::unit<SPLITK, R>(u, tiles, tiles_c, groups, pk.ksteps);
        const int c0 = w.c0;
        for (int kt = w.kb; kt < w.ke; ++kt) {
          const u32 full = ring.full(s);
          mbar_wait(ring.empty(s), ph ^ 1);
          mbar_arrive_expect_tx(full, bytes);
          const tt_tapr::Step st = tt_tapr::step(cv, pk, kt);
          tma_load_4d(ring.a(s), &p.map_tiled, full, w.k0, st.q0, st.p0, st.n);
          TT_UNROLL
          for (int r = 0; r < R; ++r) {
            TT_UNROLL
            for (int t = 0; t < ROW_COPIES; ++t)  // a tap's own copy, or a residue's
              tma_load_4d(ring.b(s) + (r * ROW_COPIES + t) * XR_BYTES, &p.map_im2col, full, c0,
                                   tt_tapr::x_copy_w(cv, st, t), tt_tapr::x_copy_h(cv, st, w.r0 + r), st.n);
          }
          RingT::advance(s, ph);
        }
      }
    }
  } else {
    // ------------------------------------------------------------------ consumers
    if (R > 1) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R == 3 ? 152 : 232));  // 64K in all
    const int r = wg - 1;
    const int tid = threadIdx.x - 128 * wg;
    const int warp = tid / 32, lane = tid % 32;
    TC* dw = reinterpret_cast<TC*>(cv.wt);
    const long long ldw = (long long)cv.r * S * cv.c;  // dw's row: all taps of one output channel
    const bool pair_ok = (unsigned long long)dw % (2 * sizeof(TC)) == 0;
    // MN-major operands, one 128-byte line per pixel in 8-line swizzle atoms (SBO 1024): a k16 step
    // is 16 lines, 2048 bytes.
    const u32 xr0 = __shfl_sync(0xffffffffu, ring.b(0) + (u32)r * ROW_COPIES * XR_BYTES, 0);
    const u64 da0 = desc(ring.a(0), 64 * 128, 1024);
    u64 db0[S];
    TT_UNROLL
    for (int t = 0; t < S; ++t) {
      // Tap t: its own copy, or its residue's copy t / SW lines on.
      const u32 a = SHIFT == 0 ? xr0 + t * XR_BYTES
                               : xr0 + tt_tapr::tap_copy(t, SW) * XR_BYTES + tt_tapr::tap_shift(t, SW) * 128;
      db0[t] = desc(a, 64 * 128, 1024);
    }

    float acc[S][32];
    int s = 0;
    u32 ph = 0;
    for (int u = SCHED ? u_first : blockIdx.x; u < (SCHED ? u_total : total); u += SCHED ? u_step : gridDim.x) {
      tt_sched::Item it;
      it.parts = 1;  // a whole tile (or a split-K unit) unless streamed
      const tt_tapr::Unit w =
          streams ? streamed(u, it) : tt_tapr::unit<SPLITK, R>(u, tiles, tiles_c, groups, pk.ksteps);
      const int tile = w.tile, split = w.split, k0 = w.k0, c0 = w.c0, kb = w.kb, ke = w.ke;
      const int rows_in = min(64, cv.k - k0), cols_in = min(64, cv.c - c0);  // the rest: zero fill
      int prev = -1;
      if constexpr (AREG != 0) {
        // One commit group per k16 step (the S taps' wgmma on that step's fragment a[kk]): before
        // a[kk] is refilled, at most 3 groups may be in flight, so the last stage's step kk has
        // retired; at step 3 the last stage's last group has, and it is released.
        u32 a[4][4];
        const u32 ld = tt_afrag::ldsm16_offset(warp, lane, 0);
        for (int kt = kb; kt < ke; ++kt) {
          mbar_wait(ring.full(s), ph);
          const u32 sa = ring.a(s);
          const u64 bs = (u64)((u32)s * (RingT::B_BYTES >> 4));
          TT_UNROLL
          for (int kk = 0; kk < KK_MAX; ++kk) {
            if (kk >= kk16) break;  // (packing 1: 5 to 8 slices, so step 3 still releases)
            wg_wait<3>();
            if (kk == 3 && prev >= 0) ring.release(prev, lane);
            tt_mma::ldsm_x4<true>(a[kk & 3], sa + ld + 2048 * kk);  // lines 16 kk.., channels 16 warp..
            wg_fence();
            TT_UNROLL
            for (int t = 0; t < S; ++t)
              MmaRs::mma(acc[t], a[kk & 3], db0[t] + bs + kk * (2048 / 16), (kt > kb || kk > 0) ? 1 : 0);
            wg_commit();
          }
          prev = s;
          RingT::advance(s, ph);
        }
      }
      for (int kt = kb; AREG == 0 && kt < ke; ++kt) {
        mbar_wait(ring.full(s), ph);
        const u64 da = da0 + (u64)((u32)s * (RingT::A_BYTES >> 4));
        wg_fence();
        TT_UNROLL
        for (int kk = 0; kk < KK_MAX; ++kk) {
          if (kk >= kk16) break;
          TT_UNROLL
          for (int t = 0; t < S; ++t)
            Mma::mma(acc[t], da + kk * (2048 / 16), db0[t] + (u64)((u32)s * (RingT::B_BYTES >> 4)) + kk * (2048 / 16),
                     (kt > kb || kk > 0) ? 1 : 0);
        }
        wg_commit();
        if (prev >= 0) {
          wg_wait<1>();
          ring.release(prev, lane);
        }
        prev = s;
        RingT::advance(s, ph);
      }
      finish_k_tiles<true>(ring, acc, prev, lane);  // acc[t]: tap t's m64n64 accumulators

      // SCHED 1: a streamed tile's parts meet in the workspace (wgmma_sched.h: a counter per streamed
      // tile, then a slot per part), the last to arrive summing them in K order into its
      // accumulators; its consumers then store the tile as an unsplit one.
      if (SCHED == 1 && it.parts > 1) {
        float4* slots = reinterpret_cast<float4*>(tt_sched::part_slots(cv.workspace, gridDim.x, it, TILE));
        if (!tt_splitk::reduce_slots<S * 32, 128 * R, TILE, 1, false, 4>(
                &acc[0][0], tt_sched::part_counter(cv.workspace, it), slots, it.part, it.parts, threadIdx.x - 128,
                NamedGroup{1, 128 * R}))
          continue;
      }
      // Fragment (t, j): rows warp * 16 + lane / 4 (+ 8), columns 8 (j / 4) + 2 (lane % 4) (+ 1).
      const int row0 = warp * 16 + (lane >> 2), col0 = 2 * (lane & 3);
      if (SPLITK == 1) {
        TC* const d0 = dw + (long long)(k0 + row0) * ldw + (long long)((w.r0 + r) * S) * cv.c + c0 + col0;
        TT_UNROLL
        for (int t = 0; t < S; ++t) {
          TT_UNROLL
          for (int j = 0; j < 8; ++j) {
            TT_UNROLL
            for (int h = 0; h < 2; ++h) {
              // C % 8 == 0: a pair is all in or all out.
              if (row0 + 8 * h >= rows_in || 8 * j + col0 >= cols_in) continue;
              const float a = acc[t][4 * j + 2 * h], b = acc[t][4 * j + 2 * h + 1];
              tt_store_pair(d0 + h * 8 * ldw + t * cv.c + 8 * j, a, b, pair_ok);
            }
          }
        }
        continue;
      }
      // Split-K: this range's partial into its slot, in dw's order within the tile: element
      // (row, tap, column) at (row * TAPS + tap) * 64 + column.
      const long long cnt_bytes = ((long long)tiles * (2 + SPLITK) * 4 + 255) / 256 * 256;
      int* const arrived = static_cast<int*>(cv.workspace) + (long long)tile * (2 + SPLITK);
      int* const exited = arrived + 1;
      int* const claims = arrived + 2;  // one per slice: who reduces it
      float* slots = reinterpret_cast<float*>(static_cast<char*>(cv.workspace) + cnt_bytes) +
                     (long long)tile * SPLITK * TILE;
      float* mine = slots + (long long)split * TILE;
      TT_UNROLL
      for (int t = 0; t < S; ++t) {
        TT_UNROLL
        for (int j = 0; j < 8; ++j) {
          TT_UNROLL
          for (int h = 0; h < 2; ++h)
            __stcg(reinterpret_cast<float2*>(mine + ((row0 + 8 * h) * TAPS + r * S + t) * 64 + 8 * j + col0),
                   make_float2(acc[t][4 * j + 2 * h], acc[t][4 * j + 2 * h + 1]));
        }
      }
      __threadfence();
      named_sync(1, 128 * R);
      // Wait (a millisecond or so) until every range has stored its partial. The ranges normally run
      // at once (grid = tiles x SPLITK <= the multiprocessors) and finish together; where another
      // kernel holds multiprocessors, a block that waits in vain leaves its slice to the last range
      // to arrive, which sweeps every slice nobody claimed: no block waits on one that cannot start.
      // won[j]: this block claimed slice j (its own if it saw every range arrive; and, the last to
      // arrive, once its own is done, every slice no other block has claimed by then).
      __shared__ int won[SPLITK > 1 ? SPLITK : 1];
      __shared__ int last_block;
      for (int j = threadIdx.x - 128; j < SPLITK; j += 128 * R) won[j] = 0;
      named_sync(1, 128 * R);
      if (threadIdx.x == 128) {
        const bool last = atomicAdd(arrived, 1) == SPLITK - 1;
        bool all = last;
        for (int spins = 0; !all && spins < 16384; ++spins) {
          __nanosleep(64);
          all = tt_tapr::load_volatile(arrived) == SPLITK;
        }
        if (all) won[split] = atomicCAS(claims + split, 0, 1) == 0;
        last_block = last;
      }
      named_sync(1, 128 * R);
      __threadfence();  // the partials stored before the arrivals seen are read after this
      const int per = TILE / 4 / SPLITK + 1;
      // Slices in order: this block's own (pass 0), then those the last block swept (pass 1), each
      // summed over the ranges in range order (deterministic) by the one block that claimed it.
      for (int pass = 0; pass < 1 + last_block; ++pass) {
        if (pass == 1) {
          for (int j = threadIdx.x - 128; j < SPLITK; j += 128 * R)
            if (j != split) won[j] = atomicCAS(claims + j, 0, 1) == 0;
          named_sync(1, 128 * R);
        }
        for (int slice = 0; slice < SPLITK; ++slice) {
          if ((pass == 0) != (slice == split) || !won[slice]) continue;
          const int b4 = slice * per, e4 = min(TILE / 4, b4 + per);
          for (int i = b4 + (threadIdx.x - 128); i < e4; i += 128 * R) {
            float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
            for (int sp = 0; sp < SPLITK; ++sp) {  // the claimer alone reads the slice: it zeroes it too
              float4* slot = reinterpret_cast<float4*>(slots + (long long)sp * TILE) + i;
              const float4 v = __ldcg(slot);
              __stcg(slot, make_float4(0.f, 0.f, 0.f, 0.f));
              sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
            }
            const int e = 4 * i, row = e / (TAPS * 64), tap = (e / 64) % TAPS, col = e % 64;
            if (row >= rows_in || col >= cols_in) continue;  // C % 8 == 0: four columns all in or all out
            TC* d = dw + (long long)(k0 + row) * ldw + (long long)(w.r0 * S + tap) * cv.c + c0 + col;
            tt_store_pair(d, sum.x, sum.y, pair_ok);
            tt_store_pair(d + 2, sum.z, sum.w, pair_ok);
          }
        }
      }
      // The last range to leave zeroes the tile's counters for the next launch: no block of this
      // one reads them after it has left.
      named_sync(1, 128 * R);
      if (threadIdx.x == 128) {
        __threadfence();
        if (atomicAdd(exited, 1) == SPLITK - 1) {
          for (int i = 0; i < 2 + SPLITK; ++i) arrived[i] = 0;
          __threadfence();
        }
      }
    }
  }
}
