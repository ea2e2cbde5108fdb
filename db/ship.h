// Moving tuning results between databases: `tiletune db pack` (a small read-only database of the
// winners, to ship with a trainer) and `tiletune db merge` (sweeps of several machines combined).
// Both go through the Database class; every failure is a tiletune::Error naming the file and the
// cause.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tiletune::db {

struct PackResult {
  std::uintmax_t source_bytes = 0;  // the source file plus its WAL
  std::uintmax_t packed_bytes = 0;
  std::vector<std::string> arches;  // the arches packed
  std::size_t winners = 0;
  std::size_t code_objects = 0;
  std::size_t source_measurements = 0;
  std::size_t signed_objects = 0;  // with a signing key
  std::size_t unsigned_objects = 0;  // ... and not signed: they do not record what they were compiled as
  std::size_t generic = 0;           // generic kernels pooled (each with its measurement)
  std::size_t compiled = 0;          // compile-only candidates kept (never run: not winners)
};

// How many generic kernels `db pack` pools per class of problems and arch by default.
inline constexpr int kGenericPerClass = 2;

class Key;

// Writes to `dst` a database holding only the winners of `arches` (all arches of `src` when
// empty): their problems, solutions, devices, winning measurements (with provenance) and code
// objects. The file is written beside `dst` and renamed into place, in rollback-journal mode so
// that it opens read-only anywhere, and checked to open with Mode::ReadOnly. Refuses an existing
// dst unless `force`, an arch `src` has no measurements of, and a selection without winners.
// With `sign` (a private key, db/signing.h) every code object shipped is signed by it.
// Beside the winners, up to `generic` generic kernels per class of problems (types and layout; a
// convolution's filter geometry too) and arch go into the pool (schema 7) that the runtime ranks
// for problems too far from any tuned one: the kernels of highest mean efficiency over the class's
// measured problems (the best time over theirs, 0 where not measured), each with its measurement
// on the problem it fit best, by which the runtime calibrates its model.
// A problem that has no winner on an arch but compile-only candidates (`tune --compile-only`,
// schema 8) keeps the one the analytical model ranks first on the arch's assumed device, with its
// code object and static figures, in the packed file's `compiled` table: never a winner, never
// served by the runtime, shown by `db explain` as compiled and unmeasured.
PackResult pack(const std::string& src, const std::string& dst, const std::vector<std::string>& arches, bool force,
                const Key* sign = nullptr, int generic = kGenericPerClass);

struct MergeResult {
  std::string source;
  std::size_t measurements = 0;  // read from the source
  std::size_t added = 0;         // (problem, solution, arch) new to the destination
  std::size_t replaced = 0;      // the source's measurement was better
  std::size_t kept = 0;          // the destination's was as good or better
  std::size_t code_objects = 0;  // code objects read from the source (new ones are added by cache key)
};

// Merges `src` into `dst` (created if missing), one transaction per source: devices, problems,
// solutions and code objects (by cache_key) are unioned; for one (problem, solution, arch) the
// better measurement wins (Database::better; ties keep the destination's), winners are
// recomputed and every copied measurement keeps its provenance (the database it was measured
// into, its sweep and device); compile-only candidates (schema 8) are unioned with their figures. Merging the same source again changes nothing. A packed source's
// pool of generic kernels is not merged: pack the merged database to pool its kernels. All sources are
// opened and identified before dst is created or changed.
std::vector<MergeResult> merge(const std::string& dst, const std::vector<std::string>& srcs);

}  // namespace tiletune::db
