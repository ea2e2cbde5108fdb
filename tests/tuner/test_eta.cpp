// The progress line's time left (tuner/eta.h): a stage's own pace over its active seconds, bounded
// by the stage feeding it.
#include <gtest/gtest.h>

#include "tuner/eta.h"

using namespace tiletune::tuner;

TEST(Eta, AStageAloneGoesAtItsOwnPace) {
  const Eta e = estimate_eta({25, 100, 10.0});
  EXPECT_DOUBLE_EQ(e.seconds, 30.0);  // 75 left at 2.5 per second
  EXPECT_FALSE(e.feeder_bound);
}

TEST(Eta, NothingDoneYetIsUnknownNotZero) {
  EXPECT_LT(estimate_eta({0, 100, 10.0}).seconds, 0);
  EXPECT_LT(estimate_eta({5, 100, 0.0}).seconds, 0);
}

TEST(Eta, AFinishedStageHasNothingLeft) {
  const StageCounts compile{10, 100, 5.0};
  const Eta e = estimate_eta({40, 40, 3.0}, &compile);
  EXPECT_DOUBLE_EQ(e.seconds, 0.0);
  EXPECT_FALSE(e.feeder_bound);
}

// The case that once read 3134 s for a phase that took 161 s: measuring had done little in much
// wall time because it waited on the compiler. Over its active seconds it is fast; the compiler's
// time left is what it waits for.
TEST(Eta, MeasuringStarvedByCompilingWaitsOnTheCompiler) {
  const StageCounts compile{200, 1000, 40.0};  // 5 per second: 160 s left
  const StageCounts measure{50, 1000, 5.0};    // 40 s of wall, 35 of them waiting: 10 per second of its own
  const Eta e = estimate_eta(measure, &compile);
  EXPECT_DOUBLE_EQ(e.seconds, 160.0);
  EXPECT_TRUE(e.feeder_bound);
  // Over wall time (what the progress line did before) it would say 950 / (50 / 40) = 760 s.
  EXPECT_DOUBLE_EQ(estimate_eta({50, 1000, 40.0}).seconds, 760.0);
}

TEST(Eta, MeasuringSlowerThanCompilingGoesAtItsOwnPace) {
  const StageCounts compile{500, 1000, 10.0};  // 50 per second: 10 s left
  const Eta e = estimate_eta({100, 1000, 50.0}, &compile);  // 2 per second: 450 s left
  EXPECT_DOUBLE_EQ(e.seconds, 450.0);
  EXPECT_FALSE(e.feeder_bound);
}

TEST(Eta, OnceTheFeederIsDoneOnlyTheStageCounts) {
  const StageCounts compile{1000, 1000, 200.0};
  const Eta e = estimate_eta({100, 1000, 10.0}, &compile);
  EXPECT_DOUBLE_EQ(e.seconds, 90.0);
  EXPECT_FALSE(e.feeder_bound);
}

TEST(Eta, NothingMeasuredYetWaitsOnTheCompilersTimeLeft) {
  const StageCounts compile{10, 100, 20.0};  // 180 s left
  const Eta e = estimate_eta({0, 300, 0.0}, &compile);
  EXPECT_DOUBLE_EQ(e.seconds, 180.0);
  EXPECT_TRUE(e.feeder_bound);
}

TEST(Eta, NothingCompiledYetIsWaitingWithNoNumber) {
  const StageCounts compile{0, 100, 20.0};
  const Eta e = estimate_eta({0, 300, 0.0}, &compile);
  EXPECT_LT(e.seconds, 0);
  EXPECT_TRUE(e.feeder_bound);
}
