// Tests of the tuning database: round trip, read-only refusals, migrations, concurrent writers.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "db/database.h"
#include "db/schema.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::db;

namespace {

class DatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tiletune_db_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

GemmProblem problem(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

Solution solution(std::int64_t tile, std::int64_t vw) {
  Solution s;
  s.template_name = "simt_gemm";
  s.params = {{"MT0", tile}, {"MT1", tile}, {"VW", vw}};
  return s;
}

MeasurementRecord ok_measurement(std::int64_t pid, std::int64_t sid, std::int64_t dev, const std::string& arch,
                                 double median) {
  MeasurementRecord m;
  m.problem_id = pid;
  m.solution_id = sid;
  m.device_id = dev;
  m.arch = arch;
  m.status = db::Status::Ok;
  m.rel_error = 1e-6;
  m.min_ms = median * 0.9;
  m.median_ms = median;
  m.max_ms = median * 1.2;
  m.tflops = 1.0 / median;
  m.sweep = "unit";
  return m;
}

MeasurementRecord failed_measurement(std::int64_t pid, std::int64_t sid, const std::string& arch,
                                     db::Status status, const std::string& reason) {
  MeasurementRecord m;
  m.problem_id = pid;
  m.solution_id = sid;
  m.arch = arch;
  m.status = status;
  m.reason = reason;
  return m;
}

// Runs SQL on a raw connection (for building odd files and checking what the class hides).
void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

std::int64_t raw_int(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::int64_t v = -1;
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Expects Database::open to throw tiletune::Error whose message contains every one of `parts`.
void expect_open_error(const std::string& path, Mode mode, const std::vector<std::string>& parts) {
  try {
    Database::open(path, mode);
    ADD_FAILURE() << "open(" << path << ") succeeded; expected an error";
  } catch (const Error& e) {
    std::string what = e.what();
    for (const auto& p : parts) EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
  }
}

std::int64_t winner_solution(Database& db, const std::string& arch, std::int64_t pid) {
  for (const auto& w : db.winners(arch))
    if (w.problem_id == pid) return w.solution_id;
  return 0;
}

}  // namespace

TEST_F(DatabaseTest, RoundTripAndWinners) {
  const std::string path = file("tune.db");
  const std::string arch = "x86_64-avx2";
  const GemmProblem p = problem(256, 128, 64);
  const std::vector<std::uint8_t> bytes = {0x7f, 'E', 'L', 'F', 0, 1, 2, 255};
  std::int64_t dev = 0, pid = 0, s1 = 0, s2 = 0, s3 = 0, co_ok = 0, co_bad = 0;
  {
    auto db = Database::open(path, Mode::ReadWrite);
    EXPECT_EQ(db.schema_version(), schema::latest_version());
    EXPECT_EQ(db.integrity_check(), "ok");

    DeviceRecord d{"host", arch, "host x86_64", 2, "1.0"};
    dev = db.upsert_device(d);
    EXPECT_GT(dev, 0);
    EXPECT_EQ(db.upsert_device(d), dev);
    d.driver_version = "2.0";
    EXPECT_NE(db.upsert_device(d), dev);

    pid = db.upsert_problem(p);
    EXPECT_EQ(db.upsert_problem(p), pid);
    EXPECT_EQ(db.find_problem(p.key()), pid);
    EXPECT_FALSE(db.find_problem("gemm|no-such-key").has_value());
    EXPECT_NE(db.upsert_problem(problem(512, 128, 64)), pid);

    s1 = db.upsert_solution(solution(64, 4), "hashA");
    s2 = db.upsert_solution(solution(128, 4), "hashA");
    s3 = db.upsert_solution(solution(128, 8), "hashA");
    EXPECT_EQ(db.upsert_solution(solution(64, 4), "hashA"), s1);
    EXPECT_NE(db.upsert_solution(solution(64, 4), "hashB"), s1);  // new template source: new row

    CodeObjectRecord good{0, "key-good", s1, arch, "gcc 12", true, "", "simt_gemm_kernel", bytes};
    co_ok = db.put_code_object(good);
    CodeObjectRecord bad{0, "key-bad", s3, arch, "gcc 12", false, "error: too many registers", "", {}};
    co_bad = db.put_code_object(bad);
    EXPECT_NE(co_ok, co_bad);
    CodeObjectRecord again = good;  // same cache key: kept as first stored
    again.bytes = {1, 2, 3};
    EXPECT_EQ(db.put_code_object(again), co_ok);
    EXPECT_EQ(db.code_object(co_ok)->bytes, bytes);

    // Winner follows the fastest 'ok' measurement; failures never win.
    db.put_measurement(ok_measurement(pid, s1, dev, arch, 2.0));
    EXPECT_EQ(winner_solution(db, arch, pid), s1);
    auto m2 = ok_measurement(pid, s2, dev, arch, 1.0);
    m2.code_object_id = co_ok;
    db.put_measurement(m2);
    EXPECT_EQ(winner_solution(db, arch, pid), s2);
    auto m3 = failed_measurement(pid, s3, arch, db::Status::CompileFailed, "error: too many registers");
    m3.code_object_id = co_bad;
    db.put_measurement(m3);
    EXPECT_EQ(winner_solution(db, arch, pid), s2);
    auto invalid = failed_measurement(pid, s3, arch, db::Status::Invalid, "max rel error 0.5");
    invalid.median_ms = 0.01;  // fast but wrong
    invalid.rel_error = 0.5;
    db.put_measurement(invalid);
    EXPECT_EQ(winner_solution(db, arch, pid), s2);
    // Re-measuring the winner as a failure hands the win back to the next best.
    db.put_measurement(failed_measurement(pid, s2, arch, db::Status::Crashed, "signal 11"));
    EXPECT_EQ(winner_solution(db, arch, pid), s1);
    db.put_measurement(m2);
    EXPECT_EQ(winner_solution(db, arch, pid), s2);
    // A slower ok measurement never takes over.
    db.put_measurement(ok_measurement(pid, s3, dev, arch, 5.0));
    EXPECT_EQ(winner_solution(db, arch, pid), s2);
    // Only failures on an arch: no winner there.
    db.put_measurement(failed_measurement(pid, s1, "gfx90a", db::Status::Timeout, "watchdog"));
    EXPECT_EQ(winner_solution(db, "gfx90a", pid), 0);
    db.put_measurement(ok_measurement(pid, s1, 0, "gfx90a", 3.0));
    EXPECT_EQ(winner_solution(db, "gfx90a", pid), s1);

    // Bad measurements are refused with a reason.
    // Statuses that are results only, and values outside the enum, are refused.
    EXPECT_THROW(db.put_measurement(failed_measurement(pid, s1, arch, db::Status::Unsupported, "")), Error);
    EXPECT_THROW(db.put_measurement(failed_measurement(pid, s1, arch, static_cast<db::Status>(99), "")), Error);
    auto no_time = ok_measurement(pid, s1, dev, arch, 1.0);
    no_time.median_ms = kNotMeasured;
    EXPECT_THROW(db.put_measurement(no_time), Error);
    EXPECT_THROW(db.put_measurement(ok_measurement(pid + 1000, s1, dev, arch, 1.0)), Error);  // no such problem
    EXPECT_EQ(winner_solution(db, arch, pid), s2);
    EXPECT_EQ(db.integrity_check(), "ok");
  }

  const std::string before = slurp(path);
  {
    auto db = Database::open(path, Mode::ReadOnly);
    EXPECT_EQ(db.schema_version(), schema::latest_version());
    EXPECT_EQ(db.integrity_check(), "ok");

    auto all = db.winners("");
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].arch, "gfx90a");
    auto ws = db.winners(arch);
    ASSERT_EQ(ws.size(), 1u);
    const auto& w = ws[0];
    EXPECT_EQ(w.problem_id, pid);
    EXPECT_EQ(w.problem_key, p.key());
    EXPECT_EQ(w.problem.key(), p.key());
    EXPECT_EQ(w.solution, solution(128, 4));
    EXPECT_EQ(w.solution_id, s2);
    EXPECT_EQ(w.source_hash, "hashA");
    EXPECT_EQ(w.code_object_id, co_ok);
    EXPECT_DOUBLE_EQ(w.median_ms, 1.0);
    EXPECT_DOUBLE_EQ(w.tflops, 1.0);
    EXPECT_TRUE(db.winners("sm_90a").empty());

    EXPECT_EQ(db.arches(), (std::vector<std::string>{"gfx90a", arch}));

    auto co = db.code_object(w.code_object_id);
    ASSERT_TRUE(co.has_value());
    EXPECT_EQ(co->id, co_ok);
    EXPECT_EQ(co->cache_key, "key-good");
    EXPECT_EQ(co->solution_id, s1);
    EXPECT_EQ(co->arch, arch);
    EXPECT_EQ(co->compiler_version, "gcc 12");
    EXPECT_TRUE(co->ok);
    EXPECT_EQ(co->symbol, "simt_gemm_kernel");
    EXPECT_EQ(co->bytes, bytes);
    auto failed = db.find_code_object("key-bad");
    ASSERT_TRUE(failed.has_value());
    EXPECT_EQ(failed->id, co_bad);
    EXPECT_FALSE(failed->ok);
    EXPECT_EQ(failed->log, "error: too many registers");
    EXPECT_TRUE(failed->bytes.empty());
    EXPECT_FALSE(db.find_code_object("key-missing").has_value());
    EXPECT_FALSE(db.code_object(99999).has_value());

    auto m = db.find_measurement(pid, s2, arch);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->status, db::Status::Ok);
    EXPECT_EQ(m->device_id, dev);
    EXPECT_DOUBLE_EQ(m->min_ms, 0.9);
    EXPECT_DOUBLE_EQ(m->median_ms, 1.0);
    EXPECT_DOUBLE_EQ(m->max_ms, 1.2);
    EXPECT_DOUBLE_EQ(m->rel_error, 1e-6);
    EXPECT_EQ(m->code_object_id, co_ok);
    EXPECT_EQ(m->sweep, "unit");
    auto f = db.find_measurement(pid, s1, "gfx90a");
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->status, db::Status::Ok);
    EXPECT_EQ(f->device_id, 0);
    auto f3 = db.find_measurement(pid, s3, arch);
    ASSERT_TRUE(f3.has_value());
    EXPECT_EQ(f3->status, db::Status::Ok);  // replaced by the later ok measurement
    EXPECT_FALSE(db.find_measurement(pid, s3, "gfx90a").has_value());

    auto rows = db.measurements(pid);
    ASSERT_EQ(rows.size(), 4u);  // s1, s2, s3 on x86_64-avx2; s1 on gfx90a
    // ok rows sorted by median: s2 1.0, s1 2.0, s1@gfx90a 3.0, s3 5.0
    EXPECT_EQ(rows[0].solution_id, s2);
    EXPECT_EQ(rows[0].kernel_name, solution(128, 4).kernel_name());
    EXPECT_DOUBLE_EQ(rows[1].median_ms, 2.0);
    EXPECT_DOUBLE_EQ(rows[2].median_ms, 3.0);
    EXPECT_DOUBLE_EQ(rows[3].median_ms, 5.0);
    EXPECT_FALSE(rows[0].created_at.empty());
    EXPECT_GT(rows[0].id, 0);

    auto probs = db.problems();
    ASSERT_EQ(probs.size(), 2u);
    const auto& pr = probs[0].id == pid ? probs[0] : probs[1];
    EXPECT_EQ(pr.key, p.key());
    EXPECT_EQ(pr.m, 256);
    EXPECT_EQ(pr.n, 128);
    EXPECT_EQ(pr.k, 64);
    EXPECT_EQ(pr.batch, 1);
    EXPECT_EQ(pr.measurements, 4);

    // Writers refuse in read-only mode, naming the file.
    try {
      db.upsert_problem(problem(1, 1, 1));
      ADD_FAILURE() << "write succeeded on a read-only database";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    EXPECT_THROW(db.put_measurement(ok_measurement(pid, s1, dev, arch, 0.1)), Error);
  }
  EXPECT_EQ(slurp(path), before) << "read-only open changed the database file";
}

