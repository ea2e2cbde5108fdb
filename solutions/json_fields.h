// Reading the JSON that comes from outside (configs, shapes files, databases' problem specs)
// strictly: integers only where integers are meant (1.99 is not truncated to 1), and a bound on
// nesting before anything recursive (dump, a recursive reader) sees the document.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace tiletune {

inline constexpr int kMaxJsonNesting = 64;

// json::parse with a nesting bound; throws Error naming `what` on bad JSON or deeper nesting.
inline nlohmann::json parse_json(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text, [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxJsonNesting)
        throw Error(what + " is nested deeper than " + std::to_string(kMaxJsonNesting) + " levels");
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + " is not valid JSON: " + e.what());
  }
}

// The integer at `j`; Error naming `what` for a fraction, a string, a bool or an out-of-range number.
inline std::int64_t json_integer(const nlohmann::json& j, const std::string& what) {
  if (!j.is_number_integer()) throw Error(what + " must be an integer, got " + j.dump());
  if (j.is_number_unsigned() && j.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
    throw Error(what + " is out of range: " + j.dump());
  return j.get<std::int64_t>();
}

// Field `name` of object `j` as an integer, `fallback` when absent.
inline std::int64_t json_integer_or(const nlohmann::json& j, const char* name, std::int64_t fallback) {
  return j.contains(name) ? json_integer(j.at(name), std::string("'") + name + "'") : fallback;
}

}  // namespace tiletune
