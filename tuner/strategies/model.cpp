// model: every candidate ranked by the analytical estimate of its time (solutions/model.h), the
// best `budget` measured, best first; templates without a "model" section rank last, in
// enumeration order. The model's error differs from template to template, and with the launch
// plan (REPACK: operand copies, C's column phases), and one that misprices a whole family would keep
// all of it from being timed; so each family (a template with one REPACK value) that has candidates
// keeps its own best budget / (2 * families) (at least one) among those measured, and the rest of
// the budget goes by rank across families.
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
    using Family = std::pair<const KernelTemplate*, std::int64_t>;
    auto family = [&](std::size_t i) {
      const auto r = cands[i].solution->params.find("REPACK");
      return Family{cands[i].tmpl, r == cands[i].solution->params.end() ? 0 : r->second};
    };
    std::map<Family, std::size_t> taken;
    for (std::size_t i : order) taken[family(i)] = 0;
    const std::size_t quota = std::max<std::size_t>(1, o.budget / (2 * taken.size()));
    std::vector<bool> chosen(order.size(), false);  // by rank
    std::size_t n = 0;
    for (std::size_t r = 0; r < order.size() && n < o.budget; ++r)
      if (taken[family(order[r])]++ < quota) chosen[r] = true, ++n;
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
