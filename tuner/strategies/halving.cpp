// halving: successive halving, problem by problem. Round one gives every candidate a short timing
// (short_benchmark, recorded 'ok' with kShortTimingReason); round two times the best third (at
// most `budget`) fully, counting those a stopped sweep already timed fully; then the finals. Each
// round waits for the one before it: which candidates go on depends on all of its timings.
#include <cmath>

#include "tuner/strategy.h"
#include "tuner/sweep_run.h"

namespace tiletune::tuner {
namespace {

class Halving final : public Strategy {
 public:
  const char* name() const override { return "halving"; }
  std::vector<std::size_t> select(const SearchOptions&, const std::vector<SearchCandidate>& cands, const Problem&,
                                  const gpu::DeviceInfo&) const override {
    return in_order(cands.size());  // all of them: the budget caps round two
  }
  bool in_rounds() const override { return true; }
  std::size_t planned(const std::vector<HalvingRow>& rows, const SearchOptions& o) const override {
    std::size_t full = 0;
    for (const HalvingRow& r : rows) full += std::isfinite(r.full_ms);
    std::size_t keep = (rows.size() + 2) / 3;
    if (o.budget) keep = std::min(keep, o.budget);
    return Strategy::planned(rows, o) + (keep > full ? keep - full : 0);
  }
  void measure(Sweep& sweep) const override {
    const SearchOptions& o = sweep.config().search;
    for (std::size_t pi = 0; pi < sweep.problems(); ++pi) {
      sweep.count_over_budget(sweep.round(pi, sweep.fresh(pi), short_benchmark(sweep.config().benchmark), RecordAs::Short, false));
      if (!sweep.unprepared(pi))
        sweep.round(pi, halving_round2(sweep.rows(pi), o.budget), sweep.config().benchmark, RecordAs::Again, true);
      if (!sweep.unprepared(pi)) sweep.final_round(sweep.first_slot(), pi);
      sweep.finish_problem(pi);
    }
  }
};

}  // namespace

const Strategy& halving_strategy() {
  static const Halving s;
  return s;
}

}  // namespace tiletune::tuner
