// mma_conv's im2col index math (kernel_templates/mma_conv_index.h) compiled for the host and
// checked against the convolution's definition, and mma_conv's search space; no GPU needed.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "kernel_templates/mma_conv_index.h"
#include "solutions/kernel_template.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;

namespace {

struct Shape {
  int n, c, h, w, k, r, s, u, v, ph, pw, dh, dw, groups;
};

TtConvParams params(const Shape& s, int dir) {
  TtConvParams p{};
  p.n = s.n, p.c = s.c, p.h = s.h, p.w = s.w, p.k = s.k, p.r = s.r, p.s = s.s;
  p.stride_h = s.u, p.stride_w = s.v, p.pad_h = s.ph, p.pad_w = s.pw, p.dil_h = s.dh, p.dil_w = s.dw;
  p.groups = s.groups;
  p.p = (s.h + 2 * s.ph - s.dh * (s.r - 1) - 1) / s.u + 1;
  p.q = (s.w + 2 * s.pw - s.dw * (s.s - 1) - 1) / s.v + 1;
  const int cg = s.c / s.groups, kg = s.k / s.groups;
  if (dir == 0) p.gemm_m = s.n * p.p * p.q, p.gemm_n = kg, p.gemm_k = cg * s.r * s.s;
  if (dir == 1) p.gemm_m = s.n * s.h * s.w, p.gemm_n = cg, p.gemm_k = kg * s.r * s.s;
  if (dir == 2) p.gemm_m = kg, p.gemm_n = cg * s.r * s.s, p.gemm_k = s.n * p.p * p.q;
  return p;
}

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {2, 16, 9, 7, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1},    // 3x3 same padding
      {2, 24, 11, 10, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1},  // stride 2
      {1, 16, 13, 12, 8, 5, 3, 3, 2, 2, 1, 2, 1, 2},   // stride 3x2, dilation 2, groups 2
      {3, 8, 5, 6, 16, 1, 1, 2, 2, 0, 0, 1, 1, 1},     // 1x1 downsample
      {1, 40, 7, 7, 48, 7, 7, 2, 2, 3, 3, 1, 1, 1},    // 7x7 on a small image, channels not a multiple of BK
      {2, 12, 6, 9, 18, 2, 4, 1, 3, 0, 2, 3, 1, 3},    // asymmetric everything
  };
  return s;
}

// Element of x (fwd) or dy (dgrad) that A(m, kk) of group g reads, or -1 for a zero, straight from
// the definition y[n,k,p,q] = sum x[n, c, p*u - ph + r*dh, q*v - pw + s*dw] * w[k, c, r, s].
long long naive_a(int dir, const TtConvParams& p, int g, int m, int r, int s, int ch) {
  const int cg = p.c / p.groups, kg = p.k / p.groups;
  if (dir == 0) {
    const int img = m / (p.p * p.q), op = m / p.q % p.p, oq = m % p.q;
    const int ih = op * p.stride_h - p.pad_h + r * p.dil_h, iw = oq * p.stride_w - p.pad_w + s * p.dil_w;
    if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) return -1;
    return tt_act_offset(false, img, g * cg + ch, ih, iw, p.c, p.h, p.w);
  }
  const int img = m / (p.h * p.w), ih = m / p.w % p.h, iw = m % p.w;
  for (int op = 0; op < p.p; ++op)
    for (int oq = 0; oq < p.q; ++oq)
      if (op * p.stride_h - p.pad_h + r * p.dil_h == ih && oq * p.stride_w - p.pad_w + s * p.dil_w == iw)
        return tt_act_offset(false, img, g * kg + ch, op, oq, p.k, p.p, p.q);
  return -1;
}

