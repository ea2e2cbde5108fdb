// The example MLP trainer (examples/mlp.h) on the host backend: it learns on fallback kernels alone,
// a quick in-process host sweep over exactly its GEMM problems makes every call tuned without
// changing the loss curve, and its GEMM-based gradients match finite differences.
#include <gtest/gtest.h>

#include <cstdlib>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "db/database.h"
#include "mlp.h"
#include "tuner/config.h"
#include "tuner/sweep.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::examples;

namespace {

constexpr int kSteps = 40;

MlpConfig small_config() {
  MlpConfig c;
  c.inputs = 32;
  c.hidden = 64;
  c.classes = 8;
  c.layers = 3;
  c.batch = 256;
  c.lr = 5e-3f;
  c.seed = 7;
  return c;
}

class ExampleTrainer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("TILETUNE_VENDOR", "off", 1);  // the template defaults' rung: test_ladder covers the vendor's
    dir_ = fs::temp_directory_path() / ("tiletune-example-trainer-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    empty_db_ = (dir_ / "empty.db").string();
    tuned_db_ = (dir_ / "tuned.db").string();
    db::Database::open(empty_db_, db::Mode::ReadWrite);  // a valid database without a single winner
    empty_ = std::make_unique<TiletuneEngine>(empty_db_, "host");
  }
  static void TearDownTestSuite() {
    empty_.reset();
    fs::remove_all(dir_);
  }

  static void print_curve(const char* what, const std::vector<StepLog>& log) {
    std::printf("%s:", what);
    for (const auto& s : log)
      if (s.step % 5 == 0 || s.step + 1 == int(log.size())) std::printf(" %d:%.4f", s.step, double(s.loss));
    std::printf("\n");
  }

  static fs::path dir_;
  static std::string empty_db_, tuned_db_;
  static std::unique_ptr<TiletuneEngine> empty_;
  static std::vector<StepLog> fallback_log_;
};
fs::path ExampleTrainer::dir_;
std::string ExampleTrainer::empty_db_, ExampleTrainer::tuned_db_;
std::unique_ptr<TiletuneEngine> ExampleTrainer::empty_;
std::vector<StepLog> ExampleTrainer::fallback_log_;

TEST_F(ExampleTrainer, ProblemListAndConfigNameEveryGemmOfAStep) {
  MlpConfig c = small_config();
  auto problems = gemm_problems(c);
  // layers 32->64, 64->64, 64->8: 3 forward TN, 3 weight-grad NT, 2 input-grad NN, all distinct
  ASSERT_EQ(problems.size(), 8u);
  EXPECT_TRUE(problems[0].trans_a && !problems[0].trans_b);
  EXPECT_EQ(problems[0].m, 64);
  EXPECT_EQ(problems[0].n, 256);
  EXPECT_EQ(problems[0].k, 32);
  auto cfg = tuner::parse_config(tuning_config_json(c, "t"), dir_.string());
  ASSERT_EQ(cfg.problems.size(), problems.size());
  // The shipped config is exactly the problems of the trainer's default size.
  auto shipped = tuner::load_config(std::string(TILETUNE_SOURCE_DIR) + "/examples/configs/mlp_host.json");
  auto defaults = tuner::parse_config(tuning_config_json(MlpConfig{}, "d"), dir_.string());
  ASSERT_EQ(shipped.problems.size(), defaults.problems.size());
  for (std::size_t i = 0; i < shipped.problems.size(); ++i)
    EXPECT_EQ(shipped.problems[i].key(), defaults.problems[i].key());
}

TEST_F(ExampleTrainer, LearnsOnFallbackKernelsAlone) {
  MlpConfig c = small_config();
  fallback_log_ = train(*empty_, c, kSteps);
  print_curve("fallback-only loss", fallback_log_);
  ASSERT_EQ(fallback_log_.size(), std::size_t(kSteps));
  // An untrained network is about as good as chance: the initial loss is near ln(classes).
  EXPECT_GT(fallback_log_.front().loss, 0.8f * std::log(float(c.classes)));
  EXPECT_LT(fallback_log_.front().loss, std::log(float(c.classes)) + 1.f);
  EXPECT_LT(fallback_log_.back().loss, 0.5f * fallback_log_.front().loss);
  for (const auto& s : fallback_log_) EXPECT_TRUE(std::isfinite(s.loss));
  auto st = empty_->stats();
  std::printf("fallback-only stats: %s\n", format_stats(st).c_str());
  EXPECT_EQ(st.calls, std::uint64_t(kSteps) * 8);
  EXPECT_EQ(st.fallbacks, st.calls);
  EXPECT_EQ(st.tuned, 0u);
}

