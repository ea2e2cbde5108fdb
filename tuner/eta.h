// How long a stage of a sweep has left, as a pure function of its counters, so that it can be
// tested without a clock.
//
// Measuring runs while compiling goes on, and waits for code objects: its rate over wall time is
// the compiler's, not its own, and dividing what is left by it once read 3134 s for a phase that
// took 161 s. So a stage's own rate counts only the seconds it could work (its active seconds:
// from its start, less what it spent waiting on the stage feeding it), and a stage that is fed
// cannot finish before its feeder does.
#pragma once
#include <cstddef>

namespace tiletune::tuner {

struct StageCounts {
  std::size_t done = 0, total = 0;
  double active_s = 0;  // seconds it could work: since its start, less the time it waited on its feeder
};

struct Eta {
  double seconds = -1;          // < 0: unknown (nothing done yet to take a rate from)
  bool feeder_bound = false;    // the feeding stage, not this one's own pace, sets it
};

// The stage's time left at its own pace, or, while `feeder` (the stage it waits on, e.g. compile
// for measure; null: none) is unfinished, the later of that and the feeder's time left. A fed stage
// with nothing done yet, or whose feeder has nothing done yet, is feeder-bound with what is known.
Eta estimate_eta(const StageCounts& stage, const StageCounts* feeder = nullptr);

}  // namespace tiletune::tuner
