// Convolutions end to end on the host backend: a sweep of host_conv over fwd / dgrad / wgrad
// problems -> the database -> the runtime's C and C++ APIs, every result checked against the fp64
// reference; untuned convolutions (nearest winner, fallback), db explain, and bad input.
#include <gtest/gtest.h>

#include <filesystem>

#include "db/explain.h"
#include "gpu/backend.h"
#include "runtime/tiletune.hpp"
#include "tests/test_util.h"
#include "runtime/api_types.h"
#include "tuner/config.h"
#include "ops/conv/inputs.h"
#include "tuner/sweep.h"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

// The three directions with stride, padding, dilation and groups, in both layouts and mixed types.
const char* kConvPipelineConfig = R"({
  "name": "conv-pipeline-test",
  "problems": [
    {"kind": "conv", "direction": "fwd", "dtype": "f32", "layout": "NHWC", "n": 2, "c": 6, "h": 9, "w": 8, "k": 10,
     "r": 3, "s": 3, "stride": [2, 1], "pad": 1},
    {"kind": "conv", "direction": "dgrad", "in_type": "bf16", "out_type": "f32", "layout": "NCHW", "n": 2, "c": 8,
     "h": 11, "w": 9, "k": 6, "r": 3, "s": 2, "stride": 2, "pad": [1, 0], "dilation": [1, 2], "groups": 2},
    {"kind": "conv", "direction": "wgrad", "dtype": "f16", "layout": "NHWC", "n": 3, "c": 4, "h": 7, "w": 7, "k": 8,
     "r": 3, "s": 3, "pad": 1, "groups": 2}
  ],
  "templates": {"host_conv": {"parameters": {"BM": [16, 32], "BN": [16], "BK": [8], "PRECOMP": [0, 1]}}},
  "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 5}
})";

class ConvPipeline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tiletune-conv-pipeline-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    db_ = (dir_ / "tuned.db").string();
    config_ = tuner::parse_config(kConvPipelineConfig, dir_.string());
    tuner::SweepOptions o;
    o.backend = gpu::BackendKind::Host;
    o.db_path = db_;
    first_ = tuner::run_sweep(config_, o, stderr);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // Runs `problem` through the runtime's C++ API on fresh random data, checked against fp64.
  static ops::ValidationResult dispatch(Handle& h, const ConvProblem& problem) {
    auto dev = gpu::open_device(gpu::BackendKind::Host, 0);  // host memory is the runtime's memory too
    ops::ConvInputs data(*dev, problem, /*rotate=*/false);
    const tiletune_conv_desc_t d = api_desc(data.problem());
    return data.validate([&](const TtConvParams& a) {
      switch (problem.direction) {
        case ConvDirection::Forward: h.conv_forward(d, a.x, a.wt, a.y); break;
        case ConvDirection::BackwardData: h.conv_backward_data(d, a.y, a.wt, a.x); break;
        case ConvDirection::BackwardFilter: h.conv_backward_filter(d, a.x, a.y, a.wt); break;
      }
    });
  }

  static fs::path dir_;
  static std::string db_;
  static tuner::TuningConfig config_;
  static tuner::SweepSummary first_;
};
fs::path ConvPipeline::dir_;
std::string ConvPipeline::db_;
tuner::TuningConfig ConvPipeline::config_;
tuner::SweepSummary ConvPipeline::first_;

TEST_F(ConvPipeline, SweepValidatesEveryCandidateAndPicksWinners) {
  EXPECT_EQ(first_.candidates + first_.pruned, 3u * 4u);
  EXPECT_GE(first_.candidates, 3u * 2u);
  EXPECT_EQ(first_.benchmarked, first_.candidates);
  EXPECT_EQ(first_.invalid, 0u);
  EXPECT_EQ(first_.compile_failed, 0u);
  ASSERT_EQ(first_.winners.size(), 3u);
  for (const auto& w : first_.winners) {
    EXPECT_TRUE(w.problem.is_conv());
    EXPECT_EQ(w.kernel_name.rfind("host_conv_", 0), 0u) << w.kernel_name;
  }
  db::Database d = db::Database::open(db_, db::Mode::ReadOnly);
  EXPECT_EQ(d.problems().size(), 3u);
}

TEST_F(ConvPipeline, RuntimeRunsTunedWinnersCorrectly) {
  Handle h(db_, "host");
  size_t tuned = 0;
  char arch[64];
  ASSERT_EQ(tiletune_get_arch(h.get(), arch, sizeof arch, &tuned), TILETUNE_SUCCESS);
  EXPECT_EQ(tuned, 3u);
  for (const auto& p : config_.problems) {
    ops::ValidationResult v = dispatch(h, p.conv());
    EXPECT_TRUE(v.ok) << p.key() << ": " << v.reason;
  }
  tiletune_stats_t s = h.stats();
  EXPECT_EQ(s.calls, 3u);
  EXPECT_EQ(s.tuned, 3u);
  EXPECT_EQ(s.fallbacks, 0u);
}

