#include "db/database.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <thread>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "db/integrity.h"
#include "solutions/json_fields.h"
#include "db/schema.h"

namespace tiletune::db {
namespace {

constexpr int kBusyTimeoutMs = 30'000;              // SQLite's own wait for a lock
constexpr auto kWriteDeadline = std::chrono::seconds(120);  // our retries on top of it
// How long a reader waits for the schema of a database that another process has just created.
constexpr auto kSchemaWait = std::chrono::seconds(3);
constexpr auto kJustCreated = std::chrono::seconds(60);  // "just": the file was written this recently

// A lock held by another connection that outlasted the busy timeout (or that SQLite reports
// without waiting, to avoid a deadlock). Write transactions catch it and start over.
class BusyError : public Error {
 public:
  using Error::Error;
};

bool is_busy(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

[[noreturn]] void fail(sqlite3* db, int rc, const std::string& path, const std::string& what) {
  std::string msg = path + ": " + what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_NOTADB: msg += " (not a SQLite database, or an encrypted one)"; break;
    case SQLITE_CORRUPT: msg += " (the database file is corrupt)"; break;
    case SQLITE_READONLY: msg += " (the database or its directory is read-only)"; break;
    default: break;
  }
  if (is_busy(rc)) throw BusyError(msg);
  throw Error(msg);
}

// A prepared statement, finalized on scope exit. Bind indices are 1-based, column indices 0-based.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql, const std::string& path) : db_(db), path_(path), sql_(sql) {
    int rc = sqlite3_prepare_v2(db, sql, -1, &st_, nullptr);
    if (rc != SQLITE_OK) fail(db, rc, path, std::string("preparing \"") + sql + "\"");
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& i64(int i, std::int64_t v) { return check(sqlite3_bind_int64(st_, i, v)); }
  Stmt& id(int i, std::int64_t v) {  // 0 -> NULL
    return v == 0 ? check(sqlite3_bind_null(st_, i)) : i64(i, v);
  }
  Stmt& real(int i, double v) {  // NaN -> NULL
    return std::isnan(v) ? check(sqlite3_bind_null(st_, i)) : check(sqlite3_bind_double(st_, i, v));
  }
  Stmt& text(int i, const std::string& v) {
    return check(sqlite3_bind_text(st_, i, v.data(), int(v.size()), SQLITE_TRANSIENT));
  }
  Stmt& blob(int i, const std::vector<std::uint8_t>& v) {
    if (v.empty()) return check(sqlite3_bind_zeroblob(st_, i, 0));
    return check(sqlite3_bind_blob64(st_, i, v.data(), v.size(), SQLITE_TRANSIENT));
  }

  // True while a row is available; false when done. Throws on error.
  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, rc, path_, std::string("running \"") + first_line() + "\"");
  }
  void run() {
    while (step()) {
    }
  }

  bool null(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  std::int64_t col_i64(int c) const { return sqlite3_column_int64(st_, c); }
  double col_real(int c) const {  // NULL -> NaN
    return null(c) ? kNotMeasured : sqlite3_column_double(st_, c);
  }
  std::string col_text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, c));
    return p ? std::string(p, std::size_t(sqlite3_column_bytes(st_, c))) : std::string();
  }
  std::vector<std::uint8_t> col_blob(int c) const {
    const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(st_, c));
    auto n = std::size_t(sqlite3_column_bytes(st_, c));
    return p ? std::vector<std::uint8_t>(p, p + n) : std::vector<std::uint8_t>();
  }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) fail(db_, rc, path_, std::string("binding a value of \"") + first_line() + "\"");
    return *this;
  }
  std::string first_line() const {
    std::string s = sql_;
    auto start = s.find_first_not_of(" \n");
    s = s.substr(start == std::string::npos ? 0 : start);
    auto nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl) + " ...";
  }

  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  const std::string& path_;
  std::string sql_;
};

void exec(sqlite3* db, const std::string& path, const char* sql) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(db, rc, path, std::string("running \"") + sql + "\"");
}

std::int64_t query_i64(sqlite3* db, const std::string& path, const char* sql) {
  Stmt st(db, sql, path);
  return st.step() ? st.col_i64(0) : 0;
}

void rollback(sqlite3* db) {
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
}

void backoff(int attempt) {
  thread_local std::minstd_rand rng(std::random_device{}());
  int ms = std::min(2 << std::min(attempt, 8), 250);  // 2, 4, 8, ... 250 ms
  std::this_thread::sleep_for(std::chrono::microseconds(std::int64_t(ms) * 500 + rng() % (unsigned(ms) * 1000)));
}

// Runs f() inside BEGIN IMMEDIATE ... COMMIT; starts over (with jittered backoff) while another
// connection holds the lock, for up to kWriteDeadline. Any other error rolls back and propagates.
template <class F>
auto write_txn(sqlite3* db, const std::string& path, const char* what, F&& f) -> std::invoke_result_t<F&> {
  // Inside Database::transaction: join it. A busy error propagates to the outer retry loop.
  if (!sqlite3_get_autocommit(db)) return f();
  const auto deadline = std::chrono::steady_clock::now() + kWriteDeadline;
  for (int attempt = 0;; ++attempt) {
    try {
      exec(db, path, "BEGIN IMMEDIATE");
      if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
        f();
        exec(db, path, "COMMIT");
        return;
      } else {
        auto result = f();
        exec(db, path, "COMMIT");
        return result;
      }
    } catch (const BusyError& e) {
      rollback(db);
      if (std::chrono::steady_clock::now() >= deadline)
        throw Error(std::string(e.what()) + " [" + what + ": gave up after " +
                    std::to_string(kWriteDeadline.count()) + " s of retries; another process keeps the database locked]");
      backoff(attempt);
    } catch (...) {
      rollback(db);
      throw;
    }
  }
}

