#include "solutions/solution.h"

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace tiletune {

std::string Solution::kernel_name() const {
  std::string s = template_name;
  for (const auto& [name, value] : params) s += "_" + name + "-" + std::to_string(value);
  return s;
}

std::string Solution::params_json() const { return nlohmann::json(params).dump(); }

Solution Solution::from_json(const std::string& template_name, const std::string& params_json) {
  Solution s;
  s.template_name = template_name;
  try {
    s.params = nlohmann::json::parse(params_json).get<std::map<std::string, std::int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error("bad parameters for template " + template_name + ": " + e.what());
  }
  return s;
}

}  // namespace tiletune
