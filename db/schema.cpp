#include "db/schema.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "common/error.h"
#include "db/integrity.h"

namespace tiletune::db::schema {
namespace {

#define TT_NOW "(strftime('%Y-%m-%dT%H:%M:%fZ','now'))"

// Version 1: every table. Text columns are NOT NULL (with '' defaults) so that UNIQUE constraints
// see one spelling of "unknown"; ids of 0 from the API are stored as NULL where a column is
// optional. REAL timings are NULL when not measured.
const char* const kV1 = R"sql(
CREATE TABLE meta(
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta(key, value) VALUES ('application_id', 'tiletune');
INSERT INTO meta(key, value) VALUES ('created_at', )sql" TT_NOW R"sql();

CREATE TABLE devices(
  id              INTEGER PRIMARY KEY,
  backend         TEXT NOT NULL,
  arch            TEXT NOT NULL,
  name            TEXT NOT NULL,
  multiprocessors INTEGER NOT NULL DEFAULT 0,
  driver_version  TEXT NOT NULL DEFAULT '',
  UNIQUE(backend, arch, name, multiprocessors, driver_version)
);

CREATE TABLE problems(
  id    INTEGER PRIMARY KEY,
  kind  TEXT NOT NULL DEFAULT 'gemm' CHECK (kind IN ('gemm')),
  key   TEXT NOT NULL UNIQUE,
  spec  TEXT NOT NULL,
  m     INTEGER NOT NULL,
  n     INTEGER NOT NULL,
  k     INTEGER NOT NULL,
  batch INTEGER NOT NULL
);

CREATE TABLE solutions(
  id          INTEGER PRIMARY KEY,
  template    TEXT NOT NULL,
  params      TEXT NOT NULL,
  kernel_name TEXT NOT NULL,
  source_hash TEXT NOT NULL DEFAULT '',
  UNIQUE(kernel_name, source_hash)
);

CREATE TABLE code_objects(
  id               INTEGER PRIMARY KEY,
  cache_key        TEXT NOT NULL UNIQUE,
  solution_id      INTEGER NOT NULL REFERENCES solutions(id),
  arch             TEXT NOT NULL,
  compiler_version TEXT NOT NULL DEFAULT '',
  ok               INTEGER NOT NULL CHECK (ok IN (0, 1)),
  log              TEXT NOT NULL DEFAULT '',
  symbol           TEXT NOT NULL DEFAULT '',
  bytes            BLOB,
  created_at       TEXT NOT NULL DEFAULT )sql" TT_NOW R"sql(
);

CREATE TABLE measurements(
  id             INTEGER PRIMARY KEY,
  problem_id     INTEGER NOT NULL REFERENCES problems(id),
  solution_id    INTEGER NOT NULL REFERENCES solutions(id),
  device_id      INTEGER REFERENCES devices(id),
  arch           TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status IN
                   ('ok', 'compile_failed', 'invalid', 'launch_failed', 'crashed', 'timeout')),
  reason         TEXT NOT NULL DEFAULT '',
  rel_error      REAL,
  min_ms         REAL,
  median_ms      REAL,
  max_ms         REAL,
  tflops         REAL,
  code_object_id INTEGER REFERENCES code_objects(id),
  sweep          TEXT NOT NULL DEFAULT '',
  created_at     TEXT NOT NULL DEFAULT )sql" TT_NOW R"sql(,
  UNIQUE(problem_id, solution_id, arch)
);

CREATE TABLE winners(
  arch           TEXT NOT NULL,
  problem_id     INTEGER NOT NULL REFERENCES problems(id),
  solution_id    INTEGER NOT NULL REFERENCES solutions(id),
  measurement_id INTEGER NOT NULL REFERENCES measurements(id),
  PRIMARY KEY(arch, problem_id)
) WITHOUT ROWID;
)sql";

// Version 2: indexes for the winner recomputation in put_measurement (all measurements of one
// (arch, problem)) and for finding a solution's code objects.
const char* const kV2 = R"sql(
CREATE INDEX measurements_by_arch_problem ON measurements(arch, problem_id, status, median_ms);
CREATE INDEX code_objects_by_solution ON code_objects(solution_id);
)sql";

