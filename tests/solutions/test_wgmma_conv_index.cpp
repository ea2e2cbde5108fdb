// wgmma_conv's TMA coordinates (kernel_templates/wgmma_conv_index.h) on the host: a model of the
// TMA im2col traversal (the bounding box from the corners the host encodes, traversal strides,
// W then H then N, zero fill outside x) is fed the kernel's per-box start coordinates and per-K-step
// offsets, and every element it reads is compared with the convolution's definition. Also which
// convolutions wgmma_conv's constraints admit. No GPU needed.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kernel_templates/wgmma_conv_index.h"
#include "solutions/kernel_template.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;

namespace {

struct WgmmaShape {
  int n, c, h, w, k, r, s, u, v, ph, pw, dh, dw;
};

TtConvParams wgmma_params(const WgmmaShape& s) {
  TtConvParams p{};
  p.n = s.n, p.c = s.c, p.h = s.h, p.w = s.w, p.k = s.k, p.r = s.r, p.s = s.s;
  p.stride_h = s.u, p.stride_w = s.v, p.pad_h = s.ph, p.pad_w = s.pw, p.dil_h = s.dh, p.dil_w = s.dw;
  p.groups = 1;
  p.p = (s.h + 2 * s.ph - s.dh * (s.r - 1) - 1) / s.u + 1;
  p.q = (s.w + 2 * s.pw - s.dw * (s.s - 1) - 1) / s.v + 1;
  p.gemm_m = s.n * p.p * p.q, p.gemm_n = s.k, p.gemm_k = s.c * s.r * s.s;
  return p;
}

// The TMA's walk over one box: pixel after pixel from the start, W fastest, wrapping inside the
// bounding box [lower, extent - 1 + upper] of the tensor read, in steps of the traversal strides.
struct Walker {
  tt_wgconv::Im2col v;
  int lower[2], upper[2];
  int n, h, w;
  Walker(const TtConvParams& p, int dir, int m) : v(tt_wgconv::im2col_of(p, dir)) {
    const tt_wgconv::BoxStart b = tt_wgconv::box_start(v, m);
    n = b.n, h = b.h, w = b.w;
    tt_wgconv::im2col_corners(v, p.r, p.s, lower, upper);
  }
  // A strided dgrad's phases: the view and corners of wgmma_conv_index.h's phase grid.
  Walker(const TtConvParams& p, const tt_wgconv::PhaseGrid& g, int m) : v(tt_wgconv::im2col_phase(p, g)) {
    const tt_wgconv::BoxStart b = tt_wgconv::box_start(v, m);
    n = b.n, h = b.h, w = b.w;
    tt_wgconv::phase_corners(p, g, lower, upper);
  }
  void next() {
    w += v.stride_w;
    if (w > v.src_w - 1 + upper[0]) {
      w = lower[0];
      h += v.stride_h;
      if (h > v.src_h - 1 + upper[1]) {
        h = lower[1];
        ++n;
      }
    }
  }
  // Element offset read for channel c at the offsets, or -1 (zero fill).
  long long read(int batch, int c, int off_w, int off_h) const {
    const int hh = h + off_h, ww = w + off_w;
    if (n < 0 || n >= batch || hh < 0 || hh >= v.src_h || ww < 0 || ww >= v.src_w || c >= v.src_c) return -1;
    return tt_act_offset(false, n, c, hh, ww, v.src_c, v.src_h, v.src_w);
  }
};

// The definition, forward and wgrad: x element of output pixel m at filter tap (r, s), channel c,
// or -1 (padding, or past the last pixel).
long long x_element(const TtConvParams& p, int m, int c, int r, int s) {
  if (m >= p.n * p.p * p.q) return -1;
  const int img = m / (p.p * p.q), rem = m % (p.p * p.q), y = rem / p.q, x = rem % p.q;
  const int h = y * p.stride_h - p.pad_h + r * p.dil_h, w = x * p.stride_w - p.pad_w + s * p.dil_w;
  if (h < 0 || h >= p.h || w < 0 || w >= p.w) return -1;
  return tt_act_offset(false, img, c, h, w, p.c, p.h, p.w);
}

// The definition, dgrad: dx[n, h, w, c] sums dy[n, (h + pad - r dil) / u, (w + pad - s dil) / v, k]
// wt[k, r, s, c] where the divisions are exact; the dy element of input pixel m at tap (r, s),
// channel k, or -1.
long long dy_element(const TtConvParams& p, int m, int k, int r, int s) {
  if (m >= p.n * p.h * p.w) return -1;
  const int img = m / (p.h * p.w), rem = m % (p.h * p.w), h = rem / p.w, w = rem % p.w;
  const int ny = h + p.pad_h - r * p.dil_h, nx = w + p.pad_w - s * p.dil_w;
  if (ny % p.stride_h != 0 || nx % p.stride_w != 0) return -1;
  const int y = ny / p.stride_h, x = nx / p.stride_w;
  if (y < 0 || y >= p.p || x < 0 || x >= p.q) return -1;
  return tt_act_offset(false, img, k, y, x, p.k, p.p, p.q);
}

const std::vector<WgmmaShape>& wgmma_shapes() {
  static const std::vector<WgmmaShape> s = {
      {2, 64, 9, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1},    // 3x3 same padding, odd P*Q
      {3, 128, 11, 10, 64, 3, 3, 2, 2, 1, 1, 1, 1},  // stride 2
      {2, 64, 8, 8, 128, 1, 1, 1, 1, 0, 0, 1, 1},    // 1x1
      {2, 64, 9, 9, 64, 1, 1, 2, 2, 0, 0, 1, 1},     // 1x1 stride 2 (ResNet downsample)
      {2, 64, 12, 13, 64, 3, 3, 1, 1, 2, 2, 2, 2},   // dilation 2
      {2, 64, 10, 9, 64, 3, 5, 2, 1, 1, 2, 1, 3},    // R != S, anisotropic stride, pad, dilation
      {1, 64, 7, 12, 64, 5, 3, 1, 3, 0, 1, 2, 1},    // no padding along H, stride 3 along W
      {2, 192, 5, 6, 64, 3, 3, 1, 1, 3, 0, 1, 1},    // padding wider than the filter along H
  };
  return s;
}

TEST(WgmmaConvIndex, Im2colCopiesReadTheConvolutionsElements) {
  for (const WgmmaShape& sh : wgmma_shapes()) {
    const TtConvParams p = wgmma_params(sh);
    const int chunks = p.c / 64, steps = p.r * p.s * chunks;
    for (int boxp : {64, 128}) {
      for (int m0 = 0; m0 < p.gemm_m; m0 += boxp) {
        tt_wgconv::KStep k = {0, 0, 0};
        for (int kt = 0; kt < steps; ++kt) {
          Walker at(p, 0, m0);
          for (int j = 0; j < boxp; ++j, at.next())
            for (int ci = 0; ci < 64; ++ci) {
              const long long got = at.read(p.n, k.chunk * 64 + ci, k.s * p.dil_w, k.r * p.dil_h);
              int c, r, s;
              tt_split_crs(false, kt * 64 + ci, p.c, p.r, p.s, c, r, s);
              ASSERT_EQ(got, x_element(p, m0 + j, c, r, s))
                  << "shape " << (&sh - wgmma_shapes().data()) << " box of " << boxp << " at m0 " << m0 << ", K step " << kt
                  << " (r " << k.r << ", s " << k.s << ", chunk " << k.chunk << "), pixel " << j << ", channel " << ci;
            }
          tt_conv::next_tile(k, chunks, p.s);
        }
        EXPECT_EQ(k.r, p.r);  // the walk ends after the last tap
        // A split of the reduction starting at K step kt resumes the same walk.
        for (int kt = 0; kt < steps; kt += 3) {
          tt_wgconv::KStep a = {0, 0, 0};
          for (int i = 0; i < kt; ++i) tt_conv::next_tile(a, chunks, p.s);
          const tt_wgconv::KStep b = tt_conv::taps_of_tile(kt, chunks, p.s);
          ASSERT_TRUE(a.r == b.r && a.s == b.s && a.chunk == b.chunk) << kt;
        }
      }
    }
  }
}

// C not a multiple of 64 (Inception's 5x5 with 48 channels, 96): a tap's last chunk copies 64
// channels from 64 (chunks - 1) on, and the ones past C are the copy's zero fill.
TEST(WgmmaConvIndex, APartialChunkReadsZerosPastC) {
  for (const WgmmaShape& sh :
       {WgmmaShape{2, 48, 9, 8, 64, 5, 5, 1, 1, 2, 2, 1, 1}, WgmmaShape{1, 96, 7, 9, 64, 3, 3, 2, 2, 1, 1, 1, 1}}) {
    const TtConvParams p = wgmma_params(sh);
    const int chunks = (p.c + 63) / 64;
    for (int m0 = 0; m0 < p.gemm_m; m0 += 64) {
      tt_wgconv::KStep k = {0, 0, 0};
      for (int kt = 0; kt < p.r * p.s * chunks; ++kt) {
        Walker at(p, 0, m0);
        for (int j = 0; j < 64; ++j, at.next())
          for (int ci : {0, 40, 47, 48, 63}) {
            const int c = k.chunk * 64 + ci;
            ASSERT_EQ(at.read(p.n, c, k.s * p.dil_w, k.r * p.dil_h), c < p.c ? x_element(p, m0 + j, c, k.r, k.s) : -1)
                << "C " << p.c << " step " << kt << " pixel " << j << " channel " << c;
          }
        tt_conv::next_tile(k, chunks, p.s);
      }
      EXPECT_EQ(k.r, p.r);
    }
  }
}

// dgrad as a stride-1 convolution of dy: the copies on x's pixel grid, at flipped tap (r', s'),
// read dy where the definition's tap (R-1-r', S-1-s') does, and the filter box of that step holds
// wt[k][R-1-r'][S-1-s'][c] at (c, k).
TEST(WgmmaConvIndex, DgradCopiesReadDyAndTheFlippedFilters) {
  for (const WgmmaShape& sh : wgmma_shapes()) {
    if (sh.u != 1 || sh.v != 1) continue;  // stride-1 dgrad only
    TtConvParams p = wgmma_params(sh);
    if (p.dil_h * (p.r - 1) < p.pad_h || p.dil_w * (p.s - 1) < p.pad_w) continue;  // refused by the constraints
    const int chunks = p.k / 64, steps = p.r * p.s * chunks, M = p.n * p.h * p.w;
    for (int m0 = 0; m0 < M; m0 += 128) {
      tt_wgconv::KStep k = {0, 0, 0};
      for (int kt = 0; kt < steps; ++kt) {
        const int r = p.r - 1 - k.r, s = p.s - 1 - k.s;
        const int tap = tt_wgconv::flipped_tap(p, k.r, k.s);
        ASSERT_EQ(tap, r * p.s + s);
        Walker at(p, 1, m0);
        for (int j = 0; j < 128; ++j, at.next())
          for (int ki = 0; ki < 64; ki += 5)
            ASSERT_EQ(at.read(p.n, k.chunk * 64 + ki, k.s * p.dil_w, k.r * p.dil_h),
                      dy_element(p, m0 + j, k.chunk * 64 + ki, r, s))
                << "shape " << (&sh - wgmma_shapes().data()) << " m0 " << m0 << " step " << kt << " pixel " << j;
        // The kernel's filter boxes: at map coordinates {n0 + 64 i, tap, 64 chunk} of the {C, R*S, K}
        // map (element strides 1, C, R*S*C), box {64, 1, 64}; element (c, k) of box i must be
        // wt[k][r][s][c] of the definition's tap, or zero past C.
        for (int i = 0; i * 64 < p.c; ++i)
          for (int ci = 0; ci < 64; ci += 9)
            for (int ki = 0; ki < 64; ki += 13) {
              const int c = 64 * i + ci, kk = k.chunk * 64 + ki;
              if (c >= p.c) continue;  // zero fill
              const long long at = (long long)kk * (p.r * p.s * p.c) + (long long)tap * p.c + c;
              ASSERT_EQ(at, tt_filter_offset(false, kk, c, r, s, p.c, p.r, p.s));
            }
        tt_conv::next_tile(k, chunks, p.s);
      }
    }
  }
}

// wgrad: columns n0 .. n0 + 63 (n0 a multiple of 64) are channels c0 .. c0 + 63 of tap (r, s) of
// the R*S*C columns; K step kt gathers output pixels [64 kt, 64 kt + 64) of x at that tap, zeros
// past the last pixel.
TEST(WgmmaConvIndex, WgradCopiesReadXAtEachBoxsTap) {
  for (const WgmmaShape& sh : wgmma_shapes()) {
    const TtConvParams p = wgmma_params(sh);
    const int NPQ = p.n * p.p * p.q;
    for (int n0 = 0; n0 < p.r * p.s * p.c; n0 += 64) {
      const tt_wgconv::TapColumn tc = tt_wgconv::tap_column(p, n0);
      int c, r, s;
      tt_split_crs(false, n0, p.c, p.r, p.s, c, r, s);
      ASSERT_TRUE(tc.r == r && tc.s == s && tc.c == c) << n0;
      for (int kt = 0; kt * 64 < NPQ; ++kt) {
        Walker at(p, 2, kt * 64);
        for (int j = 0; j < 64; ++j, at.next())
          for (int ci = 0; ci < 64; ci += 7)
            ASSERT_EQ(at.read(p.n, tc.c + ci, tc.s * p.dil_w, tc.r * p.dil_h), x_element(p, kt * 64 + j, tc.c + ci, r, s))
                << "shape " << (&sh - wgmma_shapes().data()) << " column " << n0 << " step " << kt << " pixel " << j;
      }
    }
  }
}

// A strided 1x1 dgrad without padding walks dy's pixels, reading them in place, and its s x s
// blocks cover every dx pixel exactly once (the kernel writes zeros over all but the first).
TEST(WgmmaConvIndex, ScatteredDgradBlocksCoverDxOnce) {
  for (const WgmmaShape& sh : std::vector<WgmmaShape>{{2, 64, 9, 11, 64, 1, 1, 2, 2, 0, 0, 1, 1},
                                            {1, 64, 8, 7, 64, 1, 1, 2, 1, 0, 0, 1, 1},
                                            {2, 64, 10, 9, 64, 1, 1, 3, 2, 0, 0, 1, 1}}) {
    const TtConvParams p = wgmma_params(sh);
    ASSERT_TRUE(tt_wgconv::dgrad_scatters(p));
    std::vector<int> seen(std::size_t(p.n) * p.h * p.w, 0);
    for (int m = 0; m < p.n * p.p * p.q; ++m) {
      Walker at(p, 1, m);  // a box starting at row m reads dy's pixel m itself
      ASSERT_EQ(at.read(p.n, 0, 0, 0), tt_act_offset(false, m / (p.p * p.q), 0, m % (p.p * p.q) / p.q, m % p.q,
                                                     p.k, p.p, p.q));
      const tt_wgconv::Pixel b = tt_wgconv::dgrad_block(p, m);
      for (int dh = 0; dh < p.stride_h && b.h + dh < p.h; ++dh)
        for (int dw = 0; dw < p.stride_w && b.w + dw < p.w; ++dw) ++seen[(std::size_t(b.n) * p.h + b.h + dh) * p.w + b.w + dw];
    }
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "dx pixel " << i;
  }
}

// The filter tile of K step kt is columns [64 kt, 64 kt + 64) of the K x (R*S*C) matrix: the
// reduction index kt * 64 + c of filter n, in KRSC.
TEST(WgmmaConvIndex, FilterColumnsFollowTheReductionOrder) {
  for (const WgmmaShape& sh : wgmma_shapes()) {
    const TtConvParams p = wgmma_params(sh);
    const long long rsc = (long long)p.r * p.s * p.c;
    for (int n = 0; n < p.k; n += 7)
      for (int k = 0; k < p.gemm_k; ++k) {
        int c, r, s;
        tt_split_crs(false, k, p.c, p.r, p.s, c, r, s);
        ASSERT_EQ(n * rsc + k, tt_filter_offset(false, n, c, r, s, p.c, p.r, p.s));
      }
  }
}

// dgrad by its stride phases (PHASE 1): for every phase and box of its grid, the copies at each of
// the phase's K steps read dy where the definition's tap does (one map for all phases, each tap at
// its offsets), the filter tap is the definition's own, the phase holds exactly the taps that reach
// its pixels, and every dx pixel is one phase's grid pixel exactly once.
TEST(WgmmaConvIndex, PhaseDgradCopiesReadDyAtEachPhasesTaps) {
  const std::vector<WgmmaShape> shapes = {
      {2, 64, 9, 11, 64, 3, 3, 2, 2, 1, 1, 1, 1},   // odd H and W: phases of unequal grids
      {2, 128, 8, 8, 64, 3, 3, 2, 2, 0, 0, 1, 1},   // no padding (Inception's valid stride 2)
      {1, 64, 10, 9, 64, 3, 5, 2, 3, 1, 2, 1, 1},   // anisotropic stride, filter and padding
      {2, 64, 12, 12, 64, 2, 2, 2, 2, 0, 0, 1, 1},  // 2x2 stride 2: one tap a phase
      {2, 64, 7, 7, 64, 4, 4, 2, 2, 1, 1, 1, 1},    // 4x4: two taps a phase in each dimension
      {2, 64, 9, 9, 64, 3, 3, 3, 3, 2, 2, 1, 1}};   // stride 3
  for (const WgmmaShape& sh : shapes) {
    const TtConvParams p = wgmma_params(sh);
    const tt_wgconv::PhaseGrid g = tt_wgconv::phase_grid(p);
    const int chunks = p.k / 64, M = p.n * g.rows * g.cols, boxp = 64;
    const std::string at_shape = "shape " + std::to_string(&sh - shapes.data());
    std::vector<int> covered(std::size_t(p.n) * p.h * p.w, 0);
    for (int ph = 0; ph < p.stride_h * p.stride_w; ++ph) {
      const tt_conv::Phase x = tt_wgconv::phase_of(p, g, ph);
      ASSERT_TRUE(x.nr > 0 && x.ns > 0) << at_shape;
      if (ph % p.stride_w > 0) {  // heaviest first: along a row of the walk's ranks, then down
        const tt_conv::Phase left = tt_wgconv::phase_of(p, g, ph - 1);
        ASSERT_TRUE(left.a == x.a && left.nr == x.nr && left.ns >= x.ns) << at_shape << " phase " << ph;
      }
      if (ph >= p.stride_w) {
        const tt_conv::Phase up = tt_wgconv::phase_of(p, g, ph - p.stride_w);
        ASSERT_TRUE(up.b == x.b && up.nr >= x.nr) << at_shape << " phase " << ph;
      }
      for (int r = 0; r < p.r; ++r)
        ASSERT_EQ((x.rmask >> r) & 1u, (x.a + p.pad_h - r) % p.stride_h == 0 ? 1u : 0u) << at_shape << " r " << r;
      for (int s = 0; s < p.s; ++s)
        ASSERT_EQ((x.smask >> s) & 1u, (x.b + p.pad_w - s) % p.stride_w == 0 ? 1u : 0u) << at_shape << " s " << s;
      for (int m = 0; m < M; ++m)
        if (const long long row = tt_wgconv::phase_dx_row(p, g, x, m); row >= 0) ++covered[std::size_t(row)];
      const int steps = x.nr * x.ns * chunks;
      for (int m0 = 0; m0 < M; m0 += boxp) {
        tt_wgconv::KStep k = tt_conv::phase_taps_of_tile(0, chunks, x);
        for (int kt = 0; kt < steps; ++kt) {
          const tt_wgconv::KStep resumed = tt_conv::phase_taps_of_tile(kt, chunks, x);
          ASSERT_TRUE(resumed.r == k.r && resumed.s == k.s && resumed.chunk == k.chunk) << at_shape << " step " << kt;
          const int off_h = tt_wgconv::phase_off_h(p, g, x, k.r), off_w = tt_wgconv::phase_off_w(p, g, x, k.s);
          ASSERT_TRUE(off_h >= 0 && off_w >= 0 && off_h < 256 && off_w < 256) << at_shape;
          Walker at(p, g, m0);
          for (int j = 0; j < boxp; ++j, at.next()) {
            const long long row = tt_wgconv::phase_dx_row(p, g, x, m0 + j);
            if (row < 0) continue;  // past dx: computed, never stored
            for (int ci : {0, 37, 63}) {
              const long long got = at.read(p.n, k.chunk * 64 + ci, off_w, off_h);
              ASSERT_EQ(got, dy_element(p, int(row), k.chunk * 64 + ci, k.r, k.s))
                  << at_shape << " phase " << ph << " box at " << m0 << " step " << kt << " pixel " << j;
            }
          }
          tt_conv::next_phase_tile(k, chunks, x);
        }
      }
    }
    for (int c : covered) ASSERT_EQ(c, 1) << at_shape;
  }
}

ConvProblem wgmma_conv(int c, int k, int r, int stride, int pad, int groups = 1, ConvDirection dir = ConvDirection::Forward,
                 ConvLayout layout = ConvLayout::NHWC) {
  ConvProblem p;
  p.direction = dir, p.layout = layout, p.in_type = p.out_type = DataType::BF16;
  p.n = 2, p.c = c, p.h = p.w = 14, p.k = k, p.r = p.s = r, p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad, p.groups = groups;
  return p;
}

std::size_t wgmma_candidates(const ConvProblem& p) {
  return tuner::enumerate({find_template("wgmma_conv")}, std::vector<Problem>{Problem(p)}, tiletune::testing::fake_device(gpu::BackendKind::Cuda))
      .candidates.size();
}

// The PHASE values of wgmma_conv's candidates for p.
std::set<std::int64_t> wgmma_phases(const ConvProblem& p) {
  std::set<std::int64_t> out;
  for (const auto& c : tuner::enumerate({find_template("wgmma_conv")}, std::vector<Problem>{Problem(p)},
                                        tiletune::testing::fake_device(gpu::BackendKind::Cuda))
                           .candidates)
    out.insert(c.solution.params.at("PHASE"));
  return out;
}

TEST(WgmmaConvSpace, AdmitsNhwcWithReductionChannelsInSwizzleAtoms) {
  EXPECT_GT(wgmma_candidates(wgmma_conv(64, 64, 3, 1, 1)), 0u);
  EXPECT_GT(wgmma_candidates(wgmma_conv(256, 512, 1, 2, 0)), 0u);
  EXPECT_GT(wgmma_candidates(wgmma_conv(96, 64, 3, 1, 1)), 0u);    // C % 64 != 0: the last chunk reads zeros
  EXPECT_EQ(wgmma_candidates(wgmma_conv(20, 64, 3, 1, 1)), 0u);    // C % 8 != 0: mma_conv's
  EXPECT_EQ(wgmma_candidates(wgmma_conv(3, 64, 7, 2, 3)), 0u);     // the stem
  EXPECT_EQ(wgmma_candidates(wgmma_conv(128, 128, 3, 1, 1, 2)), 0u);  // groups
  EXPECT_EQ(wgmma_candidates(wgmma_conv(64, 60, 3, 1, 1)), 0u);    // K % 8 != 0: no 16-byte output vectors
  EXPECT_GT(wgmma_candidates(wgmma_conv(64, 64, 3, 1, 1, 1, ConvDirection::BackwardData)), 0u);
  // A stride-2 3x3 dgrad by its phases (PHASE 1) only, a strided 1x1 scattered (PHASE 0: three of
  // its phases have no tap); not a dilated filter.
  EXPECT_EQ(wgmma_phases(wgmma_conv(64, 64, 3, 2, 1, 1, ConvDirection::BackwardData)), std::set<std::int64_t>{1});
  EXPECT_EQ(wgmma_phases(wgmma_conv(64, 64, 1, 2, 0, 1, ConvDirection::BackwardData)), std::set<std::int64_t>{0});
  ConvProblem dilated = wgmma_conv(64, 64, 2, 2, 1, 1, ConvDirection::BackwardData);
  dilated.dil_h = dilated.dil_w = 2;
  EXPECT_EQ(wgmma_candidates(dilated), 0u);
  EXPECT_GT(wgmma_candidates(wgmma_conv(64, 64, 1, 2, 0, 1, ConvDirection::BackwardData)), 0u);  // 1x1 stride 2: scattered
  EXPECT_EQ(wgmma_candidates(wgmma_conv(64, 64, 1, 2, 1, 1, ConvDirection::BackwardData)), 0u);  // ... but not with padding
  EXPECT_GT(wgmma_candidates(wgmma_conv(64, 96, 3, 1, 1, 1, ConvDirection::BackwardData)), 0u);  // K % 64 != 0
  EXPECT_EQ(wgmma_candidates(wgmma_conv(64, 20, 3, 1, 1, 1, ConvDirection::BackwardData)), 0u);  // K % 8 != 0
  EXPECT_GT(wgmma_candidates(wgmma_conv(64, 64, 3, 2, 1, 1, ConvDirection::BackwardFilter)), 0u);
  EXPECT_EQ(wgmma_candidates(wgmma_conv(96, 64, 3, 1, 1, 1, ConvDirection::BackwardFilter)), 0u);  // C % 64 != 0
  EXPECT_EQ(wgmma_candidates(wgmma_conv(64, 64, 3, 1, 1, 1, ConvDirection::Forward, ConvLayout::NCHW)), 0u);
  gpu::DeviceInfo ampere = tiletune::testing::fake_device(gpu::BackendKind::Cuda);
  ampere.arch = "sm_80", ampere.compute_capability = 80;
  EXPECT_TRUE(tuner::enumerate({find_template("wgmma_conv")}, std::vector<Problem>{Problem(wgmma_conv(64, 64, 3, 1, 1))}, ampere)
                  .candidates.empty());
}

// Every forward ResNet-50 layer at batch 128 but the 3-channel stem, under the template's space and
// under the narrow space of configs/h200/h200_conv_resnet50.json.
TEST(WgmmaConvSpace, EveryForwardResNetLayerButTheStemHasCandidates) {
  const gpu::DeviceInfo dev = tiletune::testing::fake_device(gpu::BackendKind::Cuda);
  const int layers[][6] = {{64, 64, 56, 1, 1, 0},   {64, 64, 56, 3, 1, 1},    {64, 256, 56, 1, 1, 0},
                           {128, 128, 28, 3, 1, 1}, {128, 512, 28, 1, 1, 0},  {256, 512, 56, 1, 2, 0},
                           {256, 256, 14, 3, 1, 1}, {256, 1024, 14, 1, 1, 0}, {512, 512, 7, 3, 1, 1},
                           {512, 2048, 7, 1, 1, 0}};
  std::vector<Problem> problems;
  for (const auto& l : layers) {
    ConvProblem p = wgmma_conv(l[0], l[1], l[3], l[4], l[5]);
    p.n = 128, p.h = p.w = l[2];
    problems.push_back(p);
  }
  KernelTemplate narrow = find_template("wgmma_conv");
  narrow.set_values("BM", {128, 256}), narrow.set_values("BN", {64, 128, 256}), narrow.set_values("STAGES", {4, 6});
  narrow.set_values("CONSUMERS", {2}), narrow.set_values("RASTER", {0}), narrow.set_values("GROUP", {8});
  for (const KernelTemplate& t : {find_template("wgmma_conv"), narrow}) {
    const auto e = tuner::enumerate({t}, problems, dev);
    std::vector<std::size_t> per(problems.size(), 0);
    for (const auto& c : e.candidates) ++per[c.problem_index];
    std::printf("wgmma_conv: %zu candidates\n", e.candidates.size());
    for (std::size_t i = 0; i < problems.size(); ++i) EXPECT_GT(per[i], 0u) << problems[i].key();
  }
}

}  // namespace

