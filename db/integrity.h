// What a code object is: the SHA-256 of its bytes, recorded when it is stored and checked before
// anything loads it (the runtime, a sweep's worker, db check, db pack and merge). Without a
// signature this catches corruption and blind edits, not a writer who recomputes the hash: who
// may write a database decides what runs (README, "Trust").
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tiletune::db {

class Database;

// Lower-case hex, 64 characters (OpenSSL's SHA-256).
std::string sha256_hex(const void* data, std::size_t size);
inline std::string sha256_hex(const std::vector<std::uint8_t>& bytes) { return sha256_hex(bytes.data(), bytes.size()); }

// `db check`: every code object's bytes against the SHA-256 recorded for them, and every
// measurement's code object against the instantiation its solution and problem make (the
// template's name expression; an edited params row shows here). One line per fault found.
std::vector<std::string> verify_code_objects(Database& db);

}  // namespace tiletune::db
