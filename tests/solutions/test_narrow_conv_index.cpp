// narrow_fwd's staged rows (kernel_templates/narrow_conv_index.h) compiled for the host: input rows
// staged as the kernel stages them (zeros, then the row at XOFF), every element the kernel reads
// for a pixel of its m16 tiles and a column of its k16 steps replayed on integer data against
// filters zero past S * C, the sums compared with the convolution's definition, every read inside
// the staged row; and the template's JSON sizing a staged row as the header does. No GPU needed.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernel_templates/narrow_conv_index.h"
#include "solutions/kernel_template.h"
#include "tests/test_util.h"

using namespace tiletune;

namespace {

struct Fwd {
  int n, c, h, w, k, rs, stride, pad;
};

// The shapes of tests/backends/cuda/test_cuda_narrow_conv.cpp's fwd_problems and the stem itself
// (one image).
const std::vector<Fwd> kShapes = {{2, 3, 40, 40, 64, 7, 2, 3}, {3, 4, 17, 38, 48, 5, 2, 2}, {2, 8, 21, 19, 16, 3, 1, 1},
                                  {2, 8, 12, 14, 128, 5, 1, 2}, {3, 3, 24, 24, 32, 3, 1, 1}, {1, 3, 224, 224, 64, 7, 2, 3}};

TEST(NarrowFwdIndex, StagedRowsReadAtLinearOffsetsAddUpToTheConvolution) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> val(-4, 4);
  for (const Fwd& f : kShapes) {
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
  for (const Fwd& f : kShapes) {
    ConvProblem p;
    p.direction = ConvDirection::Forward, p.in_type = p.out_type = DataType::BF16;
    p.n = f.n, p.c = f.c, p.h = f.h, p.w = f.w, p.k = f.k, p.r = p.s = f.rs, p.stride_h = p.stride_w = f.stride;
    p.pad_h = p.pad_w = f.pad, p.dil_h = p.dil_w = 1, p.groups = 1;
    Solution s = t.default_solution();
    s.params["KC"] = f.k / 16;
    const Variables v = t.variables(s, Problem(p), tiletune::testing::fake_device(gpu::BackendKind::Cuda));
    const int Q = (f.w + 2 * f.pad - f.rs) / f.stride + 1;
    const tt_narrow::FwdRow geo(f.w, f.c, Q, f.rs, f.pad, f.stride);
    EXPECT_EQ(v.at("XL"), geo.elems) << f.c << " " << f.w;
    EXPECT_EQ(v.at("JP"), geo.jp);
    EXPECT_EQ(v.at("XOFF"), geo.xoff);
  }
}

}  // namespace
