// An installed tiletune from C++ (the header-only wrapper over the C API): open, multiply, check.
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include <tiletune.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer_cpp DB\n");
    return 2;
  }
  try {
    tiletune::Handle h(argv[1], "host");
    const int m = 33, n = 20, k = 12;
    std::vector<float> a(m * k), b(k * n), c(m * n, std::numeric_limits<float>::quiet_NaN());
    for (int i = 0; i < m * k; ++i) a[i] = float((i * 37) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < k * n; ++i) b[i] = float((i * 11) % 13) / 13.0f - 0.5f;
    h.gemm(TILETUNE_OP_N, TILETUNE_OP_N, m, n, k, 1.0f, a.data(), TILETUNE_R_32F, m, b.data(), k, 0.0f, c.data(),
           TILETUNE_R_32F, m);
    double worst = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double ref = 0;
        for (int p = 0; p < k; ++p) ref += double(a[i + p * m]) * double(b[p + j * k]);
        const double e = std::fabs(c[i + j * m] - ref);
        if (!(e <= worst)) worst = e;
      }
    std::printf("C++: worst error %g\n", worst);
    return worst < 1e-4 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