TEST_F(ExampleTrainer, TunedDatabaseGivesTheSameCurveOnTunedKernels) {
  if (fallback_log_.empty()) fallback_log_ = train(*empty_, small_config(), kSteps);
  MlpConfig c = small_config();
  // A quick host sweep over exactly the trainer's GEMMs, as `tiletune tune` would run it.
  auto cfg = tuner::parse_config(
      tuning_config_json(c, "example-trainer",
                         R"({"host_gemm": {"parameters": {"MT0": [16, 32], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [4]}}})",
                         R"({"warmup": 1, "min_iterations": 2, "max_iterations": 3, "target_ms": 2})"),
      dir_.string());
  tuner::SweepOptions o;
  o.backend = gpu::BackendKind::Host;
  o.db_path = tuned_db_;
  o.compare_vendor = false;
  auto summary = tuner::run_sweep(cfg, o, stderr);
  ASSERT_EQ(summary.winners.size(), gemm_problems(c).size());
  EXPECT_EQ(summary.invalid, 0u);

  TiletuneEngine tuned(tuned_db_, "host");
  auto log = train(tuned, c, kSteps);
  print_curve("tuned loss", log);
  ASSERT_EQ(log.size(), fallback_log_.size());
  for (std::size_t i = 0; i < log.size(); ++i)
    EXPECT_NEAR(log[i].loss, fallback_log_[i].loss, 1e-3 * std::max(1.f, fallback_log_[i].loss)) << "step " << i;
  auto st = tuned.stats();
  std::printf("tuned stats: %s\n", format_stats(st).c_str());
  EXPECT_EQ(st.calls, std::uint64_t(kSteps) * 8);
  EXPECT_GT(st.tuned, 0u);
  EXPECT_EQ(st.tuned, st.calls);
  EXPECT_EQ(st.fallbacks, 0u);
  EXPECT_EQ(st.jit_compiles, 0u) << "winners load from the database's code objects";
}

TEST_F(ExampleTrainer, GemmGradientsMatchFiniteDifferences) {
  MlpConfig c;
  c.inputs = 5;
  c.hidden = 7;
  c.classes = 4;
  c.layers = 3;
  c.batch = 6;
  c.activation = Activation::Gelu;  // smooth, so central differences are exact up to O(h^2)
  c.seed = 3;
  TeacherTask task(c.inputs, c.classes, c.seed);
  Batch b = task.sample(c.batch, 0);
  Mlp mlp(*empty_, c);
  for (int l = 0; l < mlp.layers(); ++l) {  // non-zero biases so their gradients are exercised too
    std::int64_t out = l + 1 == mlp.layers() ? c.classes : c.hidden;
    for (std::int64_t o = 0; o < out; ++o) mlp.bias(l)[o] = 0.1f * float((o % 3) - 1);
  }
  mlp.forward(b);
  mlp.backward();

  const float h = 1e-2f;
  auto loss_at = [&](float* p, float v) {
    float saved = *p;
    *p = v;
    mlp.params_changed();
    float loss = mlp.forward(b);
    *p = saved;
    mlp.params_changed();
    return loss;
  };
  for (int l = 0; l < mlp.layers(); ++l) {
    std::int64_t in = l == 0 ? c.inputs : c.hidden, out = l + 1 == mlp.layers() ? c.classes : c.hidden;
    std::vector<float> gw(mlp.weight_grad(l), mlp.weight_grad(l) + in * out);
    std::vector<float> gb(mlp.bias_grad(l), mlp.bias_grad(l) + out);
    double err = 0, norm = 0;
    auto check = [&](float* p, float analytic, const char* what, std::int64_t i) {
      float x = *p;
      double fd = (double(loss_at(p, x + h)) - double(loss_at(p, x - h))) / (2.0 * double(h));
      EXPECT_NEAR(analytic, fd, 2e-3 + 2e-2 * std::abs(fd)) << what << " of layer " << l << ", index " << i;
      err += (analytic - fd) * (analytic - fd);
      norm += fd * fd;
    };
    for (std::int64_t i = 0; i < in * out; ++i) check(mlp.weight(l) + i, gw[std::size_t(i)], "dW", i);
    for (std::int64_t i = 0; i < out; ++i) check(mlp.bias(l) + i, gb[std::size_t(i)], "db", i);
    EXPECT_GT(norm, 0);
    EXPECT_LT(std::sqrt(err / norm), 1e-2) << "layer " << l;
    std::printf("layer %d: relative gradient error %.2e (|g| = %.3e)\n", l, std::sqrt(err / norm), std::sqrt(norm));
  }
}

}  // namespace
