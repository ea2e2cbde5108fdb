// narrow_fwd's staged rows (kernel_templates/narrow_conv_index.h) compiled for the host: input rows
// staged as the kernel stages them (zeros, then the row at XOFF), every element the kernel reads
// for a pixel of its m16 tiles and a column of its k16 steps replayed on integer data against
// filters zero past S * C, the sums compared with the convolution's definition, every read inside
// the staged row; and the template's JSON sizing a staged row as the header does. narrow_col2im's
// tiles likewise: dy blocks staged per tile, Z and the gather replayed on integers against the input
// gradient's definition, every read inside the block, and the JSON's shared memory; and wgmma_narrow_wgrad's
// paired rows against the im2col operand its A registers must hold. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
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

// The variables of template `t`'s default solution (KC set to the shape's K / 16) for the shape as a bf16
// problem of `direction` with square filters and strides.
Variables default_variables(const KernelTemplate& t, const Shape& f, ConvDirection direction) {
  ConvProblem p;
  p.direction = direction, p.in_type = p.out_type = DataType::BF16;
  p.n = f.n, p.c = f.c, p.h = f.h, p.w = f.w, p.k = f.k, p.r = p.s = f.rs, p.stride_h = p.stride_w = f.stride;
  p.pad_h = p.pad_w = f.pad, p.dil_h = p.dil_w = 1, p.groups = 1;
  Solution s = t.default_solution();
  s.params["KC"] = f.k / 16;
  return t.variables(s, Problem(p), tiletune::testing::fake_device(gpu::BackendKind::Cuda));
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


// wgmma_narrow_wgrad's pairs (PairRows), shapes of test_cuda_narrow_conv.cpp's wgmma_narrow_problems and the
// stem: input rows staged and paired as the kernel does (the even-D path's two words per two pairs alike), then
// every A register of every warpgroup, lane and k16 step read back; its halves must be the im2col elements of
// the register's filter column at its two pixels (zero in the padding), for every row below R * S * C and pixel
// below Q, and every read inside the pairs built.
const std::vector<Shape> kWgradShapes = {{2, 3, 40, 40, 64, 7, 2, 3}, {3, 4, 17, 38, 64, 5, 1, 2},
                                         {2, 1, 23, 24, 128, 3, 2, 1}, {2, 8, 16, 16, 64, 3, 1, 1},
                                         {1, 3, 224, 224, 64, 7, 2, 3}};

TEST(WgmmaNarrowWgradIndex, EveryARegisterPairsTwoPixelsOfItsFilterColumn) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> val(1, 30000);
  for (const Shape& f : kWgradShapes) {
    const int P = (f.h + 2 * f.pad - f.rs) / f.stride + 1, Q = (f.w + 2 * f.pad - f.rs) / f.stride + 1;
    const tt_narrow::PairRows geo(f.w, f.c, Q, f.rs, f.rs, f.pad, f.stride);
    ASSERT_EQ(geo.xl % 8, 0);
    ASSERT_EQ(geo.dy_bytes % 2048, 0);
    ASSERT_EQ(geo.stage_bytes % 1024, 0);
    const int sc = f.rs * f.c, rsc = f.rs * sc, mt = (rsc + 63) / 64, kq = geo.qp / 16;
    std::vector<int> x(std::size_t(f.n) * f.h * f.w * f.c);
    for (int& v : x) v = val(rng);
    for (int n = 0; n < f.n; ++n)
      for (int p = 0; p < P; ++p) {
        if (P > 32 && p > 2 && p < P - 3) continue;  // the stem: its top and bottom rows (padding) suffice
        std::vector<std::vector<unsigned>> rows(f.rs, std::vector<unsigned>(geo.xl, 0u));
        for (int r = 0; r < f.rs; ++r) {
          const int h = p * f.stride - f.pad + r;
          if (h < 0 || h >= f.h) continue;
          for (int e = 0; e < f.w * f.c; ++e) rows[r][geo.xoff + e] = unsigned(x[(std::size_t(n) * f.h + h) * f.w * f.c + e]);
        }
        // The pairs as the kernel builds them: word u of a row holds elements 2u, 2u + 1 (low, high).
        std::vector<std::vector<unsigned>> pairs(f.rs, std::vector<unsigned>(geo.xl, 0xFFFFFFFFu));
        for (int r = 0; r < f.rs; ++r) {
          if (geo.d % 2 == 0) {
            for (int u = 0; u < geo.pairs() / 2; ++u) {
              const unsigned w0 = rows[r][2 * u] | rows[r][2 * u + 1] << 16;
              const unsigned w1 = rows[r][2 * u + geo.d] | rows[r][2 * u + geo.d + 1] << 16;
              pairs[r][2 * u] = (w0 & 0xFFFFu) | (w1 & 0xFFFFu) << 16;  // __byte_perm(w0, w1, 0x5410)
              pairs[r][2 * u + 1] = w0 >> 16 | (w1 >> 16) << 16;       // __byte_perm(w0, w1, 0x7632)
            }
          } else {
            for (int u = 0; u < geo.pairs(); ++u) pairs[r][u] = rows[r][u] | rows[r][u + geo.d] << 16;
          }
        }
        for (int g = 0; g < mt; ++g)
          for (int warp = 0; warp < 4; ++warp)
            for (int lane = 0; lane < 32; ++lane)
              for (int e = 0; e < 4; ++e) {
                const int m = g * 64 + tt_narrow::afrag_row(warp, lane, e);
                if (m >= rsc) continue;  // padding rows: their sums are never stored
                const int r = m / sc, j = m % sc, s = j / f.c, c = j % f.c;
                for (int kk = 0; kk < kq; ++kk) {
                  const int q = tt_narrow::afrag_k(lane, e, kk);
                  ASSERT_EQ(q % 2, 0);
                  const int i = geo.pair_index(q, j, f.c, f.pad);
                  ASSERT_GE(i, 0);
                  ASSERT_LT(i, geo.pairs()) << "q " << q << " j " << j;
                  for (int half = 0; half < 2; ++half) {
                    if (q + half >= Q) continue;  // dy's lines past Q are zero
                    const int h = p * f.stride - f.pad + r, w = (q + half) * f.stride - f.pad + s;
                    const bool in = h >= 0 && h < f.h && w >= 0 && w < f.w;
                    const unsigned want = in ? unsigned(x[((std::size_t(n) * f.h + h) * f.w + w) * f.c + c]) : 0u;
                    ASSERT_EQ((pairs[r][i] >> (16 * half)) & 0xFFFFu, want)
                        << "shape c" << f.c << " w" << f.w << " p " << p << " m " << m << " q " << q + half;
                  }
                }
              }
      }
  }
}

