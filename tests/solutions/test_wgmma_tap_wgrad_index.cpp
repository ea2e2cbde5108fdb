// wgmma_tap_wgrad's packing (kernel_templates/wgmma_tap_wgrad_index.h) compiled for the host: each
// K step's tiled TMA copies replayed line by line (a box's lines in order, zeros outside the tensor,
// lines no copy writes left zero), every tap's reads of dy's lines and x's shifted lines multiplied
// on integer data, and the weight gradient they add up to compared with the convolution's
// definition; no GPU needed. One channel per pixel: the packing moves whole 64-channel lines.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernel_templates/wgmma_tap_wgrad_index.h"

namespace {

TtConvParams tap_rows_params(int n, int h, int w, int r, int s, int pad_h, int pad_w, int u = 1, int v = 1) {
  TtConvParams p{};
  p.n = n, p.c = 64, p.k = 64, p.h = h, p.w = w, p.r = r, p.s = s;
  p.stride_h = u, p.stride_w = v, p.dil_h = p.dil_w = p.groups = 1;
  p.pad_h = pad_h, p.pad_w = pad_w;
  p.p = (h + 2 * pad_h - r) / u + 1, p.q = (w + 2 * pad_w - s) / v + 1;
  return p;
}

// One pixel per (n, h, w): a tensor of N x H x W integers.
int pixel_at(const std::vector<int>& t, int n, int h, int w, int H, int W) {
  if (h < 0 || h >= H || w < 0 || w >= W) return 0;
  return t[(std::size_t(n) * H + h) * W + w];
}

// A tiled TMA copy of box {box_w, rows, imgs} elements from (w0, h0) of images n.., walked with
// traversal strides (step_w, step_h), into `lines` (the box's lines in order, W fastest), zeros
// outside the tensor (images past N included).
void tap_rows_copy_box(std::vector<int>& lines, const std::vector<int>& t, int n, int h0, int w0, int box_w, int rows,
                       int imgs, int N, int H, int W, int step_w = 1, int step_h = 1) {
  for (int m = 0; m < imgs; ++m)
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < box_w; ++j)
        lines.at(std::size_t((m * rows + i) * box_w + j)) =
            n + m < N ? pixel_at(t, n + m, h0 + i * step_h, w0 + j * step_w, H, W) : 0;
}

// SHIFT 0 copies x once per tap, s columns on; otherwise once per filter row and column residue
// s % v, read s / v lines on. The copies walk x with the convolution's strides.
// Packing 1 (whole images a step, shared halo): the kernel's 128-line stages, copies of x shifted
// only (PACK 1 goes with SHIFT 1).
std::vector<long long> tap_rows_replay(const TtConvParams& p, bool copy_per_tap, const std::vector<int>& dy,
                              const std::vector<int>& x, int pack = 0) {
  const tt_tapr::Packing k = tt_tapr::packing(p, pack);
  const int lines = pack == 1 ? 128 : 64;  // a stage's dy lines; a copy of x holds 8 more
  EXPECT_LE(k.pitch, 64);
  EXPECT_LE(k.imgs * k.rows * k.pitch, lines);
  EXPECT_LE(k.imgs * k.rows * k.dy_box_w, lines);
  EXPECT_LE(16 * k.kk16, lines);
  EXPECT_GE(16 * k.kk16, k.imgs * k.rows * k.pitch);
  EXPECT_GE(k.qseg * k.qs, p.q);
  std::vector<long long> dw(std::size_t(p.r) * p.s, 0);
  for (int kt = 0; kt < k.ksteps; ++kt) {
    const tt_tapr::Step st = tt_tapr::step(p, k, kt);
    std::vector<int> dy_lines(lines, 0);  // a stage's dy, zeroed once
    tap_rows_copy_box(dy_lines, dy, st.n, st.p0, st.q0, k.dy_box_w, k.rows, k.imgs, p.n, p.p, p.q);
    for (int r = 0; r < p.r; ++r)
      for (int s = 0; s < p.s; ++s) {
        std::vector<int> x_lines(lines + 8, 0);  // a filter row's copy and the lines read past it
        const int w0 = tt_tapr::x_copy_w(p, st, copy_per_tap ? s : tt_tapr::tap_copy(s, p.stride_w));
        tap_rows_copy_box(x_lines, x, st.n, tt_tapr::x_copy_h(p, st, r), w0, k.pitch, k.rows, k.imgs, p.n, p.h, p.w,
                          p.stride_w, p.stride_h);
        const int shift = copy_per_tap ? 0 : tt_tapr::tap_shift(s, p.stride_w);
        EXPECT_LT(tt_tapr::tap_copy(s, p.stride_w), k.copies);
        EXPECT_LE(shift, k.halo);
        for (int t = 0; t < 16 * k.kk16; ++t)  // the k16 slices the consumers multiply
          dw[std::size_t(r) * p.s + s] += (long long)dy_lines[t] * x_lines.at(t + shift);
      }
  }
  return dw;
}

