// C's column phases (REPACK 2): the plan (solutions/gemm_problem.h, column_phases) and the launches
// one call makes (ops/column_phases.h), replayed on the host device with a plain GEMM standing in for
// the kernel. The stand-in writes as a TMA store does: every launch's C must start on 16 bytes with
// whole 16-byte strides, and past its M it fills the rest of the column's last 16-byte run with junk,
// so that a plan relying on element-exact clipping fails here.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/backend.h"
#include "ops/column_phases.h"
#include "ops/elements.h"
#include "tests/test_util.h"

using namespace tiletune;

namespace {

GemmProblem tn(DataType c, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t ldc, bool beta_zero = true) {
  GemmProblem p = tiletune::testing::gemm(DataType::BF16, c, true, false, m, n, k, 1, beta_zero);
  p.ldc = ldc;
  return p.canonical();
}

TEST(ColumnPhases, PlanCutsCIntoThePhasesItsStrideAllows) {
  const ColumnPhases odd = column_phases(tn(DataType::BF16, 50257, 4096, 768, 50257));
  EXPECT_EQ(odd.phases, 8);
  EXPECT_EQ(odd.kernel_problem.m, 50256);
  EXPECT_EQ(odd.kernel_problem.n, 512);
  EXPECT_EQ(odd.kernel_problem.ldb, 8 * 768);
  EXPECT_EQ(odd.kernel_problem.ldc, 8 * 50257);
  EXPECT_EQ(odd.head_rows, 8);
  EXPECT_EQ(odd.tail_ld, 16);
  EXPECT_EQ(odd.bytes, odd.tail_offset + 16 * 4096 * 2);
  EXPECT_EQ(column_phases(tn(DataType::F16, 1000, 100, 64, 1002)).phases, 4);  // 2004 bytes: 4 mod 16
  EXPECT_EQ(column_phases(tn(DataType::BF16, 1000, 100, 64, 1004)).phases, 2);
  EXPECT_EQ(column_phases(tn(DataType::F32, 1000, 100, 64, 1001)).phases, 4);
  EXPECT_EQ(column_phases(tn(DataType::F32, 1000, 100, 64, 1001)).kernel_problem.m, 1000);
  EXPECT_EQ(column_phases(tn(DataType::F32, 1000, 100, 64, 1002)).phases, 2);
  // Not taken: C already whole 16-byte columns, A or B not K-major, a batch, few rows or columns,
  // A off 16 bytes.
  EXPECT_EQ(column_phases(tn(DataType::BF16, 1000, 100, 64, 1000)).phases, 0);
  GemmProblem nn = tn(DataType::BF16, 1000, 100, 64, 1001);
  nn.trans_a = false, nn.lda = 1000;
  EXPECT_EQ(column_phases(nn.canonical()).phases, 0);
  GemmProblem nt = tn(DataType::BF16, 1000, 100, 64, 1001);
  nt.trans_b = true, nt.ldb = 100;
  EXPECT_EQ(column_phases(nt.canonical()).phases, 0);
  GemmProblem batched = tn(DataType::BF16, 1000, 100, 64, 1001);
  batched.batch = 2;
  EXPECT_EQ(column_phases(batched.canonical()).phases, 0);
  EXPECT_EQ(column_phases(tn(DataType::BF16, 63, 100, 64, 63)).phases, 0);
  EXPECT_EQ(column_phases(tn(DataType::BF16, 1000, 7, 64, 1001)).phases, 0);
  GemmProblem odd_lda = tn(DataType::BF16, 1000, 100, 64, 1001);
  odd_lda.lda = 65;
  EXPECT_EQ(column_phases(odd_lda.canonical()).phases, 0);
}

// The GEMM of one launch on host memory, written as the TMA store writes (see the file's comment).
// `exact`: element-exact instead (the reference).
void stand_in(const GemmProblem& p, const TtGemmParams& g, bool to_scratch, std::vector<std::string>& errors,
              bool exact = false) {
  const int cb = size_of(p.c_type);
  const auto c_addr = reinterpret_cast<std::uintptr_t>(g.c);
  if (!to_scratch && (c_addr % 16 != 0 || (g.ldc * cb) % 16 != 0 || (g.m * cb) % 16 != 0))
    errors.push_back("a phase's C is not whole 16-byte runs (address % 16 = " + std::to_string(c_addr % 16) +
                     ", ldc " + std::to_string(g.ldc) + ", m " + std::to_string(g.m) + ")");
  if (reinterpret_cast<std::uintptr_t>(g.a) % 16 != 0 || reinterpret_cast<std::uintptr_t>(g.b) % 16 != 0)
    errors.push_back("a launch's A or B is off 16 bytes");
  const auto* a = static_cast<const std::uint8_t*>(g.a);
  const auto* b = static_cast<const std::uint8_t*>(g.b);
  auto* c = static_cast<std::uint8_t*>(g.c);
  const std::int64_t run = exact ? 1 : 16 / cb, rows = (g.m + run - 1) / run * run;
  for (std::int64_t j = 0; j < g.n; ++j)
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t at = i + j * g.ldc;
      if (i >= g.m) {  // the rest of the last 16-byte run
        ops::store_element(c, at, p.c_type, -777.f);
        continue;
      }
      double s = 0;
      for (std::int64_t l = 0; l < g.k; ++l)
        s += ops::load_element(a, l + i * g.lda, p.a_type) * ops::load_element(b, l + j * g.ldb, p.a_type);
      double v = g.alpha * s;
      if (g.beta != 0.f) v += g.beta * ops::load_element(c, at, p.c_type);
      ops::store_element(c, at, p.c_type, float(v));
    }
}