TEST_F(DatabaseTest, FailuresListedLast) {
  auto db = Database::open(file("t.db"), Mode::ReadWrite);
  auto pid = db.upsert_problem(problem(8, 8, 8));
  auto a = db.upsert_solution(solution(16, 1), "h");
  auto b = db.upsert_solution(solution(32, 1), "h");
  auto c = db.upsert_solution(solution(64, 1), "h");
  db.put_measurement(failed_measurement(pid, a, "x", db::Status::LaunchFailed, "too many threads"));
  db.put_measurement(ok_measurement(pid, b, 0, "x", 9.0));
  db.put_measurement(ok_measurement(pid, c, 0, "x", 3.0));
  auto rows = db.measurements(pid);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].solution_id, c);
  EXPECT_EQ(rows[1].solution_id, b);
  EXPECT_EQ(rows[2].solution_id, a);
  EXPECT_EQ(rows[2].status, db::Status::LaunchFailed);
  EXPECT_EQ(rows[2].reason, "too many threads");
  EXPECT_TRUE(std::isnan(rows[2].median_ms));
  EXPECT_TRUE(std::isnan(rows[2].rel_error));
}

TEST_F(DatabaseTest, ReadOnlyRefusesMissingFile) {
  const std::string path = file("missing.db");
  expect_open_error(path, Mode::ReadOnly, {path, "does not exist"});
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(DatabaseTest, RefusesTextFile) {
  const std::string path = file("notes.txt");
  std::ofstream(path) << "this is not a database, just some text that is long enough to hold a header.\n";
  expect_open_error(path, Mode::ReadOnly, {path, "not a SQLite database"});
  expect_open_error(path, Mode::ReadWrite, {path, "not a SQLite database"});
}

TEST_F(DatabaseTest, RefusesEmptyFileReadOnly) {
  const std::string path = file("empty.db");
  std::ofstream(path).close();
  // An empty file written long ago is refused at once; one written just now after a short wait
  // for a creator that never comes.
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  const auto t0 = std::chrono::steady_clock::now();
  expect_open_error(path, Mode::ReadOnly, {path, "not a tiletune database", "empty"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now());
  expect_open_error(path, Mode::ReadOnly, {path, "not a tiletune database", "empty"});
  // Read-write makes an empty file a new database.
  auto db = Database::open(path, Mode::ReadWrite);
  EXPECT_EQ(db.schema_version(), schema::latest_version());
}

// A data-parallel job's ranks open the user database read-only while one of them creates it: a
// reader that finds the file before its schema waits for the schema instead of refusing it.
TEST_F(DatabaseTest, ReadOnlyOpenWaitsForTheSchemaOfAFileBeingCreated) {
  const std::string path = file("being_created.db");
  std::ofstream(path).close();  // the creator's open made the file; its schema is not committed yet
  std::thread creator([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Database::open(path, Mode::ReadWrite);
  });
  try {
    auto db = Database::open(path, Mode::ReadOnly);
    EXPECT_EQ(db.schema_version(), schema::latest_version());
  } catch (const Error& e) {
    ADD_FAILURE() << "the reader did not wait for the schema: " << e.what();
  }
  creator.join();
}

TEST_F(DatabaseTest, RefusesForeignDatabase) {
  const std::string path = file("other.db");
  raw_exec(path, "PRAGMA application_id = 42; CREATE TABLE things(x); INSERT INTO things VALUES (1);");
  expect_open_error(path, Mode::ReadOnly, {path, "not a tiletune database", "application_id is 42"});
  expect_open_error(path, Mode::ReadWrite, {path, "not a tiletune database"});

  // A plain SQLite file with tables and no application id at all.
  const std::string plain = file("plain.db");
  raw_exec(plain, "CREATE TABLE measurements(x); PRAGMA user_version = 1;");
  expect_open_error(plain, Mode::ReadOnly, {plain, "not a tiletune database"});
  expect_open_error(plain, Mode::ReadWrite, {plain, "not a tiletune database"});

  // Our application id but no meta row: still foreign.
  const std::string fake = file("fake.db");
  raw_exec(fake, "PRAGMA application_id = " + std::to_string(schema::kApplicationId) +
                     "; PRAGMA user_version = 1; CREATE TABLE meta(key TEXT, value TEXT);");
  expect_open_error(fake, Mode::ReadOnly, {fake, "not a tiletune database", "meta"});

  // The read-write attempt left the foreign file alone.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_EQ(raw_int(db, "PRAGMA application_id"), 42);
  EXPECT_EQ(raw_int(db, "PRAGMA user_version"), 0);
  EXPECT_EQ(raw_int(db, "SELECT count(*) FROM sqlite_master"), 1);
  sqlite3_close(db);
}

TEST_F(DatabaseTest, RefusesNewerSchema) {
  const std::string path = file("future.db");
  { auto db = Database::open(path, Mode::ReadWrite); }
  const int future = schema::latest_version() + 7;
  raw_exec(path, "PRAGMA user_version = " + std::to_string(future) + ";");
  expect_open_error(path, Mode::ReadOnly, {path, "schema version " + std::to_string(future), "newer"});
  expect_open_error(path, Mode::ReadWrite, {path, "newer"});
}

TEST_F(DatabaseTest, RefusesCorruptFile) {
  const std::string path = file("corrupt.db");
  {
    auto db = Database::open(path, Mode::ReadWrite);
    db.upsert_problem(problem(4, 4, 4));
  }  // last connection closed: WAL checkpointed into the main file
  ASSERT_FALSE(fs::exists(path + "-wal"));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);  // keep the 100-byte header, trash the schema page
    std::string junk(3000, '\xA5');
    f.write(junk.data(), std::streamsize(junk.size()));
  }
  expect_open_error(path, Mode::ReadOnly, {path});
}

