// Hopper (sm_90a) GEMM: TMA-fed, mbarrier-pipelined, warp-specialised wgmma kernel.
// Column-major BLAS semantics (gemm_params.h): C = alpha * op(A) * op(B) + beta * C.
//
// Block = 1 producer warpgroup + CONSUMERS consumer warpgroups. The grid is persistent: each block
// (each cluster, see CLUSTER) walks tiles first, first + step, ... of the BM x BN x batch tile space in a
// grouped raster order (RASTER 0: groups of GROUP tile rows along M, walking N inside a group;
// RASTER 1: the same with M and N swapped), so that concurrently running tiles share operands in L2.
//
// Producer, LOADER 0 (one thread): for every K step of every tile, waits for the stage to be empty,
// arms the stage's "full" mbarrier with the stage's byte count and issues the TMA copies (128-byte
// swizzle, zero fill outside the matrix, so edge tiles and K tails need no special case).
// Producer, LOADER 1 (the whole warpgroup): the same stages filled with 16-byte cp.async copies
// written to the addresses the TMA swizzle would use. Tried because TMA slows down badly when the
// rows of an operand do not start on 128-byte boundaries (H200, bf16 NN: 1000^3 at 147 TFLOP/s with
// lda = 1000, 200 with lda = 1024; 3000^3 at 422 vs 691); measured, this loader is slower still
// (120 and 317 TFLOP/s), so it stays in the space but out of the H200 configs. Each thread signals a stage once
// its copies landed (cp.async.wait_group) and were fenced for the async proxy that wgmma reads
// through; it keeps STAGES - 2 stages in flight, so that the consumers can always free the stage
// it waits for next.
// Producer, LOADER 2 (tf32 with an MN-major operand; the whole warpgroup): tf32 wgmma reads both
// operands K-major only, so the MN-major ones land by cp.async in landing slots (the MN-major
// layout above) and, once every producer thread's copies of a stage landed (a named barrier), the
// producers rewrite them into the K-major stage in blocks of 4 rows x 4 k (wgmma_transpose.h, the
// index math a host test replays), fence and signal the stage; a K-major operand goes straight
// into its stage as with LOADER 1. STAGES - 2 stages in flight and STAGES landing slots: a slot
// is refilled only after every thread passed the next stage's barrier, i.e. finished reading it.
// Written for the tf32 NN / NT / TT shapes that otherwise run mma_gemm (0.31-0.45x cuBLAS on the
// H200). Measured there (9ca1155): it wins NN 1000^3, 1024^3 and 8192 x 8192 x 128 (48-92 TFLOP/s
// against 37-63 for mma_gemm), and loses the larger shapes by 10-13%: the transpose's shared-memory
// traffic and a ring of 3-4 stages with STAGES - 2 of them in flight.
// A from registers (AREG 1, tf32 with an MN-major A): tf32 wgmma has no transpose bit, but its RS
// form reads A from registers, and registers can be filled in any order. So A lands MN-major, as
// TMA (or cp.async) gives it, and each consumer thread loads its A fragment per k8 step with
// 32-bit ld.shared, the transpose happening in the addresses (wgmma_afrag.h: the fragment, the
// swizzle undone, and a load order without bank conflicts, replayed by a host test); B comes from
// its descriptor as before. No transpose pass and no landing slots: NN keeps the TMA loader, its
// clusters and a whole ring in flight, and the consumers read the same bytes of A that the SS
// form's wgmma would. NT: B through LOADER 2's transpose, A straight into its stage by cp.async.
// Costs 16 registers per m64 sub-tile (4 per k8 step, see mma_k_tiles_areg) and 4 selects.
// Clusters (CLUSTER = 2 or 4, TMA loader only): CLUSTER CTAs on adjacent tile rows of the same tile
// column share B. Each loads 1 / CLUSTER of B (or every CLUSTER-th 8-row atom of it, see
// tma_load_tile) and its A, or its share of A (see CLUSTERN), multicast into the shared memory of
// the CTAs of its tile column; a stage may be refilled only when the consumers of every CTA
// released it, so every release arrives on all the CTAs' "empty" barriers. The CTAs walk the same
// unit sequence in lockstep; a CTA whose tile lies past M (or N) loads zeros (TMA fills
// out-of-bounds boxes) and stores nothing. Cuts B's traffic where operand loads limit the tile
// rate: on the H200 pairs win most large shapes, quads odd3000 (benchmarks/results, 2026-11-30);
// the template's default space keeps single CTAs, the H200 configs sweep 1, 2 and 4.
// Two-dimensional clusters (CLUSTERN = 2 or 4, up to 8 CTAs): CLUSTER x CLUSTERN tiles, the
// CTAs of one tile row sharing A as those of one tile column share B (each loads 1 / CLUSTERN of
// the rows of a K-major A, or of the K lines of each 64-row box of an MN-major one). Measured on
// the H200 (2026-11-30): with 96- or 128-column tiles they won nothing (1000^3: 128 x 96 in 4 x 2
// 160 TFLOP/s against 166 for 64 x 128 pairs), with 72-column tiles they win 1000^3: 128 x 72 in
// 1 x 2 ~181 at tune time, in 4 x 2 (B shared atom by atom, see tma_load_tile) 188, ~2% ahead of
// cuBLAS in six tables; the H200 configs sweep CLUSTERN 2 where the grid fits the machine.
// Consumers, cooperative (PINGPONG = 0): each owns WM = BM / CONSUMERS rows of the tile (WM/64
// wgmma m64 sub-tiles) and all BN columns; per K step, 4 wgmma.mma_async per sub-tile (one per 32
// bytes of K: k16 for 16-bit inputs, k8 for tf32), one
// commit group per stage, one group left in flight: the stage read by the previous group is
// released once that group retired.
// Consumers splitting N (COOPN = 1, CONSUMERS = 2, cooperative): each owns all BM rows and half
// of the BN columns (WN = BN / 2), so that a 64-row tile still has two warpgroups issuing wgmma;
// the arrangement cuBLAS picks for 1000^3 (64 x 128 tiles, 2-CTA clusters).
// Consumers splitting K (COOPK = 1, CONSUMERS = 2, cooperative, BM = 64): each computes the whole
// 64 x BN tile over every other K tile (the stages alternate between them, each released by the
// four warps of one consumer), then they exchange halves of their sums through shared memory and
// each stores BN / 2 columns; the arrangement of cuBLAS's nvjet 64x128 2x1 kernel for 1000^3.
// Consumers, ping-pong (PINGPONG = 1, CONSUMERS = 2): each consumer owns whole tiles (WM = BM),
// the two take alternate tiles; a pair of named barriers makes them run their main loops in turn,
// so one consumer's epilogue overlaps the other's main loop (and no mbarrier parity wait can run
// more than one phase ahead when a consumer skips the other's K steps in the ring).
// Split-K (SPLITK > 1): the work unit becomes (tile unit, K split), split-major; split s reduces
// the contiguous K tiles [s KT / SPLITK, (s + 1) KT / SPLITK). After its main loop, the group of
// consumer threads holding the tile (one consumer with ping-pong, all of them otherwise) stores
// its fp32 partial into its slot of p.g.workspace and bumps the tile's counter; the group that
// arrives last sums the slots in split order (deterministic), zeroes them and runs the epilogue,
// the others go on with their next unit (splitk_reduce.h; workspace = WORKSPACE_BYTES of the JSON,
// left zeroed). The groups meet on named barriers of their own (1 + consumer with ping-pong or
// one consumer, 5 for two cooperative ones), so the producer warpgroup never waits on them.
// Two blocks per multiprocessor (OCC = 2, one consumer, no setmaxnreg, at most 128 registers per
// thread): the persistent grid doubles, so that one block's prologue, pipeline fill and epilogue
// can overlap the other's main loop; it only changes the grid where the work units outnumber the
// multiprocessors. Measured on the H200 (occ_probe, 116f3f4): it wins no shape; out of the
// default space.
// SCHED 1 (stream-K over the last partial wave; wgmma_sched.h): the grid is every multiprocessor;
// full waves of tiles go whole, the tiles left over are cut along K into one even run of K tiles
// per block, and a tile cut between blocks meets in the workspace as split-K units do (counters
// per streamed tile, then a slot per part; the last part to arrive sums them in K order). For
// grids of 100 or 196 tiles on 132 multiprocessors, where a last wave leaves a quarter of them
// idle. One CTA a unit, no split-K, not int8.
// TMA L2 promotion (L2PROMO in the JSON) is a property of the host-built tensor maps only.
// Epilogue, TMA store (EPI = 1, when beta == 0): per chunk of EN columns (32; 24 / 16 for 72- / 80-
// column tiles), each consumer writes alpha *
// accumulators, converted to C's type, into a staging buffer laid out as the TMA boxes of C
// (128-byte lines down each column, 128-byte swizzle; stmatrix.trans for 16-bit C) and one
// thread issues a bulk tensor store per box, which clips at M and N; two buffers alternate for
// 16-bit C, so that writing a chunk overlaps the store of the one before (a buffer per chunk of the
// tile was within 1% of two on 1x1 layers of 24-40 channels, whose epilogue is all their work:
// benchmarks/results/conv/2026-12-05_h200_conv_tables_claim_bn160_stg_648d293.md). Needs C, ldc and the
// batch stride 16-byte aligned (the constraint reads ALIGN_C, which the runtime lowers to the
// pointer's alignment); beta != 0 takes the path below.
// Epilogue, stores from the threads (EPI = 0, and EPI = 1 with beta != 0): accumulators (times alpha) go through a padded fp32 staging buffer in
// shared memory, a chunk of EN columns at a time, and are written with coalesced stores down each column of C:
// 16-byte vectors where C's pointer / ldc / batch stride allow, else scalars with consecutive lanes
// on consecutive rows (e.g. ldc odd); beta * C is read the same way only when beta != 0.
// EPI 2 (16-bit C that is not 16-byte aligned): the same, each column's rows between its first and
// last 16-byte boundaries as vectors, the few before and after as scalars (column_runs.h).
// EPI 3 (16-bit C, beta == 0; cooperative consumers, TMA loader, no split-K): every epilogue above
// holds the tensor cores while the consumers store (all of it where C is unaligned: the GPT-2 LM
// head, K = 768, ran at 455 TFLOP/s against ~700 for large aligned shapes). Here each consumer
// writes its whole tile in C's type into its own staging by stmatrix.trans (16 instructions a
// thread for 128 x 128), arrives on its "staged" mbarrier and goes on with its next tile; warps
// 1-3 of the producer warpgroup, idle under the TMA loader, store the tile (aligned runs as EPI 2,
// vectors realigned in registers where a column starts off a 16-byte boundary) and arrive on
// "stored", which the consumer waits for before it stages again. beta != 0 takes EPI 2's path.
// Measured on an H100 (2026-12-07): the LM head 533 TFLOP/s against EPI 2's 484 (bf16); on aligned
// C slower than EPI 1's TMA store, so the configs take it where C is unaligned.
//
// Operand layouts (column-major): A is K-major when TRANSA (stored K x M), MN-major otherwise;
// B is K-major unless TRANSB. Shared memory per stage and operand:
//   K-major : [rows][64 elements = 128 B], 128B swizzle; descriptor SBO = 1024 (8-row groups),
//             a k16 step advances the start address by 32 B inside the swizzle atom.
//   MN-major: [rows/64][BK][64 elements = 128 B]; descriptor LBO = BK * 128 (next 64 rows),
//             SBO = 1024 (next 8 k), a k16 step advances the start address by 2048 B; a B of 32
//             columns (BN 32): [BK][32 elements = 64 B], 64B swizzle, SBO = 512, a k16 step 1024 B.
// bf16 / fp16 in any layout; fp32 inputs as tf32 with both operands K-major (TN) by TMA or
// cp.async, any other layout through LOADER 2's transpose: tf32 wgmma has no transpose; or, with
// an MN-major A, A read into registers from its MN-major stage (AREG, above). 8-bit
// inputs (e4m3 / e5m2 -> fp32 accumulators, A and B of either fp8 type; s8 -> s32) K-major only,
// i.e. TN, by TMA or cp.async: 8-bit wgmma has no transpose either, and LOADER 2's transpose moves 4-byte elements. BK is one
// 128-byte atom: 128 8-bit, 64 16-bit or 32 fp32 elements; the shared layouts, descriptors and
// k-steps (32 bytes: k32 for 8-bit) are the same bytes for every type.
// int8 (s8 -> s32): the int32 accumulators live in the float arrays as raw bits (wgmma_ops.h), and
// the epilogue scales them by the integer alpha and beta in int32 (Epi in wgmma_common.h); split-K
// and consumers splitting K add accumulators as fp32, so int8 takes neither.
#include "column_runs.h"
#include "gemm_params.h"
#include "gemm_tma_params.h"
#include "splitk_reduce.h"
#include "wgmma_afrag.h"
#include "wgmma_common.h"
#include "wgmma_sched.h"
#include "wgmma_transpose.h"

