// A search strategy decides which candidates of a problem a sweep measures, in what order, and how
// their measuring is laid out; the sweep (tuner/sweep_run.h) compiles, measures and records. One
// strategy is one file in tuner/strategies/ plus its line in strategy.cpp's registry.
#pragma once
#include <string>
#include <vector>

#include "tuner/search.h"

namespace tiletune::tuner {

class Sweep;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual const char* name() const = 0;
  // Beyond the checks every strategy shares (SearchOptions' own fields): Error naming the field.
  virtual void validate(const SearchOptions&) const {}
  // Positions in `cands` to measure, in the order to measure them. Deterministic: a resumed sweep
  // selects the same candidates (and then skips those measured).
  virtual std::vector<std::size_t> select(const SearchOptions& o, const std::vector<SearchCandidate>& cands,
                                          const Problem& p, const gpu::DeviceInfo& dev) const = 0;
  // Rounds planned from what is recorded (halving): measured candidates stay in play so that a
  // resumed sweep plans its rounds again, problems are compiled for and measured one at a time,
  // and a promotion of a short-timed winner says the rounds are over.
  virtual bool in_rounds() const { return false; }
  // Measurements to expect for one problem given what is recorded (for the progress line).
  virtual std::size_t planned(const std::vector<HalvingRow>& rows, const SearchOptions& o) const;
  // Measures every problem's selected candidates. By default one batch over all problems, each
  // problem's last task its finals and the vendor comparison, then each problem is finished.
  virtual void measure(Sweep& sweep) const;

 protected:
  static std::vector<std::size_t> in_order(std::size_t n);                  // 0, 1, ..., n-1
  static void first(std::vector<std::size_t>& order, std::size_t budget);  // the first `budget` (0: all)
};

// Error listing the known strategies when `name` is none of them.
const Strategy& find_strategy(const std::string& name);

}  // namespace tiletune::tuner
