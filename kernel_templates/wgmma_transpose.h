// wgmma_gemm's transposing loader (LOADER 2, tf32): tf32 wgmma reads both operands K-major only,
// so an MN-major fp32 operand (A in NN / NT, B in NT / TT) lands in shared memory as cp.async
// writes it (the MN-major layout of the 16-bit path: lines of 32 rows of one k, 128-byte swizzle
// over 16-byte chunks) and the producer warpgroup rewrites it into the K-major stage wgmma reads
// (the layout TMA gives a K-major operand: a 128-byte line of 32 k per row, 128-byte swizzle).
// Each thread moves blocks of 4 rows x 4 k: four 16-byte reads (one per k: 4 rows), a 4 x 4
// transpose in registers, four 16-byte writes (one per row: 4 k). The functions are shared by
// the kernel and a host test (tests/test_wgmma_transpose.cpp) that replays the whole move and
// checks it against the K-major layout and for shared-memory bank conflicts.
#ifndef TILETUNE_WGMMA_TRANSPOSE_H
#define TILETUNE_WGMMA_TRANSPOSE_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TT_XPOSE_FN __host__ __device__ inline
#else
#define TT_XPOSE_FN inline
#endif

namespace tt_xpose {

// Both cp.async layouts (wgmma_gemm.cuh's cp_async_stage) put 16-byte chunk c of 128-byte line
// `line` here: the 128-byte swizzle, as TMA would.
TT_XPOSE_FN unsigned chunk_offset(int line, int c) { return ((unsigned)line << 7) + ((unsigned)(c ^ (line & 7)) << 4); }

// An MN-major tile's 16-byte chunk q (of ROWS / (8 e) * bk lines of 8 chunks, e elements a chunk):
// its line and chunk, and the first of its e rows and its k, relative to the tile.
TT_XPOSE_FN void mn_major_chunk(int q, int e, int bk, int& line, int& c, int& r, int& k) {
  c = q & 7;
  line = q >> 3;
  r = 8 * e * (line / bk) + e * c;
  k = line % bk;
}

// Landing layout (MN-major fp32, as cp_async_stage writes it): byte offset of the chunk holding
// rows r .. r + 3 (r % 4 == 0) of k; bk k per 32-row line group.
TT_XPOSE_FN unsigned landing_offset(int r, int k, int bk) { return chunk_offset((r >> 5) * bk + k, (r & 31) >> 2); }

// K-major stage layout (128-byte swizzle, 32 fp32 of K per row): byte offset of row r's 16-byte
// chunk c (k = 4 c .. 4 c + 3).
TT_XPOSE_FN unsigned kmajor_offset(int r, int c) { return ((unsigned)r << 7) + ((unsigned)(c ^ (r & 7)) << 4); }

// Block i of thread tid (128 threads, ROWS / 4 x BK / 4 blocks): first row r0 and K chunk c.
// Consecutive threads take consecutive row blocks of one K chunk, so that the 8 threads of a
// 16-byte access phase read 8 chunks of one landing line.
TT_XPOSE_FN void block_of(int tid, int i, int rows, int& r0, int& c) {
  const int b = tid + 128 * i;
  r0 = 4 * (b % (rows / 4));
  c = b / (rows / 4);
}

// The row (0..3 within the block) a thread writes in its p-th store: rotated by the block's row,
// so that the 8 threads of a phase (8 consecutive row blocks, rows r0 = 32 q + 4 j) write rows
// whose r & 7 differ, i.e. 8 different 16-byte columns of the swizzle: no bank conflict.
TT_XPOSE_FN int write_row(int r0, int p) { return (p + (r0 >> 3)) & 3; }

}  // namespace tt_xpose

#endif  // TILETUNE_WGMMA_TRANSPOSE_H