// Version 3: where each measurement came from. `tiletune db merge` and `db pack` copy
// measurements between files; a provenance row says which database file (absolute path, as given
// when merging) and sweep the measurement was made in, its id there, and the device it ran on (an
// id of this file's devices table). source '' means it was measured directly into this file.
// Every measurement has exactly one row (the tuner's writes add one with source ''); existing
// measurements are back-filled as local ones.
const char* const kV3 = R"sql(
CREATE TABLE provenance(
  measurement_id        INTEGER PRIMARY KEY REFERENCES measurements(id) ON DELETE CASCADE,
  source                TEXT NOT NULL DEFAULT '',
  source_measurement_id INTEGER NOT NULL DEFAULT 0,
  sweep                 TEXT NOT NULL DEFAULT '',
  device_id             INTEGER REFERENCES devices(id),
  recorded_at           TEXT NOT NULL DEFAULT )sql" TT_NOW R"sql(
);
INSERT INTO provenance(measurement_id, source, source_measurement_id, sweep, device_id, recorded_at)
  SELECT id, '', id, sweep, device_id, created_at FROM measurements;
)sql";

// Version 4: convolution problems (problems.kind 'conv'). SQLite cannot alter a CHECK, so the
// table is rebuilt with the same ids; the measurements and winners that reference it are
// satisfied again by the end of the transaction (foreign keys are deferred until then).
const char* const kV4 = R"sql(
PRAGMA defer_foreign_keys = ON;
CREATE TEMP TABLE problems_v3 AS SELECT id, kind, key, spec, m, n, k, batch FROM problems;
DROP TABLE problems;
CREATE TABLE problems(
  id    INTEGER PRIMARY KEY,
  kind  TEXT NOT NULL DEFAULT 'gemm' CHECK (kind IN ('gemm', 'conv')),
  key   TEXT NOT NULL UNIQUE,
  spec  TEXT NOT NULL,
  m     INTEGER NOT NULL,
  n     INTEGER NOT NULL,
  k     INTEGER NOT NULL,
  batch INTEGER NOT NULL
);
INSERT INTO problems(id, kind, key, spec, m, n, k, batch) SELECT id, kind, key, spec, m, n, k, batch FROM problems_v3;
DROP TABLE temp.problems_v3;
)sql";

// Version 5: what each code object is (its bytes' SHA-256, checked before any load) and what it was
// compiled from (the instantiation it was built as, checked against the solution that runs it).
// The rows already there get their hash here (tt_sha256, registered for the migration): the
// database's own writer migrates it, so its bytes are taken as they are.
const char* const kV5 = R"sql(
ALTER TABLE code_objects ADD COLUMN sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE code_objects ADD COLUMN compiled_from TEXT NOT NULL DEFAULT '';
UPDATE code_objects SET sha256 = tt_sha256(bytes) WHERE bytes IS NOT NULL;
)sql";

// Version 6: signatures of code objects (db pack --sign; checked by a runtime given a trusted key).
const char* const kV6 = R"sql(
CREATE TABLE signatures (
  code_object_id INTEGER PRIMARY KEY REFERENCES code_objects(id) ON DELETE CASCADE,
  key_id         TEXT NOT NULL,
  signature      BLOB NOT NULL
);
)sql";

// Version 7: the pool of generic kernels `db pack` ships beside the winners (db/ship.h): per arch
// and class of problems, a kernel that ran near the best over the class, with its measurement on
// the problem it fit best (the runtime calibrates its model estimate by it). Shaped as `winners`;
// one solution may be pooled for several classes, each with its own problem.
const char* const kV7 = R"sql(
CREATE TABLE pool(
  arch           TEXT NOT NULL,
  problem_id     INTEGER NOT NULL REFERENCES problems(id),
  solution_id    INTEGER NOT NULL REFERENCES solutions(id),
  measurement_id INTEGER NOT NULL REFERENCES measurements(id),
  PRIMARY KEY(arch, problem_id, solution_id)
) WITHOUT ROWID;
)sql";

// Version 8: candidates compiled for an arch and never run (`tune --compile-only`, and what
// `db pack` keeps of them): the problem each was selected for, its solution and its code object.
// Not measurements: nothing here has a time, none of them is ever a winner, and the runtime serves
// none of them; `db explain` shows them as unmeasured. Their static figures (registers, LDS) are
// the meta rows 'figures:<cache key>' of their code objects.
const char* const kV8 = R"sql(
CREATE TABLE compiled(
  arch           TEXT NOT NULL,
  problem_id     INTEGER NOT NULL REFERENCES problems(id),
  solution_id    INTEGER NOT NULL REFERENCES solutions(id),
  code_object_id INTEGER NOT NULL REFERENCES code_objects(id),
  PRIMARY KEY(arch, problem_id, solution_id)
) WITHOUT ROWID;
)sql";