// Retries a statement outside a transaction (the journal_mode switch) while it reports busy.
void exec_retrying(sqlite3* db, const std::string& path, const char* sql) {
  const auto deadline = std::chrono::steady_clock::now() + kWriteDeadline;
  for (int attempt = 0;; ++attempt) {
    try {
      exec(db, path, sql);
      return;
    } catch (const BusyError&) {
      if (std::chrono::steady_clock::now() >= deadline) throw;
      backoff(attempt);
    }
  }
}

// Checks that the file is a tiletune database this build can use. Returns its schema version;
// 0 means an empty SQLite file (to be created, or being created: see identify). Reads one
// snapshot: another process may be creating the schema at this very moment.
int identify_in_snapshot(sqlite3* db, const std::string& path, Mode mode) {
  const int version = int(query_i64(db, path, "PRAGMA user_version"));  // first read of the file
  const auto app_id = query_i64(db, path, "PRAGMA application_id");
  const auto tables = query_i64(db, path, "SELECT count(*) FROM sqlite_master");
  if (version == 0 && app_id == 0 && tables == 0) return 0;
  if (app_id != schema::kApplicationId)
    throw Error(path + ": not a tiletune database (SQLite application_id is " + std::to_string(app_id) +
                ", tiletune's is " + std::to_string(schema::kApplicationId) + ")");
  std::string meta_app;
  {
    sqlite3_stmt* st = nullptr;  // a missing meta table is a finding, not an error of ours
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'application_id'", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      meta_app = p ? p : "";
    }
    sqlite3_finalize(st);
  }
  if (meta_app != schema::kApplicationName)
    throw Error(path + ": not a tiletune database (no meta row application_id = '" +
                std::string(schema::kApplicationName) + "')");
  const int latest = schema::latest_version();
  if (version > latest)
    throw Error(path + ": schema version " + std::to_string(version) + " is newer than this build of tiletune supports (" +
                std::to_string(latest) + "); use a newer tiletune");
  if (version < 1)
    throw Error(path + ": tiletune database without a schema version (user_version 0)");
  if (version < schema::kOldestReadable && mode == Mode::ReadOnly)
    throw Error(path + ": schema version " + std::to_string(version) + " is older than this build expects (" +
                std::to_string(latest) + "); open it read-write once (e.g. with the tuner) to migrate it");
  return version;
}

int identify_once(sqlite3* db, const std::string& path, Mode mode) {
  exec(db, path, "BEGIN");
  try {
    int version = identify_in_snapshot(db, path, mode);
    exec(db, path, "COMMIT");
    return version;
  } catch (...) {
    rollback(db);
    throw;
  }
}

bool written_lately(const std::string& path) {
  std::error_code ec;
  const auto t = std::filesystem::last_write_time(path, ec);
  return !ec && std::filesystem::file_time_type::clock::now() - t < kJustCreated;
}

// A read-only open refuses an empty SQLite file, except while it may be a database that another
// process has just created: the file exists from the creator's open, its schema only from its
// first commit, and a reader in between (a rank of a data-parallel job opening the user database
// its tuner is creating) would be refused a database that is about to be valid. Such a file,
// written in the last minute, is read again for a few seconds before it is refused.
int identify(sqlite3* db, const std::string& path, Mode mode) {
  const auto deadline = std::chrono::steady_clock::now() + kSchemaWait;
  for (int attempt = 0;; ++attempt) {
    const int version = identify_once(db, path, mode);
    if (version != 0 || mode == Mode::ReadWrite) return version;
    if (std::chrono::steady_clock::now() >= deadline || !written_lately(path))
      throw Error(path + ": not a tiletune database (an empty SQLite file; open it read-write to create the schema)");
    backoff(attempt);
  }
}

Problem parse_problem(const std::string& spec, const std::string& path, std::int64_t id) {
  try {
    Problem p;
    from_json(parse_json(spec, "its spec"), p);
    return p;
  } catch (const std::exception& e) {
    throw Error(path + ": problems row " + std::to_string(id) + ": bad spec: " + e.what());
  }
}

Solution parse_solution(const std::string& tmpl, const std::string& params, const std::string& path, std::int64_t id) {
  try {
    return Solution::from_json(tmpl, params);
  } catch (const std::exception& e) {
    throw Error(path + ": solutions row " + std::to_string(id) + ": bad params: " + e.what());
  }
}

// Schema 3 and 4 databases (readable, not migrated when opened read-only) have no hash: their code
// objects read as unverified and are never loaded.
std::string code_object_columns(int version) {
  return std::string("id, cache_key, solution_id, arch, compiler_version, ok, log, symbol, bytes, ") +
         (version >= 5 ? "sha256, compiled_from" : "'', ''") + " FROM code_objects ";
}

