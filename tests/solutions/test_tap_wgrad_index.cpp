// tap_wgrad's shared-memory packing (kernel_templates/tap_wgrad_index.h) compiled for the host: the
// kernel's copies and tap reads replayed element by element on integer data, the weight gradient
// they add up to compared with the convolution's definition; no GPU needed.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "kernel_templates/tap_wgrad_index.h"

namespace {

struct Shape {
  int n, c, h, w, k;
};

TtConvParams params(const Shape& s) {
  TtConvParams p{};
  p.n = s.n, p.c = s.c, p.h = s.h, p.w = s.w, p.k = s.k, p.r = p.s = 3;
  p.stride_h = p.stride_w = p.pad_h = p.pad_w = p.dil_h = p.dil_w = p.groups = 1;
  p.p = s.h, p.q = s.w;
  return p;
}

// dw[k][r][s][c] = sum over (n, p, q) of dy[n, p, q, k] * x[n, p - 1 + r, q - 1 + s, c].
std::vector<long long> reference(const TtConvParams& p, const std::vector<int>& dy, const std::vector<int>& x) {
  std::vector<long long> dw(std::size_t(p.k) * 9 * p.c, 0);
  for (int n = 0; n < p.n; ++n)
    for (int op = 0; op < p.p; ++op)
      for (int oq = 0; oq < p.q; ++oq)
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) {
            const int h = op - 1 + r, w = oq - 1 + s;
            if (h < 0 || h >= p.h || w < 0 || w >= p.w) continue;
            for (int k = 0; k < p.k; ++k)
              for (int c = 0; c < p.c; ++c)
                dw[tt_filter_offset(false, k, c, r, s, p.c, 3, 3)] +=
                    (long long)dy[tt_act_offset(false, n, k, op, oq, p.k, p.p, p.q)] *
                    x[tt_act_offset(false, n, c, h, w, p.c, p.h, p.w)];
          }
  return dw;
}

// What the kernel's blocks compute: per (channel tile, split) the slice's stages, each filled by
// the copies (element offsets, -1 for a zero) and read by the nine taps over every position of the
// m16n8k16 reduction. Void, for gtest's fatal assertions: the result goes to dw.
void replay(const TtConvParams& p, int KM, int CN, int G, int SPLIT, const std::vector<int>& dy,
            const std::vector<int>& x, std::vector<long long>& dw) {
  dw.assign(std::size_t(p.k) * 9 * p.c, 0);
  const tt_tapw::Geometry g = tt_tapw::geometry(p.q, G, KM, CN);
  EXPECT_EQ(g.positions % 16, 0);
  std::set<int> first_writes;
  for (int k0 = 0; k0 < p.k; k0 += KM)
    for (int c0 = 0; c0 < p.c; c0 += CN)
      for (int split = 0; split < SPLIT; ++split) {
        int row0, row1;
        tt_tapw::row_slice(p.n * p.p, split, SPLIT, row0, row1);
        for (int row = row0; row < row1; row += G) {
          std::vector<long long> dy_at(std::size_t(g.stage_bytes / 2), -1), x_at(dy_at.size(), -1);
          std::set<int> writes;
          auto put = [&](std::vector<long long>& to, const tt_tapw::Copy& c, int lo, int hi) {
            EXPECT_TRUE(c.dst % 16 == 0 && c.dst >= lo && c.dst + 16 <= hi) << "copy to byte " << c.dst;
            EXPECT_TRUE(writes.insert(c.dst).second) << "two copies to byte " << c.dst;
            for (int j = 0; j < 8; ++j) to[std::size_t(c.dst / 2 + j)] = c.ok ? c.src + j : -1;
          };
          for (int i = 0; i < G * p.q * KM / 8; ++i)
            put(dy_at, tt_tapw::dy_copy(g, p, row, row1, k0, KM, i), 0, g.dy_bytes);
          for (int i = 0; i < G * 3 * p.w * CN / 8; ++i)
            put(x_at, tt_tapw::x_copy(g, p, row, row1, c0, CN, i), g.dy_bytes, g.stage_bytes);
          // Every stage receives the same copies: what one leaves zero, no other overwrites.
          if (first_writes.empty()) first_writes = writes;
          EXPECT_EQ(writes, first_writes);
          for (int r = 0; r < 3; ++r)
            for (int s = 0; s < 3; ++s)
              for (int t = 0; t < g.positions; ++t) {
                const int ab = tt_tapw::dy_at(g, t), bb = tt_tapw::x_at(g, r, s, t);
                ASSERT_LE(ab + KM * 2, g.dy_bytes);
                ASSERT_TRUE(bb >= g.dy_bytes + r * g.x_row_bytes && bb + CN * 2 <= g.dy_bytes + (r + 1) * g.x_row_bytes);
                for (int kk = 0; kk < KM; ++kk) {
                  const long long a = dy_at[std::size_t(ab / 2 + kk)];
                  if (a < 0) continue;
                  ASSERT_EQ(a % p.k, k0 + kk);  // the channel the kernel's epilogue writes
                  for (int cc = 0; cc < CN; ++cc) {
                    const long long b = x_at[std::size_t(bb / 2 + cc)];
                    if (b < 0) continue;
                    ASSERT_EQ(b % p.c, c0 + cc);
                    dw[tt_filter_offset(false, k0 + kk, c0 + cc, r, s, p.c, 3, 3)] +=
                        (long long)dy[std::size_t(a)] * x[std::size_t(b)];
                  }
                }
              }
        }
      }
}

