// A solution: one template with one value for each of its parameters. Its kernel name encodes all
// of them, so a name in a log or a database row says exactly which variant ran.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace tiletune {

// The template name a vendor library's measurement is stored under (a sweep times the vendor as a
// candidate): such a winner means "call the vendor library", not a code object.
inline constexpr const char* kVendorTemplate = "vendor";

struct Solution {
  std::string template_name;
  std::map<std::string, std::int64_t> params;  // ordered by name: one spelling per variant

  // "simt_gemm_DB-1_DU-8_MT0-128_MT1-128_PAD-4_TT0-8_TT1-8_VW-4": template, then NAME-value by name.
  std::string kernel_name() const;
  std::string params_json() const;                 // {"DB":1,...}
  static Solution from_json(const std::string& template_name, const std::string& params_json);
  bool operator==(const Solution& o) const { return template_name == o.template_name && params == o.params; }
};

}  // namespace tiletune
