// The fp64 reference convolution against an independent naive forward loop, the gradients
// against the adjoint identities <dgrad(dy), x> = <dy, fwd(x)> and <wgrad(x, dy), w> =
// <dy, fwd(x, w)>, the NCHW layout against the NHWC one, and the convolution problem data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/test_util.h"
#include "ops/conv/inputs.h"
#include "ops/conv/reference.h"
#include "ops/elements.h"

namespace tiletune {
namespace {

std::vector<double> random_vector(std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = ops::random_input(testing::rng());
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Forward convolution on NCHW / KCRS tensors as plain 4-d arrays, with its own indexing.
std::vector<double> naive_forward_nchw(const ConvProblem& p, const std::vector<double>& x, const std::vector<double>& w) {
  const std::int64_t P = p.p(), Q = p.q(), Cg = p.c / p.groups, Kg = p.k / p.groups;
  std::vector<double> y(std::size_t(p.n * p.k * P * Q), 0.0);
  for (std::int64_t n = 0; n < p.n; ++n)
    for (std::int64_t k = 0; k < p.k; ++k)
      for (std::int64_t i = 0; i < P; ++i)
        for (std::int64_t j = 0; j < Q; ++j) {
          double acc = 0;
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t r = 0; r < p.r; ++r)
              for (std::int64_t s = 0; s < p.s; ++s) {
                std::int64_t hh = i * p.stride_h + r * p.dil_h - p.pad_h, ww = j * p.stride_w + s * p.dil_w - p.pad_w;
                if (hh < 0 || hh >= p.h || ww < 0 || ww >= p.w) continue;
                std::int64_t cin = (k / Kg) * Cg + c;
                acc += x[std::size_t(((n * p.c + cin) * p.h + hh) * p.w + ww)] *
                       w[std::size_t(((k * Cg + c) * p.r + r) * p.s + s)];
              }
          y[std::size_t(((n * p.k + k) * P + i) * Q + j)] = acc;
        }
  return y;
}

// NCHW-ordered activations (channels `ch`, size hh x ww) to NHWC order.
std::vector<double> nchw_to_nhwc(const std::vector<double>& v, std::int64_t n, std::int64_t ch, std::int64_t hh,
                                 std::int64_t ww) {
  std::vector<double> out(v.size());
  for (std::int64_t a = 0; a < n; ++a)
    for (std::int64_t c = 0; c < ch; ++c)
      for (std::int64_t i = 0; i < hh; ++i)
        for (std::int64_t j = 0; j < ww; ++j)
          out[std::size_t(((a * hh + i) * ww + j) * ch + c)] = v[std::size_t(((a * ch + c) * hh + i) * ww + j)];
  return out;
}

TEST(ConvReference, TinyHandComputed) {
  // 1 image, 1 channel, 3x3 input 1..9, a 2x2 filter of ones, stride 1, no padding: 2x2 sums.
  ConvProblem p;
  p.h = p.w = 3, p.r = p.s = 2;
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 1, 1, 1};
  EXPECT_EQ(ops::conv_reference(p, x, w), (std::vector<double>{12, 16, 24, 28}));
  p.pad_h = p.pad_w = 1, p.stride_h = p.stride_w = 2;  // 4 corners of the padded 5x5
  EXPECT_EQ(ops::conv_reference(p, x, w), (std::vector<double>{1, 5, 11, 28}));
}

TEST(ConvReference, ForwardMatchesNaiveLoopInBothLayouts) {
  for (int i = 0; i < 60; ++i) {
    ConvProblem p = testing::random_conv_problem(ConvLayout::NCHW);
    auto x = random_vector(p.elements_x()), w = random_vector(p.elements_w());
    auto want = naive_forward_nchw(p, x, w);
    auto got = ops::conv_reference(p, x, w);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t j = 0; j < got.size(); ++j) ASSERT_NEAR(got[j], want[j], 1e-12) << p.key();
    // NHWC: the same numbers, permuted (filters KCRS -> KRSC is the same permutation with
    // n = K, channels = C/groups, pixels = R x S).
    ConvProblem q = p;
    q.layout = ConvLayout::NHWC;
    auto got_nhwc = ops::conv_reference(q, nchw_to_nhwc(x, p.n, p.c, p.h, p.w),
                                          nchw_to_nhwc(w, p.k, p.c / p.groups, p.r, p.s));
    auto want_nhwc = nchw_to_nhwc(want, p.n, p.k, p.p(), p.q());
    for (std::size_t j = 0; j < got.size(); ++j) ASSERT_NEAR(got_nhwc[j], want_nhwc[j], 1e-12) << q.key();
  }
}

