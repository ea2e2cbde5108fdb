// narrow_fwd's staged rows (kernel_templates/narrow_conv_index.h) compiled for the host: input rows
// staged as the kernel stages them (zeros, then the row at XOFF), every element the kernel reads
// for a pixel of its m16 tiles and a column of its k16 steps replayed on integer data against
// filters zero past S * C, the sums compared with the convolution's definition, every read inside
// the staged row; and the template's JSON sizing a staged row as the header does. narrow_col2im's
// tiles likewise: dy blocks staged per tile, Z and the gather replayed on integers against the input
// gradient's definition, every read inside the block, and the JSON's shared memory; and the paired rows of
// wgmma_narrow_wgrad and wgmma_narrow_fwd against the im2col operand their A registers must hold. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernel_templates/narrow_conv_index.h"
#include "solutions/kernel_template.h"
#include "tests/test_util.h"

using namespace tiletune;

namespace {

struct Shape {
  int n, c, h, w, k, rs, stride, pad;
};

// The variables of template `t`'s default solution with `params` set, for the shape as a bf16 problem of
// `direction` with square filters and strides.
Variables variables_of(const KernelTemplate& t, const Shape& f, ConvDirection direction,
                       const std::vector<std::pair<std::string, int>>& params) {
  ConvProblem p;
  p.direction = direction, p.in_type = p.out_type = DataType::BF16;
  p.n = f.n, p.c = f.c, p.h = f.h, p.w = f.w, p.k = f.k, p.r = p.s = f.rs, p.stride_h = p.stride_w = f.stride;
  p.pad_h = p.pad_w = f.pad, p.dil_h = p.dil_w = 1, p.groups = 1;
  Solution s = t.default_solution();
  for (const auto& [name, value] : params) s.params[name] = value;
  return t.variables(s, Problem(p), tiletune::testing::fake_device(gpu::BackendKind::Cuda));
}

// The same with KC (narrow_fwd's and narrow_col2im's K / 16) set to the shape's.
Variables default_variables(const KernelTemplate& t, const Shape& f, ConvDirection direction) {
  return variables_of(t, f, direction, {{"KC", f.k / 16}});
}

// The shapes of tests/backends/cuda/test_cuda_narrow_conv.cpp's fwd_problems and the stem itself
// (one image).
const std::vector<Shape> kShapes = {{2, 3, 40, 40, 64, 7, 2, 3}, {3, 4, 17, 38, 48, 5, 2, 2},
                                    {2, 8, 21, 19, 16, 3, 1, 1}, {2, 8, 12, 14, 128, 5, 1, 2},
                                    {3, 3, 24, 24, 32, 3, 1, 1}, {1, 3, 224, 224, 64, 7, 2, 3}};

TEST(NarrowFwdIndex, StagedRowsReadAtLinearOffsetsAddUpToTheConvolution) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> val(-4, 4);
  for (const Shape& f : kShapes) {
    const int P = (f.h + 2 * f.pad - f.rs) / f.stride + 1, Q = (f.w + 2 * f.pad - f.rs) / f.stride + 1;
    const tt_narrow::FwdRow geo(f.w, f.c, Q, f.rs, f.pad, f.stride);
    ASSERT_EQ(geo.elems % 8, 0);
    ASSERT_EQ(geo.xoff % 8, 0);
    std::vector<int> x(std::size_t(f.n) * f.h * f.w * f.c), wt(std::size_t(f.k) * f.rs * f.rs * f.c);
    for (int& v : x) v = val(rng);
    for (int& v : wt) v = val(rng);
    const int J = f.rs * f.c, QP = (Q + 15) / 16 * 16;
    for (int n = 0; n < f.n; ++n)
      for (int p = 0; p < P; ++p) {
        if (P > 32 && p > 2 && p < P - 3) continue;  // the stem: its top and bottom rows (padding) suffice
        // The R staged rows of output row (n, p): XOFF zeros, the input row, zeros.
        std::vector<std::vector<int>> rows(f.rs, std::vector<int>(geo.elems, 0));
        for (int r = 0; r < f.rs; ++r) {
          const int h = p * f.stride - f.pad + r;
          if (h < 0 || h >= f.h) continue;
          for (int e = 0; e < f.w * f.c; ++e) rows[r][geo.xoff + e] = x[(std::size_t(n) * f.h + h) * f.w * f.c + e];
        }
        for (int q = 0; q < QP; ++q)
          for (int k = 0; k < f.k; ++k) {
            long long kernel = 0;
            for (int r = 0; r < f.rs; ++r)
              for (int j = 0; j < geo.jp; ++j) {
                const int e = geo.element(q, j, f.c, f.pad, f.stride);
                ASSERT_GE(e, 0);
                ASSERT_LT(e, geo.elems) << "q " << q << " j " << j;
                const int w = j < J ? wt[(std::size_t(k) * f.rs + r) * J + j] : 0;  // zero past S * C
                kernel += (long long)rows[r][e] * w;
              }
            if (q >= Q) continue;  // tile padding: computed, never stored
            long long want = 0;
            for (int r = 0; r < f.rs; ++r)
              for (int s = 0; s < f.rs; ++s) {
                const int h = p * f.stride - f.pad + r, w = q * f.stride - f.pad + s;
                if (h < 0 || h >= f.h || w < 0 || w >= f.w) continue;
                for (int c = 0; c < f.c; ++c)
                  want += (long long)x[((std::size_t(n) * f.h + h) * f.w + w) * f.c + c] *
                          wt[((std::size_t(k) * f.rs + r) * f.rs + s) * f.c + c];
              }
            ASSERT_EQ(kernel, want) << "shape c" << f.c << " w" << f.w << " n " << n << " p " << p << " q " << q
                                    << " k " << k;
          }
      }
  }
}

