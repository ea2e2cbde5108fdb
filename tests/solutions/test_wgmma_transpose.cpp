// wgmma_gemm's transposing loader (kernel_templates/wgmma_transpose.h) on the host: an MN-major
// fp32 tile is laid out chunk by chunk as the kernel's cp_async_stage lands it, every thread's
// blocks are moved as the kernel moves them, and the result must be the K-major tile as the
// hardware's 128-byte swizzle places it (byte a of a 1024-aligned row-major tile of 128-byte
// rows at a ^ ((a >> 7 & 7) << 4), which TMA writes and the wgmma descriptors read), every
// byte written once; the 8 threads of each 16-byte access phase must hit 8 different 16-byte
// columns of shared memory (no bank conflicts), reading and writing. Also which tf32 variants the
// template's constraints admit with LOADER 2. No GPU needed.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "kernel_templates/wgmma_transpose.h"
#include "solutions/kernel_template.h"
#include "tests/test_util.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

constexpr int BK = 32;  // fp32 elements per 128-byte line

void check_tile(int rows) {
  // X(r, k) = a distinct value per element.
  auto x = [](int r, int k) { return float(r * 1000 + k + 1); };
  const int bytes = rows * BK * 4;
  std::vector<unsigned char> landing(bytes, 0), stage(bytes, 0);
  std::vector<int> written(bytes / 16, 0);
  // cp_async_stage's chunks of an MN-major tile: 4 rows of one k each.
  std::vector<int> landed(bytes / 16, 0);
  for (int q = 0; q < rows / 32 * BK * 8; ++q) {
    int line, c, r, k;
    tt_xpose::mn_major_chunk(q, 4, BK, line, c, r, k);
    const float chunk[4] = {x(r, k), x(r + 1, k), x(r + 2, k), x(r + 3, k)};
    const unsigned off = tt_xpose::chunk_offset(line, c);
    ASSERT_LE(off + 16, unsigned(bytes));
    ASSERT_EQ(off, tt_xpose::landing_offset(r, k, BK));
    std::memcpy(&landing[off], chunk, 16);
    ++landed[off / 16];
  }
  for (int l : landed) ASSERT_EQ(l, 1);
  const int blocks = rows / 4 * BK / 4;
  ASSERT_EQ(blocks % 128, 0);
  for (int i = 0; i < blocks / 128; ++i) {
    // Phases of 8 threads: reads (one per k of the block), then writes (one per store p).
    for (int phase = 0; phase < 16; ++phase) {
      for (int kk = 0; kk < 4; ++kk) {
        std::set<unsigned> columns;
        for (int t = 8 * phase; t < 8 * phase + 8; ++t) {
          int r0, c;
          tt_xpose::block_of(t, i, rows, r0, c);
          columns.insert((tt_xpose::landing_offset(r0, 4 * c + kk, BK) % 128) / 16);
        }
        EXPECT_EQ(columns.size(), 8u) << "read conflict, rows " << rows << " phase " << phase;
      }
      for (int p = 0; p < 4; ++p) {
        std::set<unsigned> columns;
        for (int t = 8 * phase; t < 8 * phase + 8; ++t) {
          int r0, c;
          tt_xpose::block_of(t, i, rows, r0, c);
          columns.insert((tt_xpose::kmajor_offset(r0 + tt_xpose::write_row(r0, p), c) % 128) / 16);
        }
        EXPECT_EQ(columns.size(), 8u) << "write conflict, rows " << rows << " phase " << phase;
      }
    }
    for (int t = 0; t < 128; ++t) {
      int r0, c;
      tt_xpose::block_of(t, i, rows, r0, c);
      float v[4][4];  // v[kk][j] = X(r0 + j, 4 c + kk)
      for (int kk = 0; kk < 4; ++kk) std::memcpy(v[kk], &landing[tt_xpose::landing_offset(r0, 4 * c + kk, BK)], 16);
      for (int p = 0; p < 4; ++p) {
        const int j = tt_xpose::write_row(r0, p);
        const float out[4] = {v[0][j], v[1][j], v[2][j], v[3][j]};
        const unsigned off = tt_xpose::kmajor_offset(r0 + j, c);
        std::memcpy(&stage[off], out, 16);
        ++written[off / 16];
      }
    }
  }
  for (int w : written) EXPECT_EQ(w, 1);
  // The K-major tile through the hardware's 128-byte swizzle.
  auto swizzle = [](unsigned a) { return a ^ (((a >> 7) & 7u) << 4); };
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < BK; ++k) {
      float got;
      std::memcpy(&got, &stage[swizzle(unsigned(r * 128 + 4 * k))], 4);
      ASSERT_EQ(got, x(r, k)) << "rows " << rows << " r " << r << " k " << k;
    }
}

TEST(WgmmaTranspose, MovesEveryTileSizeIntoTheKMajorLayoutWithoutBankConflicts) {
  for (int rows : {64, 128, 192, 256}) check_tile(rows);
}

TEST(WgmmaTranspose, ConstraintsAdmitLoader2ForTf32WithAnMnMajorOperandOnly) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const auto dev = fake_device(gpu::BackendKind::Cuda);
  Solution s = t.default_solution();
  s.params["LOADER"] = 2, s.params["BK"] = 32, s.params["PINGPONG"] = 0, s.params["STAGES"] = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      GemmProblem p = gemm(DataType::F32, DataType::F32, ta, tb, 1000, 1000, 1000);
      p.compute_tf32 = true;
      const auto broken = t.violation(t.variables(s, p, dev));
      if (ta && !tb)
        EXPECT_TRUE(broken) << "TN is K-major already: LOADER 2 would duplicate LOADER 1";
      else
        EXPECT_FALSE(broken) << p.key() << ": " << *broken;
    }
  const GemmProblem bf16 = gemm(DataType::BF16, DataType::BF16, false, false, 1000, 1000, 1000);
  Solution h = s;
  h.params["BK"] = 64;
  EXPECT_TRUE(t.violation(t.variables(h, bf16, dev)));  // 16-bit wgmma reads MN-major operands itself
}

}  // namespace