CodeObjectRecord read_code_object(const Stmt& st) {
  CodeObjectRecord r;
  r.id = st.col_i64(0);
  r.cache_key = st.col_text(1);
  r.solution_id = st.col_i64(2);
  r.arch = st.col_text(3);
  r.compiler_version = st.col_text(4);
  r.ok = st.col_i64(5) != 0;
  r.log = st.col_text(6);
  r.symbol = st.col_text(7);
  r.bytes = st.col_blob(8);
  r.sha256 = st.col_text(9);
  r.compiled_from = st.col_text(10);
  return r;
}

constexpr const char* kMeasurementColumns =
    "m.problem_id, m.solution_id, m.device_id, m.arch, m.status, m.reason, m.rel_error, m.min_ms, "
    "m.median_ms, m.max_ms, m.tflops, m.code_object_id, m.sweep";

void read_measurement(const Stmt& st, MeasurementRecord& r) {
  r.problem_id = st.col_i64(0);
  r.solution_id = st.col_i64(1);
  r.device_id = st.col_i64(2);  // NULL -> 0
  r.arch = st.col_text(3);
  {
    const std::string text = st.col_text(4);
    const std::optional<Status> status = status_from_string(text);
    if (!status || !is_recorded(*status)) throw Error("unknown measurement status '" + text + "'");
    r.status = *status;
  }
  r.reason = st.col_text(5);
  r.rel_error = st.col_real(6);
  r.min_ms = st.col_real(7);
  r.median_ms = st.col_real(8);
  r.max_ms = st.col_real(9);
  r.tflops = st.col_real(10);
  r.code_object_id = st.col_i64(11);
  r.sweep = st.col_text(12);
}

}  // namespace

void Database::Closer::operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }

Database Database::open(const std::string& path, Mode mode) {
  namespace fs = std::filesystem;
  if (path.empty()) throw Error("tiletune database: empty path");
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (mode != Mode::ReadWrite && !exists) throw Error(path + ": database file does not exist");
  if (exists && fs::is_directory(path, ec)) throw Error(path + ": is a directory, not a database file");

  const int flags = mode != Mode::ReadWrite ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<sqlite3, Closer> handle(raw);
  if (rc != SQLITE_OK) fail(raw, rc, path, mode != Mode::ReadWrite ? "cannot open database read-only" : "cannot open or create database");
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);

  Database db(std::move(handle), path, mode);
  // Identify before changing anything, so that a foreign file is never touched.
  const int version = identify(raw, path, mode);
  if (mode == Mode::ReadWrite) {
    exec_retrying(raw, path, "PRAGMA journal_mode = WAL");
    {
      Stmt jm(raw, "PRAGMA journal_mode", path);
      if (!jm.step() || jm.col_text(0) != "wal")
        throw Error(path + ": cannot switch the database to WAL mode (journal_mode is '" + jm.col_text(0) +
                    "'); is it on a network file system?");
    }
    exec(raw, path, "PRAGMA synchronous = NORMAL");
    exec(raw, path, "PRAGMA foreign_keys = ON");
    if (version < schema::latest_version()) schema::migrate(raw, schema::latest_version(), path);
  }
  db.version_ = mode == Mode::ReadWrite ? schema::latest_version() : version;
  return db;
}

int Database::schema_version() const { return int(query_i64(db_.get(), path_, "PRAGMA user_version")); }

std::string Database::integrity_check() {
  Stmt st(db_.get(), "PRAGMA integrity_check", path_);
  std::string out;
  while (st.step()) {
    if (!out.empty()) out += '\n';
    out += st.col_text(0);
  }
  return out;
}

void Database::require_writable(const char* what) const {
  if (mode_ != Mode::ReadWrite) throw Error(path_ + ": " + what + ": the database was opened read-only");
}

std::int64_t Database::upsert_device(const DeviceRecord& d) {
  require_writable("upsert_device");
  return write_txn(db_.get(), path_, "upsert_device", [&] {
    Stmt ins(db_.get(),
             "INSERT INTO devices(backend, arch, name, multiprocessors, driver_version) VALUES (?1, ?2, ?3, ?4, ?5) "
             "ON CONFLICT DO NOTHING",
             path_);
    ins.text(1, d.backend).text(2, d.arch).text(3, d.name).i64(4, d.multiprocessors).text(5, d.driver_version).run();
    Stmt sel(db_.get(),
             "SELECT id FROM devices WHERE backend = ?1 AND arch = ?2 AND name = ?3 AND multiprocessors = ?4 "
             "AND driver_version = ?5",
             path_);
    sel.text(1, d.backend).text(2, d.arch).text(3, d.name).i64(4, d.multiprocessors).text(5, d.driver_version);
    if (!sel.step()) throw Error(path_ + ": upsert_device: row vanished after insert");
    return sel.col_i64(0);
  });
}

std::int64_t Database::upsert_problem(const Problem& p) {
  require_writable("upsert_problem");
  const std::string key = p.key();
  nlohmann::json spec;
  to_json(spec, p);
  const std::string spec_text = spec.dump();
  return write_txn(db_.get(), path_, "upsert_problem", [&] {
    Stmt ins(db_.get(),
             "INSERT INTO problems(kind, key, spec, m, n, k, batch) VALUES (?7, ?1, ?2, ?3, ?4, ?5, ?6) "
             "ON CONFLICT(key) DO NOTHING",
             path_);
    // m, n, k, batch: a convolution's implicit GEMM, so that size queries work across kinds.
    const GemmProblem g = p.gemm_view();
    ins.text(1, key).text(2, spec_text).i64(3, g.m).i64(4, g.n).i64(5, g.k).i64(6, g.batch).text(7, to_string(p.kind())).run();
    Stmt sel(db_.get(), "SELECT id FROM problems WHERE key = ?1", path_);
    sel.text(1, key);
    if (!sel.step()) throw Error(path_ + ": upsert_problem: row vanished after insert");
    return sel.col_i64(0);
  });
}