#undef TT_NOW

std::string errmsg(sqlite3* db) { return db ? sqlite3_errmsg(db) : "out of memory"; }

bool is_busy(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

int exec_rc(sqlite3* db, const std::string& sql) {
  return sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
}

void exec(sqlite3* db, const std::string& sql, const std::string& path, const std::string& what) {
  int rc = exec_rc(db, sql);
  if (rc != SQLITE_OK)
    throw Error(path + ": " + what + ": " + errmsg(db));
}

std::int64_t query_int(sqlite3* db, const char* sql, const std::string& path) {
  sqlite3_stmt* st = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
  if (rc != SQLITE_OK) throw Error(path + ": " + sql + ": " + errmsg(db));
  rc = sqlite3_step(st);
  std::int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) throw Error(path + ": " + sql + ": " + errmsg(db));
  return v;
}

void rollback(sqlite3* db) {
  if (!sqlite3_get_autocommit(db)) exec_rc(db, "ROLLBACK");
}

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, "initial schema", kV1},
      {2, "indexes for winner updates and code object lookup", kV2},
      {3, "provenance of every measurement (source database, sweep, device)", kV3},
      {4, "convolution problems (problems.kind 'conv')", kV4},
      {5, "code objects' SHA-256 and what they were compiled from", kV5},
      {6, "signatures of code objects", kV6},
      {7, "the pool of generic kernels shipped beside the winners", kV7},
      {8, "candidates compiled for an arch and never run (compile-only sweeps)", kV8},
  };
  return list;
}

int latest_version() { return migrations().back().version; }

void migrate(sqlite3* db, int target_version, const std::string& path) {
  if (target_version < 0 || target_version > latest_version())
    throw Error(path + ": cannot migrate to schema version " + std::to_string(target_version) +
                " (this build knows versions 1.." + std::to_string(latest_version()) + ")");
  // Version 5 hashes the code objects already stored.
  sqlite3_create_function(
      db, "tt_sha256", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
      [](sqlite3_context* ctx, int, sqlite3_value** argv) {
        try {
          const void* p = sqlite3_value_blob(argv[0]);
          const std::string h = sha256_hex(p, std::size_t(sqlite3_value_bytes(argv[0])));
          sqlite3_result_text(ctx, h.c_str(), int(h.size()), SQLITE_TRANSIENT);
        } catch (const std::exception& e) {  // never through SQLite's C frames
          sqlite3_result_error(ctx, e.what(), -1);
        }
      },
      nullptr, nullptr);
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::seconds(120);
  std::minstd_rand rng(std::random_device{}());
  int attempt = 0;
  for (;;) {
    int rc = exec_rc(db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) {
      if (is_busy(rc) && clock::now() < deadline) {
        int ms = std::min(5 << std::min(attempt++, 7), 500);
        std::this_thread::sleep_for(std::chrono::milliseconds(ms / 2 + int(rng() % unsigned(ms))));
        continue;
      }
      throw Error(path + ": cannot lock the database to migrate its schema: " + errmsg(db));
    }
    try {
      int version = int(query_int(db, "PRAGMA user_version", path));
      if (version > target_version) {
        throw Error(path + ": schema version " + std::to_string(version) +
                    " is newer than the version asked for (" + std::to_string(target_version) + ")");
      }
      if (version == target_version) {
        exec(db, "COMMIT", path, "commit");
        return;
      }
      if (version == 0 && query_int(db, "SELECT count(*) FROM sqlite_master", path) != 0)
        throw Error(path + ": not a tiletune database (it has tables but no tiletune schema version)");
      // Every step in one transaction: a reader (a read-only open by another process) sees the
      // version before or the target, never one in between (data-parallel ranks opening the user
      // database that one of them is creating read a version-1 schema under ASan's slowdown).
      for (; version < target_version; ++version) {
        const Migration& m = migrations().at(std::size_t(version));  // produces version + 1
        exec(db, m.sql, path,
             "migration to schema version " + std::to_string(m.version) + " (" + m.description + ")");
        if (m.version == 1)
          exec(db, "PRAGMA application_id = " + std::to_string(kApplicationId), path, "set application_id");
        exec(db, "PRAGMA user_version = " + std::to_string(m.version), path, "set user_version");
      }
      exec(db, "COMMIT", path, "commit of schema version " + std::to_string(target_version));
      return;
    } catch (...) {
      rollback(db);
      throw;
    }
  }
}

}  // namespace tiletune::db::schema