// The epilogue's staging (staged_float): a permutation of each row's 32 floats that keeps float2
// pairs and 16-byte groups whole, and the warps' accesses of wgmma_conv's epilogue each meet every
// shared-memory bank once per wavefront: the float2 writes of the accumulator fragments (a half-warp
// a wavefront) and the 16-byte reads of the stores (a quarter-warp), for 16- and 32-bit outputs.
TEST(WgmmaConvIndex, EpilogueStagingIsFreeOfBankConflicts) {
  using tt_wgconv::staged_float;
  for (int r = 0; r < 256; ++r) {
    std::set<int> row;
    for (int c = 0; c < 32; ++c) {
      const int f = staged_float(r, c);
      ASSERT_GE(f, r * 32);
      ASSERT_LT(f, r * 32 + 32);
      row.insert(f);
      if (c % 4) ASSERT_EQ(f, staged_float(r, c - 1) + 1) << "16-byte groups stay whole";
    }
    ASSERT_EQ(row.size(), 32u) << "row " << r;
  }
  // Each (lane -> first float, floats) access of one wavefront's lanes must cover distinct banks.
  auto conflict_free = [](const std::vector<int>& first, int floats) {
    std::set<int> banks;
    for (int f : first)
      for (int i = 0; i < floats; ++i) banks.insert((f + i) % 32);
    return banks.size() == first.size() * floats;
  };
  for (int rb = 0; rb < 256; rb += 8) {
    for (int j = 0; j < 4; ++j)  // writes: row rb + lane / 4 (+ 8), column 8 j + 2 (lane % 4)
      for (int half = 0; half < 2; ++half)
        for (int plus = 0; plus <= 8; plus += 8) {
          std::vector<int> first;
          for (int lane = 16 * half; lane < 16 * half + 16; ++lane)
            first.push_back(staged_float(rb + plus + lane / 4, 8 * j + 2 * (lane % 4)));
          EXPECT_TRUE(conflict_free(first, 2)) << "writes, rows from " << rb + plus << ", j " << j;
        }
    for (int quarter = 0; quarter < 4; ++quarter) {
      for (int q = 0; q < 2; ++q) {  // 16-bit output: 4 threads a row, 8 elements (two float4) each
        std::vector<int> first;
        for (int lane = 8 * quarter; lane < 8 * quarter + 8; ++lane)
          first.push_back(staged_float(rb + lane / 4, 8 * (lane % 4) + 4 * q));
        EXPECT_TRUE(conflict_free(first, 4)) << "16-bit reads, rows from " << rb;
      }
      std::vector<int> first;  // fp32 output: 8 threads a row, one float4 each
      for (int lane = 8 * quarter; lane < 8 * quarter + 8; ++lane) first.push_back(staged_float(rb + lane / 8, 4 * (lane % 8)));
      EXPECT_TRUE(conflict_free(first, 4)) << "32-bit reads, rows from " << rb;
    }
  }
}