namespace tt_wg {

// One operand's stage (ROWS x BK of K) by cp.async, in the layout and swizzle the TMA path
// produces (see the operand layouts above). `rows` / `K` bound the matrix: chunks reaching past it
// copy only their valid bytes and zero-fill the rest. Thread `tid` of 128 takes every 128th
// 16-byte chunk, consecutive threads on consecutive chunks of a 128-byte line.
template <int ROWS, int BK, bool KMAJOR, class T>
TT_DEVICE void cp_async_stage(u32 dst, const T* src, long long ld, int rows, int K, int r0, int k0, int tid) {
  constexpr int E = 16 / (int)sizeof(T);  // elements per chunk
  constexpr int LINES = KMAJOR ? ROWS : ROWS / (8 * E) * BK;
  TT_UNROLL
  for (int q = tid; q < LINES * 8; q += 128) {
    int line, c, r, k, valid;
    if (KMAJOR) {  // a line: one row of the tile, BK elements of K
      c = q & 7;
      line = q >> 3;
      r = r0 + line;
      k = k0 + E * c;
      valid = r < rows ? min(max(K - k, 0), E) : 0;
    } else {  // a line: 8 E rows of one k, in blocks of BK lines
      tt_xpose::mn_major_chunk(q, E, BK, line, c, r, k);
      r += r0, k += k0;
      valid = k < K ? min(max(rows - r, 0), E) : 0;
    }
    const u32 off = tt_xpose::chunk_offset(line, c);
    const T* g = KMAJOR ? src + (long long)r * ld + k : src + (long long)k * ld + r;
    cp_async16(dst + off, valid ? (const void*)g : (const void*)src, valid * (int)sizeof(T));
  }
}

// LOADER 2: one MN-major fp32 operand tile (ROWS rows x BK = 32 k) from its landing slot `src`
// into its K-major ring stage `dst`, blocks of 4 rows x 4 k per thread (wgmma_transpose.h; the
// host test replays it). The column of a block a thread writes is picked with selects, not a
// runtime index, so that the block stays in registers.
template <int ROWS, int BK>
TT_DEVICE void transpose_stage(u32 src, u32 dst, int tid) {
  static_assert(BK == 32 && ROWS * BK % 2048 == 0, "blocks of 4 x 4 fp32, a whole number per thread");
  TT_UNROLL
  for (int i = 0; i < ROWS * BK / 2048; ++i) {
    int r0, c;
    tt_xpose::block_of(tid, i, ROWS, r0, c);
    u32 v[4][4];  // v[kk][j]: row r0 + j, k 4 c + kk
    TT_UNROLL
    for (int kk = 0; kk < 4; ++kk)
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(v[kk][0]), "=r"(v[kk][1]), "=r"(v[kk][2]), "=r"(v[kk][3])
                   : "r"(src + tt_xpose::landing_offset(r0, 4 * c + kk, BK))
                   : "memory");
    TT_UNROLL
    for (int q = 0; q < 4; ++q) {
      const int j = tt_xpose::write_row(r0, q);
      u32 o[4];
      TT_UNROLL
      for (int kk = 0; kk < 4; ++kk) o[kk] = j == 0 ? v[kk][0] : j == 1 ? v[kk][1] : j == 2 ? v[kk][2] : v[kk][3];
      asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(dst + tt_xpose::kmajor_offset(r0 + j, c)), "r"(o[0]),
                   "r"(o[1]), "r"(o[2]), "r"(o[3])
                   : "memory");
    }
  }
}

