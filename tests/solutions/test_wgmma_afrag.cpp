// wgmma_gemm's tf32 A from registers (AREG 1, kernel_templates/wgmma_afrag.h) on the host: a
// 64-row MN-major fp32 sub-tile is placed as TMA's 128-byte swizzle places it (byte a of a
// 1024-aligned tile of 128-byte lines, 32 rows of one k each, at a ^ ((a >> 7 & 7) << 4)), every
// warp's loads are replayed at each k8 step, and each lane's registers must hold the elements of
// the PTX ISA's A fragment of wgmma m64nNk8 .tf32; every 32-bit load of a warp must hit 32
// different banks. Also which variants the template's constraints admit with AREG 1. No GPU.
#include <gtest/gtest.h>

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
