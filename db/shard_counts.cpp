#include "db/shard_counts.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace tiletune::db {

std::vector<int> shard_counts(Database& db, const std::string& sweep) {
  const std::string key = kShardsMetaPrefix + sweep;
  const std::optional<std::string> value = db.meta(key);
  if (!value) return {};
  const nlohmann::json j = nlohmann::json::parse(*value, nullptr, /*allow_exceptions=*/false);
  std::vector<int> counts;
  const bool ok = j.is_array() && std::all_of(j.begin(), j.end(), [&](const nlohmann::json& c) {
                    if (!c.is_number_integer() || c.get<long long>() < 1 || c.get<long long>() > (1 << 30)) return false;
                    counts.push_back(c.get<int>());
                    return true;
                  });
  if (!ok) throw Error(db.path() + ": meta '" + key + "' = '" + *value + "' is not a list of shard counts");
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

void add_shard_counts(Database& db, const std::string& sweep, const std::vector<int>& counts) {
  std::vector<int> all = shard_counts(db, sweep);
  const std::vector<int> before = all;
  all.insert(all.end(), counts.begin(), counts.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (all != before) db.set_meta(kShardsMetaPrefix + sweep, nlohmann::json(all).dump());
}

}  // namespace tiletune::db
