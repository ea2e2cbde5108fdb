// mfma_conv's walk over blocks and K tiles (kernel_templates/mfma_conv.cuh) replayed on the host in
// all three directions, with the kernel's index functions (mma_conv_index.h) and its predicates,
// against the convolution computed from its definition; and the template's search space per
// direction. No GPU: no AMD GPU has run the kernel, so this is what checks its addressing.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <vector>

#include "kernel_templates/mma_conv_index.h"
#include "solutions/kernel_template.h"
#include "tests/conv_index_util.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;

namespace {

using tiletune::testing::IndexShape;
using tiletune::testing::index_params;

// Small integers, so that every sum is exact in double.
std::vector<double> tensor(std::size_t n, int seed) {
  std::vector<double> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = double(int((i * 7 + std::size_t(seed) * 13) % 5) - 2);
  return t;
}

struct Tensors {
  std::vector<double> x, w, y;  // NHWC, KRSC, NPQK
};

// y, dx and dw from the definition y[n,p,q,k] = sum x[n, p*u - ph + r*dh, q*v - pw + s*dw, c] w[k,r,s,c].
Tensors reference(const TtConvParams& p, const Tensors& in) {
  const int cg = p.c / p.groups, kg = p.k / p.groups;
  Tensors out{std::vector<double>(in.x.size()), std::vector<double>(in.w.size()), std::vector<double>(in.y.size())};
  for (int n = 0; n < p.n; ++n)
    for (int op = 0; op < p.p; ++op)
      for (int oq = 0; oq < p.q; ++oq)
        for (int k = 0; k < p.k; ++k)
          for (int r = 0; r < p.r; ++r)
            for (int s = 0; s < p.s; ++s) {
              const int h = op * p.stride_h - p.pad_h + r * p.dil_h, w = oq * p.stride_w - p.pad_w + s * p.dil_w;
              if (h < 0 || h >= p.h || w < 0 || w >= p.w) continue;
              for (int c = 0; c < cg; ++c) {
                const long long xi = tt_act_offset(false, n, k / kg * cg + c, h, w, p.c, p.h, p.w);
                const long long wi = tt_filter_offset(false, k, c, r, s, cg, p.r, p.s);
                const long long yi = tt_act_offset(false, n, k, op, oq, p.k, p.p, p.q);
                out.y[yi] += in.x[xi] * in.w[wi];
                out.x[xi] += in.y[yi] * in.w[wi];
                out.w[wi] += in.y[yi] * in.x[xi];
              }
            }
  return out;
}

// The kernel's walk, element by element: blocks (blockIdx.x, .y, .z = group * SPLITK + split),
// each split's K tiles in order, A (MT0 x DU) and B (MT1 x DU) tiles as its loaders fill LDS, the
// MFMA products as a plain tile GEMM, the splits' partial tiles summed in split order (as
// tt_splitk::reduce), the epilogue's stores. Operands read from `in`, the output written to `out`.
void replay(int dir, const TtConvParams& p, int MT0, int MT1, int DU, int SPLITK, const Tensors& in, Tensors& out) {
  const int cg = p.c / p.groups, kg = p.k / p.groups;
  const int chunks = ((dir == 1 ? kg : cg) + DU - 1) / DU;
  const int grid_x = (p.gemm_m + MT0 - 1) / MT0;
  const int grid_y = dir == 2 ? p.r * p.s * ((cg + MT1 - 1) / MT1) : (p.gemm_n + MT1 - 1) / MT1;
  const int ktiles = dir == 2 ? (p.gemm_k + DU - 1) / DU : p.r * p.s * chunks;
  const std::vector<double>& xa = dir == 0 ? in.x : in.y;   // A's tensor
  const std::vector<double>& xb = dir == 2 ? in.x : in.w;   // B's tensor
  std::vector<double>& o = dir == 0 ? out.y : dir == 1 ? out.x : out.w;
  for (int g = 0; g < p.groups; ++g)
    for (int by = 0; by < grid_y; ++by)
      for (int bx = 0; bx < grid_x; ++bx) {
        const int m0 = bx * MT0;
        tt_conv::Taps col_tap = {0, 0, by};
        if (dir == 2) col_tap = tt_conv::taps_of_tile(by, (cg + MT1 - 1) / MT1, p.s);
        const int n0 = col_tap.chunk * MT1;
        // Per-thread state the loaders set up once: gathered rows, strided columns, carried pixels.
        std::vector<tt_conv::TapRow> arow(MT0), brow(MT1);
        std::vector<tt_conv::StridedOperand> acol(MT0), bcol(MT1);
        std::vector<tt_conv::Pixel> px(DU);
        for (int m = 0; m < MT0; ++m) {
          if (dir != 2) arow[m] = tt_conv::gather_row(dir, p, m0 + m, dir == 0 ? g * cg : g * kg);
          else acol[m] = tt_conv::strided_operand(2, p, g, m0 + m);
        }
        for (int n = 0; n < MT1; ++n) {
          if (dir == 0) brow[n] = tt_conv::filter_row(p, g, n0 + n, 0);
          if (dir == 1) bcol[n] = tt_conv::strided_operand(1, p, g, n0 + n);
        }
        std::vector<double> acc(std::size_t(MT0) * MT1, 0.0), a(std::size_t(MT0) * DU), b(std::size_t(MT1) * DU);
        for (int split = 0; split < SPLITK; ++split) {
          // tt_splitk::k_range: contiguous ranges of K tiles, lengths differing by at most one.
          const int kt0 = split * ktiles / SPLITK, kt1 = (split + 1) * ktiles / SPLITK;
          for (int i = 0; i < DU; ++i) px[i] = tt_conv::pixel_of(kt0 * DU + i, p.p, p.q);
          tt_conv::Taps k = {0, 0, 0};
          if (dir != 2) k = tt_conv::taps_of_tile(kt0, chunks, p.s);
          for (int kt = kt0; kt < kt1; ++kt) {
            for (int m = 0; m < MT0; ++m)
              for (int i = 0; i < DU; ++i) {
                double v = 0;
                if (dir != 2) {  // TapGather: channel k.chunk * DU + i of tap (r, s)
                  const bool ok = k.chunk * DU + i < (dir == 1 ? kg : cg) && tt_conv::tap_ok(arow[m].mask, k.r, k.s);
                  if (ok) v = xa.at(std::size_t(arow[m].off + tt_conv::tap_delta(dir, p, k.r, k.s) + k.chunk * DU + i));
                } else {  // StridedLoad: output pixel kt * DU + i
                  const int row = kt * DU + i;
                  if (m0 + m < acol[m].cols && row < acol[m].rows)
                    v = xa.at(std::size_t(acol[m].col_off + row * acol[m].ld + tt_conv::strided_tap(2, p, k.r, k.s)));
                }
                a[std::size_t(m) * DU + i] = v;
              }
            for (int n = 0; n < MT1; ++n)
              for (int i = 0; i < DU; ++i) {
                double v = 0;
                if (dir == 0) {
                  if (k.chunk * DU + i < cg && tt_conv::tap_ok(brow[n].mask, k.r, k.s))
                    v = xb.at(std::size_t(brow[n].off + tt_conv::filter_delta(p, k.r, k.s) + k.chunk * DU + i));
                } else if (dir == 1) {  // output channel k.chunk * DU + i at tap (r, s)
                  const int row = k.chunk * DU + i;
                  if (n0 + n < bcol[n].cols && row < bcol[n].rows)
                    v = xb.at(std::size_t(bcol[n].col_off + row * bcol[n].ld + tt_conv::strided_tap(1, p, k.r, k.s)));
                } else {  // PixelGather: channel n0 + n under the block column's tap
                  int off = 0;
                  if (tt_conv::wgrad_x_offset(p, px[i], col_tap.r, col_tap.s, g * cg + n0 + n, off) && n0 + n < cg)
                    v = xb.at(std::size_t(off));
                }
                b[std::size_t(n) * DU + i] = v;
              }
            for (int m = 0; m < MT0; ++m)
              for (int n = 0; n < MT1; ++n)
                for (int i = 0; i < DU; ++i) acc[std::size_t(m) * MT1 + n] += a[std::size_t(m) * DU + i] * b[std::size_t(n) * DU + i];
            if (dir != 2) tt_conv::next_tile(k, chunks, p.s);
            else
              for (auto& q : px) tt_conv::advance(q, DU / p.q, DU % p.q, p.p, p.q);
          }
        }
        const tt_conv::OutputTile t = tt_conv::output_tile(dir, p, g, col_tap.r, col_tap.s);
        for (int m = 0; m < MT0; ++m)
          for (int n = 0; n < MT1; ++n)
            if (m0 + m < p.gemm_m && n0 + n < t.cols) {
              double& dst = o.at(std::size_t(t.base + (long long)(m0 + m) * t.ld + n0 + n));
              EXPECT_EQ(dst, -999.0) << "written twice: m " << m0 + m << " n " << n0 + n;
              dst = acc[std::size_t(m) * MT1 + n];
            }
      }
}

TEST(MfmaConvWalk, EveryDirectionComputesTheConvolution) {
  for (const IndexShape& sh : tiletune::testing::index_shapes()) {
    const TtConvParams p0 = index_params(sh, 0);
    Tensors in{tensor(std::size_t(sh.n) * sh.c * sh.h * sh.w, 1),
               tensor(std::size_t(sh.k) * (sh.c / sh.groups) * sh.r * sh.s, 2),
               tensor(std::size_t(sh.n) * sh.k * p0.p * p0.q, 3)};
    const Tensors want = reference(p0, in);
    for (int dir = 0; dir < 3; ++dir)
      for (const auto& [mt0, mt1, du, splitk] : std::vector<std::array<int, 4>>{{32, 16, 16, 1}, {64, 32, 32, 1}, {32, 16, 16, 3}}) {
        SCOPED_TRACE(::testing::Message() << "dir " << dir << " c" << sh.c << " k" << sh.k << " r" << sh.r << "x"
                                          << sh.s << " u" << sh.u << "x" << sh.v << " tile " << mt0 << "x" << mt1
                                          << "x" << du << " splitk " << splitk);
        const TtConvParams p = index_params(sh, dir);
        Tensors got{std::vector<double>(in.x.size(), -999.0), std::vector<double>(in.w.size(), -999.0),
                    std::vector<double>(in.y.size(), -999.0)};
        replay(dir, p, mt0, mt1, du, splitk, in, got);
        const auto& g = dir == 0 ? got.y : dir == 1 ? got.x : got.w;
        const auto& w = dir == 0 ? want.y : dir == 1 ? want.x : want.w;
        for (std::size_t i = 0; i < w.size(); ++i) ASSERT_EQ(g[i], w[i]) << "element " << i;
      }
  }
}

// ---------------------------------------------------------------------------------------------
// The search space, per direction.

ConvProblem mfma_conv(ConvDirection dir, DataType in, DataType out, int n, int c, int hw, int k, int rs, int stride,
                 int groups = 1) {
  ConvProblem p;
  p.direction = dir, p.in_type = in, p.out_type = out;
  p.n = n, p.c = c, p.h = p.w = hw, p.k = k, p.r = p.s = rs, p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = rs / 2, p.groups = groups;
  return p;
}

TEST(MfmaConvSpace, EveryDirectionOfResNetLayersHasCandidates) {
  const KernelTemplate& t = find_template("mfma_conv");
  EXPECT_TRUE(t.supports(gpu::BackendKind::Hip));
  EXPECT_FALSE(t.supports(gpu::BackendKind::Cuda));
  gpu::DeviceInfo dev = tiletune::testing::fake_device(gpu::BackendKind::Hip);
  std::vector<Problem> problems;
  for (int dir = 0; dir < 3; ++dir)
    for (DataType in : {DataType::BF16, DataType::F16}) {
      const DataType out = dir == 2 ? DataType::F32 : in;
      problems.push_back(mfma_conv(ConvDirection(dir), in, out, 32, 64, 56, 64, 3, 1));
      problems.push_back(mfma_conv(ConvDirection(dir), in, out, 32, 256, 56, 512, 1, 2));
      problems.push_back(mfma_conv(ConvDirection(dir), in, out, 2, 36, 17, 20, 3, 2, 2));  // Cg 18, Kg 10
    }
  const auto e = tuner::enumerate({t}, problems, dev);
  std::map<std::size_t, std::size_t> per;
  std::map<std::size_t, std::int64_t> vw, splitk;
  for (const auto& c : e.candidates) {
    ++per[c.problem_index];
    vw[c.problem_index] = std::max(vw[c.problem_index], c.solution.params.at("VW"));
    splitk[c.problem_index] = std::max(splitk[c.problem_index], c.solution.params.at("SPLITK"));
  }
  for (std::size_t i = 0; i < problems.size(); ++i) {
    std::printf("  %-88s %5zu\n", problems[i].key().c_str(), per[i]);
    EXPECT_GT(per[i], 0u) << problems[i].key();
    // The widest vector both channel counts a direction reads along allow: 8, but 2 for Cg 18.
    EXPECT_EQ(vw[i], problems[i].conv().c / problems[i].conv().groups == 18 ? 2 : 8) << problems[i].key();
  }
  // Split-K where the grid is smaller than the device: wgrad of the 64-channel 3x3 layer (at most
  // 9 blocks per split), never the forward pass of the 256 -> 512 1x1 layer (hundreds of blocks).
  EXPECT_GE(splitk[12], 8) << problems[12].key();
  EXPECT_EQ(splitk[1], 1) << problems[1].key();
  // NCHW and fp32 inputs are not this template's, nor wave32 devices.
  ConvProblem nchw = mfma_conv(ConvDirection::BackwardData, DataType::BF16, DataType::BF16, 8, 64, 28, 64, 3, 1);
  nchw.layout = ConvLayout::NCHW;
  const ConvProblem f32 = mfma_conv(ConvDirection::BackwardFilter, DataType::F32, DataType::F32, 8, 64, 28, 64, 3, 1);
  EXPECT_TRUE(tuner::enumerate({t}, std::vector<Problem>{nchw, f32}, dev).candidates.empty());
  dev.warp_size = 32;
  EXPECT_TRUE(tuner::enumerate({t}, std::vector<Problem>{problems[0]}, dev).candidates.empty());
}

}  // namespace