// The JSON's XL (its SMEM_BYTES) is the header's row size.
TEST(NarrowFwdIndex, TheTemplateSizesAStagedRowAsTheKernel) {
  const KernelTemplate& t = find_template("narrow_fwd");
  for (const Shape& f : kShapes) {
    const Variables v = default_variables(t, f, ConvDirection::Forward);
    const int Q = (f.w + 2 * f.pad - f.rs) / f.stride + 1;
    const tt_narrow::FwdRow geo(f.w, f.c, Q, f.rs, f.pad, f.stride);
    EXPECT_EQ(v.at("XL"), geo.elems) << f.c << " " << f.w;
    EXPECT_EQ(v.at("JP"), geo.jp);
    EXPECT_EQ(v.at("XOFF"), geo.xoff);
  }
}

// The shapes of test_cuda_narrow_conv.cpp's dgrad_problems (odd widths, one channel, a 1x1 stride-2 layer whose
// odd pixels no tap reaches, stride 1), and the stem's full width over 37 rows (its last tile row cut short).
const std::vector<Shape> kDgradShapes = {{2, 3, 40, 38, 64, 7, 2, 3}, {3, 4, 17, 21, 32, 5, 1, 2},
                                         {2, 1, 23, 25, 16, 3, 2, 1}, {2, 8, 14, 14, 48, 1, 2, 0},
                                         {1, 3, 37, 224, 16, 7, 2, 3}};