// Widths around the m16 boundary and the packing (one pixel, 7 = two rows per 16 positions, 15, 16,
// 17), heights of one row (both halos padding), non-square images, several channel tiles, splits
// that leave partial stages and empty ones.
TEST(TapWgradIndex, ReplayedCopiesAndTapsSumToTheDefinition) {
  const std::vector<Shape> shapes = {{2, 16, 7, 7, 16}, {3, 8, 5, 9, 32}, {2, 8, 1, 1, 8}, {1, 16, 4, 15, 8},
                                     {2, 8, 3, 16, 16}, {1, 8, 6, 17, 8}, {2, 16, 1, 5, 16}};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> val(-8, 8);
  int cases = 0;
  for (const Shape& sh : shapes) {
    const TtConvParams p = params(sh);
    std::vector<int> dy(std::size_t(p.n) * p.p * p.q * p.k), x(std::size_t(p.n) * p.h * p.w * p.c);
    for (int& v : dy) v = val(rng);
    for (int& v : x) v = val(rng);
    const std::vector<long long> want = reference(p, dy, x);
    for (int G : {1, 2, 4})
      for (int split : {1, 3, 7})
        for (int km : {8, 16})
          for (int cn : {8, 16}) {
            if (p.k % km || p.c % cn) continue;
            SCOPED_TRACE(::testing::Message() << "n" << sh.n << " c" << sh.c << " " << sh.h << "x" << sh.w << " k"
                                              << sh.k << " G " << G << " SPLIT " << split << " KM " << km << " CN " << cn);
            std::vector<long long> got;
            replay(p, km, cn, G, split, dy, x, got);
            ASSERT_FALSE(HasFatalFailure());
            ASSERT_EQ(got, want);
            ++cases;
          }
  }
  EXPECT_GT(cases, 100);
}

// The packing's promise: G rows of Q pixels in the positions of one stage, the gaps and halos
// shared (Q = 7: two rows in one m16 step, four in two).
TEST(TapWgradIndex, PacksShortRowsIntoM16Steps) {
  EXPECT_EQ(tt_tapw::geometry(7, 1, 64, 32).positions, 16);
  EXPECT_EQ(tt_tapw::geometry(7, 2, 64, 32).positions, 16);
  EXPECT_EQ(tt_tapw::geometry(7, 4, 64, 32).positions, 32);
  EXPECT_EQ(tt_tapw::geometry(14, 2, 64, 32).positions, 32);
  EXPECT_EQ(tt_tapw::geometry(56, 1, 64, 32).positions, 64);
  const tt_tapw::Geometry g = tt_tapw::geometry(56, 1, 64, 32);
  EXPECT_EQ(g.stage_bytes, 64 * 144 + 3 * 66 * 80);  // tap_wgrad.json's STAGE_BYTES
}

}  // namespace