TEST_F(ConvPipeline, UntunedConvolutionsRunTheNearestWinnerOrTheFallback) {
  Handle h(db_, "host");
  // Twice the batch of a tuned problem: the nearest winner.
  ConvProblem near = config_.problems[0].conv();
  near.n = 4;
  EXPECT_TRUE(dispatch(h, near).ok);
  EXPECT_EQ(h.stats().nearest, 1u);
  // Another filter size: nothing tuned is comparable, the default runs.
  ConvProblem far = config_.problems[2].conv();
  far.r = far.s = 1;
  far.pad_h = far.pad_w = 0;
  far.direction = ConvDirection::BackwardFilter;
  EXPECT_TRUE(dispatch(h, far).ok);
  EXPECT_EQ(h.stats().fallbacks, 1u);
  // Every direction and layout on the fallback, with odd shapes.
  for (int dir = 0; dir < 3; ++dir)
    for (auto layout : {ConvLayout::NHWC, ConvLayout::NCHW}) {
      ConvProblem p;
      p.direction = ConvDirection(dir);
      p.layout = layout;
      p.in_type = DataType::BF16;
      p.n = 1, p.c = 3, p.h = 13, p.w = 6, p.k = 5, p.r = 5, p.s = 2, p.stride_h = 3, p.pad_h = 2, p.dil_w = 3;
      ops::ValidationResult v = dispatch(h, p);
      EXPECT_TRUE(v.ok) << p.key() << ": " << v.reason;
    }
  EXPECT_EQ(h.stats().fallbacks, 7u);
}

TEST_F(ConvPipeline, DbExplainUnderstandsConvolutions) {
  db::Database d = db::Database::open(db_, db::Mode::ReadOnly);
  db::Explanation e = db::explain(d, config_.problems[1], "");
  EXPECT_EQ(e.choice, db::Explanation::Choice::Tuned);
  ConvProblem other = config_.problems[1].conv();
  other.c = 16;
  e = db::explain(d, other, "");
  EXPECT_EQ(e.choice, db::Explanation::Choice::Nearest) << db::format(e);
  other.groups = 1;
  e = db::explain(d, other, "");
  EXPECT_EQ(e.choice, db::Explanation::Choice::Fallback) << db::format(e);
  EXPECT_EQ(e.fallback.template_name, "host_conv");
}

TEST_F(ConvPipeline, BadInputGetsAStatusAndAMessage) {
  tiletune_handle_t h = nullptr;
  ASSERT_EQ(tiletune_create(&h, db_.c_str(), "host", 0), TILETUNE_SUCCESS);
  float buf[64] = {};
  tiletune_conv_desc_t d;
  tiletune_conv_desc_init(&d, 1, 6, 4, 4, 4, 3, 3);
  d.groups = 4;
  EXPECT_EQ(tiletune_conv_forward(h, &d, buf, buf, buf, nullptr), TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("c=6 is not divisible by groups=4"), std::string::npos)
      << tiletune_last_error();
  tiletune_conv_desc_init(&d, 1, 2, 2, 2, 2, 3, 3);
  EXPECT_EQ(tiletune_conv_backward_data(h, &d, buf, buf, buf, nullptr), TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("output height"), std::string::npos) << tiletune_last_error();
  tiletune_conv_desc_init(&d, -1, 2, 2, 2, 2, 1, 1);
  EXPECT_EQ(tiletune_conv_backward_filter(h, &d, buf, buf, buf, nullptr), TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("n=-1"), std::string::npos) << tiletune_last_error();
  tiletune_conv_desc_init(&d, 1, 2, 2, 2, 2, 1, 1);
  EXPECT_EQ(tiletune_conv_forward(h, &d, nullptr, buf, buf, nullptr), TILETUNE_ERROR_INVALID_VALUE);  // as the header says (it was LAUNCH)
  EXPECT_NE(std::string(tiletune_last_error()).find("null"), std::string::npos);
  EXPECT_EQ(tiletune_conv_forward(h, nullptr, buf, buf, buf, nullptr), TILETUNE_ERROR_INVALID_VALUE);
  d.layout = tiletune_conv_layout_t(7);
  EXPECT_EQ(tiletune_conv_forward(h, &d, buf, buf, buf, nullptr), TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiletune_conv_forward(nullptr, &d, buf, buf, buf, nullptr), TILETUNE_ERROR_INVALID_VALUE);
  tiletune_destroy(h);
}

}  // namespace
