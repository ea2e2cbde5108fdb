// model: every candidate ranked by the analytical estimate of its time (solutions/model.h), the
// best `budget` measured, best first; templates without a "model" section rank last, in
// enumeration order.
#include <algorithm>

#include "tuner/strategy.h"

namespace tiletune::tuner {
namespace {

class Model final : public Strategy {
 public:
  const char* name() const override { return "model"; }
  std::vector<std::size_t> select(const SearchOptions& o, const std::vector<SearchCandidate>& cands, const Problem& p,
                                  const gpu::DeviceInfo& dev) const override {
    std::vector<std::size_t> order = in_order(cands.size());
    std::vector<ModelEstimate> est(cands.size());
    for (std::size_t i = 0; i < cands.size(); ++i) est[i] = model_estimate(*cands[i].tmpl, *cands[i].solution, p, dev);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return model_before(est[a], est[b]); });
    first(order, o.budget);
    return order;
  }
};

}  // namespace

const Strategy& model_strategy() {
  static const Model s;
  return s;
}

}  // namespace tiletune::tuner
