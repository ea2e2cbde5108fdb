#include "tuner/enumerator.h"

#include "common/error.h"

namespace tiletune::tuner {

std::vector<Solution> cartesian(const KernelTemplate& t) {
  std::vector<Solution> out{Solution{t.name(), {}}};
  for (const auto& [name, values] : t.parameters()) {
    std::vector<Solution> next;
    next.reserve(out.size() * values.size());
    for (const auto& partial : out)
      for (auto v : values) {
        Solution s = partial;
        s.params[name] = v;
        next.push_back(std::move(s));
      }
    out = std::move(next);
  }
  return out;
}

Enumeration enumerate_problems(const std::vector<KernelTemplate>& templates, const std::vector<Problem>& problems,
                               const gpu::DeviceInfo& device) {
  Enumeration e;
  for (const auto& original : templates) {
    if (!original.supports(device.backend)) continue;
    auto shared = std::make_shared<const KernelTemplate>(original);
    const KernelTemplate& t = *shared;
    std::vector<Solution> space = cartesian(t);
    for (std::size_t pi = 0; pi < problems.size(); ++pi) {
      if (problems[pi].kind() != t.problem_kind()) continue;
      auto consider = [&](const Solution& s) {
        ++e.total;
        Variables vars = t.variables(s, problems[pi], device);
        if (auto why = t.violation(vars)) {
          e.pruned_by_reason[why->substr(0, why->find(':'))]++;
          e.pruned.push_back({pi, s, *why});
          return;
        }
        e.candidates.push_back({pi, shared, s, t.launch_dims(vars)});
      };
      const bool repack = t.offers_repack() && !problems[pi].is_conv() && repack_plan(problems[pi].gemm()).bytes > 0;
      for (const auto& s : space) {
        consider(s);
        if (!repack) continue;
        Solution copied = s;
        copied.params["REPACK"] = 1;
        consider(copied);
      }
    }
  }
  return e;
}

Enumeration enumerate(const std::vector<KernelTemplate>& templates, const std::vector<GemmProblem>& problems,
                      const gpu::DeviceInfo& device) {
  return enumerate_problems(templates, std::vector<Problem>(problems.begin(), problems.end()), device);
}

}  // namespace tiletune::tuner
