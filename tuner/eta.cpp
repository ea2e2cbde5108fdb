#include "tuner/eta.h"

#include <algorithm>

namespace tiletune::tuner {
namespace {

// Time left at the stage's own pace; < 0 when it has no pace yet.
double own_seconds(const StageCounts& s) {
  if (s.done >= s.total) return 0;
  if (s.done == 0 || s.active_s <= 0) return -1;
  return double(s.total - s.done) * s.active_s / double(s.done);
}

}  // namespace

Eta estimate_eta(const StageCounts& stage, const StageCounts* feeder) {
  const double own = own_seconds(stage);
  if (!feeder || feeder->done >= feeder->total || stage.done >= stage.total) return {own, false};
  const double fed = own_seconds(*feeder);
  // Unknown feeder pace: at best what is known of this stage, and it is waiting all the same.
  if (fed < 0) return {own, true};
  if (own < 0 || fed >= own) return {fed, true};
  return {own, false};
}

}  // namespace tiletune::tuner