// One operand's tile of a stage (ROWS rows x BK of K, rows from r0, K from k0) by TMA, or, in a
// cluster of SHARES CTAs that need the same tile, this CTA's share (number `share`) multicast to
// the CTAs of `mask`: of a K-major tile, 1 / SHARES of its rows, or where that is not whole 8-row
// atoms, every SHARES-th atom from atom `share` (tt_kmajor_share_rows; e.g. 72 rows in 4 shares of
// 3, 2, 2, 2 atoms); of an MN-major tile, 1 / SHARES of the K lines of every box of RPB rows (the
// host encodes the boxes that size; every share is whole 8-line swizzle atoms). LINE: an MN-major
// box's bytes a K line (128; 64 for wgmma_gemm's 32-column B, in the 64-byte swizzle, whose 8-line
// atoms are 512 bytes).
template <int ROWS, int BK, int RPB, bool KMAJOR, int SHARES, int LINE = 128>
TT_DEVICE void tma_load_tile(u32 dst, const TtTensorMap* map, u32 bar, int k0, int r0, int b, int share,
                             unsigned short mask) {
  // A share that is not whole 8-line atoms would land off the swizzle period (1024 bytes; 512 for 64-byte
  // lines): wrong data, no error.
  static_assert(KMAJOR ? ROWS % 8 == 0 : BK % SHARES == 0 && BK / SHARES % 8 == 0,
                "every CTA's share of a tile is whole 8-line swizzle atoms");
  if (KMAJOR) {
    constexpr int R = tt_kmajor_share_rows(ROWS, SHARES);
    if (SHARES == 1) {
      tma_load_3d(dst, map, bar, k0, r0, b);
    } else if (R * SHARES == ROWS) {
      tma_load_3d_multicast(dst + share * R * 128, map, bar, k0, r0 + share * R, b, mask);
    } else {
      TT_UNROLL
      for (int i = 0; i < (ROWS / 8 + SHARES - 1) / SHARES; ++i) {
        const int atom = share + i * SHARES;
        if (atom < ROWS / 8) tma_load_3d_multicast(dst + atom * 1024, map, bar, k0, r0 + atom * 8, b, mask);
      }
    }
  } else {
    constexpr int KS = BK / SHARES;
    TT_UNROLL
    for (int i = 0; i < ROWS / RPB; ++i) {
      const u32 d = dst + i * BK * LINE + share * KS * LINE;
      if (SHARES == 1) tma_load_3d(d, map, bar, r0 + RPB * i, k0, b);
      else tma_load_3d_multicast(d, map, bar, r0 + RPB * i, k0 + share * KS, b, mask);
    }
  }
}

// AREG 1: mma_k_tiles (wgmma_common.h) for tf32 with A MN-major in shared memory, read into
// registers (wgmma_afrag.h: the fragment and its conflict-free loads) and fed to the RS form of
// wgmma, B from its K-major descriptor. One commit group per k8 step (MI wgmma), each reading its
// own 4 MI registers: before refilling the registers of step kk, wait until at most 3 groups are
// in flight, i.e. the previous stage's step kk retired (wgmma must not see its A registers change),
// which keeps three k8 steps queued on the tensor cores while the loads run. The stage before is
// released after its last step retired (at step 3 of this one): its loads were consumed by then.
template <class Mma, int BK, int MI, int NACC, class R>
TT_DEVICE int mma_k_tiles_areg(const R& ring, float (&acc)[MI][NACC], u32 a_off, int kb, int ke, int& s, u32& ph,
                               int warp, int lane, u32 b_off = 0, int kstep = 1) {
  a_off = __shfl_sync(0xffffffffu, a_off, 0);
  b_off = __shfl_sync(0xffffffffu, b_off, 0);
  const u64 db0 = desc(ring.b(0) + b_off, 16, 1024);
  u32 ld[4];
  TT_UNROLL
  for (int p = 0; p < 4; ++p) ld[p] = ring.a(0) + a_off + tt_afrag::load_offset(warp, lane, p, BK);
  const bool h = (lane >> 4) & 1;  // loads 0 / 1 (2 / 3) fill registers 2 / 0 (3 / 1) instead of 0 / 2 (1 / 3)
  u32 a[4][MI][4];
  int prev = -1;
  for (int kt = kb; kt < ke; kt += kstep) {
    // In a cluster one lane arrives for the warp when a stage is released, and an arrive releases
    // only its own thread's accesses: this warp barrier orders every lane's ld.shared of the stage
    // before (released in this iteration) ahead of that arrive. (Without a cluster every lane
    // arrives: Ring's EVERY_LANE.) Here, outside the k8 steps, it costs ptxas no serialisation of
    // the wgmma.
    if (R::ARRIVALS_PER_WARP == 1) __syncwarp();
    mbar_wait(ring.full(s), ph);
    const u32 sa = (u32)s * R::A_BYTES;
    const u64 db = db0 + (u64)((u32)s * (R::B_BYTES >> 4));
    TT_UNROLL
    for (int kk = 0; kk < 4; ++kk) {
      wg_wait<3>();
      if (kk == 3 && prev >= 0) ring.release(prev, lane);
      TT_UNROLL
      for (int mi = 0; mi < MI; ++mi) {
        u32 x[4];
        TT_UNROLL
        for (int p = 0; p < 4; ++p) {
          const u32 at = ld[p] + sa + (u32)(mi * 2 * BK * 128 + kk * 1024);  // next 64 rows: 2 boxes of BK lines
          asm volatile("ld.shared.b32 %0, [%1];" : "=r"(x[p]) : "r"(at) : "memory");
        }
        a[kk][mi][0] = h ? x[1] : x[0];
        a[kk][mi][2] = h ? x[0] : x[1];
        a[kk][mi][1] = h ? x[3] : x[2];
        a[kk][mi][3] = h ? x[2] : x[3];
      }
      wg_fence();
      TT_UNROLL
      for (int mi = 0; mi < MI; ++mi) Mma::mma(acc[mi], a[kk][mi], db + kk * 32 / 16, (kt > kb || kk > 0) ? 1 : 0);
      wg_commit();
    }
    prev = s;
    for (int i = 0; i < kstep; ++i) R::advance(s, ph);
  }
  return prev;
}

// 16-bit C: alpha times G 8-column groups of one m64 sub-tile's accumulators (f: a thread's
// fragment, 4 floats a group) into shared memory by stmatrix.trans, two groups an x4 (an odd last
// one by x2); at(line, row) is the address of the 16 bytes holding rows row .. row + 7 (of the
// sub-tile's 64) of column `line` (counted from the first group). EPI 1 and EPI 3 stage this way.
template <class E, int G, class At>
TT_DEVICE void stmatrix_c_groups(const float* f, float alpha, int warp, int lane, At at) {
  TT_UNROLL
  for (int jj = 0; jj < (G + 1) / 2; ++jj) {
    const bool pair = 2 * jj + 1 < G;
    u32 r[4];
    TT_UNROLL
    for (int q = 0; q < 4; ++q) {
      const float* x = f + (2 * jj + (pair ? (q >> 1) : 0)) * 4 + 2 * (q & 1);
      r[q] = (u32)E::out(E::scale(alpha, x[0])).bits | ((u32)E::out(E::scale(alpha, x[1])).bits << 16);
    }
    const int q = lane >> 3;
    const u32 addr = at((2 * jj + (q >> 1)) * 8 + (lane & 7), warp * 16 + (q & 1) * 8);
    if (pair) stmatrix_x4_trans(addr, r[0], r[1], r[2], r[3]);
    else stmatrix_x2_trans(addr, r[0], r[1]);
  }
}

// EPI 3's storers: the 16 bytes of a staged column (16-bit C) from its element `e` on (shared
// address `col`, 16-byte aligned), e any element: five aligned words read and shifted by a
// half-word where e is odd. Measured on an H100 (LM head, 2026-12-07): two aligned 16-byte loads
// and word selects instead (with 56 registers for the producer warpgroup, 224 for the consumers)
// ran the head 9% slower; at 40 registers either spills once an aligned-column path joins it.
TT_DEVICE uint4 lds_unaligned16(u32 col, int e) {
  const u32 w0 = col + 4u * (u32)(e >> 1);
  u32 s[5];
  TT_UNROLL
  for (int t = 0; t < 5; ++t) asm volatile("ld.shared.b32 %0, [%1];" : "=r"(s[t]) : "r"(w0 + 4 * t) : "memory");
  const u32 sel = (e & 1) ? 0x5432u : 0x3210u;
  return make_uint4(__byte_perm(s[0], s[1], sel), __byte_perm(s[1], s[2], sel), __byte_perm(s[2], s[3], sel),
                    __byte_perm(s[3], s[4], sel));
}

}  // namespace tt_wg