// The JSON's SMEM_BYTES is the header's: STAGES stages of dy's lines and the input rows, two pair buffers.
TEST(WgmmaNarrowWgradIndex, TheTemplateSizesSharedMemoryAsTheKernel) {
  const KernelTemplate& t = find_template("wgmma_narrow_wgrad");
  for (const Shape& f : kWgradShapes) {
    ConvProblem p;
    p.direction = ConvDirection::BackwardFilter, p.in_type = p.out_type = DataType::BF16;
    p.n = f.n, p.c = f.c, p.h = f.h, p.w = f.w, p.k = f.k, p.r = p.s = f.rs, p.stride_h = p.stride_w = f.stride;
    p.pad_h = p.pad_w = f.pad, p.dil_h = p.dil_w = 1, p.groups = 1;
    Solution s = t.default_solution();
    const int Q = (f.w + 2 * f.pad - f.rs) / f.stride + 1;
    s.params["KQ"] = (Q + 15) / 16;
    s.params["MT"] = (f.rs * f.rs * f.c + 63) / 64;
    const Variables v = t.variables(s, Problem(p), tiletune::testing::fake_device(gpu::BackendKind::Cuda));
    const tt_narrow::PairRows geo(f.w, f.c, Q, f.rs, f.rs, f.pad, f.stride);
    EXPECT_EQ(v.at("XL"), geo.xl) << f.c << " " << f.w;
    EXPECT_EQ(v.at("SMEM_BYTES"), 1024 + v.at("STAGES") * geo.stage_bytes + geo.pair_bytes) << f.c << " " << f.w;
  }
}
}  // namespace