std::vector<long long> tap_rows_reference(const TtConvParams& p, const std::vector<int>& dy, const std::vector<int>& x) {
  std::vector<long long> dw(std::size_t(p.r) * p.s, 0);
  for (int n = 0; n < p.n; ++n)
    for (int op = 0; op < p.p; ++op)
      for (int oq = 0; oq < p.q; ++oq)
        for (int r = 0; r < p.r; ++r)
          for (int s = 0; s < p.s; ++s)
            dw[std::size_t(r) * p.s + s] +=
                (long long)pixel_at(dy, n, op, oq, p.p, p.q) *
                pixel_at(x, n, p.stride_h * op + r - p.pad_h, p.stride_w * oq + s - p.pad_w, p.h, p.w);
  return dw;
}

TEST(WgmmaTapWgradIndex, EveryStepsCopiesAndShiftedReadsAddUpToTheWeightGradient) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> v(-9, 9);
  struct Case {
    int n, h, w, r, s, pad_h, pad_w, u = 1, v = 1;
  };
  // ResNet's 3x3 rows (56, 28, 14, 7: one to seven rows a step), rows that just fit (62) or not
  // (63, 128: segments), no padding, 1x3 / 3x1 / 2x2 filters, a single row, 5x5 (a 60-line span).
  const Case cases[] = {{2, 56, 56, 3, 3, 1, 1}, {2, 28, 28, 3, 3, 1, 1}, {3, 14, 14, 3, 3, 1, 1},
                        {3, 7, 7, 3, 3, 1, 1},   {2, 9, 62, 3, 3, 1, 1},  {2, 5, 63, 3, 3, 1, 1},
                        {2, 4, 128, 3, 3, 1, 1}, {2, 12, 12, 3, 3, 0, 0}, {2, 8, 130, 3, 3, 0, 2},
                        {2, 10, 10, 1, 3, 0, 1}, {2, 10, 10, 3, 1, 1, 0}, {2, 9, 11, 2, 2, 1, 0},
                        {1, 1, 40, 1, 3, 0, 1},  {2, 3, 3, 3, 3, 1, 1},  {2, 11, 35, 5, 5, 2, 2},
                        {1, 4, 70, 5, 5, 0, 2},
                        // stride 2: the other nets' 3x3, odd sizes, no padding, a row cut into
                        // segments, 5x5, 1x3, and stride 2 along one dimension only
                        {2, 56, 56, 3, 3, 1, 1, 2, 2}, {2, 11, 9, 3, 3, 1, 1, 2, 2}, {2, 12, 13, 3, 3, 0, 0, 2, 2},
                        {1, 4, 260, 3, 3, 1, 1, 2, 2}, {2, 13, 13, 5, 5, 2, 2, 2, 2}, {2, 8, 9, 1, 3, 0, 1, 2, 2},
                        {2, 9, 10, 3, 3, 1, 1, 1, 2},  {2, 9, 10, 3, 3, 1, 1, 2, 1}};
  for (const Case& c : cases) {
    const TtConvParams p = tap_rows_params(c.n, c.h, c.w, c.r, c.s, c.pad_h, c.pad_w, c.u, c.v);
    std::vector<int> dy(std::size_t(p.n) * p.p * p.q), x(std::size_t(p.n) * p.h * p.w);
    for (int& e : dy) e = v(rng);
    for (int& e : x) e = v(rng);
    const std::vector<long long> want = tap_rows_reference(p, dy, x);
    for (bool per_tap : {true, false})
      EXPECT_EQ(tap_rows_replay(p, per_tap, dy, x), want)
          << c.h << "x" << c.w << " " << c.r << "x" << c.s << " pad " << c.pad_h << "," << c.pad_w << " stride "
          << c.u << "," << c.v
          << (per_tap ? " (a copy per tap)" : " (shifted reads)");
  }
}

