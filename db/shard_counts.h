// What `tune --finish-shards N` checks N against. Each shard of a sweep (`tune --shard I/N`)
// records N in its database under the meta key kShardsMetaPrefix + the sweep's name, and `db merge`
// carries the record into the merged file. The value is a JSON array of counts, sorted: one count,
// unless shards of different splits went into one file (which no N can finish: their parts
// overlap and leave gaps).
#pragma once
#include <string>
#include <vector>

#include "db/database.h"

namespace tiletune::db {

inline constexpr const char* kShardsMetaPrefix = "shards:";

// The counts recorded for `sweep`, sorted; empty when none is. A value that is not an array of
// positive counts is an Error naming the database and the key.
std::vector<int> shard_counts(Database& db, const std::string& sweep);

// Adds `counts` to the record of `sweep`. Call it inside Database::transaction, so that shards
// sharing one file cannot lose each other's count between the read and the write.
void add_shard_counts(Database& db, const std::string& sweep, const std::vector<int>& counts);

}  // namespace tiletune::db
