// What a code object is: the SHA-256 of its bytes, recorded when it is stored and checked before
// anything loads it (the runtime, a sweep's worker, db check, db pack and merge). Without a
// signature this catches corruption and blind edits, not a writer who recomputes the hash: who
// may write a database decides what runs (README, "Trust").
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/sha256.h"

namespace tiletune::db {

class Database;

using tiletune::sha256_hex;

// `db check`: every code object's bytes against the SHA-256 recorded for them, and every
// measurement's code object against the instantiation its solution and problem make (the
// template's name expression; an edited params row shows here). One line per fault found.
std::vector<std::string> verify_code_objects(Database& db);

}  // namespace tiletune::db