std::int64_t Database::upsert_solution(const Solution& s, const std::string& source_hash) {
  require_writable("upsert_solution");
  const std::string name = s.kernel_name();
  const std::string params = s.params_json();
  return write_txn(db_.get(), path_, "upsert_solution", [&] {
    Stmt ins(db_.get(),
             "INSERT INTO solutions(template, params, kernel_name, source_hash) VALUES (?1, ?2, ?3, ?4) "
             "ON CONFLICT(kernel_name, source_hash) DO NOTHING",
             path_);
    ins.text(1, s.template_name).text(2, params).text(3, name).text(4, source_hash).run();
    Stmt sel(db_.get(), "SELECT id FROM solutions WHERE kernel_name = ?1 AND source_hash = ?2", path_);
    sel.text(1, name).text(2, source_hash);
    if (!sel.step()) throw Error(path_ + ": upsert_solution: row vanished after insert");
    return sel.col_i64(0);
  });
}

std::int64_t Database::put_code_object(const CodeObjectRecord& r) {
  require_writable("put_code_object");
  if (r.cache_key.empty()) throw Error(path_ + ": put_code_object: empty cache_key");
  return write_txn(db_.get(), path_, "put_code_object", [&] {
    // A copy (pack, merge) carries the hash its source recorded: bytes that no longer match it are
    // refused rather than blessed with a fresh hash.
    const std::string hash = sha256_hex(r.bytes);
    if (!r.sha256.empty() && r.sha256 != hash)
      throw Error(path_ + ": put_code_object " + r.cache_key + ": " + r.integrity_problem());
    Stmt ins(db_.get(),
             "INSERT INTO code_objects(cache_key, solution_id, arch, compiler_version, ok, log, symbol, bytes, sha256, "
             "compiled_from) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT(cache_key) DO NOTHING",
             path_);
    ins.text(1, r.cache_key).i64(2, r.solution_id).text(3, r.arch).text(4, r.compiler_version);
    ins.i64(5, r.ok ? 1 : 0).text(6, r.log).text(7, r.symbol).blob(8, r.bytes).text(9, hash).text(10, r.compiled_from);
    ins.run();
    Stmt sel(db_.get(), "SELECT id FROM code_objects WHERE cache_key = ?1", path_);
    sel.text(1, r.cache_key);
    if (!sel.step()) throw Error(path_ + ": put_code_object: row vanished after insert");
    return sel.col_i64(0);
  });
}

std::size_t Database::forget_failed_code_objects(const std::vector<std::string>& cache_keys) {
  require_writable("forget_failed_code_objects");
  if (cache_keys.empty()) return 0;
  return write_txn(db_.get(), path_, "forget_failed_code_objects", [&] {
    std::size_t n = 0;
    for (const auto& key : cache_keys) {
      Stmt del(db_.get(),
               "DELETE FROM code_objects WHERE cache_key = ?1 AND ok = 0 "
               "AND NOT EXISTS (SELECT 1 FROM measurements WHERE code_object_id = code_objects.id)",
               path_);
      del.text(1, key).run();
      n += std::size_t(sqlite3_changes(db_.get()));
    }
    return n;
  });
}

