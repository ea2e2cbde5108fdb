#include "tuner/strategy.h"

#include <numeric>

#include "common/error.h"
#include "tuner/sweep_run.h"

namespace tiletune::tuner {

// The registry: one line per file of tuner/strategies/.
const Strategy& exhaustive_strategy();
const Strategy& random_strategy();
const Strategy& model_strategy();
const Strategy& halving_strategy();

namespace {
const std::vector<const Strategy*>& registry() {
  static const std::vector<const Strategy*> all = {&exhaustive_strategy(), &random_strategy(), &model_strategy(),
                                                   &halving_strategy()};
  return all;
}
}  // namespace

const std::vector<std::string>& search_strategies() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Strategy* s : registry()) n.push_back(s->name());
    return n;
  }();
  return names;
}

const Strategy& find_strategy(const std::string& name) {
  for (const Strategy* s : registry())
    if (name == s->name()) return *s;
  std::string known;
  for (const auto& n : search_strategies()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown search strategy '" + name + "' (" + known + ")");
}

std::size_t Strategy::planned(const std::vector<HalvingRow>& rows, const SearchOptions&) const {
  std::size_t fresh = 0;
  for (const HalvingRow& r : rows) fresh += !r.measured;
  return fresh;
}

std::vector<std::size_t> Strategy::in_order(std::size_t n) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  return order;
}

void Strategy::first(std::vector<std::size_t>& order, std::size_t budget) {
  if (budget > 0 && order.size() > budget) order.resize(budget);
}

void Strategy::measure(Sweep& sweep) const {
  sweep.measure_batch();
  for (std::size_t pi = 0; pi < sweep.problems(); ++pi) sweep.finish_problem(pi);
}

std::vector<std::size_t> select_candidates(const SearchOptions& o, const std::vector<SearchCandidate>& cands,
                                           const Problem& p, const gpu::DeviceInfo& dev) {
  return find_strategy(o.strategy).select(o, cands, p, dev);
}

}  // namespace tiletune::tuner