// SWAP 2's staging (swap2_staged_row, swap2_row): each chunk (half of a consumer's pixels by 64
// channels) fills every staging cell once, each cell read back as the pixel and channel whose
// accumulator was written there, each warp's scalar writes meeting every bank once; and the kernel's
// rows of the vector store (thread row kk of its precomputed destinations) are the pixels read.
TEST(WgmmaConvIndex, SwapTwoStagingHoldsEachChunkOnceWithoutBankConflicts) {
  using tt_wgconv::staged_float;
  for (int wm : {64, 128, 256})
    for (int h = 0; h < 2; ++h) {
      std::vector<int> written(wm * 32, 0);
      for (int w = 0; w < 4; ++w)
        for (int j = 0; j < wm / 16; ++j)
          for (int e = 0; e < 4; ++e) {
            std::set<int> banks;
            for (int lane = 0; lane < 32; ++lane) {
              const int channel = 16 * w + lane / 4 + 8 * (e >> 1);
              const int pixel = (h * (wm / 16) + j) * 8 + 2 * (lane & 3) + (e & 1);
              const int row = tt_wgconv::swap2_staged_row(wm, w, j, lane) + (e & 1);
              const int col = 16 * (w % 2) + lane / 4 + 8 * (e >> 1);
              ASSERT_LT(row, wm);
              ++written[row * 32 + col];
              const tt_wgconv::Swap2Row x = tt_wgconv::swap2_row(wm, h, row);
              EXPECT_EQ(x.pixel, pixel) << "wm " << wm << " h " << h << " row " << row;
              EXPECT_EQ(x.channel + col, channel) << "wm " << wm << " row " << row;
              banks.insert(staged_float(row, col) % 32);
            }
            EXPECT_EQ(banks.size(), 32u) << "wm " << wm << " warp " << w << " j " << j << " e " << e;
          }
      for (int cell : written) ASSERT_EQ(cell, 1) << "wm " << wm << " h " << h;
      for (int tpr : {4, 8}) {  // 16-bit output: 4 threads a row; fp32: 8
        const int rpp = 128 / tpr, rpt = wm / rpp;
        for (int tid = 0; tid < 128; ++tid)
          for (int k = 0; k < rpt; ++k) {
            const int r = tid / tpr + k * rpp, kk = h * (rpt / 2) + k % (rpt / 2);
            EXPECT_EQ(tt_wgconv::swap2_row(wm, h, r).pixel, tid / tpr + kk * rpp) << "wm " << wm << " tid " << tid;
          }
      }
    }
}