TEST(MmaConvIndex, GatheredRowsMatchTheDefinition) {
  for (const Shape& sh : shapes())
    for (int dir = 0; dir < 2; ++dir)
      for (int bk : {8, 32}) {
        const TtConvParams p = params(sh, dir);
        SCOPED_TRACE(::testing::Message() << "dir " << dir << " c" << sh.c << " k" << sh.k << " r" << sh.r << "x"
                                          << sh.s << " u" << sh.u << "x" << sh.v << " BK " << bk);
        const int cg = p.c / p.groups, kg = p.k / p.groups, rc = dir == 0 ? cg : kg;
        const int chunks = (rc + bk - 1) / bk, tiles = p.r * p.s * chunks;
        std::vector<int> seen(size_t(p.gemm_k), 0);
        tt_conv::Taps cur = tt_conv::taps_of_tile(0, chunks, p.s);
        for (int t = 0; t < tiles; ++t) {
          const tt_conv::Taps k = tt_conv::taps_of_tile(t, chunks, p.s);
          ASSERT_TRUE(cur.r == k.r && cur.s == k.s && cur.chunk == k.chunk) << "tile " << t;
          tt_conv::next_tile(cur, chunks, p.s);
          for (int c = 0; c < bk; ++c) {
            const int ch = k.chunk * bk + c;
            if (ch >= rc) continue;  // the kernel's channel predicate
            int kr, ks, kc;          // the reduction index this is, in the GEMM's (r, s, c) order
            tt_split_crs(false, (k.r * p.s + k.s) * rc + ch, rc, p.r, p.s, kc, kr, ks);
            ASSERT_TRUE(kr == k.r && ks == k.s && kc == ch);
            ++seen[size_t((k.r * p.s + k.s) * rc + ch)];
            for (int g = 0; g < p.groups; ++g)
              for (int m = 0; m < p.gemm_m + 3; ++m) {
                const tt_conv::TapRow row = tt_conv::gather_row(dir, p, m, (dir == 0 ? g * cg : g * kg) + c);
                const bool ok = tt_conv::tap_ok(row.mask, k.r, k.s);
                const long long got = ok ? row.off + tt_conv::tap_delta(dir, p, k.r, k.s) + k.chunk * bk : -1;
                const long long want = m < p.gemm_m ? naive_a(dir, p, g, m, k.r, k.s, ch) : -1;
                ASSERT_EQ(got, want) << "m " << m << " g " << g << " r " << k.r << " s " << k.s << " c " << ch;
              }
            if (dir == 0)
              for (int g = 0; g < p.groups; ++g)
                for (int n = 0; n < kg + 2; ++n) {
                  const tt_conv::TapRow row = tt_conv::filter_row(p, g, n, c);
                  const bool ok = tt_conv::tap_ok(row.mask, k.r, k.s);
                  ASSERT_EQ(ok, n < kg);
                  if (ok)
                    ASSERT_EQ(row.off + tt_conv::filter_delta(p, k.r, k.s) + k.chunk * bk,
                              tt_filter_offset(false, g * kg + n, ch, k.r, k.s, cg, p.r, p.s));
                }
          }
        }
        for (int v : seen) ASSERT_EQ(v, 1) << "every reduction index exactly once";
      }
}

// FLAT: K tile t, column c is reduction index k = t * BK + c in the filter's (r, s, c) order; x's
// element comes from a row made with the group's first channel plus flat_tap's delta.
TEST(MmaConvIndex, FlatWalkMatchesTheDefinition) {
  std::vector<Shape> all = shapes();
  all.push_back({2, 3, 23, 21, 16, 7, 7, 2, 2, 3, 3, 1, 1, 1});  // the 3-channel stem
  for (const Shape& sh : all) {
    const TtConvParams p = params(sh, 0);
    const int cg = p.c / p.groups;
    SCOPED_TRACE(::testing::Message() << "c" << sh.c << " r" << sh.r << "x" << sh.s << " u" << sh.u);
    for (int k = 0; k < p.gemm_k + 40; ++k) {
      const tt_conv::FlatTap t = tt_conv::flat_tap(p, k);
      ASSERT_EQ(t.ok, k < p.gemm_k);
      if (!t.ok) continue;
      int kc, kr, ks;
      tt_split_crs(false, k, cg, p.r, p.s, kc, kr, ks);
      ASSERT_TRUE(t.r == kr && t.s == ks) << "k " << k;
      for (int g = 0; g < p.groups; ++g)
        for (int m = 0; m < p.gemm_m + 3; ++m) {
          const tt_conv::TapRow row = tt_conv::gather_row(0, p, m, g * cg);
          const bool ok = tt_conv::tap_ok(row.mask, t.r, t.s);
          const long long got = ok ? row.off + t.delta : -1;
          const long long want = m < p.gemm_m ? naive_a(0, p, g, m, kr, ks, kc) : -1;
          ASSERT_EQ(got, want) << "m " << m << " g " << g << " k " << k;
        }
    }
  }
}

