// The tuning database: one SQLite file (schema in db/schema.cpp) that tuners write and the runtime
// reads.
//
// Writers: each writer method is one short BEGIN IMMEDIATE transaction, retried with jittered
// backoff while another process holds the lock (on top of a 30 s busy timeout), so that many tuner
// processes can share one file (WAL mode) and a sweep killed at any moment keeps everything
// committed so far.
// Readers: the runtime opens Mode::ReadOnly, which never writes the database and refuses missing,
// non-SQLite, corrupt, foreign, older or newer-schema files with a tiletune::Error naming the file
// and the reason.
//
// One Database per thread (a connection is not shared between threads), and never carried across
// fork(): open a new one in the child.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/records.h"

struct sqlite3;

namespace tiletune::db {

// The `reason` of an 'ok' measurement that re-times one of its problem's finalists, which the sweep
// records over the candidate's first timing (tuner/search.h: kFinalTimingReason, and V1 as older
// databases say it; tuner/sweep.cpp checks that the two agree).
inline constexpr const char* kFinalistReason = "finalist: timed fully twice";
inline constexpr const char* kFinalistReasonV1 = "halving: timed fully twice";
// A finalist timed at the end in alternating rounds with the other side's (the generated kernels'
// against the vendor's: tuner/sweep.cpp, head_to_head), recorded at the median of its rounds.
inline constexpr const char* kHeadToHeadReason = "finalist: median of rounds against the other side";
inline bool is_finalist_reason(const std::string& reason) {
  return reason == kFinalistReason || reason == kFinalistReasonV1 || reason == kHeadToHeadReason;
}

enum class Mode {
  ReadOnly,   // SQLITE_OPEN_READONLY; the file must exist with the newest schema
  ReadWrite,  // creates the file if missing and migrates it to the newest schema
  // Read-only like ReadOnly, but also accepts an older schema (a database from an older tiletune
  // that is being merged or packed); readers of newer tables return nothing for it.
  ReadOnlyAnyVersion,
};

class Database {
 public:
  static Database open(const std::string& path, Mode mode);

  Database(Database&&) noexcept = default;
  Database& operator=(Database&&) noexcept = default;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database() = default;

  const std::string& path() const { return path_; }
  Mode mode() const { return mode_; }
  int schema_version() const;
  // "ok" when the file is sound, otherwise SQLite's findings, one per line.
  std::string integrity_check();

  // ---- writers (Mode::ReadWrite only; each one transaction) --------------------------------
  // Insert if new; return the id of the row with these exact values.
  std::int64_t upsert_device(const DeviceRecord& d);
  // By problem.key(); the first spec stored for a key is kept.
  std::int64_t upsert_problem(const Problem& p);  // problems.kind from p.kind()
  // By (kernel_name, source_hash).
  std::int64_t upsert_solution(const Solution& s, const std::string& source_hash);
  // Insert unless a code object with this cache_key exists (then it is kept as is, failed or
  // not); returns the id of the stored one. record.id is ignored.
  std::int64_t put_code_object(const CodeObjectRecord& record);
  void put_signature(const SignatureRecord& s);  // replaces the object's signature, if any
  // Deletes the failed compiles (ok = 0) stored under these cache keys, so that put_code_object
  // can store a new compile of them (`tune --retry-failed`); one a measurement names is kept.
  // Returns how many it deleted; one transaction.
  std::size_t forget_failed_code_objects(const std::vector<std::string>& cache_keys);
  // Inserts or replaces the measurement of (problem, solution, arch), then recomputes that
  // (arch, problem)'s winner: the 'ok' measurement with the lowest median_ms (ties: the older
  // row). Failures never win; when no 'ok' measurement is left the winner row is removed.
  // Also records a provenance row (source '': measured here), replacing any earlier one.
  void put_measurement(const MeasurementRecord& m);

