#include "solutions/selection.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"

namespace tiletune {

double problem_distance(const GemmProblem& a, const GemmProblem& b) {
  if (a.a_type != b.a_type || a.c_type != b.c_type || a.trans_a != b.trans_a || a.trans_b != b.trans_b ||
      a.compute_tf32 != b.compute_tf32)
    return std::numeric_limits<double>::infinity();
  auto r = [](std::int64_t x, std::int64_t y) { return std::abs(std::log(double(x) / double(y))); };
  return r(a.m, b.m) + r(a.n, b.n) + r(a.k, b.k) + r(a.batch, b.batch);
}

std::optional<NearestChoice> nearest_tuned(const std::vector<TunedEntry>& tuned, const GemmProblem& p,
                                           const gpu::DeviceInfo& dev) {
  std::optional<NearestChoice> best;
  for (std::size_t i = 0; i < tuned.size(); ++i) {
    double d = problem_distance(p, tuned[i].problem);
    if (d > kMaxNearestDistance || (best && d >= best->distance)) continue;
    try {
      if (tuned[i].tmpl->violation(tuned[i].tmpl->variables(tuned[i].solution, p, dev))) continue;
    } catch (const Error&) {
      continue;  // parameters that no longer fit the template's expressions
    }
    best = NearestChoice{i, d};
  }
  return best;
}

std::vector<const KernelTemplate*> fallback_templates(gpu::BackendKind backend) {
  std::vector<const KernelTemplate*> out;
  for (const auto& t : builtin_templates())
    if (t.supports(backend) && t.fallback_rank() >= 0) out.push_back(&t);
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelTemplate* a, const KernelTemplate* b) { return a->fallback_rank() < b->fallback_rank(); });
  return out;
}

FallbackChoice choose_fallback(const std::vector<const KernelTemplate*>& ranked, const GemmProblem& p,
                               const gpu::DeviceInfo& dev, const std::function<void(Variables&)>& adjust) {
  FallbackChoice c;
  for (const KernelTemplate* t : ranked) {
    Variables vars = t->variables(t->default_solution(), p, dev);
    if (adjust) adjust(vars);
    if (auto why = t->violation(vars)) {
      c.rejected.emplace_back(t->name(), *why);
      continue;
    }
    c.tmpl = t;
    break;
  }
  return c;
}

}  // namespace tiletune
