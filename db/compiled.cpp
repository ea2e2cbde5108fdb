#include "db/compiled.h"

#include <algorithm>
#include <optional>

#include "db/explain.h"
#include "solutions/kernel_template.h"

namespace tiletune::db {

gpu::DeviceInfo compiled_device(Database& db, const std::string& arch) {
  std::optional<DeviceRecord> row;
  for (const auto& d : db.devices())
    if (d.arch == arch) row = d;
  return device_for_arch(arch, row);
}

std::vector<RankedCompiled> rank_compiled(const std::vector<CompiledRecord>& candidates, const gpu::DeviceInfo& dev,
                                          std::vector<std::string>* skipped) {
  std::vector<RankedCompiled> out;
  for (const auto& c : candidates) {
    const auto& all = builtin_templates();
    const auto t = std::find_if(all.begin(), all.end(),
                                [&](const KernelTemplate& k) { return k.name() == c.solution.template_name; });
    std::optional<std::string> why;
    const Problem p = c.problem.canonical();
    if (t == all.end()) why = "its template " + c.solution.template_name + " is unknown to this build";
    else why = t->violation(t->variables(c.solution, p, dev));
    if (why) {
      if (skipped) skipped->push_back(c.solution.kernel_name() + ": " + *why);
      continue;
    }
    out.push_back({c, model_estimate(*t, c.solution, p, dev)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RankedCompiled& a, const RankedCompiled& b) { return model_before(a.estimate, b.estimate); });
  return out;
}

}  // namespace tiletune::db
