#include "tools/import/config_writer.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "solutions/kernel_template.h"
#include "tuner/config.h"

namespace tiletune::imports {

std::string config_text(const Workload& workload, const ConfigMeta& meta) {
  for (const std::string& t : meta.templates) find_template(t);  // Error naming an unknown one
  std::vector<const Workload::Entry*> order;
  for (const auto& e : workload.entries()) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->calls > b->calls; });

  nlohmann::json problems = nlohmann::json::array();
  for (const Workload::Entry* e : order) {
    nlohmann::json j = e->problem;
    j["name"] = e->first_seen;
    j["calls"] = e->calls;
    problems.push_back(std::move(j));
  }
  std::string files;
  for (const std::string& f : meta.files) files += (files.empty() ? "" : ", ") + f;
  nlohmann::json config = {
      {"name", meta.name},
      {"about", "Imported by `tiletune import` from " + files + ": " + std::to_string(workload.calls()) + " calls of " +
                    std::to_string(workload.entries().size()) +
                    " problems. \"calls\" is how often the workload ran each problem (a TunableOp row counts as "
                    "one), most called first; \"name\" is where it was first seen."},
      {"problems", std::move(problems)}};
  if (!meta.templates.empty()) {
    config["templates"] = nlohmann::json::object();
    for (const std::string& t : meta.templates) config["templates"][t] = nlohmann::json::object();
  }
  const std::string text = config.dump(2) + "\n";
  try {
    tuner::parse_config(text, ".");
  } catch (const Error& e) {
    throw std::logic_error(std::string("the imported config does not load: ") + e.what());
  }
  return text;
}

}  // namespace tiletune::imports
