#include "tuner/enumerator.h"

#include "common/error.h"

namespace tiletune::tuner {

// A space larger than this is a config's typo, not a sweep: refused before it is expanded.
constexpr double kMaxSpace = 1e7, kMaxCandidates = 5e8;

static double space_size(const KernelTemplate& t) {
  double n = 1;
  for (const auto& [name, values] : t.parameters()) n *= double(values.size());
  return n;
}

std::vector<Solution> cartesian(const KernelTemplate& t) {
  if (space_size(t) > kMaxSpace)
    throw Error("template " + t.name() + ": its parameter lists make " + std::to_string(std::int64_t(space_size(t))) +
                " combinations, more than " + std::to_string(std::int64_t(kMaxSpace)) +
                ": narrow them in the config's \"templates\"");
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
  double total = 0;
  for (const auto& t : templates)
    if (t.supports(device.backend)) total += space_size(t) * double(problems.size());
  if (total > kMaxCandidates)
    throw Error("the config makes about " + std::to_string(std::int64_t(total)) + " candidates to check (" +
                std::to_string(problems.size()) + " problems), more than " + std::to_string(std::int64_t(kMaxCandidates)) +
                ": split it, or narrow its templates' parameter lists");
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
