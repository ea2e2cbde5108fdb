// Plain rows of the tuning database (db/schema.cpp has the tables). No behaviour here: the
// Database class reads and writes these, the tuner fills them, the runtime and tools read them.
//
// Conventions: an id of 0 means "none" (stored as NULL); a REAL column that is NULL in the
// database (never measured, e.g. the timings of a failed candidate) reads back as NaN, and a NaN
// written is stored as NULL.
#pragma once
#include <array>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solutions/problem.h"
#include "solutions/solution.h"

namespace tiletune::db {

inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

// What became of a measurement; only Ok can win. The database and the worker protocol hold them
// as text (to_string, status_from_string), the code as this enum. Unsupported (the vendor library
// does not compute the problem) and PrepareTimeout (the worker did not get ready: no candidate to
// blame) are results that are never recorded.
enum class Status { Ok, CompileFailed, Invalid, LaunchFailed, Crashed, Timeout, Unsupported, PrepareTimeout };
const char* to_string(Status s);
std::optional<Status> status_from_string(std::string_view s);
std::ostream& operator<<(std::ostream& out, Status s);  // for messages and test output
inline bool is_recorded(Status s) {
  switch (s) {
    case Status::Ok: case Status::CompileFailed: case Status::Invalid: case Status::LaunchFailed: case Status::Crashed:
    case Status::Timeout: return true;
    default: return false;
  }
}

struct DeviceRecord {
  std::string backend;  // "host", "cuda", "hip"
  std::string arch;     // "sm_90a", "gfx90a", "x86_64-avx2"
  std::string name;
  std::int64_t multiprocessors = 0;
  std::string driver_version;
};

struct CodeObjectRecord {
  std::int64_t id = 0;         // assigned by the database; ignored by put_code_object
  std::string cache_key;       // content hash of (source, options, arch, compiler version)
  std::int64_t solution_id = 0;
  std::string arch;
  std::string compiler_version;
  bool ok = false;             // false: compilation failed, log holds the reason, bytes empty
  std::string log;
  std::string symbol;          // lowered kernel name to look up in the code object
  std::vector<std::uint8_t> bytes;
  // The bytes' SHA-256 as recorded when stored (put_code_object computes it; a copy brings its
  // own, which must match), and the instantiation it was compiled as ("" before schema 5).
  std::string sha256;
  std::string compiled_from;
  // "" when the bytes are what was stored, else why they must not be loaded.
  std::string integrity_problem() const;
};

// A code object's signature (db/signing.h).
struct SignatureRecord {
  std::int64_t code_object_id = 0;
  std::string key_id;  // the signing key's Key::id()
  std::vector<std::uint8_t> signature;
};

// What one measurement found: the part the worker's result (tuner::MeasureResult) and the
// database's row share, so that recording one is copying this part.
struct Outcome {
  Status status = Status::Ok;       // recorded: is_recorded
  std::string reason;               // why it failed; empty when ok
  double rel_error = kNotMeasured;  // max relative error against the reference
  double min_ms = kNotMeasured;
  double median_ms = kNotMeasured;  // the ranking key
  double max_ms = kNotMeasured;
};

struct MeasurementRecord : Outcome {
  std::int64_t problem_id = 0;
  std::int64_t solution_id = 0;
  std::int64_t device_id = 0;       // 0: none
  std::string arch;
  double tflops = kNotMeasured;
  std::int64_t code_object_id = 0;  // 0: none
  std::string sweep;                // free-form sweep / config name
};

// One row of Database::measurements(problem_id): the measurement plus what a listing shows.
struct MeasurementRow : MeasurementRecord {
  std::int64_t id = 0;
  std::string kernel_name;
  std::string created_at;  // UTC, ISO 8601
};

// One row of Database::problems(): enough for a listing.
struct ProblemRow {
  std::int64_t id = 0;
  std::string key;
  std::int64_t m = 0, n = 0, k = 0, batch = 0;
  std::int64_t measurements = 0;  // number of measurements, all arches and statuses
};

// The fastest valid measurement of one problem on one arch, with what the runtime needs to load
// and launch it.
struct WinnerRecord {
  std::string arch;
  std::int64_t problem_id = 0;
  std::string problem_key;
  Problem problem;
  Solution solution;
  std::int64_t solution_id = 0;
  std::string source_hash;
  std::int64_t code_object_id = 0;  // 0 when the measurement named none
  double median_ms = kNotMeasured;
  double tflops = kNotMeasured;
  std::int64_t measurement_id = 0;  // the winning measurement
  double vendor_ms = kNotMeasured;  // the vendor library's fastest 'ok' median on this (arch, problem)
  std::map<std::string, std::int64_t> vendor_choice;  // ... and the algorithm that ran it ({}: its default)
  std::string vendor_choice_source;  // ... and the library that timed it, with its version ("cuBLASLt 130400")
  // ... and its default (no algorithm chosen: what a framework's own call of the library runs)
  double vendor_default_ms = kNotMeasured;
  // Vendor time over the winner's: how far the winner beat the vendor (NaN: vendor not measured).
  double vendor_ratio() const { return median_ms > 0 ? vendor_ms / median_ms : kNotMeasured; }
  // The vendor default's time over the winner's (NaN: the default not measured).
  double vendor_default_ratio() const { return median_ms > 0 ? vendor_default_ms / median_ms : kNotMeasured; }
};

// Where a measurement came from (schema version 3). `source` is empty for a measurement made
// directly into this database; for one copied by `tiletune db merge` or `db pack` it is the path
// of the database it was measured into (kept through chains of merges), and
// source_measurement_id its id there.
struct ProvenanceRecord {
  std::int64_t measurement_id = 0;
  std::string source;
  std::int64_t source_measurement_id = 0;
  std::string sweep;
  std::int64_t device_id = 0;  // this database's devices.id; 0: none
  std::string recorded_at;     // UTC, ISO 8601; when measured (local) or when copied here
};

// The meta key under which a sweep records its search settings: this prefix and the sweep's name;
// the value is JSON {"strategy", "budget", "budget_seconds", "seed"} (tuner/search.h's SearchOptions).
// `tiletune report` labels each sweep's convergence with it.
inline constexpr const char* kSearchMetaPrefix = "search:";

// The meta key prefix under which a code object's static figures are stored, followed by its
// cache key; the value is JSON {"vgpr", "agpr", "sgpr", "lds_bytes", "scratch_bytes", "vgpr_spills",
// "sgpr_spills", "mfma_instructions"} as read from the object (gpu::code_object_figures).
inline constexpr const char* kFiguresMetaPrefix = "figures:";

// A candidate compiled for an arch and never run (schema 8: `tune --compile-only`, `db pack`):
// not a measurement, never a winner, never served by the runtime.
struct CompiledRecord {
  std::string arch;
  std::int64_t problem_id = 0;
  std::string problem_key;
  Problem problem;
  std::int64_t solution_id = 0;
  Solution solution;
  std::string source_hash;
  std::int64_t code_object_id = 0;
  std::string cache_key, compiler_version;  // of the code object
  std::int64_t code_bytes = 0;
  std::string figures;  // the object's static figures (JSON; "" when none were recorded)
};

// Bulk rows, with their ids in the database they were read from.
struct DeviceRow : DeviceRecord {
  std::int64_t id = 0;
};
struct SolutionRow {
  std::int64_t id = 0;
  Solution solution;
  std::string source_hash;
};
struct ProblemSpecRow {
  std::int64_t id = 0;
  std::string key;
  Problem problem;
};

}  // namespace tiletune::db
