// wgmma_gemm's tf32 A from registers (AREG 1, kernel_templates/wgmma_afrag.h) on the host: a
// 64-row MN-major fp32 sub-tile is placed as TMA's 128-byte swizzle places it (byte a of a
// 1024-aligned tile of 128-byte lines, 32 rows of one k each, at a ^ ((a >> 7 & 7) << 4)), every
// warp's loads are replayed at each k8 step, and each lane's registers must hold the elements of
// the PTX ISA's A fragment of wgmma m64nNk8 .tf32; every 32-bit load of a warp must hit 32
// different banks. Also which variants the template's constraints admit with AREG 1; and the 16-bit
// fragment (wgmma_tap_wgrad's AREG) replayed through ldmatrix.x4.trans the same way. No GPU.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "kernel_templates/wgmma_afrag.h"
#include "solutions/kernel_template.h"
#include "tests/test_util.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

constexpr int kAfragBK = 32;    // fp32 k per 128-byte line
constexpr int kAfragRows = 64;  // one wgmma m64 sub-tile

// The PTX ISA's A fragment of wgmma m64nNk8 .tf32: warp w's lane l holds, in register i, row
// 16 w + l / 4 (+ 8 for i = 1, 3) and k l % 4 (+ 4 for i = 2, 3).
int frag_row(int warp, int lane, int i) { return 16 * warp + lane / 4 + 8 * (i % 2); }
int frag_k(int lane, int i) { return lane % 4 + 4 * (i / 2); }

TEST(WgmmaAFragment, LoadsThePtxFragmentAtEveryK8StepWithoutBankConflicts) {
  auto x = [](int r, int k) { return float(r * 1000 + k + 1); };
  std::vector<unsigned char> tile(kAfragRows * kAfragBK * 4, 0);
  auto swizzle = [](unsigned a) { return a ^ (((a >> 7) & 7u) << 4); };
  for (int r = 0; r < kAfragRows; ++r)
    for (int k = 0; k < kAfragBK; ++k) {
      const float v = x(r, k);
      std::memcpy(&tile[swizzle(unsigned(((r / 32) * kAfragBK + k) * 128 + 4 * (r % 32)))], &v, 4);
    }
  for (int kk = 0; kk < 4; ++kk)
    for (int w = 0; w < 4; ++w) {
      float reg[32][4];
      int filled[32][4] = {};
      for (int p = 0; p < 4; ++p) {
        std::set<unsigned> banks;
        for (int l = 0; l < 32; ++l) {
          const unsigned off = tt_afrag::load_offset(w, l, p, kAfragBK) + 1024u * unsigned(kk);
          ASSERT_EQ(off % 4, 0u);
          ASSERT_LT(off, tile.size());
          banks.insert(off / 4 % 32);
          const int i = tt_afrag::load_register(l, p);
          ASSERT_GE(i, 0);
          ASSERT_LT(i, 4);
          std::memcpy(&reg[l][i], &tile[off], 4);
          ++filled[l][i];
        }
        EXPECT_EQ(banks.size(), 32u) << "bank conflict: warp " << w << " load " << p << " k8 step " << kk;
      }
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i) {
          ASSERT_EQ(filled[l][i], 1) << "warp " << w << " lane " << l << " register " << i;
          EXPECT_EQ(reg[l][i], x(frag_row(w, l, i), 8 * kk + frag_k(l, i)))
              << "warp " << w << " lane " << l << " register " << i << " k8 step " << kk;
        }
    }
}

// The plain per-register load (register i in load i) is what the mapping avoids: 2-way conflicts.
TEST(WgmmaAFragment, ThePlainMappingWouldConflict) {
  std::set<unsigned> banks;
  for (int l = 0; l < 32; ++l) {
    const int r = frag_row(0, l, 0);
    banks.insert((tt_xpose::landing_offset(r & ~3, frag_k(l, 0), kAfragBK) + 4u * unsigned(r & 3)) / 4 % 32);
  }
  EXPECT_EQ(banks.size(), 16u);
}

// A 16-bit MN-major stage as TMA's 128-byte swizzle lays it out: element (k, row) is the 16-bit
// value k * 64 + row (64 rows, 64 k lines), at line k, chunk row / 8 XOR k % 8, slot row % 8.
std::vector<std::uint16_t> swizzled_16bit_stage() {
  std::vector<std::uint16_t> smem(64 * 64);
  for (int k = 0; k < 64; ++k)
    for (int row = 0; row < 64; ++row) smem[k * 64 + (((row / 8) ^ (k % 8)) * 8) + row % 8] = (std::uint16_t)(k * 64 + row);
  return smem;
}