// TAB: the input type, or tt_ab<A's, B's> for fp8 A and B of two types (tt_types.h).
template <typename TAB, typename TC, bool TRANSA, bool TRANSB, int BM, int BN, int BK, int STAGES,
          int CONSUMERS, int RASTER, int GROUP, int PINGPONG, int LOADER, int CLUSTER, int SPLITK = 1, int OCC = 1,
          int COOPN = 0, int EPI = 0, int COOPK = 0, int CLUSTERN = 1, int AREG = 0, int SCHED = 0>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), OCC)
    wgmma_gemm(const __grid_constant__ TtGemmTmaParams p) {
  using namespace tt_wg;
  typedef typename tt_input_a<TAB>::type TA;
  typedef typename tt_input_b<TAB>::type TB;
  constexpr int EB = (int)sizeof(TA);  // 1: e4m3 / e5m2 / s8; 2: bf16 / fp16; 4: fp32 read as tf32
  constexpr bool INT8 = IsInt8<TA>::value;
  static_assert(sizeof(TB) == sizeof(TA), "wgmma_gemm: A and B of one width");
  static_assert(EB == 1 || EB == 2 || EB == 4, "wgmma_gemm: 8-bit, 16-bit or tf32 inputs");
  static_assert(BK * EB == 128, "BK is one 128-byte swizzle atom");
  static_assert(EB == 2 || (TRANSA && !TRANSB) || LOADER == 2 || (AREG && !TRANSB),
                "tf32 wgmma reads both operands K-major only: an MN-major one needs the transposing loader, or "
                "A from registers");
  // A from registers: tf32 with an MN-major A; an MN-major B (NT) only through LOADER 2's transpose.
  static_assert(AREG == 0 || (AREG == 1 && EB == 4 && !TRANSA && (TRANSB ? LOADER == 2 : LOADER != 2)),
                "AREG 1: tf32, A MN-major (TRANSA 0); B K-major by TMA or cp.async, or MN-major through LOADER 2");
  static_assert(EB != 1 || (TRANSA && !TRANSB && LOADER != 2), "8-bit wgmma reads both operands K-major only (TN)");
  static_assert(!INT8 || (SPLITK == 1 && COOPK == 0 && BN % 16 == 0),
                "int8: no split-K reductions (they add fp32), N a multiple of 16 (integer wgmma shapes)");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "1 or 2 consumer warpgroups");
  static_assert(PINGPONG == 0 || CONSUMERS == 2, "ping-pong needs two consumers");
  static_assert(LOADER == 0 || LOADER == 1 || (LOADER == 2 && EB == 4 && (!TRANSA || TRANSB)),
                "LOADER: 0 TMA, 1 cp.async, 2 cp.async and a transpose of the MN-major tf32 operands");
  static_assert(CLUSTER == 1 || ((CLUSTER == 2 || CLUSTER == 4) && LOADER == 0), "clusters of 2 or 4 share B by TMA multicast");
  static_assert(CLUSTERN == 1 || ((CLUSTERN == 2 || CLUSTERN == 4) && LOADER == 0 && CLUSTER * CLUSTERN <= 8),
                "clusters of 2 or 4 tile columns share A by TMA multicast, at most 8 CTAs a cluster");
  static_assert(SPLITK >= 1, "SPLITK: K splits per tile");
  static_assert(OCC == 1 || (OCC == 2 && CONSUMERS == 1 && CLUSTER == 1 && CLUSTERN == 1),
                "two blocks per SM: one consumer, no cluster");
  static_assert(COOPN == 0 || (CONSUMERS == 2 && PINGPONG == 0 && SPLITK == 1 && BN >= 128),
                "consumers split N: two cooperative consumers, no split-K, BN >= 128");
  static_assert(EPI == 0 || EPI == 1 || (EPI == 2 && sizeof(TC) == 2) ||
                    (EPI == 3 && sizeof(TC) == 2 && LOADER == 0 && PINGPONG == 0 && SPLITK == 1 && COOPK == 0 &&
                     SCHED == 0),
                "EPI: 0 stores from the threads, 1 TMA store, 2 the threads' stores in aligned runs (16-bit C), 3 "
                "the tile staged for the producer warpgroup's spare warps to store (16-bit C; TMA loader, "
                "cooperative consumers, no split-K or stream-K)");
  // Consumers splitting K: with an even ring, the position a consumer waits on and the one
  // STAGES before it are its own (an odd ring gives the latter to the other consumer, whose fill
  // may land later: the parity wait would pass a phase early); the cp.async loader signals a
  // stage only after it refilled STAGES - 2 ahead, which a consumer that skips every other stage
  // never releases (deadlock).
  static_assert(COOPK == 0 || (CONSUMERS == 2 && PINGPONG == 0 && COOPN == 0 && SPLITK == 1 && BM == 64 && BN >= 128 &&
                               STAGES % 2 == 0 && LOADER == 0),
                "consumers split K: two cooperative TMA-fed consumers on a 64-row tile, an even ring, no split-N or "
                "split-K, BN >= 128");
  constexpr bool PP = PINGPONG != 0;
  constexpr bool CN = COOPN != 0;
  constexpr bool CK = COOPK != 0;
  constexpr int WM = (PP || CN || CK) ? BM : BM / CONSUMERS;  // rows per consumer warpgroup
  constexpr int WNM = CN ? BN / 2 : BN;                       // columns per consumer in the main loop
  constexpr int WN = (CN || CK) ? BN / 2 : BN;                // columns per consumer in the epilogue
  constexpr int MI = WM / 64;         // m64 sub-tiles per consumer
  static_assert(WM % 64 == 0 && MI >= 1 && MI <= 2, "BM / CONSUMERS must be 64 or 128");
  // BN 72, 80, 96 (a K-major B only: an MN-major one comes in boxes of 64 columns, or one of 32): between
  // the 64 x 128 and 128 x 128 tiles, e.g. 88 CTAs of 128 x 96 cover 1000^3 with a fifth less operand
  // traffic than 128 of 64 x 128; 112 of 128 x 72 waste under 1% of N (cuBLAS's fp16 tile). BN 160:
  // fewer waves where 128 leaves a third wave barely started (N = 39200: 307 tiles of 128 on 132
  // multiprocessors, 245 of 160): 3% on Inception's 1x1 input gradient, nothing elsewhere measured, so the
  // JSON's GEMM space leaves it out and the H200 convolution config's 1x1 list holds it.
  // BN 32 (16-bit inputs, TMA): cuBLASLt's tile for weight gradients of few channels (Inception's 160
  // output channels in five 32-column tiles where 64 wastes a sixth; more tiles, so less split-K); an
  // MN-major B comes in one 32-column box a stage, 64-byte lines in the 64-byte swizzle. One m64 sub-tile
  // a consumer: with two, a thread's 32 accumulators spilled in the one-level split-K sum (4 bytes).
  static_assert((BN % 64 == 0 || ((BN == 72 || BN == 80 || BN == 96 || BN == 160) && !TRANSB && !CN && !CK) ||
                 (BN == 32 && EB == 2 && LOADER == 0 && !CN && !CK && MI == 1)) &&
                    BN <= 256,
                "BN is 32, 64, 72, 80, 96, 128, 160, 192 or 256");
  static_assert(!CN || TRANSB == 0 || WN % 64 == 0, "an MN-major B splits into whole 64-column boxes");
  constexpr bool A_K = TRANSA;   // A K-major in memory
  constexpr bool B_K = !TRANSB;  // B K-major in memory
  // In shared memory: as in memory, except that LOADER 2 makes every operand K-major.
  constexpr bool A_SK = A_K || (LOADER == 2 && !AREG), B_SK = B_K || LOADER == 2;
  constexpr u32 A_STAGE = BM * 128, B_STAGE = BN * 128;  // BK * EB = 128 bytes a row (K-major) or BK lines (MN-major)
  constexpr int RPB = 128 / EB;  // MN-major A: rows per box (one 128-byte line per k)
  constexpr int B_LINE = BN == 32 && !B_K ? 64 : 128;  // an MN-major B of 32 columns: one box of 64-byte lines
  static_assert(B_K || B_STAGE % (BK * B_LINE) == 0, "an MN-major B stage is whole boxes of BK lines");
  constexpr u32 STAGE_BYTES = A_STAGE + B_STAGE;
  constexpr int EN = tt_wgmma_epilogue_chunk(WN);  // epilogue chunk (columns), map_c's box width
  static_assert(WN % EN == 0, "epilogue chunks tile the consumer's columns");
  constexpr int EP = WM + 4;  // staging pitch (floats): conflict-free fragment writes
  constexpr int CB = (int)sizeof(TC);
  constexpr int RB = 128 / CB;                      // TMA store: rows of C per 128-byte box line
  constexpr int NB = CB == 2 ? 2 : 1;                // TMA store: chunk buffers (two fit for 16-bit C)
  constexpr u32 CHUNK_BYTES = (u32)(WM * EN * CB);  // TMA store: one chunk, WM / RB boxes of EN lines
  // Staging per consumer, for 32 columns whatever the chunk; with the TMA store 512 bytes more, so
  // that every consumer's share starts on a 1024-byte boundary (the 128-byte swizzle's period,
  // which the boxes assume).
  // EPI 3: the consumer's whole tile in C's type, column by column, P3 elements apart (16-byte
  // aligned columns, stmatrix's eight columns on eight different bank groups); the fp32 staging of
  // the threads' stores (beta != 0) lives in the same bytes.
  constexpr int P3 = WM + 8;
  constexpr u32 STG32_BYTES = 32 * EP * 4 + (EPI == 1 ? 512 : 0);
  constexpr u32 STG3_BYTES = EPI == 3 ? (u32)(WN * P3 * CB) : 0u;
  constexpr u32 STG_BYTES = STG32_BYTES > STG3_BYTES ? STG32_BYTES : STG3_BYTES;
  static_assert(EPI != 1 || (NB * CHUNK_BYTES <= STG_BYTES && STG_BYTES % 1024 == 0), "TMA store staging");
  constexpr bool BF = IsBf16<TA>::value;
  typedef typename Pick<EB == 1, TtWgmma8<WNM, TA, TB>,
                        typename Pick<EB == 4, typename Pick<AREG != 0, TtWgmmaTf32Rs<WNM>, TtWgmmaTf32<WNM>>::type,
                                      TtWgmma<WNM, BF, A_SK ? 0 : 1, B_SK ? 0 : 1>>::type>::type Mma;
  typedef Epi<TC> E;

  constexpr int CS = CLUSTER * CLUSTERN;  // CTAs per cluster
  typedef Ring<STAGES, A_STAGE, B_STAGE, CS, AREG != 0 && CS == 1> RingT;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Consumers splitting K: after the main loop each hands the other the half of its sums that
  // the other stores, through XCH_BYTES (per consumer: 128 threads x BN / 4 floats).
  constexpr u32 XCH_BYTES = CK ? (u32)BN * 256u : 0u;
  // LOADER 2: landing slots for the MN-major operands, LAND_SLOTS of them (see the producer).
  constexpr int LAG = STAGES > 2 ? STAGES - 2 : 0;  // cp.async loaders: stages in flight before a signal
  constexpr int LAND_SLOTS = LAG + 2;
  constexpr u32 LAND_A = (LOADER == 2 && !A_K && !AREG) ? A_STAGE : 0u, LAND_B = (LOADER == 2 && !B_K) ? B_STAGE : 0u;
  constexpr u32 LAND_BYTES = LAND_SLOTS * (LAND_A + LAND_B);
  // EPI 3: per consumer, "staged" (its 128 threads arrive) and "stored" (the 96 storers arrive).
  constexpr u32 EPI3_BARS = EPI == 3 ? 16u * CONSUMERS : 0u;
  const RingT ring(smem_raw, CONSUMERS * STG_BYTES + XCH_BYTES + LAND_BYTES + EPI3_BARS);
  const u32 land = smem_addr(ring.staging) + CONSUMERS * STG_BYTES + XCH_BYTES;  // landing slot 0 (A, then B)
  const u32 staged_bar = land + LAND_BYTES, stored_bar = staged_bar + 8u * CONSUMERS;  // + 8 cw
  const u32 sA = ring.sA, sB = ring.sB, bars = ring.bars;

  const int M = p.g.m, N = p.g.n, K = p.g.k;
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  // Work units: CLUSTER tile rows x CLUSTERN tile columns (one tile per CTA of a cluster).
  const int units_m = (tiles_m + CLUSTER - 1) / CLUSTER, units_n = (tiles_n + CLUSTERN - 1) / CLUSTERN;
  const int tile_units = units_m * units_n * p.g.batch;
  // With split-K, a work unit is one K split of one tile unit, split-major: concurrently running
  // units share the same K range of neighbouring tiles' operands in L2.
  const int total = tile_units * SPLITK;
  const int first = blockIdx.x / CS, step = gridDim.x / CS;
  // Rank r of a cluster: tile row r % CLUSTER, tile column r / CLUSTER of the unit. The CTAs of
  // one tile column share B, those of one tile row share A (multicast masks).
  const u32 rank = CS > 1 ? cluster_rank() : 0u;
  const int rm = (int)rank % CLUSTER, rn = (int)rank / CLUSTER;
  const unsigned short b_mask = (unsigned short)(((1u << CLUSTER) - 1u) << (rn * CLUSTER));
  unsigned short a_mask = 0;
  TT_UNROLL
  for (int j = 0; j < CLUSTERN; ++j) a_mask |= (unsigned short)(1u << (rm + j * CLUSTER));
  const int KT = (K + BK - 1) / BK;
  static_assert(SCHED == 0 || (SCHED == 1 && SPLITK == 1 && !CK && CS == 1 && !INT8),
                "SCHED 1: one CTA a work unit, no split-K nor consumers splitting K, not int8 (its reduction adds fp32)");
  // SCHED 1 (wgmma_sched.h): the tile units past the last full wave streamed along K over all
  // `step` workers, where the walk does not (a full last wave, or fewer K tiles than workers).
  // The loops below walk u from u_first by u_step below u_total: SCHED 0 the work units
  // themselves, SCHED 1 this block's items 0, 1, ... (unit_tile maps an item to its unit or part).
  const bool streams = SCHED == 1 && tt_sched::sched_streams(tile_units, step, KT);
  const int u_first = SCHED ? 0 : first, u_step = SCHED ? 1 : step;
  const int u_total = SCHED == 0 ? total
                      : streams  ? tt_sched::items(1, tile_units, step, KT, first)
                                 : (first < total ? (total - first + step - 1) / step : 0);
  // Work unit u -> tile unit, K split and its K tiles [kb, ke).
  auto unit = [&](int u, int& t, int& split, int& kb, int& ke) {
    if (SPLITK == 1) {
      t = u, split = 0, kb = 0, ke = KT;
    } else {
      split = u / tile_units;
      t = u - split * tile_units;
      tt_splitk::k_range<SPLITK>(KT, split, kb, ke);
    }
  };

  // The tensor maps' prefetch first: it overlaps the barrier set-up and the cluster's handshake.
  if (LOADER == 0 && threadIdx.x == 0) {
    prefetch_map(&p.map_a);
    prefetch_map(&p.map_b);
  }
  // full: TMA, one arrival + bytes; cp.async, every producer thread. empty: one per consuming warp of the cluster.
  if (EPI == 3 && threadIdx.x == 0) {
    for (int c = 0; c < CONSUMERS; ++c) {
      mbar_init(staged_bar + 8 * c, 128);
      mbar_init(stored_bar + 8 * c, 96);
    }
  }
  if (threadIdx.x == 0) ring.init(LOADER ? 128 : 1, ((PP || CK) ? 4 : CONSUMERS * 4) * CS * RingT::ARRIVALS_PER_WARP);
  // This CTA's tile (tile row mb, column nb, batch b), K split and K tiles of work unit u (SCHED
  // 1: of item u, `it` its streamed part; parts 1: a whole tile).
  auto unit_tile = [&](int u, int& mb, int& nb, int& b, int& split, int& kb, int& ke, tt_sched::Item& it) {
    int t;
    it.parts = 1;
    if (SCHED == 0) {
      unit(u, t, split, kb, ke);
    } else if (streams) {
      it = tt_sched::item(1, tile_units, step, KT, first, u);
      t = it.t, split = 0, kb = it.kb, ke = it.ke;
    } else {
      unit(first + u * step, t, split, kb, ke);
    }
    tile_coords<RASTER, GROUP>(t, units_m, units_n, mb, nb, b);
    mb = mb * CLUSTER + rm, nb = nb * CLUSTERN + rn;
  };
  // Measured on the H200 (8cb1c21, 2026-11-30): issuing the first stages' non-multicast loads
  // before the cluster handshake made clusters 3-7% slower (1000^3), so every load follows it.
  if (CS > 1) cluster_sync_after_init();  // the peer's barriers exist before any multicast or remote arrive
  else __syncthreads();

  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    // ------------------------------------------------------------------ producer
    // The cp.async producer computes addresses for 128 threads: it keeps the registers it was
    // compiled with (no spills at 168 per thread for every variant), the TMA one gives them away.
    if (CONSUMERS == 2 && LOADER == 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (LOADER >= 1) {
      const int tid = threadIdx.x;
      const TA* A = reinterpret_cast<const TA*>(p.g.a);
      const TB* Bm = reinterpret_cast<const TB*>(p.g.b);
      int s = 0, issued = 0;
      u32 ph = 0;
      // Stage j (in issue order) is complete: with LOADER 2 its MN-major operands move from their
      // landing slot into the ring stage once every producer thread's copies landed (the named
      // barrier; it also keeps a slot from being refilled while a thread still reads it, hence
      // LAG + 2 slots); then the stage goes to the consumers (each thread's arrive, after fencing
      // its writes for the async proxy that wgmma reads through).
      auto signal = [&](int j) {
        const int rs = j % STAGES;
        if (LOADER == 2) {
          named_sync(6, 128);
          const int slot = j % LAND_SLOTS;
          if constexpr (LAND_A != 0) transpose_stage<BM, BK>(land + slot * LAND_A, sA + rs * A_STAGE, tid);
          if constexpr (LAND_B != 0)
            transpose_stage<BN, BK>(land + LAND_SLOTS * LAND_A + slot * LAND_B, sB + rs * B_STAGE, tid);
        }
        fence_async_smem();
        mbar_arrive(bars + 8 * rs);
      };
      for (int u = u_first; u < u_total; u += u_step) {
        int mb, nb, b, split, kb, ke;
        tt_sched::Item it;
        unit_tile(u, mb, nb, b, split, kb, ke, it);
        const TA* Ab = A + (long long)b * p.g.stride_a;
        const TB* Bb = Bm + (long long)b * p.g.stride_b;
#pragma unroll 1
        for (int kt = kb; kt < ke; ++kt) {
          mbar_wait(bars + 8 * (STAGES + s), ph ^ 1);
          const u32 slot = (u32)(issued % LAND_SLOTS);
          const u32 dst_a = LAND_A ? land + slot * LAND_A : sA + s * A_STAGE;
          const u32 dst_b = LAND_B ? land + LAND_SLOTS * LAND_A + slot * LAND_B : sB + s * B_STAGE;
          cp_async_stage<BM, BK, A_K>(dst_a, Ab, p.g.lda, M, K, mb * BM, kt * BK, tid);
          cp_async_stage<BN, BK, B_K>(dst_b, Bb, p.g.ldb, N, K, nb * BN, kt * BK, tid);
          cp_async_commit();
          if (issued >= LAG) {
            cp_async_wait<LAG>();
            signal(issued - LAG);
          }
          ++issued;
          if (++s == STAGES) { s = 0; ph ^= 1; }
        }
      }
      cp_async_wait<0>();
      for (int j = issued > LAG ? issued - LAG : 0; j < issued; ++j) signal(j);
    } else if (threadIdx.x == 0) {
      int s = 0;
      u32 ph = 0;
      for (int u = u_first; u < u_total; u += u_step) {
        int mb, nb, b, split, kb, ke;
        tt_sched::Item it;
        unit_tile(u, mb, nb, b, split, kb, ke, it);
        for (int kt = kb; kt < ke; ++kt) {
          const u32 full = bars + 8 * s;
          mbar_wait(bars + 8 * (STAGES + s), ph ^ 1);
          mbar_arrive_expect_tx(full, STAGE_BYTES);
          // In a cluster each CTA loads its share of A (B) and multicasts it to the CTAs of its
          // tile row (column).
          const int k0 = kt * BK;
          tma_load_tile<BM, BK, RPB, A_K, CLUSTERN>(sA + s * A_STAGE, &p.map_a, full, k0, mb * BM, b, rn, a_mask);
          tma_load_tile<BN, BK, B_LINE / EB, B_K, CLUSTER, B_LINE>(sB + s * B_STAGE, &p.map_b, full, k0, nb * BN, b, rm,
                                                                  b_mask);
          if (++s == STAGES) { s = 0; ph ^= 1; }
        }
      }
      if (CS > 1) ring.drain(s, ph);  // no CTA of a cluster leaves while a peer may still use it
    } else if (EPI == 3 && threadIdx.x >= 32 && p.g.beta == 0.0f) {
      // Storers (EPI 3): each consumer's staged tile, column by column, LPC lanes a column and one
      // 16-byte vector a lane; a column of C that does not start on a 16-byte boundary has its
      // vectors realigned from the staged ones and its rows before the first boundary and after
      // the last whole vector stored as scalars (column_runs.h).
      constexpr int LPC = WM / 8, CPW = 32 / LPC, SW = 3;  // lanes a column, columns a warp, storer warps
      const int sw = threadIdx.x / 32 - 1, lane = threadIdx.x % 32, i = lane % LPC;
      const long long ldc = p.g.ldc;
      const u32 stg0 = smem_addr(ring.staging);
      u32 eph = 0;
      for (int u = u_first; u < u_total; u += u_step) {
        int mb, nb, b, split, kb, ke;
        tt_sched::Item it;
        unit_tile(u, mb, nb, b, split, kb, ke, it);
        TC* C = reinterpret_cast<TC*>(p.g.c) + (long long)b * p.g.stride_c;
#pragma unroll 1
        for (int cw = 0; cw < CONSUMERS; ++cw) {
          const int m_base = mb * BM + (CN ? 0 : cw * WM), n_tile = nb * BN + (CN ? cw * WN : 0);
          const int rows = min(WM, M - m_base);
          const u32 buf = stg0 + (u32)cw * STG_BYTES;
          mbar_wait(staged_bar + 8 * cw, eph);
#pragma unroll 1
          for (int c = sw * CPW + lane / LPC; c < WN; c += SW * CPW) {
            const int gn = n_tile + c;
            if (gn >= N || rows <= 0) continue;
            TC* col = C + m_base + (long long)gn * ldc;
            const tt_runs::Runs runs = tt_runs::column_runs((unsigned long long)col / sizeof(TC), rows, 8);
            const u32 src = buf + (u32)(c * P3 * CB);
            if (i < runs.vectors)
              *reinterpret_cast<uint4*>(col + runs.head + 8 * i) = lds_unaligned16(src, runs.head + 8 * i);
            for (int e = i; e < 16; e += LPC) {
              const int r = tt_runs::scalar_row(runs, e, 8);
              if (r >= 0) reinterpret_cast<unsigned short*>(col)[r] = lds_u16(src + 2 * r);
            }
          }
          mbar_arrive(stored_bar + 8 * cw);
        }
        eph ^= 1;
      }
    }
  } else {
    // ------------------------------------------------------------------ consumers
    if (CONSUMERS == 2 && LOADER == 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int cw = wg - 1;
    const int tid = threadIdx.x - 128 * wg;
    const int warp = tid / 32, lane = tid % 32;
    const float alpha = p.g.alpha, beta = p.g.beta;
    float* stg = ring.staging + cw * (STG_BYTES / 4);
    int chunks_stored = 0;  // TMA store: chunks issued so far, whose parity picks the buffer
    u32 eph = 0;            // EPI 3: parity of this consumer's staged tiles

    constexpr int V = 16 / (int)sizeof(TC);  // elements per 16-byte vector of C
    constexpr int TPC = WM / V;              // threads per column in the store pass
    constexpr int CPP = 128 / TPC;           // columns per pass
    // A pass covers CPP columns; the last pass of a 24-column chunk leaves some threads idle.
    const long long ldc = p.g.ldc;
    const bool vec_ok = ((unsigned long long)p.g.c % 16 == 0) && (ldc % V == 0) &&
                        (p.g.batch == 1 || p.g.stride_c % V == 0);

    float acc[MI][WNM / 2];
    int s = 0;
    u32 ph = 0;
    // Ping-pong: the consumers take turns, unit by unit; each skips the K steps of the other's
    // unit u in the ring (SCHED 1: streamed items differ in length).
    auto skip_unit = [&](int u) {
      if (u >= u_total) return;  // no such unit: nothing follows
      int mb, nb, b, split, kb, ke;
      tt_sched::Item it;
      unit_tile(u, mb, nb, b, split, kb, ke, it);
      RingT::skip(s, ph, ke - kb);
    };
    if (PP && cw == 1) skip_unit(u_first);
    // The main loop over every kstep-th K tile of [from, to), A from a_off bytes into its stage.
    auto k_tiles = [&](u32 a_off, int from, int to, u32 b_off, int kstep) {
      if constexpr (AREG != 0)
        return mma_k_tiles_areg<Mma, BK>(ring, acc, a_off, from, to, s, ph, warp, lane, b_off, kstep);
      else
        return mma_k_tiles<Mma, A_SK, B_SK, BK, B_LINE>(ring, acc, a_off, from, to, s, ph, lane, b_off, kstep);
    };
    const int t_step = PP ? 2 * u_step : u_step;
    for (int u = u_first + (PP ? cw * u_step : 0); u < u_total; u += t_step) {
      int mb, nb, b, split, kb, ke;
      tt_sched::Item it;
      unit_tile(u, mb, nb, b, split, kb, ke, it);
      if (PP && u != u_first) pingpong_wait(cw);
      // This consumer's rows of A: 64 rows or one 64-row box, the same bytes.
      // This consumer's columns of B: WN rows of a K-major stage, WN / 64 boxes of an MN-major one.
      const u32 b_off = CN ? (u32)cw * (B_SK ? WN * 128 : WN / 64 * BK * 128) : 0u;
      int prev;
      if (CK) {
        // Consumers splitting K: consumer cw takes K tiles kb + cw, kb + cw + 2, ...; both then
        // stand at the ring position after the tile's last K tile.
        int s_end = s;
        u32 ph_end = ph;
        RingT::skip(s_end, ph_end, ke - kb);
        RingT::skip(s, ph, cw);
        prev = k_tiles(0u, kb + cw, ke, 0u, 2);
        s = s_end, ph = ph_end;
      } else {
        prev = k_tiles((PP || CN) ? 0u : (u32)(cw * MI * 64 * 128), kb, ke, b_off, 1);
      }
      if (PP && u + u_step < u_total) pingpong_pass(cw);
      if constexpr (AREG != 0 && CS > 1) __syncwarp();  // the last stage's reads, as in mma_k_tiles_areg
      finish_k_tiles<(SPLITK > 1 || CK)>(ring, acc, prev, lane);
      // No K tile here (a split of K < SPLITK tiles, which the constraints keep sweeps from, or the
      // second of the consumers splitting K a single K tile): a zero partial. Written only after the
      // main loop: zeroed in front of it, the compiler turned the branch into selects that define
      // every accumulator on every unit, and ptxas serialised all wgmma of the kernel (C7515); the
      // first wgmma of a unit overwrites the accumulators anyway (scale-d 0).
      if ((SPLITK > 1 || CK) && prev < 0) {
        TT_UNROLL
        for (int mi = 0; mi < MI; ++mi)
          TT_UNROLL
          for (int i = 0; i < WNM / 2; ++i) acc[mi][i] = 0.0f;
      }
      if (PP) skip_unit(u + u_step);
      if (CK) {
        // Each consumer stores columns [cw BN / 2, (cw + 1) BN / 2): it gives the other the sums of
        // the other's half (thread t's fragment matches thread t's of the other consumer) and adds
        // the other's sums of its own half, which then moves to the front of acc for the epilogue.
        constexpr int H = WNM / 4;  // floats of one half per thread
        float* xch = ring.staging + CONSUMERS * (STG_BYTES / 4);
        float4* mine = reinterpret_cast<float4*>(xch + cw * H * 128);
        const float4* theirs = reinterpret_cast<const float4*>(xch + (cw ^ 1) * H * 128);
        if (cw == 0) {
          TT_UNROLL
          for (int i = 0; i < H / 4; ++i)
            mine[i * 128 + tid] = make_float4(acc[0][H + 4 * i], acc[0][H + 4 * i + 1], acc[0][H + 4 * i + 2], acc[0][H + 4 * i + 3]);
        } else {
          TT_UNROLL
          for (int i = 0; i < H / 4; ++i)
            mine[i * 128 + tid] = make_float4(acc[0][4 * i], acc[0][4 * i + 1], acc[0][4 * i + 2], acc[0][4 * i + 3]);
        }
        named_sync(5, 256);
        if (cw == 0) {
          TT_UNROLL
          for (int i = 0; i < H / 4; ++i) {
            const float4 x = theirs[i * 128 + tid];
            acc[0][4 * i] += x.x, acc[0][4 * i + 1] += x.y, acc[0][4 * i + 2] += x.z, acc[0][4 * i + 3] += x.w;
          }
        } else {
          TT_UNROLL
          for (int i = 0; i < H / 4; ++i) {
            const float4 x = theirs[i * 128 + tid];
            acc[0][4 * i] = acc[0][H + 4 * i] + x.x, acc[0][4 * i + 1] = acc[0][H + 4 * i + 1] + x.y;
            acc[0][4 * i + 2] = acc[0][H + 4 * i + 2] + x.z, acc[0][4 * i + 3] = acc[0][H + 4 * i + 3] + x.w;
          }
        }
        named_sync(5, 256);  // both read before either writes the next tile's sums
      }

      // ---------------------------------------------------------------- split-K
      // The threads that hold this tile's accumulators (one consumer with ping-pong, all of them
      // otherwise) meet the other splits in the workspace; the last to arrive goes on with the sum.
      // In a cluster, a CTA whose tile lies past M or N has no tile and skips it.
      if (SPLITK > 1) {
        if (mb >= tiles_m || nb >= tiles_n) continue;
        constexpr int GT = PP ? 128 : 128 * CONSUMERS;  // threads of the group
        const NamedGroup group{(PP || CONSUMERS == 1) ? 1 + cw : 5, GT};
        const long long tile_id = ((long long)b * tiles_m + mb) * tiles_n + nb;
        constexpr int LOADS = OCC == 1 ? tt_splitk::loads_beside(MI * WN / 2, 0) : 0;  // OCC 2: 128 registers
        if (!tt_splitk::reduce<MI * WN / 2, GT, SPLITK, BM * BN, LOADS>(
                &acc[0][0], p.g.workspace, tile_id, (long long)p.g.batch * tiles_m * tiles_n, split,
                PP ? tid : threadIdx.x - 128, group))
          continue;
      }
      // SCHED 1: a streamed tile's parts meet as split-K units do, in slots of their own after the
      // per-streamed-tile counters (wgmma_sched.h); a tile one worker covers goes straight on.
      if (SCHED == 1 && it.parts > 1) {
        constexpr int GT = PP ? 128 : 128 * CONSUMERS;
        const NamedGroup group{(PP || CONSUMERS == 1) ? 1 + cw : 5, GT};
        float4* slots = reinterpret_cast<float4*>(tt_sched::part_slots(p.g.workspace, step, it, BM * BN));
        if (!tt_splitk::reduce_slots<MI * WN / 2, GT, BM * BN, 1, false, 4>(
                &acc[0][0], tt_sched::part_counter(p.g.workspace, it), slots, it.part, it.parts,
                PP ? tid : threadIdx.x - 128, group))
          continue;
      }

      // ---------------------------------------------------------------- epilogue
      const int m_base = mb * BM + ((PP || CN || CK) ? 0 : cw * WM);
      const int n_tile = nb * BN + ((CN || CK) ? cw * WN : 0);
      if constexpr (EPI == 3) {  // constexpr: the staging by stmatrix exists for 16-bit C only
        if (beta == 0.0f) {
          // Staged stores: the tile in C's type into this consumer's staging, once the storers
          // finished its previous tile; the storers take it from there and the consumer goes on
          // with its next tile.
          const u32 buf = smem_addr(stg);
          mbar_wait(stored_bar + 8 * cw, eph ^ 1);
          TT_UNROLL
          for (int mi = 0; mi < MI; ++mi)
            stmatrix_c_groups<E, WN / 8>(&acc[mi][0], alpha, warp, lane, [&](int line, int r) {
              return buf + (u32)((line * P3 + mi * 64 + r) * CB);
            });
          mbar_arrive(staged_bar + 8 * cw);
          eph ^= 1;
          continue;
        }
      }
      if (EPI == 1 && beta == 0.0f) {
        // TMA store: the chunk (alpha * accumulators, converted to C's type) goes into a staging
        // buffer in the layout of WM / RB boxes of RB rows x EN columns with the 128-byte swizzle,
        // one bulk store per box; the TMA clips rows and columns outside C. 16-bit C: stmatrix,
        // transposed, puts 8 consecutive rows of one column (16 bytes) per address.
        const u32 buf0 = smem_addr(stg);
        TT_UNROLL
        for (int ch = 0; ch < WN / EN; ++ch) {
          const u32 buf = buf0 + (u32)(chunks_stored % NB) * CHUNK_BYTES;
          if (tid == 0) bulk_wait_read<NB - 1>();  // the buffer's previous store has read it
          named_sync(1 + cw, 128);
          TT_UNROLL
          for (int mi = 0; mi < MI; ++mi) {
            if constexpr (CB == 2) {
              stmatrix_c_groups<E, EN / 8>(&acc[mi][ch * EN / 8 * 4], alpha, warp, lane, [&](int line, int r) {
                const int row = mi * 64 + r;
                return buf + (u32)((row / RB) * EN * 128 + line * 128 + ((((row % RB) / 8) ^ (line & 7)) << 4));
              });
            } else {
              TT_UNROLL
              for (int j = 0; j < EN / 8; ++j) {
                const float* f = &acc[mi][(ch * EN / 8 + j) * 4];
                TT_UNROLL
                for (int e = 0; e < 4; ++e) {
                  const int line = j * 8 + 2 * (lane & 3) + (e & 1);
                  const int row = mi * 64 + warp * 16 + (lane >> 2) + 8 * (e >> 1);
                  const int rr = row % RB;
                  float* dst = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(stg) +
                                                        (chunks_stored % NB) * CHUNK_BYTES + (row / RB) * EN * 128 +
                                                        line * 128 + (((rr * CB / 16) ^ (line & 7)) << 4) + rr * CB % 16);
                  *dst = E::scale(alpha, f[e]);
                }
              }
            }
          }
          fence_async_smem();
          named_sync(1 + cw, 128);
          if (tid == 0) {
            TT_UNROLL
            for (int bx = 0; bx < WM / RB; ++bx)
              tma_store_3d(&p.map_c, buf + (u32)(bx * EN * 128), m_base + bx * RB, n_tile + ch * EN, b);
            bulk_commit();
          }
          ++chunks_stored;
        }
        continue;
      }
      TC* C = reinterpret_cast<TC*>(p.g.c) + (long long)b * p.g.stride_c;
      TT_UNROLL
      for (int ch = 0; ch < WN / EN; ++ch) {
        named_sync(1 + cw, 128);  // previous chunk's staging reads finished
        TT_UNROLL
        for (int mi = 0; mi < MI; ++mi) {
          TT_UNROLL
          for (int j = 0; j < EN / 8; ++j) {
            const float* f = &acc[mi][(ch * EN / 8 + j) * 4];
            const int col = j * 8 + 2 * (lane & 3);
            const int row = mi * 64 + warp * 16 + (lane >> 2);
            stg[col * EP + row] = E::scale(alpha, f[0]);
            stg[(col + 1) * EP + row] = E::scale(alpha, f[1]);
            stg[col * EP + row + 8] = E::scale(alpha, f[2]);
            stg[(col + 1) * EP + row + 8] = E::scale(alpha, f[3]);
          }
        }
        named_sync(1 + cw, 128);
        if (vec_ok) {
          // 16-byte vectors: TPC threads cover one column of WM rows; whole 128-byte lines per warp.
          const int r = (tid % TPC) * V;
          const int gm = m_base + r;
          TT_UNROLL
          for (int c = tid / TPC; c < EN; c += CPP) {
            const int gn = n_tile + ch * EN + c;
            if (gn < N && gm < M) {
              float v[V];
              const float4* src = reinterpret_cast<const float4*>(stg + c * EP + r);
              TT_UNROLL
              for (int q = 0; q < V / 4; ++q) {
                const float4 x = src[q];
                v[4 * q] = x.x; v[4 * q + 1] = x.y; v[4 * q + 2] = x.z; v[4 * q + 3] = x.w;
              }
              TC* dst = C + gm + (long long)gn * ldc;
              if (gm + V <= M) {
                if (beta != 0.0f) {
                  float o[V];
                  CVec<TC, V>::load(dst, o);
                  TT_UNROLL
                  for (int q = 0; q < V; ++q) v[q] = E::add_c(v[q], beta, o[q]);
                }
                CVec<TC, V>::store(dst, v);
              } else {
                TT_UNROLL
                for (int q = 0; q < V; ++q) {
                  if (gm + q < M) {
                    float x = v[q];
                    if (beta != 0.0f) x = E::add_c(x, beta, E::in(dst[q]));
                    dst[q] = E::out(x);
                  }
                }
              }
            }
          }
        } else if (EPI >= 2) {
          // Unaligned C (EPI 2, and EPI 3 with beta != 0): per column, the rows before its first
          // 16-byte boundary and after its last whole vector as scalars, the rest as 16-byte vectors
          // (column_runs.h); TPC threads a column, as above.
          const int k = tid % TPC;
          const int rows = min(WM, M - m_base);
          TT_UNROLL
          for (int c = tid / TPC; c < EN; c += CPP) {
            const int gn = n_tile + ch * EN + c;
            if (gn >= N || rows <= 0) continue;
            TC* col = C + m_base + (long long)gn * ldc;
            const tt_runs::Runs runs = tt_runs::column_runs((unsigned long long)col / sizeof(TC), rows, V);
            for (int q = k; q < runs.vectors; q += TPC) {
              const int r = runs.head + q * V;
              float v[V];
              TT_UNROLL
              for (int e = 0; e < V; ++e) v[e] = stg[c * EP + r + e];
              if (beta != 0.0f) {
                float o[V];
                CVec<TC, V>::load(col + r, o);
                TT_UNROLL
                for (int e = 0; e < V; ++e) v[e] = E::add_c(v[e], beta, o[e]);
              }
              CVec<TC, V>::store(col + r, v);
            }
            for (int e = k; e < 2 * V; e += TPC) {
              const int r = tt_runs::scalar_row(runs, e, V);
              if (r < 0) continue;
              float x = stg[c * EP + r];
              if (beta != 0.0f) x = E::add_c(x, beta, E::in(col[r]));
              col[r] = E::out(x);
            }
          }
        } else {
          // Unaligned C (e.g. odd ldc): scalars, consecutive lanes on consecutive rows.
          TT_UNROLL
          for (int i = tid; i < WM * EN; i += 128) {
            const int r = i % WM, c = i / WM;
            const int gm = m_base + r, gn = n_tile + ch * EN + c;
            if (gm < M && gn < N) {
              TC* dst = C + gm + (long long)gn * ldc;
              float x = stg[c * EP + r];
              if (beta != 0.0f) x = E::add_c(x, beta, E::in(*dst));
              *dst = E::out(x);
            }
          }
        }
      }
    }
    // The CTA's shared memory must outlive the TMA stores' reads of it.
    if (EPI == 1 && tid == 0) bulk_wait_read<0>();
  }
}