// narrow_col2im's (TP, TQ) choices and the stride / padding of each shape: every tile stages its MP x MQ dy
// block (zeros outside dy), computes Z = block * filters, and sums for each of its dx pixels the Z entries of
// the taps that reach it, as the kernel does; the result equals the input gradient summed by definition.
TEST(NarrowCol2imIndex, TilesOfStagedDyBlocksAddUpToTheInputGradient) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> val(-3, 3);
  for (const Shape& f : kDgradShapes)
    for (const auto& [tp, tq] : std::vector<std::pair<int, int>>{{4, 8}, {8, 16}, {4, 16}}) {
      const int R = f.rs, S = f.rs, C = f.c, sd = f.stride;
      const int P = (f.h + 2 * f.pad - R) / sd + 1, Q = (f.w + 2 * f.pad - S) / sd + 1;
      std::vector<int> dy(std::size_t(f.n) * P * Q * f.k), wt(std::size_t(f.k) * R * S * C);
      for (int& v : dy) v = val(rng);
      for (int& v : wt) v = val(rng);
      const tt_narrow::Col2imTile geo(tp, tq, R, S, sd, sd);
      const int rsc = R * S * C;
      std::vector<long long> dx(std::size_t(f.n) * f.h * f.w * C, 0);
      std::vector<char> written(dx.size(), 0);
      for (int n = 0; n < f.n; ++n)
        for (int h0 = 0; h0 < f.h; h0 += geo.bh)
          for (int w0 = 0; w0 < f.w; w0 += geo.bw) {
            const int p0 = tt_narrow::Col2imTile::first(h0, f.pad, R, sd);
            const int q0 = tt_narrow::Col2imTile::first(w0, f.pad, S, sd);
            // Z[(r, s, c)][m] of the block's pixels m = lp * MQ + lq.
            std::vector<long long> z(std::size_t(rsc) * geo.zm, 0);
            for (int m = 0; m < geo.mp * geo.mq; ++m) {
              const int pp = p0 + m / geo.mq, qq = q0 + m % geo.mq;
              if (pp < 0 || pp >= P || qq < 0 || qq >= Q) continue;  // staged as zeros
              for (int col = 0; col < rsc; ++col)
                for (int k = 0; k < f.k; ++k)
                  z[std::size_t(col) * geo.zm + m] +=
                      (long long)dy[((std::size_t(n) * P + pp) * Q + qq) * f.k + k] * wt[std::size_t(k) * rsc + col];
            }
            for (int h = h0; h < std::min(f.h, h0 + geo.bh); ++h)
              for (int w = w0; w < std::min(f.w, w0 + geo.bw); ++w)
                for (int c = 0; c < C; ++c) {
                  long long sum = 0;
                  for (int r = (h + f.pad) % sd; r < R; r += sd)
                    for (int s = (w + f.pad) % sd; s < S; s += sd) {
                      const int lp = (h + f.pad - r) / sd - p0, lq = (w + f.pad - s) / sd - q0;
                      ASSERT_TRUE(lp >= 0 && lp < geo.mp && lq >= 0 && lq < geo.mq)
                          << "c" << C << " w" << f.w << " tile " << tp << "x" << tq << " h " << h << " w " << w;
                      sum += z[std::size_t((r * S + s) * C + c) * geo.zm + lp * geo.mq + lq];
                    }
                  const std::size_t at = ((std::size_t(n) * f.h + h) * f.w + w) * C + c;
                  dx[at] = sum;
                  ++written[at];
                }
          }
      for (int n = 0; n < f.n; ++n)
        for (int h = 0; h < f.h; ++h)
          for (int w = 0; w < f.w; ++w)
            for (int c = 0; c < C; ++c) {
              long long want = 0;
              for (int r = 0; r < R; ++r)
                for (int s = 0; s < S; ++s) {
                  const int ph = h + f.pad - r, pw = w + f.pad - s;
                  if (ph % sd != 0 || pw % sd != 0 || ph < 0 || pw < 0 || ph / sd >= P || pw / sd >= Q) continue;
                  for (int k = 0; k < f.k; ++k)
                    want += (long long)dy[((std::size_t(n) * P + ph / sd) * Q + pw / sd) * f.k + k] *
                            wt[((std::size_t(k) * R + r) * S + s) * C + c];
                }
              const std::size_t at = ((std::size_t(n) * f.h + h) * f.w + w) * C + c;
              ASSERT_EQ(written[at], 1) << "every dx element is written by exactly one tile";
              ASSERT_EQ(dx[at], want) << "c" << C << " w" << f.w << " tile " << tp << "x" << tq << " n " << n
                                      << " h " << h << " w " << w << " c " << c;
            }
    }
}