TEST_F(DatabaseTest, ReadOnlyRefusesOlderSchema) {
  const std::string path = file("old.db");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
  schema::migrate(raw, 1, path);
  sqlite3_close(raw);
  expect_open_error(path, Mode::ReadOnly, {path, "schema version 1", "older"});
}

// Another process opening the file read-only sees no schema or the whole one: creation and each
// migration are one commit (a version in between is refused as older than this build expects).
TEST_F(DatabaseTest, ASchemaIsCreatedOrMigratedInOneCommit) {
  const std::string path = file("atomic.db");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
  int commits = 0;
  sqlite3_commit_hook(raw, [](void* n) { ++*static_cast<int*>(n); return 0; }, &commits);
  schema::migrate(raw, schema::latest_version(), path);
  EXPECT_EQ(commits, 1);
  sqlite3_close(raw);
  const std::string old = file("atomic_v1.db");
  ASSERT_EQ(sqlite3_open_v2(old.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
  schema::migrate(raw, 1, old);
  commits = 0;
  sqlite3_commit_hook(raw, [](void* n) { ++*static_cast<int*>(n); return 0; }, &commits);
  schema::migrate(raw, schema::latest_version(), old);
  EXPECT_EQ(commits, 1);
  EXPECT_EQ(raw_int(raw, "PRAGMA user_version"), schema::latest_version());
  sqlite3_close(raw);
}

TEST_F(DatabaseTest, MigratesFromVersion1) {
  ASSERT_GE(schema::latest_version(), 2);
  const std::string path = file("v1.db");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
  schema::migrate(raw, 1, path);
  EXPECT_EQ(raw_int(raw, "PRAGMA user_version"), 1);
  EXPECT_EQ(raw_int(raw, "PRAGMA application_id"), schema::kApplicationId);
  EXPECT_EQ(raw_int(raw, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                         "'measurements_by_arch_problem'"),
            0);
  // Data written under version 1 survives the migration.
  ASSERT_EQ(sqlite3_exec(raw,
                         "INSERT INTO problems(kind, key, spec, m, n, k, batch) VALUES "
                         "('gemm', 'old-key', '{}', 1, 2, 3, 1)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  schema::migrate(raw, 1, path);  // already there: no-op
  EXPECT_THROW(schema::migrate(raw, schema::latest_version() + 1, path), Error);
  sqlite3_close(raw);

  auto db = Database::open(path, Mode::ReadWrite);
  EXPECT_EQ(db.schema_version(), schema::latest_version());
  EXPECT_EQ(raw_int(db.native_handle(), "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                                        "'measurements_by_arch_problem'"),
            1);
  EXPECT_EQ(db.find_problem("old-key"), 1);
  EXPECT_EQ(db.integrity_check(), "ok");
  EXPECT_EQ(raw_int(db.native_handle(), "SELECT count(*) FROM meta WHERE key = 'application_id' AND value = 'tiletune'"),
            1);
}

TEST_F(DatabaseTest, MoveKeepsConnection) {
  auto a = Database::open(file("m.db"), Mode::ReadWrite);
  auto pid = a.upsert_problem(problem(2, 2, 2));
  Database b = std::move(a);
  EXPECT_EQ(b.find_problem(problem(2, 2, 2).key()), pid);
  Database c = Database::open(file("n.db"), Mode::ReadWrite);
  c = std::move(b);
  EXPECT_EQ(c.find_problem(problem(2, 2, 2).key()), pid);
}

// Four processes create one new file at the same moment and each write 50 candidates (solution,
// code object, measurement: 150 write transactions each). Nothing may fail or get lost.
TEST_F(DatabaseTest, ConcurrentWriters) {
  const std::string path = file("shared.db");
  constexpr int kChildren = 4, kEach = 50;
  const std::string arch = "x86_64-avx2";
  const GemmProblem p = problem(1024, 1024, 1024);
  auto median_of = [](int c, int i) { return 1000.0 - 7.0 * c - 3.0 * i + 0.001 * ((c * 31 + i * 17) % 13); };

  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(gate[1]);
      char ch;
      while (read(gate[0], &ch, 1) > 0) {
      }  // wait until the parent opens the gate (closes its end)
      try {
        auto db = Database::open(path, Mode::ReadWrite);
        auto dev = db.upsert_device({"host", arch, "host x86_64", 2, "1"});
        auto pid_ = db.upsert_problem(p);
        for (int i = 0; i < kEach; ++i) {
          Solution s;
          s.template_name = "simt_gemm";
          s.params = {{"CHILD", c}, {"I", i}};
          auto sid = db.upsert_solution(s, "hash");
          CodeObjectRecord co{0, "ck-" + std::to_string(c) + "-" + std::to_string(i), sid, arch, "gcc", true, "",
                              "sym", std::vector<std::uint8_t>(256, std::uint8_t(i))};
          auto coid = db.put_code_object(co);
          auto m = ok_measurement(pid_, sid, dev, arch, median_of(c, i));
          m.code_object_id = coid;
          m.sweep = "child" + std::to_string(c);
          db.put_measurement(m);
        }
      } catch (const std::exception& e) {
        fprintf(stderr, "child %d: %s\n", c, e.what());
        _exit(1);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  close(gate[0]);
  close(gate[1]);  // go

  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed, status " << status;
  }

  auto db = Database::open(path, Mode::ReadOnly);
  EXPECT_EQ(db.integrity_check(), "ok");
  auto probs = db.problems();
  ASSERT_EQ(probs.size(), 1u);
  EXPECT_EQ(probs[0].measurements, kChildren * kEach);
  auto rows = db.measurements(probs[0].id);
  ASSERT_EQ(rows.size(), std::size_t(kChildren * kEach));
  EXPECT_EQ(raw_int(db.native_handle(), "SELECT count(*) FROM solutions"), kChildren * kEach);
  EXPECT_EQ(raw_int(db.native_handle(), "SELECT count(*) FROM code_objects"), kChildren * kEach);
  EXPECT_EQ(raw_int(db.native_handle(), "SELECT count(*) FROM devices"), 1);

  double best = 1e30;
  int best_c = -1, best_i = -1;
  for (int c = 0; c < kChildren; ++c)
    for (int i = 0; i < kEach; ++i)
      if (median_of(c, i) < best) best = median_of(c, i), best_c = c, best_i = i;
  auto ws = db.winners(arch);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_DOUBLE_EQ(ws[0].median_ms, best);
  EXPECT_EQ(ws[0].solution.params.at("CHILD"), best_c);
  EXPECT_EQ(ws[0].solution.params.at("I"), best_i);
  auto co = db.code_object(ws[0].code_object_id);
  ASSERT_TRUE(co.has_value());
  EXPECT_EQ(co->bytes, std::vector<std::uint8_t>(256, std::uint8_t(best_i)));
}