TEST(ConvReference, GradientsAreAdjointsOfForward) {
  for (int i = 0; i < 60; ++i) {
    ConvProblem p = testing::random_conv_problem(i % 2 ? ConvLayout::NCHW : ConvLayout::NHWC);
    auto x = random_vector(p.elements_x()), w = random_vector(p.elements_w()), dy = random_vector(p.elements_y());
    const double fwd = dot(dy, ops::conv_reference(p, x, w));
    ConvProblem d = p;
    d.direction = ConvDirection::BackwardData;
    EXPECT_NEAR(dot(ops::conv_reference(d, dy, w), x), fwd, 1e-9 * (1 + std::abs(fwd))) << d.key();
    ConvProblem g = p;
    g.direction = ConvDirection::BackwardFilter;
    EXPECT_NEAR(dot(ops::conv_reference(g, x, dy), w), fwd, 1e-9 * (1 + std::abs(fwd))) << g.key();
  }
}

TEST(ConvInputs, PoisonedOutputAndTolerance) {
  auto dev = gpu::open_device(gpu::BackendKind::Host, 0);
  for (auto dir : {ConvDirection::Forward, ConvDirection::BackwardData, ConvDirection::BackwardFilter}) {
    ConvProblem p = testing::random_conv_problem(ConvLayout::NHWC);
    p.direction = dir;
    p.in_type = DataType::BF16;
    p.out_type = DataType::F32;
    ops::ConvInputs data(*dev, p, false);
    // Nothing written: the poison is caught.
    ops::ValidationResult none = data.validate([](const TtConvParams&) {});
    EXPECT_FALSE(none.ok);
    EXPECT_NE(none.reason.find("not written"), std::string::npos) << none.reason;
    // The reference written back: valid; one element off by a lot: invalid.
    auto write = [&](double bump) {
      return data.validate([&](const TtConvParams& a) {
        void* out = dir == ConvDirection::Forward ? a.y : dir == ConvDirection::BackwardData ? a.x : a.wt;
        std::vector<float> v(data.reference().begin(), data.reference().end());
        v[0] += float(bump);
        std::memcpy(out, v.data(), v.size() * 4);
      });
    };
    EXPECT_TRUE(write(0).ok) << p.key();
    EXPECT_FALSE(write(1e3).ok) << p.key();
    // Inputs are never zero.
    const auto& in = data.host_tensor(dir == ConvDirection::BackwardData ? 2 : 0);
    for (std::size_t i = 0; i < in.size() / 2; ++i) ASSERT_NE(ops::load_element(in.data(), std::int64_t(i), DataType::BF16), 0.0);
  }
  ConvProblem big;
  big.n = 64, big.c = 256, big.h = big.w = 14, big.k = 256, big.r = big.s = 3, big.pad_h = big.pad_w = 1;
  big.out_type = DataType::BF16;
  EXPECT_GT(ops::tolerance(big), ops::tolerance(ConvProblem{}));
  big.direction = ConvDirection::BackwardFilter;  // K = N*P*Q: a longer reduction, a wider tolerance
  ConvProblem fwd = big;
  fwd.direction = ConvDirection::Forward;
  EXPECT_GT(ops::tolerance(big), ops::tolerance(fwd));
}

}  // namespace
}  // namespace tiletune
