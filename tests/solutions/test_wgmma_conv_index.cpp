// wgmma_conv's TMA coordinates (kernel_templates/wgmma_conv_index.h) on the host: a model of the
// TMA im2col traversal (the bounding box from the corners the host encodes, traversal strides,
// W then H then N, zero fill outside x) is fed the kernel's per-box start coordinates and per-K-step
// offsets, and every element it reads is compared with the convolution's definition. Also which
// convolutions wgmma_conv's constraints admit. No GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel_templates/wgmma_conv_index.h"
#include "solutions/kernel_template.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;

namespace {

struct Shape {
  int n, c, h, w, k, r, s, u, v, ph, pw, dh, dw;
};

TtConvParams params(const Shape& s) {
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
// bounding box [lower, extent - 1 + upper] in steps of the traversal strides.
struct Walker {
  const TtConvParams& p;
  int lower[2], upper[2];
  int n, h, w;
  Walker(const TtConvParams& params, tt_wgconv::BoxStart b) : p(params), n(b.n), h(b.h), w(b.w) {
    tt_wgconv::im2col_corners(p, lower, upper);
  }
  void next() {
    w += p.stride_w;
    if (w > p.w - 1 + upper[0]) {
      w = lower[0];
      h += p.stride_h;
      if (h > p.h - 1 + upper[1]) {
        h = lower[1];
        ++n;
      }
    }
  }
};

// Element offset read for channel c of the pixel at (n, h + off_h, w + off_w), or -1 (zero fill).
long long tma_read(const TtConvParams& p, const Walker& at, int c, int off_w, int off_h) {
  const int h = at.h + off_h, w = at.w + off_w;
  if (at.n < 0 || at.n >= p.n || h < 0 || h >= p.h || w < 0 || w >= p.w || c >= p.c) return -1;
  return tt_act_offset(false, at.n, c, h, w, p.c, p.h, p.w);
}

// The definition: x element of GEMM row m (output pixel) and reduction index k, or -1 (padding).
long long definition(const TtConvParams& p, int m, int k) {
  if (m >= p.gemm_m) return -1;
  const int img = m / (p.p * p.q), rem = m % (p.p * p.q), y = rem / p.q, x = rem % p.q;
  int c, r, s;
  tt_split_crs(false, k, p.c, p.r, p.s, c, r, s);
  const int h = y * p.stride_h - p.pad_h + r * p.dil_h, w = x * p.stride_w - p.pad_w + s * p.dil_w;
  if (h < 0 || h >= p.h || w < 0 || w >= p.w) return -1;
  return tt_act_offset(false, img, c, h, w, p.c, p.h, p.w);
}

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
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
  for (const Shape& sh : shapes()) {
    const TtConvParams p = params(sh);
    const int chunks = p.c / 64, steps = p.r * p.s * chunks;
    for (int boxp : {64, 128}) {
      for (int m0 = 0; m0 < p.gemm_m; m0 += boxp) {
        const tt_wgconv::BoxStart start = tt_wgconv::box_start(p, m0);
        tt_wgconv::KStep k = {0, 0, 0};
        for (int kt = 0; kt < steps; ++kt) {
          Walker at(p, start);
          for (int j = 0; j < boxp; ++j, at.next())
            for (int ci = 0; ci < 64; ++ci) {
              const long long got = tma_read(p, at, k.chunk * 64 + ci, k.s * p.dil_w, k.r * p.dil_h);
              const long long want = definition(p, m0 + j, kt * 64 + ci);
              ASSERT_EQ(got, want) << "shape " << (&sh - shapes().data()) << " box of " << boxp << " at m0 " << m0
                                   << ", K step " << kt << " (r " << k.r << ", s " << k.s << ", chunk " << k.chunk
                                   << "), pixel " << j << ", channel " << ci;
            }
          tt_conv::next_tile(k, chunks, p.s);
        }
        EXPECT_EQ(k.r, p.r);  // the walk ends after the last tap
      }
    }
  }
}

// The filter tile of K step kt is columns [64 kt, 64 kt + 64) of the K x (R*S*C) matrix: the
// reduction index kt * 64 + c of filter n, in KRSC.
TEST(WgmmaConvIndex, FilterColumnsFollowTheReductionOrder) {
  for (const Shape& sh : shapes()) {
    const TtConvParams p = params(sh);
    const long long rsc = (long long)p.r * p.s * p.c;
    for (int n = 0; n < p.k; n += 7)
      for (int k = 0; k < p.gemm_k; ++k) {
        int c, r, s;
        tt_split_crs(false, k, p.c, p.r, p.s, c, r, s);
        ASSERT_EQ(n * rsc + k, tt_filter_offset(false, n, c, r, s, p.c, p.r, p.s));
      }
  }
}

ConvProblem conv(int c, int k, int r, int stride, int pad, int groups = 1, ConvDirection dir = ConvDirection::Forward,
                 ConvLayout layout = ConvLayout::NHWC) {
  ConvProblem p;
  p.direction = dir, p.layout = layout, p.in_type = p.out_type = DataType::BF16;
  p.n = 2, p.c = c, p.h = p.w = 14, p.k = k, p.r = p.s = r, p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad, p.groups = groups;
  return p;
}

std::size_t candidates(const ConvProblem& p) {
  return tuner::enumerate({find_template("wgmma_conv")}, std::vector<Problem>{Problem(p)}, tiletune::testing::fake_device(gpu::BackendKind::Cuda))
      .candidates.size();
}

TEST(WgmmaConvSpace, AdmitsForwardNhwcWithChannelsInSwizzleAtoms) {
  EXPECT_GT(candidates(conv(64, 64, 3, 1, 1)), 0u);
  EXPECT_GT(candidates(conv(256, 512, 1, 2, 0)), 0u);
  EXPECT_EQ(candidates(conv(96, 64, 3, 1, 1)), 0u);    // C % 64 != 0: mma_conv's
  EXPECT_EQ(candidates(conv(3, 64, 7, 2, 3)), 0u);     // the stem
  EXPECT_EQ(candidates(conv(128, 128, 3, 1, 1, 2)), 0u);  // groups
  EXPECT_EQ(candidates(conv(64, 60, 3, 1, 1)), 0u);    // K % 8 != 0: no 16-byte output vectors
  EXPECT_EQ(candidates(conv(64, 64, 3, 1, 1, 1, ConvDirection::BackwardData)), 0u);
  EXPECT_EQ(candidates(conv(64, 64, 3, 1, 1, 1, ConvDirection::Forward, ConvLayout::NCHW)), 0u);
  gpu::DeviceInfo ampere = tiletune::testing::fake_device(gpu::BackendKind::Cuda);
  ampere.arch = "sm_80", ampere.compute_capability = 80;
  EXPECT_TRUE(tuner::enumerate({find_template("wgmma_conv")}, std::vector<Problem>{Problem(conv(64, 64, 3, 1, 1))}, ampere)
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
    ConvProblem p = conv(l[0], l[1], l[3], l[4], l[5]);
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
