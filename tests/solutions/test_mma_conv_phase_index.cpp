// mma_conv's PHASE walk of a strided input gradient (kernel_templates/mma_conv_index.h, Phase)
// replayed on the host as the kernel runs it: tile -> phase, the phase's pixels as gathered rows
// and output rows, the phase's K tiles. Every product dx[pixel] += dy[pixel'] * w[tap] of the
// definition must come out exactly once over all tiles, and every dx pixel must be written once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kernel_templates/mma_conv_index.h"
#include "solutions/kernel_template.h"
#include "solutions/model.h"
#include "tests/conv_index_util.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;

namespace {

using PhaseShape = tiletune::testing::IndexShape;

// The strided shapes of the shared list, plus the corners of the phase split: 1x1 stride 2 and
// 3x3 stride 3 (phases with no tap), stride above the filter, odd sizes, stride above the image.
std::vector<PhaseShape> phase_shapes() {
  std::vector<PhaseShape> out;
  for (const PhaseShape& s : tiletune::testing::index_shapes())
    if (s.u * s.v > 1) out.push_back(s);
  out.push_back({2, 8, 7, 9, 12, 1, 1, 2, 2, 0, 0, 1, 1, 1});   // 1x1 stride 2: 3 of 4 phases have no tap
  out.push_back({1, 8, 10, 11, 20, 3, 3, 3, 3, 1, 1, 1, 1, 1});  // 3x3 stride 3: one tap per phase
  out.push_back({2, 8, 9, 8, 12, 2, 3, 4, 3, 0, 1, 1, 1, 1});   // stride 4 x 3 over a 2x3 filter
  out.push_back({1, 8, 3, 2, 16, 3, 3, 4, 4, 1, 1, 1, 1, 1});   // stride above the image: empty phases
  return out;
}

// (dx pixel, r, s, dy pixel, dy channel within the group) of one product.
using Product = std::tuple<int, int, int, int, int>;

// The products of the definition: dx[n, h, w] gets dy[n, op, oq] * w[r, s] where
// op * u - pad_h + r * dil_h == h (likewise for the columns).
std::map<Product, int> defined_products(const TtConvParams& p) {
  const int kg = p.k / p.groups;
  std::map<Product, int> want;
  for (int img = 0; img < p.n; ++img)
    for (int op = 0; op < p.p; ++op)
      for (int oq = 0; oq < p.q; ++oq)
        for (int r = 0; r < p.r; ++r)
          for (int s = 0; s < p.s; ++s) {
            const int h = op * p.stride_h - p.pad_h + r * p.dil_h, w = oq * p.stride_w - p.pad_w + s * p.dil_w;
            if (h >= 0 && h < p.h && w >= 0 && w < p.w)
              for (int ch = 0; ch < kg; ++ch)
                want[Product((img * p.h + h) * p.w + w, r, s, (img * p.p + op) * p.q + oq, ch)] = 1;
          }
  return want;
}

// Runs the kernel's walk for group g with BM rows and BK channels per tile (every split-K split
// of `splits`); `shift` moves each block's phase by one row (the check must then fail). Returns
// the first disagreement with the definition, empty when there is none.
std::string phase_replay(const TtConvParams& p, int g, int bm, int bk, int splits, int grid_x, int shift) {
  const int kg = p.k / p.groups, chunks = (kg + bk - 1) / bk;
  std::map<Product, int> seen;
  std::vector<int> written(size_t(p.gemm_m), 0);
  std::ostringstream err;
  for (int tile = 0; tile < grid_x; ++tile) {
    tt_conv::Phase ph = tt_conv::phase_of_tile(p, tile, bm);
    if (ph.rows == 0) return "tile " + std::to_string(tile) + " of the grid has no phase";
    if (shift) ph.a = (ph.a + shift) % p.stride_h;
    const int m0 = (tile - ph.tile0) * bm, kt_all = ph.nr * ph.ns * chunks, kper = (kt_all + splits - 1) / splits;
    // The epilogue's rows.
    for (int i = 0; i < bm; ++i) {
      const int pix = tt_conv::phase_pixel(p, ph, m0 + i);
      if ((m0 + i < tt_conv::phase_pixels(p, ph)) != (pix < p.gemm_m)) return "row limit and pixel disagree";
      if (pix < p.gemm_m) ++written[size_t(pix)];
    }
    for (int split = 0; split < splits; ++split) {
      const int kt0 = split * kper, nkt = std::max(std::min(kt_all, kt0 + kper) - kt0, 0);
      tt_conv::Taps cur = tt_conv::phase_taps_of_tile(kt0, chunks, ph);
      for (int kt = kt0; kt < kt0 + nkt; ++kt) {
        const tt_conv::Taps want = tt_conv::phase_taps_of_tile(kt, chunks, ph);
        if (cur.r != want.r || cur.s != want.s || cur.chunk != want.chunk) return "carried taps drift from the tile's";
        for (int i = 0; i < bm; ++i) {
          const int pix = tt_conv::phase_pixel(p, ph, m0 + i);
          for (int c = 0; c < bk; ++c) {
            const int ch = cur.chunk * bk + c;
            if (ch >= kg) continue;  // the kernel's channel predicate
            const tt_conv::TapRow row = tt_conv::gather_row(1, p, pix, g * kg + c);
            if (!tt_conv::tap_ok(row.mask, cur.r, cur.s)) continue;
            const int off = row.off + tt_conv::tap_delta(1, p, cur.r, cur.s) + cur.chunk * bk;
            if (off % p.k != g * kg + ch) return "gathered channel is not the tile's";
            ++seen[Product(pix, cur.r, cur.s, off / p.k, ch)];
          }
        }
        tt_conv::next_phase_tile(cur, chunks, ph);
      }
    }
  }
  for (int pix = 0; pix < p.gemm_m; ++pix)
    if (written[size_t(pix)] != 1) {
      err << "dx pixel " << pix << " written " << written[size_t(pix)] << " times";
      return err.str();
    }
  const std::map<Product, int> want = defined_products(p);
  for (const auto& [prod, n] : seen)
    if (n != 1 || !want.count(prod)) {
      err << "product (dx " << std::get<0>(prod) << ", r " << std::get<1>(prod) << ", s " << std::get<2>(prod)
          << ", dy " << std::get<3>(prod) << ", channel " << std::get<4>(prod) << ") " << (want.count(prod) ? "repeated" : "not in the definition");
      return err.str();
    }
  for (const auto& [prod, n] : want)
    if (!seen.count(prod)) {
      err << "product (dx " << std::get<0>(prod) << ", r " << std::get<1>(prod) << ", s " << std::get<2>(prod)
          << ", dy " << std::get<3>(prod) << ", channel " << std::get<4>(prod) << ") missed";
      return err.str();
    }
  return "";
}

// The kernel's tile count: phase_of_tile answers until the tiles run out.
int phase_grid(const TtConvParams& p, int bm) {
  int t = 0;
  while (tt_conv::phase_of_tile(p, t, bm).rows > 0) ++t;
  return t;
}

// The template's GRID_X (the launch) for this shape with PHASE 1 and block rows bm.
std::int64_t json_grid_x(const PhaseShape& s, int bm) {
  const KernelTemplate& t = find_template("mma_conv");
  ConvProblem c;
  c.direction = ConvDirection::BackwardData, c.in_type = c.out_type = DataType::BF16;
  c.n = s.n, c.c = s.c, c.h = s.h, c.w = s.w, c.k = s.k, c.r = s.r, c.s = s.s, c.stride_h = s.u, c.stride_w = s.v;
  c.pad_h = s.ph, c.pad_w = s.pw, c.dil_h = s.dh, c.dil_w = s.dw, c.groups = s.groups;
  Solution sol;
  sol.template_name = "mma_conv";
  sol.params = t.defaults();
  sol.params["PHASE"] = 1;
  sol.params["BM"] = bm;
  return t.variables(sol, Problem(c), tiletune::testing::fake_device(gpu::BackendKind::Cuda)).at("GRID_X");
}

TEST(MmaConvPhaseIndex, EveryProductOnceAndEveryPixelWritten) {
  for (const PhaseShape& sh : phase_shapes()) {
    const TtConvParams p = tiletune::testing::index_params(sh, 1);
    for (int bm : {8, 32})
      for (int bk : {8, 16})
        for (int splits : {1, 3}) {
          SCOPED_TRACE(::testing::Message() << "h" << sh.h << " w" << sh.w << " r" << sh.r << "x" << sh.s << " u" << sh.u
                                            << "x" << sh.v << " dil " << sh.dh << " BM " << bm << " BK " << bk
                                            << " splits " << splits);
          const int grid = phase_grid(p, bm);
          ASSERT_EQ(json_grid_x(sh, bm), grid) << "mma_conv.json's GRID_X is the kernel's tile count";
          for (int g = 0; g < p.groups; ++g) EXPECT_EQ(phase_replay(p, g, bm, bk, splits, grid, 0), "");
        }
  }
}

// The replay must notice a phase whose pixels are one row off its taps.
TEST(MmaConvPhaseIndex, PhaseShiftedByOneIsCaught) {
  for (const PhaseShape& sh : phase_shapes()) {
    if (sh.u == 1) continue;
    const TtConvParams p = tiletune::testing::index_params(sh, 1);
    EXPECT_NE(phase_replay(p, 0, 8, 8, 1, phase_grid(p, 8), 1), "") << "h" << sh.h << " u" << sh.u;
  }
}

// Phases no tap reaches run no K tile (their rows are still stored: zeros).
TEST(MmaConvPhaseIndex, PhasesWithoutTapsHaveNoKTiles) {
  const TtConvParams p = tiletune::testing::index_params({2, 8, 7, 9, 12, 1, 1, 2, 2, 0, 0, 1, 1, 1}, 1);
  int empty = 0;
  for (int t = 0, n = phase_grid(p, 8); t < n; ++t) {
    const tt_conv::Phase ph = tt_conv::phase_of_tile(p, t, 8);
    const bool reached = ph.a == 0 && ph.b == 0;
    EXPECT_EQ(ph.nr * ph.ns, reached ? 1 : 0) << "phase " << ph.a << "," << ph.b;
    empty += !reached;
  }
  EXPECT_GT(empty, 0);
}

// The model sees the phase split's smaller reduction: on ResNet-50's 3x3 stride-2 input gradient
// (batch 32) its best PHASE 1 candidate is estimated well below its best PHASE 0 one.
TEST(MmaConvPhaseModel, PricesThePhasesSmallerReduction) {
  ConvProblem c;
  c.direction = ConvDirection::BackwardData, c.in_type = c.out_type = DataType::BF16;
  c.n = 32, c.c = 128, c.h = c.w = 56, c.k = 128, c.r = c.s = 3, c.stride_h = c.stride_w = 2, c.pad_h = c.pad_w = 1;
  const gpu::DeviceInfo dev = tiletune::testing::fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = {Problem(c)};
  double best[2] = {1e30, 1e30};
  for (const auto& cand : tuner::enumerate({find_template("mma_conv")}, ps, dev).candidates) {
    const ModelEstimate e = model_estimate(*cand.tmpl, cand.solution, ps[0], dev);
    ASSERT_TRUE(e.has_model);
    double& b = best[cand.solution.params.at("PHASE")];
    b = std::min(b, e.seconds);
  }
  ASSERT_LT(best[1], 1e30) << "PHASE 1 candidates exist";
  std::printf("best estimates: PHASE 0 %.3g s, PHASE 1 %.3g s\n", best[0], best[1]);
  EXPECT_LT(best[1], 0.7 * best[0]);
}

}  // namespace
