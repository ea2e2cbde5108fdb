#include "solutions/solution.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "solutions/json_fields.h"

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
  const nlohmann::json j = parse_json(params_json, "the parameters of a " + template_name + " solution");
  if (!j.is_object()) throw Error("bad parameters for template " + template_name + ": not an object");
  for (const auto& [name, value] : j.items())
    s.params[name] = json_integer(value, "parameter " + name + " of a " + template_name + " solution");
  return s;
}

}  // namespace tiletune