namespace {

void check_measurement(const std::string& path, const char* what, const MeasurementRecord& m) {
  if (!is_recorded(m.status))
    throw Error(path + ": " + what + ": status '" + to_string(m.status) +
                "' is not recorded (ok, compile_failed, invalid, launch_failed, crashed, timeout)");
  if (m.arch.empty()) throw Error(path + ": " + what + ": empty arch");
  if (m.status == Status::Ok && !(std::isfinite(m.median_ms) && m.median_ms >= 0))
    throw Error(path + ": " + what + ": an 'ok' measurement needs a finite median_ms");
}

// Inside a write transaction: inserts or replaces the measurement of (problem, solution, arch)
// (created_at '' = now), its provenance (source '' = measured here; then it names this row and
// the measurement's sweep and device), and recomputes that (arch, problem)'s winner.
void store_measurement(sqlite3* db, const std::string& path, const MeasurementRecord& m,
                       const std::string& created_at, const ProvenanceRecord& prov) {
  Stmt ins(db,
           "INSERT INTO measurements(problem_id, solution_id, device_id, arch, status, reason, rel_error, "
           "min_ms, median_ms, max_ms, tflops, code_object_id, sweep, created_at) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
           "CASE WHEN ?14 = '' THEN strftime('%Y-%m-%dT%H:%M:%fZ','now') ELSE ?14 END) "
           "ON CONFLICT(problem_id, solution_id, arch) DO UPDATE SET "
           "device_id = excluded.device_id, status = excluded.status, reason = excluded.reason, "
           "rel_error = excluded.rel_error, min_ms = excluded.min_ms, median_ms = excluded.median_ms, "
           "max_ms = excluded.max_ms, tflops = excluded.tflops, code_object_id = excluded.code_object_id, "
           "sweep = excluded.sweep, created_at = excluded.created_at",
           path);
  ins.i64(1, m.problem_id).i64(2, m.solution_id).id(3, m.device_id).text(4, m.arch).text(5, to_string(m.status));
  ins.text(6, m.reason).real(7, m.rel_error).real(8, m.min_ms).real(9, m.median_ms).real(10, m.max_ms);
  ins.real(11, m.tflops).id(12, m.code_object_id).text(13, m.sweep).text(14, created_at).run();

  Stmt sel(db, "SELECT id, created_at FROM measurements WHERE problem_id = ?1 AND solution_id = ?2 AND arch = ?3",
           path);
  sel.i64(1, m.problem_id).i64(2, m.solution_id).text(3, m.arch);
  if (!sel.step()) throw Error(path + ": storing a measurement: row vanished after insert");
  const std::int64_t id = sel.col_i64(0);
  const std::string stored_at = sel.col_text(1);
  const bool local = prov.source.empty();
  Stmt pr(db,
          "INSERT INTO provenance(measurement_id, source, source_measurement_id, sweep, device_id, recorded_at) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(measurement_id) DO UPDATE SET source = excluded.source, "
          "source_measurement_id = excluded.source_measurement_id, sweep = excluded.sweep, "
          "device_id = excluded.device_id, recorded_at = excluded.recorded_at",
          path);
  pr.i64(1, id).text(2, prov.source).i64(3, local ? id : prov.source_measurement_id);
  pr.text(4, local ? m.sweep : prov.sweep).id(5, local ? m.device_id : prov.device_id);
  pr.text(6, local || prov.recorded_at.empty() ? stored_at : prov.recorded_at).run();

  // Recompute the winner of (arch, problem) from all its measurements: a re-measurement may
  // have made the current winner slower or failed.
  Stmt del(db, "DELETE FROM winners WHERE arch = ?1 AND problem_id = ?2", path);
  del.text(1, m.arch).i64(2, m.problem_id).run();
  Stmt win(db,
           "INSERT INTO winners(arch, problem_id, solution_id, measurement_id) "
           "SELECT arch, problem_id, solution_id, id FROM measurements "
           "WHERE arch = ?1 AND problem_id = ?2 AND status = 'ok' AND median_ms IS NOT NULL "
           "ORDER BY median_ms, id LIMIT 1",
           path);
  win.text(1, m.arch).i64(2, m.problem_id).run();
}

}  // namespace

void Database::put_measurement(const MeasurementRecord& m) {
  require_writable("put_measurement");
  check_measurement(path_, "put_measurement", m);
  write_txn(db_.get(), path_, "put_measurement", [&] { store_measurement(db_.get(), path_, m, "", ProvenanceRecord{}); });
}

bool Database::better(const MeasurementRecord& a, const MeasurementRecord& b) {
  const bool a_ok = a.status == Status::Ok && !std::isnan(a.median_ms);
  const bool b_ok = b.status == Status::Ok && !std::isnan(b.median_ms);
  if (a_ok != b_ok) return a_ok;
  if (!a_ok) return false;
  auto final = [](const MeasurementRecord& m) { return is_finalist_reason(m.reason); };
  if (final(a) != final(b)) return final(a);
  return a.median_ms < b.median_ms;
}

bool Database::put_measurement_if_better(const MeasurementRecord& m, const std::string& created_at,
                                         const ProvenanceRecord& provenance) {
  require_writable("put_measurement_if_better");
  check_measurement(path_, "put_measurement_if_better", m);
  return write_txn(db_.get(), path_, "put_measurement_if_better", [&] {
    if (auto old = find_measurement(m.problem_id, m.solution_id, m.arch); old && !better(m, *old)) return false;
    store_measurement(db_.get(), path_, m, created_at, provenance);
    return true;
  });
}

