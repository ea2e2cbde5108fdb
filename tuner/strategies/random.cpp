// random: a uniformly random subset of `budget` candidates, drawn from the seed and the problem's
// key, so that the same seed gives the same subset of the same space.
#include <random>
#include <string>

#include "common/error.h"
#include "tuner/strategy.h"

namespace tiletune::tuner {
namespace {

class Random final : public Strategy {
 public:
  const char* name() const override { return "random"; }
  void validate(const SearchOptions& o) const override {
    if (o.budget == 0 && o.budget_seconds == 0)
      throw Error("search: the random strategy needs a budget (candidates per problem) or budget_seconds");
  }
  std::vector<std::size_t> select(const SearchOptions& o, const std::vector<SearchCandidate>& cands, const Problem& p,
                                  const gpu::DeviceInfo&) const override {
    std::vector<std::size_t> order = in_order(cands.size());
    // A partial Fisher-Yates shuffle from a generator seeded by the seed and the problem's key
    // (FNV, so stable across platforms).
    std::mt19937_64 rng(o.seed ^ std::stoull(content_hash(p.canonical().key()), nullptr, 16));
    const std::size_t take = o.budget > 0 ? std::min(o.budget, order.size()) : order.size();
    for (std::size_t i = 0; i < take; ++i) {
      std::uniform_int_distribution<std::size_t> pick(i, order.size() - 1);
      std::swap(order[i], order[pick(rng)]);
    }
    order.resize(take);
    return order;
  }
};

}  // namespace

const Strategy& random_strategy() {
  static const Random s;
  return s;
}

}  // namespace tiletune::tuner