// The JSON's SMEM_BYTES is the header's tile: filters and two dy stages of K + 8 halves a row, then Z.
TEST(NarrowCol2imIndex, TheTemplateSizesSharedMemoryAsTheKernel) {
  const KernelTemplate& t = find_template("narrow_col2im");
  for (const Shape& f : kDgradShapes) {
    const Variables v = default_variables(t, f, ConvDirection::BackwardData);
    const tt_narrow::Col2imTile geo(int(v.at("TP")), int(v.at("TQ")), f.rs, f.rs, f.stride, f.stride);
    const int nt8 = (f.rs * f.rs * f.c + 7) / 8, kst = (f.k + 8) * 2;
    EXPECT_EQ(v.at("SMEM_BYTES"), nt8 * 8 * kst + 2 * geo.m16 * 16 * kst + nt8 * 8 * geo.zm * 4) << f.c << " " << f.w;
    EXPECT_EQ(v.at("MP"), geo.mp);
    EXPECT_EQ(v.at("MQ"), geo.mq);
  }
}


// The wgmma narrow templates' pairs (PairRows): input rows staged as the kernels stage them and paired by the
// definition, then every A register of every warpgroup, lane and k16 step read back; its halves must be the im2col
// elements the register stands for (zero in the padding), and every read inside the pairs built.
struct Staged {
  std::vector<std::vector<unsigned>> pairs;  // [staged row][pair]
};
// geo.rows consecutive input rows from output row p's first.
Staged stage_and_pair(const Shape& f, const tt_narrow::PairRows& geo, const std::vector<int>& x, int n, int p) {
  const int xrows = geo.rows;
  std::vector<std::vector<unsigned>> rows(xrows, std::vector<unsigned>(geo.xl, 0u));
  for (int r = 0; r < xrows; ++r) {
    const int h = p * f.stride - f.pad + r;
    if (h < 0 || h >= f.h) continue;
    for (int e = 0; e < f.w * f.c; ++e) rows[r][geo.xoff + e] = unsigned(x[(std::size_t(n) * f.h + h) * f.w * f.c + e]);
  }
  Staged s;
  s.pairs.assign(xrows, std::vector<unsigned>(geo.xl, 0xFFFFFFFFu));
  for (int r = 0; r < xrows; ++r)
    for (int u = 0; u < geo.pairs(); ++u) s.pairs[r][u] = rows[r][u] | rows[r][u + geo.pd] << 16;
  return s;
}

long long im2col(const Shape& f, const std::vector<int>& x, int n, int p, int r, int q, int s, int c) {
  const int h = p * f.stride - f.pad + r, w = q * f.stride - f.pad + s;
  const bool in = h >= 0 && h < f.h && w >= 0 && w < f.w;
  return in ? x[((std::size_t(n) * f.h + h) * f.w + w) * f.c + c] : 0;
}

// Every register of every warpgroup, lane and k16 step of shape f's output rows (the stem: its top and bottom rows,
// where the padding is), in groups of `group` consecutive rows whose input rows are staged together and paired:
// check(st, x, n, p, g, row, k) for row g of the group starting at p (its filter rows staged from row g * stride)
// and the register's first (row, k) of A, random input x; stops at the first check that fails.
template <class Check>
void for_each_register(const Shape& f, const tt_narrow::PairRows& geo, int warpgroups, int k16_steps, unsigned seed,
                       const Check& check, int group = 1) {
  ASSERT_EQ(geo.xl % 8, 0);
  if (geo.pd == 1 || geo.pd % 2 == 0) ASSERT_EQ(geo.pairs() % 2, 0);  // build_pairs writes these two a step
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> val(1, 30000);
  std::vector<int> x(std::size_t(f.n) * f.h * f.w * f.c);
  for (int& v : x) v = val(rng);
  const int P = (f.h + 2 * f.pad - f.rs) / f.stride + 1;
  for (int n = 0; n < f.n; ++n)
    for (int p = 0; p < P; p += group) {
      if (P > 32 && p > 2 && p < P - 3 - group) continue;
      const Staged st = stage_and_pair(f, geo, x, n, p);
      for (int g = 0; g < group && p + g < P; ++g)  // rows past P: zero dy, their A never met
        for (int wg = 0; wg < warpgroups; ++wg)
          for (int warp = 0; warp < 4; ++warp)
            for (int lane = 0; lane < 32; ++lane)
              for (int e = 0; e < 4; ++e)
                for (int kk = 0; kk < k16_steps; ++kk)
                  ASSERT_TRUE(check(st, x, n, p, g, wg * 64 + tt_narrow::afrag_row(warp, lane, e),
                                    tt_narrow::afrag_k(lane, e, kk)))
                      << "shape c" << f.c << " w" << f.w << " n " << n << " p " << p << " row " << g;
    }
}

