#include "db/records.h"

#include <ostream>

namespace tiletune::db {
namespace {
// The text of each status, in the enum's order: the database's CHECK list (db/schema.cpp) holds
// the recorded ones.
constexpr std::string_view kNames[] = {"ok",      "compile_failed", "invalid",     "launch_failed",
                                       "crashed", "timeout",        "unsupported", "prepare_timeout"};
}  // namespace

const char* to_string(Status s) {
  const auto i = static_cast<std::size_t>(s);
  return i < std::size(kNames) ? kNames[i].data() : "unknown";
}

std::optional<Status> status_from_string(std::string_view s) {
  for (int i = 0; i < int(std::size(kNames)); ++i)
    if (kNames[i] == s) return static_cast<Status>(i);
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& out, Status s) { return out << to_string(s); }

}  // namespace tiletune::db