TEST(MmaConvIndex, WgradPixelsCarriedForwardMatchTheDefinition) {
  for (const Shape& sh : shapes())
    for (int bk : {32, 64}) {
      const TtConvParams p = params(sh, 2);
      const int cg = p.c / p.groups, npq = p.gemm_k;
      // A thread's row i of each K tile, from a split starting at tile kt0, carried forward.
      for (int kt0 : {0, 1, 3})
        for (int row : {0, 5, bk - 1}) {
          tt_conv::Pixel px = tt_conv::pixel_of(kt0 * bk + row, p.p, p.q);
          for (int kt = kt0; kt * bk < npq + bk; ++kt) {
            const int i = kt * bk + row;
            const tt_conv::Pixel want = tt_conv::pixel_of(i, p.p, p.q);
            ASSERT_TRUE(px.img == want.img && px.y == want.y && px.x == want.x) << "pixel " << i;
            for (int g = 0; g < p.groups; ++g)
              for (int r = 0; r < p.r; ++r)
                for (int s = 0; s < p.s; ++s)
                  for (int c : {0, cg - 1}) {
                    int off = 0;
                    const bool ok = tt_conv::wgrad_x_offset(p, px, r, s, g * cg + c, off);
                    const long long want_off = i < npq ? naive_a(0, p, g, i, r, s, c) : -1;
                    ASSERT_EQ(ok ? (long long)off : -1, want_off) << "pixel " << i << " r " << r << " s " << s;
                  }
            tt_conv::advance(px, bk / p.q, bk % p.q, p.p, p.q);
          }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The search space.

ConvProblem conv(ConvDirection dir, DataType in, DataType out, int n, int c, int hw, int k, int rs, int stride,
                 int pad, int groups = 1) {
  ConvProblem p;
  p.direction = dir, p.in_type = in, p.out_type = out;
  p.n = n, p.c = c, p.h = p.w = hw, p.k = k, p.r = p.s = rs, p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad, p.groups = groups;
  return p;
}

TEST(MmaConvSpace, EveryDirectionOfResNetLayersHasCandidates) {
  const KernelTemplate& t = find_template("mma_conv");
  EXPECT_TRUE(t.supports(gpu::BackendKind::Cuda));
  EXPECT_FALSE(t.supports(gpu::BackendKind::Hip));
  const gpu::DeviceInfo dev = tiletune::testing::fake_device(gpu::BackendKind::Cuda);
  std::vector<Problem> problems;
  for (int dir = 0; dir < 3; ++dir)
    for (DataType in : {DataType::BF16, DataType::F16}) {
      const DataType out = dir == 2 ? DataType::F32 : in;
      problems.push_back(conv(ConvDirection(dir), in, out, 128, 64, 56, 64, 3, 1, 1));
      problems.push_back(conv(ConvDirection(dir), in, out, 128, 256, 56, 512, 1, 2, 0));
      problems.push_back(conv(ConvDirection(dir), in, out, 128, 512, 7, 512, 3, 1, 1));
      problems.push_back(conv(ConvDirection(dir), in, out, 2, 36, 17, 20, 3, 2, 1, 2));  // Cg 18, Kg 10
    }
  const auto e = tuner::enumerate({t}, problems, dev);
  std::printf("mma_conv: %zu enumerated, %zu candidates\n", e.total, e.candidates.size());
  for (const auto& [reason, n] : e.pruned_by_reason) std::printf("  pruned %7zu by %s\n", n, reason.c_str());
  std::map<std::size_t, std::size_t> per;
  std::map<std::size_t, std::int64_t> vb;
  bool split_wgrad = false;
  for (const auto& c : e.candidates) {
    ++per[c.problem_index];
    vb[c.problem_index] = c.solution.params.at("VB");
    const ConvProblem& p = problems[c.problem_index].conv();
    split_wgrad = split_wgrad || (p.direction == ConvDirection::BackwardFilter && c.solution.params.at("SPLITK") > 1);
  }
  for (std::size_t i = 0; i < problems.size(); ++i) {
    std::printf("  %-88s %5zu\n", problems[i].key().c_str(), per[i]);
    EXPECT_GT(per[i], 0u) << problems[i].key();
    // The widest copy the channels allow: 16 bytes, but 4 where a gathered channel count is only even.
    const ConvProblem& p = problems[i].conv();
    const bool odd = p.c / p.groups == 18;
    EXPECT_EQ(vb[i], odd ? 4 : 16) << problems[i].key();
  }
  EXPECT_TRUE(split_wgrad) << "wgrad of the 7x7 layer gets split-K candidates";

  // NCHW, fp32 inputs and a 3-channel input with 16-byte copies are not this template's.
  ConvProblem nchw = conv(ConvDirection::Forward, DataType::BF16, DataType::BF16, 8, 64, 28, 64, 3, 1, 1);
  nchw.layout = ConvLayout::NCHW;
  ConvProblem f32 = conv(ConvDirection::Forward, DataType::F32, DataType::F32, 8, 64, 28, 64, 3, 1, 1);
  EXPECT_TRUE(tuner::enumerate({t}, std::vector<Problem>{nchw, f32}, dev).candidates.empty());
  ConvProblem stem = conv(ConvDirection::Forward, DataType::BF16, DataType::BF16, 8, 3, 224, 64, 7, 2, 3);
  const auto es = tuner::enumerate({t}, std::vector<Problem>{stem}, dev);
  ASSERT_FALSE(es.candidates.empty());
  bool flat = false;
  for (const auto& c : es.candidates) {
    EXPECT_EQ(c.solution.params.at("VB"), 2);
    flat = flat || c.solution.params.at("FLAT") == 1;
  }
  EXPECT_TRUE(flat) << "the stem gets flat-walk candidates";
  // Channel counts that fill BK exactly never do: a flat walk would only add divisions.
  for (const auto& c : e.candidates)
    if (problems[c.problem_index].conv().c % 32 == 0) EXPECT_EQ(c.solution.params.at("FLAT"), 0);
}

}  // namespace