// ldmatrix.x4.trans on the host: lane l gives the byte offset of row l % 8 of matrix l / 8 (eight
// 16-bit elements); lane l = 4 g + t receives in register i the elements (2t, g) and (2t + 1, g) of
// matrix i, i.e. column g of the rows 2t and 2t + 1 it was given.
std::vector<std::array<std::array<std::uint16_t, 2>, 4>> ldmatrix_x4_trans(const std::vector<std::uint16_t>& smem,
                                                                         const unsigned (&offset)[32]) {
  std::vector<std::array<std::array<std::uint16_t, 2>, 4>> regs(32);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i)
      for (int h = 0; h < 2; ++h) {
        const unsigned row_at = offset[8 * i + 2 * (lane % 4) + h];
        regs[lane][i][h] = smem[row_at / 2 + lane / 4];
      }
  return regs;
}

TEST(WgmmaAFragment, SixteenBitFragmentThroughLdmatrixTransAtEveryK16StepWithoutBankConflicts) {
  const std::vector<std::uint16_t> smem = swizzled_16bit_stage();
  for (int warp = 0; warp < 4; ++warp)
    for (int kk = 0; kk < 4; ++kk) {
      unsigned offset[32];
      for (int lane = 0; lane < 32; ++lane) {
        offset[lane] = tt_afrag::ldsm16_offset(warp, lane, kk);
        ASSERT_EQ(offset[lane] % 16, 0u);
        ASSERT_EQ(offset[lane], tt_afrag::ldsm16_offset(warp, lane, 0) + 2048u * kk);  // the kernel adds 2048 a step
      }
      const auto regs = ldmatrix_x4_trans(smem, offset);
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 4; ++i)
          for (int h = 0; h < 2; ++h) {
            // The PTX ISA's fragment of m64nNk16 (16-bit): row 16 w + l / 4 (+ 8 for registers 1, 3),
            // k 2 (l % 4) + h (+ 8 for registers 2, 3), in k16 step kk.
            const int row = 16 * warp + lane / 4 + 8 * (i % 2);
            const int k = 16 * kk + 2 * (lane % 4) + h + 8 * (i / 2);
            EXPECT_EQ(regs[lane][i][h], k * 64 + row) << "warp " << warp << " kk " << kk << " lane " << lane << " reg " << i;
          }
      // Each matrix's 8 rows are read in one phase: 8 different 16-byte bank groups.
      for (int m = 0; m < 4; ++m) {
        std::set<unsigned> groups;
        for (int j = 0; j < 8; ++j) groups.insert((offset[8 * m + j] / 16) % 8);
        EXPECT_EQ(groups.size(), 8u) << "warp " << warp << " kk " << kk << " matrix " << m;
      }
    }
}

TEST(WgmmaAFragment, ConstraintsAdmitAFromRegistersForTf32WithAnMnMajorAOnly) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  const auto dev = fake_device(gpu::BackendKind::Cuda);
  Solution s = t.default_solution();
  s.params["AREG"] = 1, s.params["BK"] = 32, s.params["PINGPONG"] = 0, s.params["STAGES"] = 4;
  auto tf32 = [](bool ta, bool tb) {
    GemmProblem p = gemm(DataType::F32, DataType::F32, ta, tb, 1000, 1000, 1000);
    p.compute_tf32 = true;
    return p;
  };
  for (int loader : {0, 1, 2})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        s.params["LOADER"] = loader;
        const GemmProblem p = tf32(ta, tb);
        const auto broken = t.violation(t.variables(s, p, dev));
        // NN by TMA or cp.async; NT with B through the transposing loader; A K-major needs no AREG.
        const bool admitted = !ta && (tb ? loader == 2 : loader != 2);
        EXPECT_EQ(!broken, admitted) << p.key() << " LOADER " << loader << (broken ? ": " + *broken : "");
      }
  // 128 accumulators a thread and 32 fragment registers fit (no spills: test_cuda_compile), except
  // with LOADER 2's transpose, which keeps to 64.
  s.params["LOADER"] = 0;
  Solution pingpong_wide = s;
  pingpong_wide.params["PINGPONG"] = 1, pingpong_wide.params["BM"] = 128, pingpong_wide.params["BN"] = 128;
  EXPECT_FALSE(t.violation(t.variables(pingpong_wide, tf32(false, false), dev)));
  pingpong_wide.params["LOADER"] = 2;
  EXPECT_TRUE(t.violation(t.variables(pingpong_wide, tf32(false, true), dev)));
  Solution bf16 = s;
  bf16.params["BK"] = 64;
  EXPECT_TRUE(t.violation(t.variables(bf16, gemm(DataType::BF16, DataType::BF16, false, false, 1000, 1000, 1000), dev)));
  // The model: AREG drops LOADER 2's transpose of A (landing slots and traffic), not B's.
  Solution nt = s, nt_transposed = s;
  nt.params["LOADER"] = 2, nt_transposed.params["LOADER"] = 2, nt_transposed.params["AREG"] = 0;
  const Variables v1 = t.variables(nt, tf32(false, true), dev), v0 = t.variables(nt_transposed, tf32(false, true), dev);
  EXPECT_LT(v1.at("SMEM_BYTES"), v0.at("SMEM_BYTES"));
}

}  // namespace
