// exhaustive: every candidate in enumeration order; a budget takes the first N.
#include "tuner/strategy.h"

namespace tiletune::tuner {
namespace {

class Exhaustive final : public Strategy {
 public:
  const char* name() const override { return "exhaustive"; }
  std::vector<std::size_t> select(const SearchOptions& o, const std::vector<SearchCandidate>& cands, const Problem&,
                                  const gpu::DeviceInfo&) const override {
    std::vector<std::size_t> order = in_order(cands.size());
    first(order, o.budget);
    return order;
  }
};

}  // namespace

const Strategy& exhaustive_strategy() {
  static const Exhaustive s;
  return s;
}

}  // namespace tiletune::tuner
