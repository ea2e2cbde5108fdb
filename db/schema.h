// The schema of the tuning database as an ordered list of migrations. Migration i takes a
// database from version i-1 to version i; the version lives in `PRAGMA user_version` (0: empty
// file, nothing applied). A tiletune database also carries `PRAGMA application_id` ==
// kApplicationId and a `meta` row ('application_id', 'tiletune'), so that any other SQLite file is
// recognised as foreign and never migrated or read.
//
// Changing the schema: append a migration; never edit one that has shipped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

struct sqlite3;

namespace tiletune::db::schema {

inline constexpr const char* kApplicationName = "tiletune";  // meta.application_id
inline constexpr std::int32_t kApplicationId = 0x54547475;   // "TTtu", PRAGMA application_id

struct Migration {
  int version;              // the version this migration produces
  const char* description;
  const char* sql;          // one or more statements, run inside one transaction
};

const std::vector<Migration>& migrations();
int latest_version();  // == migrations().back().version
// The oldest version this build reads read-only without migrating it: v4 only widened the
// problems table's kind CHECK for convolutions, so a v3 file (e.g. a `db pack` shipped with a
// trainer) reads the same. Raise it when a migration changes what readers query.
inline constexpr int kOldestReadable = 3;

// Applies migrations on an open read-write handle until user_version == target_version (no-op if
// already there). Each migration runs in its own BEGIN IMMEDIATE transaction that re-reads
// user_version first, so several processes opening one new file at once apply each migration
// exactly once. Refuses (tiletune::Error naming `path` and the reason) a version-0 file that
// already has tables (a foreign database), a version newer than target, or target out of range.
// Exposed so that tests can build an old-version database (target_version 1).
void migrate(sqlite3* db, int target_version, const std::string& path);

}  // namespace tiletune::db::schema
