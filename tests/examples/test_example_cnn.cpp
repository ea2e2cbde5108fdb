// The example CNN trainer (examples/cnn.h) on the host backend: it learns on fallback kernels
// alone in both data types, every call of a step goes through the runtime, and --print-config
// names exactly the problems a step issues in a config the tuner accepts.
#include <gtest/gtest.h>

#include <cstdlib>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "cnn.h"
#include "db/database.h"
#include "tuner/config.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::examples;

namespace {

class ExampleCnn : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TILETUNE_VENDOR", "off", 1);  // the template defaults' rung: test_ladder covers the vendor's
    dir_ = fs::temp_directory_path() / ("tiletune-example-cnn-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    db_ = (dir_ / "empty.db").string();
    db::Database::open(db_, db::Mode::ReadWrite);  // no winners: fallback kernels only
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string db_;
};

// Mean loss of the first and the last `window` of `steps` steps.
std::pair<double, double> train(Handle& h, const CnnConfig& c, int steps, int window) {
  Cnn net(h, c);
  double first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    const float loss = net.train_step(sample_images(c, std::uint64_t(s))).loss;
    EXPECT_TRUE(std::isfinite(loss)) << "step " << s;
    if (s < window) first += loss / window;
    if (s >= steps - window) last += loss / window;
  }
  return {first, last};
}

TEST_F(ExampleCnn, LossFallsOnFallbackKernelsInBothTypes) {
  Handle h(db_, "host");
  for (bool bf16 : {false, true}) {
    CnnConfig c;
    c.bf16 = bf16;
    const auto [first, last] = train(h, c, 50, 8);
    EXPECT_LT(last, 0.6 * first) << (bf16 ? "bf16" : "f32") << ": first " << first << ", last " << last;
  }
  const tiletune_stats_t st = h.stats();
  EXPECT_EQ(st.calls, 2u * 50u * 8u);  // 5 convolutions and 3 GEMMs per step
  EXPECT_EQ(st.fallbacks, st.calls);
}

TEST_F(ExampleCnn, PrintedConfigNamesEveryProblemOfAStep) {
  CnnConfig c;
  c.batch = 128, c.bf16 = true;
  const tuner::TuningConfig config = tuner::parse_config(cnn_tuning_config_json(c, "cnn"), ".");
  int convs[3] = {0, 0, 0}, gemms = 0;
  for (const Problem& p : config.problems) {
    if (p.is_conv()) {
      ++convs[int(p.conv().direction)];
      EXPECT_EQ(p.conv().n, 128);
      EXPECT_EQ(p.conv().in_type, DataType::BF16);
    } else {
      ++gemms;
      EXPECT_EQ(p.gemm().a_type, DataType::BF16);
    }
  }
  EXPECT_EQ(convs[0], 2);  // forward of both layers
  EXPECT_EQ(convs[1], 1);  // input gradient of the second only: the image needs none
  EXPECT_EQ(convs[2], 2);
  EXPECT_EQ(gemms, 3);
}

TEST(ExampleCnnConfig, BadSizesNameTheField) {
  CnnConfig c;
  c.conv2 = 0;
  try {
    c.validate();
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("conv2"), std::string::npos) << e.what();
  }
}

}  // namespace
