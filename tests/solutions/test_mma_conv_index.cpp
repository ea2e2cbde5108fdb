// mma_conv's im2col index math (kernel_templates/mma_conv_index.h) compiled for the host and
// checked against the convolution's definition, and mma_conv's search space; no GPU needed.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "kernel_templates/mma_conv_index.h"
#include "solutions/kernel_template.h"
#include "tests/conv_index_util.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;

namespace {

using MmaShape = tiletune::testing::IndexShape;
TtConvParams mma_params(const MmaShape& s, int dir) { return tiletune::testing::index_params(s, dir); }
const std::vector<MmaShape>& mma_shapes() { return tiletune::testing::index_shapes(); }

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
  for (const MmaShape& sh : mma_shapes())
    for (int dir = 0; dir < 2; ++dir)
      for (int bk : {8, 32}) {
        const TtConvParams p = mma_params(sh, dir);
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
  std::vector<MmaShape> all = mma_shapes();
  all.push_back({2, 3, 23, 21, 16, 7, 7, 2, 2, 3, 3, 1, 1, 1});  // the 3-channel stem
  for (const MmaShape& sh : all) {
    const TtConvParams p = mma_params(sh, 0);
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
  for (const MmaShape& sh : mma_shapes())
    for (int bk : {32, 64}) {
      const TtConvParams p = mma_params(sh, 2);
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

ConvProblem mma_conv(ConvDirection dir, DataType in, DataType out, int n, int c, int hw, int k, int rs, int stride,
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
      problems.push_back(mma_conv(ConvDirection(dir), in, out, 128, 64, 56, 64, 3, 1, 1));
      problems.push_back(mma_conv(ConvDirection(dir), in, out, 128, 256, 56, 512, 1, 2, 0));
      problems.push_back(mma_conv(ConvDirection(dir), in, out, 128, 512, 7, 512, 3, 1, 1));
      problems.push_back(mma_conv(ConvDirection(dir), in, out, 2, 36, 17, 20, 3, 2, 1, 2));  // Cg 18, Kg 10
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
  ConvProblem nchw = mma_conv(ConvDirection::Forward, DataType::BF16, DataType::BF16, 8, 64, 28, 64, 3, 1, 1);
  nchw.layout = ConvLayout::NCHW;
  ConvProblem f32 = mma_conv(ConvDirection::Forward, DataType::F32, DataType::F32, 8, 64, 28, 64, 3, 1, 1);
  EXPECT_TRUE(tuner::enumerate({t}, std::vector<Problem>{nchw, f32}, dev).candidates.empty());
  ConvProblem stem = mma_conv(ConvDirection::Forward, DataType::BF16, DataType::BF16, 8, 3, 224, 64, 7, 2, 3);
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

namespace {

// The gradients' row-major operands and every direction's output tile, element by element.
TEST(MmaConvIndex, StridedOperandsAndOutputTilesMatchTheLayouts) {
  for (const MmaShape& sh : mma_shapes()) {
    SCOPED_TRACE(::testing::Message() << "c" << sh.c << " k" << sh.k << " r" << sh.r << "x" << sh.s);
    const TtConvParams p1 = mma_params(sh, 1), p2 = mma_params(sh, 2);
    const int cg = sh.c / sh.groups, kg = sh.k / sh.groups;
    for (int g = 0; g < sh.groups; ++g) {
      for (int c = 0; c < cg; ++c) {
        const tt_conv::StridedOperand w = tt_conv::strided_operand(1, p1, g, c);
        ASSERT_TRUE(w.rows == kg && w.cols == cg);
        for (int kk = 0; kk < kg; ++kk)
          for (int r = 0; r < sh.r; ++r)
            for (int s = 0; s < sh.s; ++s)
              ASSERT_EQ(w.col_off + kk * w.ld + tt_conv::strided_tap(1, p1, r, s),
                        tt_filter_offset(false, g * kg + kk, c, r, s, cg, sh.r, sh.s));
      }
      for (int kk = 0; kk < kg; ++kk) {
        const tt_conv::StridedOperand dy = tt_conv::strided_operand(2, p2, g, kk);
        ASSERT_TRUE(dy.rows == p2.gemm_k && dy.cols == kg);
        for (int i = 0; i < p2.gemm_k; ++i)
          ASSERT_EQ(dy.col_off + i * dy.ld + tt_conv::strided_tap(2, p2, 1, 1),
                    tt_act_offset(false, i / (p2.p * p2.q), g * kg + kk, i / p2.q % p2.p, i % p2.q, sh.k, p2.p, p2.q));
      }
      // Outputs: fwd y (m = output pixel, n = output channel), dgrad dx (m = input pixel, n =
      // input channel), wgrad dw (m = output channel, n = input channel at tap (r, s)).
      const tt_conv::OutputTile y = tt_conv::output_tile(0, mma_params(sh, 0), g, 0, 0);
      const tt_conv::OutputTile dx = tt_conv::output_tile(1, p1, g, 0, 0);
      ASSERT_TRUE(y.cols == kg && dx.cols == cg);
      for (int m = 0; m < p2.gemm_k; ++m)
        for (int n = 0; n < kg; ++n)
          ASSERT_EQ(y.base + m * y.ld + n,
                    tt_act_offset(false, m / (p2.p * p2.q), g * kg + n, m / p2.q % p2.p, m % p2.q, sh.k, p2.p, p2.q));
      for (int m = 0; m < p1.gemm_m; ++m)
        for (int n = 0; n < cg; ++n)
          ASSERT_EQ(dx.base + m * dx.ld + n,
                    tt_act_offset(false, m / (sh.h * sh.w), g * cg + n, m / sh.w % sh.h, m % sh.w, sh.c, sh.h, sh.w));
      for (int r = 0; r < sh.r; ++r)
        for (int s = 0; s < sh.s; ++s) {
          const tt_conv::OutputTile dw = tt_conv::output_tile(2, p2, g, r, s);
          ASSERT_EQ(dw.cols, cg);
          for (int m = 0; m < kg; ++m)
            for (int n = 0; n < cg; ++n)
              ASSERT_EQ(dw.base + m * dw.ld + n, tt_filter_offset(false, g * kg + m, n, r, s, cg, sh.r, sh.s));
        }
    }
  }
}

}  // namespace