// Every phase count, C at every element offset from 16 bytes, beta zero or not, a ldc past M: the
// launches add up to the whole GEMM, and no byte outside C changes.
TEST(ColumnPhases, LaunchesComputeTheWholeGemmAtEveryOffsetOfC) {
  auto dev = gpu::open_device(gpu::BackendKind::Host, 0);
  std::mt19937_64 rng(7);
  const std::vector<GemmProblem> problems = {tn(DataType::BF16, 75, 21, 24, 77), tn(DataType::BF16, 64, 8, 16, 67, false),
                                             tn(DataType::F16, 90, 13, 8, 90, false), tn(DataType::F32, 70, 9, 16, 71),
                                             tn(DataType::BF16, 100, 17, 8, 102)};
  for (const GemmProblem& p : problems) {
    const ColumnPhases plan = column_phases(p);
    ASSERT_GT(plan.phases, 0) << p.key();
    const int cb = size_of(p.c_type), ab = size_of(p.a_type);
    for (int off = 0; off < 16 / cb; ++off)
      for (float beta : {0.f, 1.5f}) {
        if (beta != 0.f && p.beta_zero) continue;
        std::vector<std::uint8_t> a(std::size_t(p.elements_a() * ab) + 16), b(std::size_t(p.elements_b() * ab) + 16);
        const std::size_t c_bytes = std::size_t(p.elements_c() * cb);
        std::vector<std::uint8_t> c(c_bytes + 64, 0xAB), want, scratch(std::size_t(plan.bytes) + 256, 0);
        auto align16 = [](std::uint8_t* x) { return x + (16 - reinterpret_cast<std::uintptr_t>(x) % 16) % 16; };
        std::uint8_t* pa = align16(a.data());
        std::uint8_t* pb = align16(b.data());
        std::uint8_t* pc = align16(c.data()) + 16 + off * cb;
        for (std::int64_t i = 0; i < p.elements_a(); ++i) ops::store_element(pa, i, p.a_type, ops::random_input(rng));
        for (std::int64_t i = 0; i < p.elements_b(); ++i) ops::store_element(pb, i, p.a_type, ops::random_input(rng));
        for (std::int64_t j = 0; j < p.n; ++j)
          for (std::int64_t i = 0; i < p.m; ++i) ops::store_element(pc, i + j * p.ldc, p.c_type, ops::random_input(rng));
        TtGemmParams g{pa, pb, pc, p.lda, p.ldb, p.ldc, 0, 0, 0, int(p.m), int(p.n), int(p.k), 1, 0.75f, beta, nullptr};
        // The reference: the plain GEMM on a copy, written element-exact.
        want = c;
        std::vector<std::string> errors;
        TtGemmParams r = g;
        r.c = want.data() + (pc - c.data());
        stand_in(p, r, true, errors, true);
        std::uint8_t* s = align16(scratch.data());
        ops::run_column_phases(*dev, p, plan, g, s, nullptr, [&](const TtGemmParams& launch) {
          const bool to_scratch = launch.c >= static_cast<void*>(s) && launch.c < static_cast<void*>(s + plan.bytes);
          stand_in(p, launch, to_scratch, errors);
        });
        EXPECT_TRUE(errors.empty()) << p.key() << " at offset " << off << ": " << errors.front();
        std::int64_t differ = 0, first = -1;
        for (std::size_t i = 0; i < c.size(); ++i)
          if (c[i] != want[i] && (++differ, first < 0)) first = std::int64_t(i);
        // Both sides ran the same sums in the same order: equal bytes, C and around it.
        EXPECT_EQ(differ, 0) << p.key() << " at offset " << off << ", beta " << beta << ": first at byte "
                             << first - (pc - c.data());
      }
  }
}

}  // namespace
