// model: every candidate ranked by the analytical estimate of its time (solutions/model.h), the
// best `budget` measured, best first; templates without a "model" section rank last, in
// enumeration order. The model's error differs from template to template (one that misprices a
// template's whole space would keep all of it from being timed), so each template that has
// candidates keeps its own best budget / (2 * templates) (at least one) among those measured, and
// the rest of the budget goes by rank across templates.
#include <algorithm>
#include <map>

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
    if (o.budget == 0 || order.size() <= o.budget) return order;
    std::map<const KernelTemplate*, std::size_t> taken;
    for (std::size_t i : order) taken[cands[i].tmpl] = 0;
    const std::size_t quota = std::max<std::size_t>(1, o.budget / (2 * taken.size()));
    std::vector<bool> chosen(order.size(), false);  // by rank
    std::size_t n = 0;
    for (std::size_t r = 0; r < order.size() && n < o.budget; ++r)
      if (taken[cands[order[r]].tmpl]++ < quota) chosen[r] = true, ++n;
    for (std::size_t r = 0; r < order.size() && n < o.budget; ++r)
      if (!chosen[r]) chosen[r] = true, ++n;
    std::vector<std::size_t> out;
    for (std::size_t r = 0; r < order.size(); ++r)
      if (chosen[r]) out.push_back(order[r]);
    return out;
  }
};

}  // namespace

const Strategy& model_strategy() {
  static const Model s;
  return s;
}

}  // namespace tiletune::tuner