  // Whether measurement a beats b for the same (problem, solution, arch): an 'ok' one beats a
  // failure; a finalist's re-timing beats a first timing whatever their times, as the sweep that
  // made it replaced the one by the other (so merging the shards of a sweep into its finished
  // database again keeps its finals); otherwise the lower median_ms. Two failures, or equal: no.
  static bool better(const MeasurementRecord& a, const MeasurementRecord& b);
  // For merge and pack: stores m (ids already of this database) with its created_at (empty: now)
  // and provenance (measurement_id ignored) unless this database already has a measurement of
  // (problem, solution, arch) that m does not beat; then recomputes that winner like
  // put_measurement. Returns whether m was stored.
  bool put_measurement_if_better(const MeasurementRecord& m, const std::string& created_at,
                                 const ProvenanceRecord& provenance);
  // Marks the 'ok' measurement of (problem, solution, arch) as a generic kernel of that arch's
  // pool (schema 7).
  void add_pool_kernel(std::int64_t problem_id, std::int64_t solution_id, const std::string& arch);
  // Records that solution's code object (compiled ok for `arch`) was compiled for the problem and
  // never run (schema 8); replaces an earlier row of (arch, problem, solution).
  void add_compiled(const std::string& arch, std::int64_t problem_id, std::int64_t solution_id,
                    std::int64_t code_object_id);
  void set_meta(const std::string& key, const std::string& value);
  // Runs f as one write transaction: the writers called inside it join it, so that a merge or a
  // pack is applied entirely or not at all (and much faster than one transaction per row).
  void transaction(const char* what, const std::function<void()>& f);
  // For a file that is shipped read-only: checkpoints the WAL, switches the file back to the
  // rollback journal (a WAL file cannot be opened where its directory is not writable) and
  // rebuilds it without free pages (VACUUM).
  void compact_for_shipping();

  // ---- readers -----------------------------------------------------------------------------
  std::optional<CodeObjectRecord> find_code_object(const std::string& cache_key);
  std::optional<CodeObjectRecord> code_object(std::int64_t id);
  // Its signature (db/signing.h); none in a file older than schema version 6.
  std::optional<SignatureRecord> signature(std::int64_t code_object_id);
  std::optional<MeasurementRecord> find_measurement(std::int64_t problem_id, std::int64_t solution_id,
                                                    const std::string& arch);
  // Winners of one arch, or of all arches when arch is empty; ordered by arch, problem key.
  std::vector<WinnerRecord> winners(const std::string& arch);
  // The generic kernels of one arch (schema 7; none in an older file), shaped as winners: each
  // with its measurement on the problem it fit best.
  std::vector<WinnerRecord> pool_kernels(const std::string& arch);
  std::vector<std::string> arches();            // arches with at least one measurement, sorted
  // The compile-only candidates of one arch, or of all when arch is empty (none in a file older
  // than schema 8), ordered by arch, problem key and kernel name; and their arches, sorted.
  std::vector<CompiledRecord> compiled(const std::string& arch);
  std::vector<std::string> compiled_arches();
  std::vector<ProblemRow> problems();           // ordered by key
  // Measurements of one problem (all arches): 'ok' ones by median_ms first, then failures.
  std::vector<MeasurementRow> measurements(std::int64_t problem_id);
  std::optional<std::int64_t> find_problem(const std::string& key);
  // The winner of one (arch, problem key), if any.
  std::optional<WinnerRecord> find_winner(const std::string& arch, const std::string& problem_key);
  std::optional<std::string> meta(const std::string& key);

  // ---- bulk readers (merge, pack), ordered by id -------------------------------------------
  std::vector<DeviceRow> devices();
  std::vector<ProblemSpecRow> problem_specs();
  std::vector<SolutionRow> solutions();
  std::vector<MeasurementRow> all_measurements();
  std::optional<MeasurementRow> measurement(std::int64_t id);
  // Every code object, one at a time (their bytes may be large).
  void for_each_code_object(const std::function<void(const CodeObjectRecord&)>& f);
  // Provenance of one measurement / of all; nothing for a file older than schema version 3.
  std::optional<ProvenanceRecord> provenance(std::int64_t measurement_id);
  std::vector<ProvenanceRecord> all_provenance();

  // The raw handle, for tools and tests that need a query this class lacks. Do not close it.
  sqlite3* native_handle() const { return db_.get(); }

 private:
  struct Closer {
    void operator()(sqlite3* db) const noexcept;
  };
  Database(std::unique_ptr<sqlite3, Closer> db, std::string path, Mode mode)
      : db_(std::move(db)), path_(std::move(path)), mode_(mode) {}
  void require_writable(const char* what) const;

  std::unique_ptr<sqlite3, Closer> db_;
  std::string path_;
  Mode mode_ = Mode::ReadOnly;
  int version_ = 0;  // the schema version, once opened (migrated where writable)
};

}  // namespace tiletune::db
