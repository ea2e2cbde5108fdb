// The summary lines of the vendor-comparison tables (benchmarks/report.h): what the acceptance
// bars read, so they must be right.
#include <gtest/gtest.h>

#include <cmath>

#include "benchmarks/report.h"

using tiletune::bench::RatioSummary;

TEST(RatioSummary, GeometricMeanAndMinimumPerGroupOverValidRowsOnly) {
  RatioSummary s;
  s.add("bf16", "NN 1000", 2.0, 1.9);
  s.add("bf16", "TN 16", 0.5, 0.6);
  s.add("bf16", "TN 4096", 1.0, 1.1);
  s.add("fp16", "NN 1000", 0.8, 0.9);
  s.add("fp16", "no vendor time", 0.0, 0.0);  // nothing to compare: left out
  s.add("fp16", "nan", NAN, 1.0);
  const auto j = s.json();
  ASSERT_EQ(j.size(), 2u);
  EXPECT_NEAR(j["bf16"]["geomean"].get<double>(), 1.0, 1e-12);  // (2 * 0.5 * 1)^(1/3)
  EXPECT_NEAR(j["bf16"]["geomean_of_means"].get<double>(), std::cbrt(1.9 * 0.6 * 1.1), 1e-12);
  EXPECT_DOUBLE_EQ(j["bf16"]["min"].get<double>(), 0.5);
  EXPECT_EQ(j["bf16"]["min_problem"], "TN 16");
  EXPECT_EQ(j["bf16"]["rows"], 3);
  EXPECT_EQ(j["fp16"]["rows"], 1);
  EXPECT_DOUBLE_EQ(j["fp16"]["min"].get<double>(), 0.8);
  const std::string md = s.markdown("cuBLAS");
  EXPECT_NE(md.find("| bf16 | 1.000 | "), std::string::npos) << md;
  EXPECT_NE(md.find("| 0.500 | TN 16 | 3 |"), std::string::npos) << md;
}