TEST(WgmmaTapWgradIndex, WholeImagesWithASharedHaloAddUpToTheWeightGradient) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> v(-9, 9);
  struct Case {
    int n, h, w, r, s, pad_h, pad_w, imgs;
  };
  // ResNet's 7x7 (two images, an odd count: the last step's second image is outside the tensor),
  // 8x8 (one image of 72 lines), 4x4 (six), a 1x3 filter, 5x5 with padding 2, 3x1, 1x1 rows.
  const Case cases[] = {{5, 7, 7, 3, 3, 1, 1, 2}, {2, 8, 8, 3, 3, 1, 1, 1}, {7, 4, 4, 3, 3, 1, 1, 6},
                        {3, 5, 9, 1, 3, 0, 1, 2}, {3, 6, 6, 5, 5, 2, 2, 2}, {4, 7, 7, 3, 1, 1, 0, 2},
                        {3, 2, 11, 3, 3, 1, 1, 5}};
  for (const Case& c : cases) {
    const TtConvParams p = tap_rows_params(c.n, c.h, c.w, c.r, c.s, c.pad_h, c.pad_w);
    ASSERT_TRUE(tt_tapr::images_pack(p)) << c.h << "x" << c.w;
    EXPECT_EQ(tt_tapr::packing(p, 1).imgs, c.imgs) << c.h << "x" << c.w;
    std::vector<int> dy(std::size_t(p.n) * p.p * p.q), x(std::size_t(p.n) * p.h * p.w);
    for (int& e : dy) e = v(rng);
    for (int& e : x) e = v(rng);
    EXPECT_EQ(tap_rows_replay(p, false, dy, x, 1), tap_rows_reference(p, dy, x))
        << c.h << "x" << c.w << " " << c.r << "x" << c.s << " pad " << c.pad_h << "," << c.pad_w;
  }
  // Where it does not apply (stride 2, padding other than "same", images past 128 lines) packing
  // 1 is packing 0.
  for (const TtConvParams& p : {tap_rows_params(2, 14, 14, 3, 3, 1, 1, 2, 2), tap_rows_params(2, 9, 9, 3, 3, 0, 0),
                                tap_rows_params(2, 14, 14, 3, 3, 1, 1)}) {
    EXPECT_FALSE(tt_tapr::images_pack(p));
    EXPECT_EQ(tt_tapr::packing(p, 1).pitch, tt_tapr::packing(p, 0).pitch);
    EXPECT_EQ(tt_tapr::packing(p, 1).kk16, 4);
  }
  // ResNet-50's 7x7 layer: 98 pixels in 7 k16 slices a step, 64 steps for 128 images.
  const tt_tapr::Packing l4 = tt_tapr::packing(tap_rows_params(128, 7, 7, 3, 3, 1, 1), 1);
  EXPECT_EQ(l4.pitch, 8);
  EXPECT_EQ(l4.kk16, 7);
  EXPECT_EQ(l4.ksteps, 64);
}

// Every output pixel is on exactly one line of one K step.
TEST(WgmmaTapWgradIndex, EveryOutputPixelIsPackedOnce) {
  for (int q : {1, 7, 14, 28, 56, 61, 62, 63, 64, 100, 128, 200})
    for (int s : {1, 2, 3, 5}) {
      const TtConvParams p = tap_rows_params(2, 6, q + s - 1 - 2 * (s / 2), 3, s, 1, s / 2);
      ASSERT_EQ(p.q, q);
      const tt_tapr::Packing k = tt_tapr::packing(p);
      std::vector<int> seen(std::size_t(p.n) * p.p * p.q, 0);
      for (int kt = 0; kt < k.ksteps; ++kt) {
        const tt_tapr::Step st = tt_tapr::step(p, k, kt);
        for (int i = 0; i < k.rows; ++i)
          for (int j = 0; j < k.qs; ++j)
            if (st.p0 + i < p.p && st.q0 + j < p.q) ++seen[(std::size_t(st.n) * p.p + st.p0 + i) * p.q + st.q0 + j];
      }
      for (int e : seen) ASSERT_EQ(e, 1) << "Q " << q << " S " << s;
    }
}

}  // namespace