// Word i of filter row r's pairs holds (want0, want1) where they are wanted (want < 0: any value), and lies below
// pairs().
::testing::AssertionResult holds(const Staged& st, const tt_narrow::PairRows& geo, int r, int i, long long want0,
                                 long long want1) {
  if (i < 0 || i >= geo.pairs()) return ::testing::AssertionFailure() << "word " << i << " outside the pairs";
  for (int half = 0; half < 2; ++half) {
    const long long want = half ? want1 : want0;
    if (want >= 0 && ((st.pairs[r][i] >> (16 * half)) & 0xFFFFu) != unsigned(want))
      return ::testing::AssertionFailure() << "word " << i << " half " << half << " is not " << want;
  }
  return ::testing::AssertionSuccess();
}

// wgmma_narrow_wgrad: A is (filter column m = r * S * C + j, pixel); a word pairs pixels q and q + 1 (pd = D). Shapes
// of test_cuda_narrow_conv.cpp's wgmma_narrow_problems and the stem.
const std::vector<Shape> kWgradShapes = {{2, 3, 40, 40, 64, 7, 2, 3}, {3, 4, 17, 38, 64, 5, 1, 2},
                                         {2, 3, 21, 32, 64, 5, 1, 3}, {2, 1, 23, 24, 128, 3, 2, 1},
                                         {2, 8, 16, 16, 64, 3, 1, 1}, {1, 3, 224, 224, 64, 7, 2, 3}};

// ROWS > 1: a group of consecutive output rows stages (ROWS - 1) * stride + R input rows from its first row's first;
// row g of the group reads filter row r at staged row g * stride + r.
TEST(WgmmaNarrowIndex, WgradRegistersPairTwoPixelsOfAFilterColumn) {
  for (const int rows : {1, 2, 3})
  for (const Shape& f : kWgradShapes) {
    const int Q = (f.w + 2 * f.pad - f.rs) / f.stride + 1, sc = f.rs * f.c, rsc = f.rs * sc;
    const tt_narrow::PairRows geo(f.w, f.c, Q, (rows - 1) * f.stride + f.rs, sc, f.pad, f.stride, f.stride * f.c);
    for_each_register(f, geo, (rsc + 63) / 64, geo.qp / 16, 11,
                      [&](const Staged& st, const std::vector<int>& x, int n, int p, int g, int m, int q) {
                        if (m >= rsc) return ::testing::AssertionSuccess();  // padding rows: never stored
                        const int r = m / sc, j = m % sc, s = j / f.c, c = j % f.c;
                        // dy's lines past Q are zero: any value there
                        const long long w0 = q < Q ? im2col(f, x, n, p + g, r, q, s, c) : -1;
                        const long long w1 = q + 1 < Q ? im2col(f, x, n, p + g, r, q + 1, s, c) : -1;
                        return holds(st, geo, g * f.stride + r, geo.pair_index(q, j, f.c, f.pad), w0, w1);
                      }, rows);
  }
}

// wgmma_narrow_fwd: A is (pixel, filter column kd = r * SCP + j, SCP = S * C rounded up to even); a word pairs
// columns j and j + 1 of one pixel (pd = 1). Shapes of test_cuda_narrow_conv.cpp's wgmma_fwd_problems and the stem.
const std::vector<Shape> kFwdWgmmaShapes = {{2, 3, 40, 40, 64, 7, 2, 3}, {3, 5, 17, 40, 64, 5, 2, 1},
                                            {3, 3, 24, 24, 64, 3, 1, 1}, {2, 8, 12, 70, 128, 3, 1, 1},
                                            {1, 3, 224, 224, 64, 7, 2, 3}};