void Database::set_meta(const std::string& key, const std::string& value) {
  require_writable("set_meta");
  write_txn(db_.get(), path_, "set_meta", [&] {
    Stmt st(db_.get(), "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            path_);
    st.text(1, key).text(2, value).run();
  });
}

void Database::transaction(const char* what, const std::function<void()>& f) {
  require_writable(what);
  if (!sqlite3_get_autocommit(db_.get())) throw Error(path_ + ": " + what + ": a transaction is already open");
  write_txn(db_.get(), path_, what, f);
}

void Database::compact_for_shipping() {
  require_writable("compact_for_shipping");
  exec_retrying(db_.get(), path_, "PRAGMA wal_checkpoint(TRUNCATE)");
  exec_retrying(db_.get(), path_, "PRAGMA journal_mode = DELETE");
  exec_retrying(db_.get(), path_, "VACUUM");
}

std::optional<CodeObjectRecord> Database::find_code_object(const std::string& cache_key) {
  Stmt st(db_.get(), ("SELECT " + code_object_columns(version_) + "WHERE cache_key = ?1").c_str(), path_);
  st.text(1, cache_key);
  if (!st.step()) return std::nullopt;
  return read_code_object(st);
}

std::optional<CodeObjectRecord> Database::code_object(std::int64_t id) {
  Stmt st(db_.get(), ("SELECT " + code_object_columns(version_) + "WHERE id = ?1").c_str(), path_);
  st.i64(1, id);
  if (!st.step()) return std::nullopt;
  return read_code_object(st);
}

std::optional<SignatureRecord> Database::signature(std::int64_t code_object_id) {
  if (version_ < 6) return std::nullopt;
  Stmt st(db_.get(), "SELECT key_id, signature FROM signatures WHERE code_object_id = ?1", path_);
  st.i64(1, code_object_id);
  if (!st.step()) return std::nullopt;
  return SignatureRecord{code_object_id, st.col_text(0), st.col_blob(1)};
}

void Database::put_signature(const SignatureRecord& s) {
  require_writable("put_signature");
  write_txn(db_.get(), path_, "put_signature", [&] {
    Stmt ins(db_.get(),
             "INSERT INTO signatures(code_object_id, key_id, signature) VALUES (?1, ?2, ?3) "
             "ON CONFLICT(code_object_id) DO UPDATE SET key_id = excluded.key_id, signature = excluded.signature",
             path_);
    ins.i64(1, s.code_object_id).text(2, s.key_id).blob(3, s.signature);
    ins.run();
    return 0;
  });
}

std::string CodeObjectRecord::integrity_problem() const {
  if (!ok) return "";  // a recorded failure holds no code
  if (sha256.empty()) return "no SHA-256 recorded for its bytes (a database from before schema 5, opened read-only)";
  const std::string actual = sha256_hex(bytes);
  if (actual != sha256) return "its bytes' SHA-256 is " + actual + ", the database recorded " + sha256;
  return "";
}

std::optional<MeasurementRecord> Database::find_measurement(std::int64_t problem_id, std::int64_t solution_id,
                                                            const std::string& arch) {
  const std::string sql = std::string("SELECT ") + kMeasurementColumns +
                          " FROM measurements m WHERE m.problem_id = ?1 AND m.solution_id = ?2 AND m.arch = ?3";
  Stmt st(db_.get(), sql.c_str(), path_);
  st.i64(1, problem_id).i64(2, solution_id).text(3, arch);
  if (!st.step()) return std::nullopt;
  MeasurementRecord r;
  read_measurement(st, r);
  return r;
}

namespace {

// `table`: winners, or pool (the same columns).
std::string winner_query(const char* table = "winners") {
  const std::string q =
      "SELECT w.arch, w.problem_id, p.key, p.spec, s.template, s.params, s.id, s.source_hash, "
      "m.code_object_id, m.median_ms, m.tflops, w.measurement_id, "
      "(SELECT min(v.median_ms) FROM measurements v JOIN solutions vs ON vs.id = v.solution_id "
      " WHERE v.arch = w.arch AND v.problem_id = w.problem_id AND v.status = 'ok' AND vs.template = '" +
      std::string(kVendorTemplate) +
      "'), "
      "(SELECT vs.params FROM measurements v JOIN solutions vs ON vs.id = v.solution_id "
      " WHERE v.arch = w.arch AND v.problem_id = w.problem_id AND v.status = 'ok' AND vs.template = '" +
      std::string(kVendorTemplate) +
      "' ORDER BY v.median_ms LIMIT 1), "
      "(SELECT min(v.median_ms) FROM measurements v JOIN solutions vs ON vs.id = v.solution_id "
      " WHERE v.arch = w.arch AND v.problem_id = w.problem_id AND v.status = 'ok' AND vs.template = '" +
      std::string(kVendorTemplate) +
      "' AND vs.params IN ('{}', 'null', '')), "
      "(SELECT vs.source_hash FROM measurements v JOIN solutions vs ON vs.id = v.solution_id "
      " WHERE v.arch = w.arch AND v.problem_id = w.problem_id AND v.status = 'ok' AND vs.template = '" +
      std::string(kVendorTemplate) +
      "' ORDER BY v.median_ms LIMIT 1) "
      "FROM " + std::string(table) + " w JOIN problems p ON p.id = w.problem_id JOIN solutions s ON s.id = w.solution_id "
      "JOIN measurements m ON m.id = w.measurement_id ";
  return q;
}

WinnerRecord read_winner(const Stmt& st, const std::string& path) {
  WinnerRecord w;
  w.arch = st.col_text(0);
  w.problem_id = st.col_i64(1);
  w.problem_key = st.col_text(2);
  w.problem = parse_problem(st.col_text(3), path, w.problem_id);
  w.solution_id = st.col_i64(6);
  w.solution = parse_solution(st.col_text(4), st.col_text(5), path, w.solution_id);
  w.source_hash = st.col_text(7);
  w.code_object_id = st.col_i64(8);
  w.median_ms = st.col_real(9);
  w.tflops = st.col_real(10);
  w.measurement_id = st.col_i64(11);
  w.vendor_ms = st.col_real(12);
  if (!std::isnan(w.vendor_ms))  // measured: its fastest algorithm
    w.vendor_choice = parse_solution(kVendorTemplate, st.col_text(13), path, w.solution_id).params;
  w.vendor_default_ms = st.col_real(14);
  w.vendor_choice_source = st.col_text(15);
  return w;
}

}  // namespace

std::vector<WinnerRecord> Database::winners(const std::string& arch) {
  Stmt st(db_.get(), (winner_query() + "WHERE ?1 = '' OR w.arch = ?1 ORDER BY w.arch, p.key").c_str(), path_);
  st.text(1, arch);
  std::vector<WinnerRecord> out;
  while (st.step()) out.push_back(read_winner(st, path_));
  return out;
}

std::vector<WinnerRecord> Database::pool_kernels(const std::string& arch) {
  if (version_ < 7) return {};
  Stmt st(db_.get(), (winner_query("pool") + "WHERE w.arch = ?1 ORDER BY s.kernel_name").c_str(), path_);
  st.text(1, arch);
  std::vector<WinnerRecord> out;
  while (st.step()) out.push_back(read_winner(st, path_));
  return out;
}

void Database::add_pool_kernel(std::int64_t problem_id, std::int64_t solution_id, const std::string& arch) {
  require_writable("add a pool kernel");
  write_txn(db_.get(), path_, "add a pool kernel", [&] {
    Stmt st(db_.get(),
            "INSERT OR REPLACE INTO pool(arch, problem_id, solution_id, measurement_id) SELECT arch, problem_id, "
            "solution_id, id FROM measurements WHERE problem_id = ?1 AND solution_id = ?2 AND arch = ?3 AND status = 'ok'",
            path_);
    st.i64(1, problem_id).i64(2, solution_id).text(3, arch).run();
    if (sqlite3_changes(db_.get()) != 1)
      throw Error(path_ + ": no 'ok' measurement of solution " + std::to_string(solution_id) + " on problem " +
                  std::to_string(problem_id) + " for " + arch + " to pool");
  });
}

void Database::add_compiled(const std::string& arch, std::int64_t problem_id, std::int64_t solution_id,
                            std::int64_t code_object_id) {
  require_writable("add a compiled candidate");
  write_txn(db_.get(), path_, "add a compiled candidate", [&] {
    Stmt st(db_.get(),
            "INSERT OR REPLACE INTO compiled(arch, problem_id, solution_id, code_object_id) VALUES (?1, ?2, ?3, ?4)",
            path_);
    st.text(1, arch).i64(2, problem_id).i64(3, solution_id).i64(4, code_object_id).run();
    return 0;
  });
}

std::vector<CompiledRecord> Database::compiled(const std::string& arch) {
  if (version_ < 8) return {};
  Stmt st(db_.get(),
          (std::string("SELECT c.arch, c.problem_id, p.key, p.spec, s.id, s.template, s.params, s.source_hash, "
                       "c.code_object_id, o.cache_key, o.compiler_version, length(o.bytes), "
                       "(SELECT value FROM meta WHERE key = '") +
           kFiguresMetaPrefix +
           "' || o.cache_key) "
           "FROM compiled c JOIN problems p ON p.id = c.problem_id JOIN solutions s ON s.id = c.solution_id "
           "JOIN code_objects o ON o.id = c.code_object_id "
           "WHERE ?1 = '' OR c.arch = ?1 ORDER BY c.arch, p.key, s.kernel_name")
              .c_str(),
          path_);
  st.text(1, arch);
  std::vector<CompiledRecord> out;
  while (st.step()) {
    CompiledRecord r;
    r.arch = st.col_text(0);
    r.problem_id = st.col_i64(1);
    r.problem_key = st.col_text(2);
    r.problem = parse_problem(st.col_text(3), path_, r.problem_id);
    r.solution_id = st.col_i64(4);
    r.solution = parse_solution(st.col_text(5), st.col_text(6), path_, r.solution_id);
    r.source_hash = st.col_text(7);
    r.code_object_id = st.col_i64(8);
    r.cache_key = st.col_text(9);
    r.compiler_version = st.col_text(10);
    r.code_bytes = st.col_i64(11);
    r.figures = st.col_text(12);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> Database::compiled_arches() {
  if (version_ < 8) return {};
  Stmt st(db_.get(), "SELECT DISTINCT arch FROM compiled ORDER BY arch", path_);
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.col_text(0));
  return out;
}

std::optional<WinnerRecord> Database::find_winner(const std::string& arch, const std::string& problem_key) {
  Stmt st(db_.get(), (winner_query() + "WHERE w.arch = ?1 AND p.key = ?2").c_str(), path_);
  st.text(1, arch).text(2, problem_key);
  if (!st.step()) return std::nullopt;
  return read_winner(st, path_);
}

std::vector<std::string> Database::arches() {
  Stmt st(db_.get(), "SELECT DISTINCT arch FROM measurements ORDER BY arch", path_);
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.col_text(0));
  return out;
}

std::vector<ProblemRow> Database::problems() {
  Stmt st(db_.get(),
          "SELECT p.id, p.key, p.m, p.n, p.k, p.batch, "
          "(SELECT count(*) FROM measurements m WHERE m.problem_id = p.id) "
          "FROM problems p ORDER BY p.key",
          path_);
  std::vector<ProblemRow> out;
  while (st.step()) {
    ProblemRow r;
    r.id = st.col_i64(0);
    r.key = st.col_text(1);
    r.m = st.col_i64(2);
    r.n = st.col_i64(3);
    r.k = st.col_i64(4);
    r.batch = st.col_i64(5);
    r.measurements = st.col_i64(6);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<MeasurementRow> Database::measurements(std::int64_t problem_id) {
  const std::string sql = std::string("SELECT ") + kMeasurementColumns +
                          ", m.id, s.kernel_name, m.created_at "
                          "FROM measurements m JOIN solutions s ON s.id = m.solution_id WHERE m.problem_id = ?1 "
                          "ORDER BY (m.status <> 'ok'), (m.median_ms IS NULL), m.median_ms, m.status, "
                          "s.kernel_name, m.arch";
  Stmt st(db_.get(), sql.c_str(), path_);
  st.i64(1, problem_id);
  std::vector<MeasurementRow> out;
  while (st.step()) {
    MeasurementRow r;
    read_measurement(st, r);
    r.id = st.col_i64(13);
    r.kernel_name = st.col_text(14);
    r.created_at = st.col_text(15);
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<std::int64_t> Database::find_problem(const std::string& key) {
  Stmt st(db_.get(), "SELECT id FROM problems WHERE key = ?1", path_);
  st.text(1, key);
  if (!st.step()) return std::nullopt;
  return st.col_i64(0);
}

std::optional<std::string> Database::meta(const std::string& key) {
  Stmt st(db_.get(), "SELECT value FROM meta WHERE key = ?1", path_);
  st.text(1, key);
  if (!st.step()) return std::nullopt;
  return st.col_text(0);
}

std::vector<DeviceRow> Database::devices() {
  Stmt st(db_.get(), "SELECT id, backend, arch, name, multiprocessors, driver_version FROM devices ORDER BY id", path_);
  std::vector<DeviceRow> out;
  while (st.step()) {
    DeviceRow d;
    d.id = st.col_i64(0);
    d.backend = st.col_text(1);
    d.arch = st.col_text(2);
    d.name = st.col_text(3);
    d.multiprocessors = st.col_i64(4);
    d.driver_version = st.col_text(5);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<ProblemSpecRow> Database::problem_specs() {
  Stmt st(db_.get(), "SELECT id, key, spec FROM problems ORDER BY id", path_);
  std::vector<ProblemSpecRow> out;
  while (st.step()) {
    ProblemSpecRow r;
    r.id = st.col_i64(0);
    r.key = st.col_text(1);
    r.problem = parse_problem(st.col_text(2), path_, r.id);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<SolutionRow> Database::solutions() {
  Stmt st(db_.get(), "SELECT id, template, params, source_hash FROM solutions ORDER BY id", path_);
  std::vector<SolutionRow> out;
  while (st.step()) {
    SolutionRow r;
    r.id = st.col_i64(0);
    r.solution = parse_solution(st.col_text(1), st.col_text(2), path_, r.id);
    r.source_hash = st.col_text(3);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<MeasurementRow> Database::all_measurements() {
  const std::string sql = std::string("SELECT ") + kMeasurementColumns +
                          ", m.id, s.kernel_name, m.created_at "
                          "FROM measurements m JOIN solutions s ON s.id = m.solution_id ORDER BY m.id";
  Stmt st(db_.get(), sql.c_str(), path_);
  std::vector<MeasurementRow> out;
  while (st.step()) {
    MeasurementRow r;
    read_measurement(st, r);
    r.id = st.col_i64(13);
    r.kernel_name = st.col_text(14);
    r.created_at = st.col_text(15);
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<MeasurementRow> Database::measurement(std::int64_t id) {
  const std::string sql = std::string("SELECT ") + kMeasurementColumns +
                          ", m.id, s.kernel_name, m.created_at "
                          "FROM measurements m JOIN solutions s ON s.id = m.solution_id WHERE m.id = ?1";
  Stmt st(db_.get(), sql.c_str(), path_);
  st.i64(1, id);
  if (!st.step()) return std::nullopt;
  MeasurementRow r;
  read_measurement(st, r);
  r.id = st.col_i64(13);
  r.kernel_name = st.col_text(14);
  r.created_at = st.col_text(15);
  return r;
}

void Database::for_each_code_object(const std::function<void(const CodeObjectRecord&)>& f) {
  Stmt st(db_.get(), ("SELECT " + code_object_columns(version_) + "ORDER BY id").c_str(), path_);
  while (st.step()) f(read_code_object(st));
}

namespace {

constexpr const char* kProvenanceColumns =
    "SELECT measurement_id, source, source_measurement_id, sweep, device_id, recorded_at FROM provenance ";

ProvenanceRecord read_provenance(const Stmt& st) {
  ProvenanceRecord r;
  r.measurement_id = st.col_i64(0);
  r.source = st.col_text(1);
  r.source_measurement_id = st.col_i64(2);
  r.sweep = st.col_text(3);
  r.device_id = st.col_i64(4);
  r.recorded_at = st.col_text(5);
  return r;
}

}  // namespace

std::optional<ProvenanceRecord> Database::provenance(std::int64_t measurement_id) {
  if (schema_version() < 3) return std::nullopt;
  Stmt st(db_.get(), (std::string(kProvenanceColumns) + "WHERE measurement_id = ?1").c_str(), path_);
  st.i64(1, measurement_id);
  if (!st.step()) return std::nullopt;
  return read_provenance(st);
}

std::vector<ProvenanceRecord> Database::all_provenance() {
  std::vector<ProvenanceRecord> out;
  if (schema_version() < 3) return out;
  Stmt st(db_.get(), (std::string(kProvenanceColumns) + "ORDER BY measurement_id").c_str(), path_);
  while (st.step()) out.push_back(read_provenance(st));
  return out;
}

}  // namespace tiletune::db