TEST(WgmmaNarrowIndex, FwdRegistersPairTwoColumnsOfAPixel) {
  for (const Shape& f : kFwdWgmmaShapes) {
    const int Q = (f.w + 2 * f.pad - f.rs) / f.stride + 1, sc = f.rs * f.c, scp = (sc + 1) / 2 * 2;
    const tt_narrow::PairRows geo(f.w, f.c, Q, f.rs, scp, f.pad, f.stride, 1);
    for_each_register(f, geo, (Q + 63) / 64, (f.rs * scp + 15) / 16, 13,
                      [&](const Staged& st, const std::vector<int>& x, int n, int p, int, int q, int kd) {
                        const int r = kd / scp, j = kd % scp;
                        if (j % 2) return ::testing::AssertionFailure() << "a pair starts at an odd column";
                        // as the kernel: pixels past Q read pixel 0, columns past R * SCP column 0 (never stored /
                        // zero in B); a row's padding column (j = S * C) is zero in B
                        if (q >= Q || r >= f.rs) return holds(st, geo, 0, geo.pair_index(q < Q ? q : 0, 0, f.c, f.pad), -1, -1);
                        const long long w0 = im2col(f, x, n, p, r, q, j / f.c, j % f.c);
                        const long long w1 = j + 1 < sc ? im2col(f, x, n, p, r, q, (j + 1) / f.c, (j + 1) % f.c) : -1;
                        return holds(st, geo, r, geo.pair_index(q, j, f.c, f.pad), w0, w1);
                      });
  }
}

TEST(WgmmaNarrowIndex, TheFwdTemplateSizesSharedMemoryAsTheKernel) {
  const KernelTemplate& t = find_template("wgmma_narrow_fwd");
  for (const Shape& f : kFwdWgmmaShapes) {
    const int Q = (f.w + 2 * f.pad - f.rs) / f.stride + 1, scp = (f.rs * f.c + 1) / 2 * 2;
    const Variables v =
        variables_of(t, f, ConvDirection::Forward, {{"MT", (Q + 63) / 64}, {"KS", (f.rs * scp + 15) / 16}});
    const tt_narrow::PairRows geo(f.w, f.c, Q, f.rs, scp, f.pad, f.stride, 1);
    EXPECT_EQ(v.at("XL"), geo.xl) << f.c << " " << f.w;
    EXPECT_EQ(v.at("SMEM_BYTES"), 1024 + (v.at("KS") + 3) / 4 * 8192 + v.at("STAGES") * geo.x_bytes + geo.pair_bytes)
        << f.c << " " << f.w;
  }
}

// The JSON's SMEM_BYTES is the header's: STAGES stages of dy's lines (ROWS rows) and the input rows, two pair buffers.
TEST(WgmmaNarrowIndex, TheWgradTemplateSizesSharedMemoryAsTheKernel) {
  const KernelTemplate& t = find_template("wgmma_narrow_wgrad");
  for (const int rows : {1, 2})
  for (const Shape& f : kWgradShapes) {
    const int Q = (f.w + 2 * f.pad - f.rs) / f.stride + 1;
    const Variables v = variables_of(t, f, ConvDirection::BackwardFilter,
                                     {{"KQ", (Q + 15) / 16}, {"MT", (f.rs * f.rs * f.c + 63) / 64}, {"ROWS", rows}});
    const tt_narrow::PairRows geo(f.w, f.c, Q, (rows - 1) * f.stride + f.rs, f.rs * f.c, f.pad, f.stride,
                                  f.stride * f.c);
    EXPECT_EQ(v.at("XL"), geo.xl) << f.c << " " << f.w;
    EXPECT_EQ(v.at("SMEM_BYTES"), 1024 + v.at("STAGES") * (rows * geo.qp * 128 + geo.x_bytes) + geo.pair_bytes)
        << f.c << " " << f.w << " rows " << rows;
  }
}

}  // namespace
