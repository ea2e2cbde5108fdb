// Tests of the database shipping tools: db pack, db merge (with provenance, schema version 3),
// db explain, and the tiletune program's errors for bad inputs; compile-only databases (schema 8)
// packed, explained and opened by a runtime.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "db/database.h"
#include "db/compiled.h"
#include "db/explain.h"
#include "db/integrity.h"
#include "db/schema.h"
#include "db/ship.h"
#include "runtime/runtime.h"
#include "runtime/tiletune.h"
#include "solutions/kernel_template.h"
#include "solutions/model.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::db;
using tiletune::testing::error_of;

namespace {

const std::string kHost = "x86_64-avx2";
const std::string kCuda = "sm_90a";

GemmProblem problem(DataType t, std::int64_t m, std::int64_t n, std::int64_t k) {
  return tiletune::testing::gemm(t, t, false, false, m, n, k);
}

Solution variant(const std::string& tmpl, const std::string& param, std::int64_t value) {
  Solution s = find_template(tmpl).default_solution();
  if (!param.empty()) s.params[param] = value;
  return s;
}

// One measurement to write: by names, so that both databases can be described the same way.
struct Meas {
  std::string arch;
  GemmProblem problem;
  Solution solution;
  db::Status status;  // Ok or a failure
  double median_ms;
  std::size_t code_bytes;  // 0: no code object
};

struct Fixture {
  std::string device_name;
  std::string sweep;
  std::vector<Meas> measurements;
};

std::vector<std::uint8_t> fake_code(const std::string& key, std::size_t n) {
  std::vector<std::uint8_t> b(n);
  std::uint64_t h = std::hash<std::string>{}(key);
  for (std::size_t i = 0; i < n; ++i) b[i] = std::uint8_t((h >> (8 * (i % 8))) + i * 131);
  return b;
}

void build(const std::string& path, const Fixture& f) {
  Database db = Database::open(path, Mode::ReadWrite);
  std::int64_t host_dev = db.upsert_device({"host", kHost, f.device_name + " CPU", 2, "1"});
  std::int64_t cuda_dev = db.upsert_device({"cuda", kCuda, f.device_name + " H200", 132, "560.35"});
  for (const Meas& m : f.measurements) {
    MeasurementRecord r;
    r.problem_id = db.upsert_problem(m.problem);
    r.solution_id = db.upsert_solution(m.solution, "src-" + m.solution.template_name);
    r.device_id = m.arch == kHost ? host_dev : cuda_dev;
    r.arch = m.arch;
    r.status = m.status;
    r.sweep = f.sweep;
    if (m.status == db::Status::Ok) {
      r.median_ms = m.median_ms;
      r.min_ms = m.median_ms * 0.9;
      r.max_ms = m.median_ms * 1.1;
      r.rel_error = 1e-7;
      r.tflops = m.problem.flops() / (m.median_ms * 1e9);
    } else {
      r.reason = "failed in " + f.sweep;
    }
    if (m.code_bytes) {
      CodeObjectRecord c;
      c.cache_key = m.solution.kernel_name() + "|" + m.arch;  // same key on every machine
      c.solution_id = r.solution_id;
      c.arch = m.arch;
      c.compiler_version = "cc 1";
      c.ok = true;
      c.symbol = m.solution.kernel_name();
      c.bytes = fake_code(c.cache_key, m.code_bytes);
      r.code_object_id = db.put_code_object(c);
    }
    db.put_measurement(r);
  }
}

// Problems and solutions shared by the fixtures.
const GemmProblem P1 = problem(DataType::F32, 256, 128, 64);
const GemmProblem P2 = problem(DataType::F32, 512, 512, 512);
const GemmProblem P3 = problem(DataType::BF16, 1024, 256, 128);
const Solution H0 = variant("host_gemm", "", 0);
const Solution H1 = variant("host_gemm", "MT0", 64);
const Solution H2 = variant("host_gemm", "MT1", 64);
const Solution S0 = variant("simt_gemm", "", 0);
const Solution S1 = variant("simt_gemm", "VW", 4);

Fixture machine_a() {
  return {"alpha",
          "sweep-a",
          {
              {kHost, P1, H0, db::Status::Ok, 2.0, 3000},
              {kHost, P1, H1, db::Status::Ok, 3.0, 20000},
              {kHost, P1, H2, db::Status::CompileFailed, 0, 0},
              {kHost, P2, H0, db::Status::Ok, 5.0, 3000},
              {kHost, P2, H1, db::Status::Invalid, 0, 20000},
              {kCuda, P1, S0, db::Status::Ok, 1.0, 20000},
              {kCuda, P1, S1, db::Status::Ok, 0.5, 4000},
          }};
}

Fixture machine_b() {
  return {"beta",
          "sweep-b",
          {
              {kHost, P1, H0, db::Status::Timeout, 0, 0},   // a failure never beats A's ok
              {kHost, P1, H1, db::Status::Ok, 1.5, 20000},  // beats A's 3.0, and A's winner H0 at 2.0
              {kHost, P1, H2, db::Status::Ok, 9.0, 3000},   // ok beats A's compile failure
              {kHost, P2, H0, db::Status::Ok, 6.0, 3000},   // slower than A's 5.0: A's kept
              {kHost, P2, H1, db::Status::Ok, 4.0, 20000},  // A failed it: B's wins, and becomes the winner
              {kHost, P3, H0, db::Status::Ok, 7.0, 3000},   // only in B
          }};
}

class DbToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TILETUNE_VENDOR", "off", 1);  // the kernel rungs; test_ladder explains the vendor's
    std::string tmpl = (fs::temp_directory_path() / "tiletune_db_tools_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    a_ = file("a.db");
    b_ = file("b.db");
    build(a_, machine_a());
    build(b_, machine_b());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
  std::string a_, b_;
};

// (arch, problem key) -> kernel name of the winner.
std::map<std::pair<std::string, std::string>, std::string> winner_map(const std::string& path) {
  Database db = Database::open(path, Mode::ReadOnlyAnyVersion);
  std::map<std::pair<std::string, std::string>, std::string> out;
  for (const auto& w : db.winners("")) out[{w.arch, w.problem_key}] = w.solution.kernel_name();
  return out;
}

// Everything merge may change, in a comparable form.
std::string snapshot(const std::string& path) {
  Database db = Database::open(path, Mode::ReadOnly);
  std::string s;
  for (const auto& m : db.all_measurements())
    s += std::to_string(m.id) + " " + m.arch + " " + m.kernel_name + " " + db::to_string(m.status) + " " + std::to_string(m.median_ms) +
         " " + std::to_string(m.device_id) + " " + std::to_string(m.code_object_id) + " " + m.created_at + "\n";
  for (const auto& p : db.all_provenance())
    s += std::to_string(p.measurement_id) + " " + p.source + " " + std::to_string(p.source_measurement_id) + " " +
         p.sweep + " " + std::to_string(p.device_id) + " " + p.recorded_at + "\n";
  for (const auto& w : db.winners("")) s += w.arch + " " + w.problem_key + " " + std::to_string(w.measurement_id) + "\n";
  db.for_each_code_object([&](const CodeObjectRecord& c) { s += c.cache_key + " " + std::to_string(c.id) + "\n"; });
  s += std::to_string(db.devices().size()) + " " + std::to_string(db.problems().size()) + " " +
       std::to_string(db.solutions().size()) + "\n";
  return s;
}

std::string abs_path(const std::string& p) { return fs::absolute(p).lexically_normal().string(); }

}  // namespace

// ---- pack -----------------------------------------------------------------------------------

TEST_F(DbToolsTest, PackKeepsExactlyTheWinners) {
  const std::string out = file("ship.db");
  PackResult r = pack(a_, out, {}, false, nullptr, 0);  // no generic kernels (PackPoolsGenericKernels...)
  EXPECT_EQ(r.winners, 3u);  // host P1, host P2, cuda P1
  EXPECT_EQ(r.arches, (std::vector<std::string>{kCuda, kHost}));
  EXPECT_GT(r.source_bytes, 0u);
  EXPECT_LT(r.packed_bytes, r.source_bytes);
  EXPECT_LT(fs::file_size(out), fs::file_size(a_));
  EXPECT_FALSE(fs::exists(out + "-wal"));

  EXPECT_EQ(winner_map(out), winner_map(a_));
  Database src = Database::open(a_, Mode::ReadOnly);
  Database db = Database::open(out, Mode::ReadOnly);  // what the runtime does
  EXPECT_EQ(db.schema_version(), schema::latest_version());
  EXPECT_EQ(db.integrity_check(), "ok");
  auto winners = db.winners("");
  ASSERT_EQ(winners.size(), 3u);
  EXPECT_EQ(db.all_measurements().size(), 3u);  // only the winning measurements
  EXPECT_EQ(db.problems().size(), 2u);          // P1, P2
  EXPECT_EQ(db.solutions().size(), 2u);         // H0 (P1, P2), S1

  // Exactly the winners' code objects, byte for byte.
  std::set<std::string> keys;
  db.for_each_code_object([&](const CodeObjectRecord& c) { keys.insert(c.cache_key); });
  EXPECT_EQ(keys, (std::set<std::string>{H0.kernel_name() + "|" + kHost, S1.kernel_name() + "|" + kCuda}));
  for (const auto& w : winners) {
    ASSERT_NE(w.code_object_id, 0);
    auto c = db.code_object(w.code_object_id);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->arch, w.arch);
    auto orig = src.find_code_object(c->cache_key);
    ASSERT_TRUE(orig.has_value());
    EXPECT_EQ(c->bytes, orig->bytes);
    auto m = db.measurement(w.measurement_id);
    ASSERT_TRUE(m.has_value());
    std::int64_t src_solution = 0;
    for (const auto& so : src.solutions())
      if (so.solution == w.solution) src_solution = so.id;
    auto sm = src.find_measurement(*src.find_problem(w.problem_key), src_solution, w.arch);
    ASSERT_TRUE(sm.has_value());
    EXPECT_EQ(m->median_ms, sm->median_ms);
    EXPECT_EQ(m->sweep, "sweep-a");
    auto p = db.provenance(m->id);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->source, abs_path(a_));
    EXPECT_EQ(p->sweep, "sweep-a");
    EXPECT_NE(p->device_id, 0);
  }
  EXPECT_EQ(db.devices().size(), 2u);
  EXPECT_EQ(db.meta("packed_from").value_or(""), abs_path(a_));
  {  // shipped in rollback-journal mode: opens read-only where the directory is not writable
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db.native_handle(), "PRAGMA journal_mode", -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "delete");
    sqlite3_finalize(st);
  }
}

TEST_F(DbToolsTest, PackOneArchRefusesOverwriteAndUnknownArch) {
  const std::string out = file("ship.db");
  PackResult r = pack(a_, out, {kCuda}, false);
  EXPECT_EQ(r.winners, 1u);
  auto w = winner_map(out);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w.begin()->first.first, kCuda);
  EXPECT_EQ(w.begin()->second, S1.kernel_name());

  const auto before = fs::file_size(out);
  std::string e = error_of([&] { pack(a_, out, {kHost}, false); });
  EXPECT_NE(e.find("already exists"), std::string::npos) << e;
  EXPECT_NE(e.find("--force"), std::string::npos) << e;
  EXPECT_EQ(fs::file_size(out), before);
  EXPECT_EQ(pack(a_, out, {kHost}, true).winners, 2u);
  EXPECT_EQ(winner_map(out).size(), 2u);

  e = error_of([&] { pack(a_, file("x.db"), {"gfx90a"}, false); });
  EXPECT_NE(e.find("unknown arch 'gfx90a'"), std::string::npos) << e;
  EXPECT_NE(e.find(kHost), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(file("x.db")));
  e = error_of([&] { pack(a_, a_, {}, true); });
  EXPECT_NE(e.find("source"), std::string::npos) << e;
  e = error_of([&] { pack(file("missing.db"), file("x.db"), {}, false); });
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;
  for (const auto& entry : fs::directory_iterator(dir_))  // no temporary left behind
    EXPECT_EQ(entry.path().filename().string().find("packing"), std::string::npos) << entry.path();
}

// ---- merge ----------------------------------------------------------------------------------

TEST_F(DbToolsTest, MergeUnionsAndBetterMeasurementWinsBothWays) {
  const std::string ab = file("ab.db"), ba = file("ba.db");
  auto r1 = merge(ab, {a_, b_});
  ASSERT_EQ(r1.size(), 2u);
  EXPECT_EQ(r1[0].added, 7u);
  EXPECT_EQ(r1[1].measurements, 6u);
  EXPECT_EQ(r1[1].added, 1u);     // P3
  EXPECT_EQ(r1[1].replaced, 3u);  // P1 H1 faster, P1 H2 ok over failure, P2 H1 ok over failure
  EXPECT_EQ(r1[1].kept, 2u);      // P1 H0 (ok over B's timeout), P2 H0 (faster in A)
  merge(ba, {b_, a_});

  const auto w = winner_map(ab);
  EXPECT_EQ(w, winner_map(ba));
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w.at({kHost, P1.key()}), H1.kernel_name());  // B's 1.5 beats A's 2.0
  EXPECT_EQ(w.at({kHost, P2.key()}), H1.kernel_name());  // B's 4.0 beats A's 5.0 (A's H1 failed)
  EXPECT_EQ(w.at({kHost, P3.key()}), H0.kernel_name());
  EXPECT_EQ(w.at({kCuda, P1.key()}), S1.kernel_name());

  for (const std::string& path : {ab, ba}) {
    Database db = Database::open(path, Mode::ReadOnly);
    EXPECT_EQ(db.integrity_check(), "ok");
    EXPECT_EQ(db.problems().size(), 3u);
    EXPECT_EQ(db.solutions().size(), 5u);
    EXPECT_EQ(db.devices().size(), 4u);  // alpha and beta, host and cuda (beta's H200 measured nothing)
    auto p1 = *db.find_problem(P1.key());
    auto p2 = *db.find_problem(P2.key());
    std::map<std::string, MeasurementRow> host_p1, host_p2;
    for (const auto& m : db.measurements(p1))
      if (m.arch == kHost) host_p1[m.kernel_name] = m;
    for (const auto& m : db.measurements(p2))
      if (m.arch == kHost) host_p2[m.kernel_name] = m;
    // Failures never beat ok, either order.
    EXPECT_EQ(host_p1.at(H0.kernel_name()).status, db::Status::Ok);
    EXPECT_EQ(host_p1.at(H0.kernel_name()).median_ms, 2.0);
    EXPECT_EQ(host_p1.at(H1.kernel_name()).median_ms, 1.5);
    EXPECT_EQ(host_p1.at(H2.kernel_name()).status, db::Status::Ok);
    EXPECT_EQ(host_p2.at(H0.kernel_name()).median_ms, 5.0);
    EXPECT_EQ(host_p2.at(H1.kernel_name()).status, db::Status::Ok);

    // Provenance: every measurement names its source file, sweep and device.
    auto devices = db.devices();
    auto device_name = [&](std::int64_t id) {
      for (const auto& d : devices)
        if (d.id == id) return d.name;
      return std::string("?");
    };
    auto prov = db.all_provenance();
    EXPECT_EQ(prov.size(), db.all_measurements().size());
    for (const auto& m : db.all_measurements()) {
      auto p = db.provenance(m.id);
      ASSERT_TRUE(p.has_value()) << m.kernel_name;
      const bool from_a = p->source == abs_path(a_);
      EXPECT_TRUE(from_a || p->source == abs_path(b_)) << p->source;
      EXPECT_EQ(p->sweep, from_a ? "sweep-a" : "sweep-b");
      EXPECT_EQ(p->device_id, m.device_id);
      EXPECT_EQ(device_name(p->device_id).rfind(from_a ? "alpha" : "beta", 0), 0u) << device_name(p->device_id);
      EXPECT_GT(p->source_measurement_id, 0);
    }
    EXPECT_EQ(host_p1.count(H1.kernel_name()) ? db.provenance(host_p1.at(H1.kernel_name()).id)->source : "",
              abs_path(b_));
    // Code objects unioned by cache key, their bytes intact.
    std::set<std::string> keys;
    db.for_each_code_object([&](const CodeObjectRecord& c) {
      keys.insert(c.cache_key);
      EXPECT_EQ(c.bytes, fake_code(c.cache_key, c.bytes.size()));
    });
    EXPECT_EQ(keys.size(), 5u);  // H0, H1, H2 on host; S0, S1 on cuda
    for (const auto& w2 : db.winners("")) {
      auto c = db.code_object(w2.code_object_id);
      ASSERT_TRUE(c.has_value());
      EXPECT_EQ(c->cache_key, w2.solution.kernel_name() + "|" + w2.arch);
    }
  }
}

TEST(DbBetter, AFinalistsReTimingBeatsItsFirstTimingWhateverTheirTimes) {
  MeasurementRecord first, final;
  first.median_ms = 1.0;
  final.median_ms = 2.0;
  final.reason = kFinalistReason;
  EXPECT_TRUE(Database::better(final, first));
  EXPECT_FALSE(Database::better(first, final));
  MeasurementRecord older = final;  // as databases of before every strategy had finals say it
  older.reason = kFinalistReasonV1;
  older.median_ms = 1.5;
  EXPECT_TRUE(Database::better(older, final));  // two re-timings: the faster
  EXPECT_TRUE(Database::better(older, first));
  MeasurementRecord failed = final;  // a failure never beats an 'ok' one
  failed.status = db::Status::Invalid;
  EXPECT_FALSE(Database::better(failed, first));
  EXPECT_TRUE(Database::better(first, failed));
}

TEST_F(DbToolsTest, MergeIsIdempotentAndKeepsProvenanceThroughChains) {
  const std::string m = file("m.db");
  merge(m, {a_, b_});
  const std::string once = snapshot(m);
  auto again = merge(m, {b_, a_, b_});
  for (const auto& r : again) {
    EXPECT_EQ(r.added, 0u) << r.source;
    EXPECT_EQ(r.replaced, 0u) << r.source;
  }
  EXPECT_EQ(snapshot(m), once);
  EXPECT_EQ(Database::open(m, Mode::ReadOnly).integrity_check(), "ok");

  // A merged database merged again keeps the original sources, not the intermediate file.
  const std::string m2 = file("m2.db");
  merge(m2, {m});
  Database db = Database::open(m2, Mode::ReadOnly);
  std::set<std::string> sources;
  for (const auto& p : db.all_provenance()) sources.insert(p.source);
  EXPECT_EQ(sources, (std::set<std::string>{abs_path(a_), abs_path(b_)}));
  EXPECT_EQ(winner_map(m2), winner_map(m));

  // The tuner re-measuring a merged measurement makes it local again.
  {
    Database w = Database::open(m2, Mode::ReadWrite);
    auto rows = w.all_measurements();
    MeasurementRecord r = rows.front();
    r.sweep = "local";
    w.put_measurement(r);
    auto p = w.provenance(rows.front().id);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->source, "");
    EXPECT_EQ(p->sweep, "local");
  }
  // Merging a file into itself is refused.
  std::string e = error_of([&] { merge(m, {m}); });
  EXPECT_NE(e.find("destination"), std::string::npos) << e;
}

TEST_F(DbToolsTest, MergeRefusesBadSourcesBeforeCreatingTheDestination) {
  const std::string out = file("new.db");
  std::string e = error_of([&] { merge(out, {a_, file("missing.db")}); });
  EXPECT_NE(e.find("missing.db"), std::string::npos) << e;
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;
  const std::string foreign = file("foreign.db");
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(foreign.c_str(), &raw), SQLITE_OK);
    sqlite3_exec(raw, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  }
  e = error_of([&] { merge(out, {foreign}); });
  EXPECT_NE(e.find("not a tiletune database"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(out));
}

// ---- schema version 3 -----------------------------------------------------------------------

// A database at an old schema `version` with one winner (host arch), written as that version's
// tuner would have.
static void write_old_database(const std::string& path, int version) {
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    schema::migrate(raw, version, path);
    nlohmann::json spec;
    to_json(spec, P1);
    std::string sql =
        "INSERT INTO devices(id, backend, arch, name, multiprocessors) VALUES (1, 'host', '" + kHost + "', 'old', 2);"
        "INSERT INTO problems(id, key, spec, m, n, k, batch) VALUES (1, '" + P1.key() + "', '" + spec.dump() +
        "', 256, 128, 64, 1);"
        "INSERT INTO solutions(id, template, params, kernel_name, source_hash) VALUES (1, 'host_gemm', '" +
        H0.params_json() + "', '" + H0.kernel_name() + "', 'h');"
        "INSERT INTO code_objects(id, cache_key, solution_id, arch, ok, symbol, bytes) VALUES (1, 'ck', 1, '" + kHost +
        "', 1, 'sym', x'0102');"
        "INSERT INTO measurements(id, problem_id, solution_id, device_id, arch, status, median_ms, code_object_id, sweep, "
        "created_at) VALUES (1, 1, 1, 1, '" + kHost + "', 'ok', 1.25, 1, 'old-sweep', '2026-01-01T00:00:00.000Z');"
        "INSERT INTO winners(arch, problem_id, solution_id, measurement_id) VALUES ('" + kHost + "', 1, 1, 1);";
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_close(raw);
  }
}

// A v3 file (what `db pack` wrote before convolutions) reads read-only as it is: v4 only widened
// a CHECK. Trainers keep their shipped databases.
TEST_F(DbToolsTest, Version3OpensReadOnlyWithoutMigration) {
  const std::string path = file("v3.db");
  write_old_database(path, 3);
  Database old = Database::open(path, Mode::ReadOnly);
  EXPECT_EQ(old.schema_version(), 3);
  ASSERT_EQ(old.winners(kHost).size(), 1u);
  EXPECT_EQ(old.winners(kHost)[0].solution.kernel_name(), H0.kernel_name());
}

TEST_F(DbToolsTest, MigrationFromVersion2KeepsDataAndBackfillsProvenance) {
  const std::string path = file("v2.db");
  write_old_database(path, 2);
  // The runtime refuses it until migrated; merge and pack can read it as it is.
  std::string e = error_of([&] { Database::open(path, Mode::ReadOnly); });
  EXPECT_NE(e.find("older"), std::string::npos) << e;
  {
    Database old = Database::open(path, Mode::ReadOnlyAnyVersion);
    EXPECT_EQ(old.schema_version(), 2);
    EXPECT_TRUE(old.all_provenance().empty());
    EXPECT_EQ(old.winners("").size(), 1u);
  }
  const std::string merged = file("from_v2.db");
  merge(merged, {path});
  EXPECT_EQ(winner_map(merged), winner_map(path));
  {
    Database m = Database::open(merged, Mode::ReadOnly);
    auto rows = m.all_measurements();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(m.provenance(rows[0].id)->source, abs_path(path));
    EXPECT_EQ(rows[0].created_at, "2026-01-01T00:00:00.000Z");
  }
  // Migrating in place keeps every row and marks the measurements as local.
  {
    Database db = Database::open(path, Mode::ReadWrite);
    EXPECT_EQ(db.schema_version(), schema::latest_version());
    EXPECT_EQ(db.integrity_check(), "ok");
    auto w = db.winners(kHost);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].solution.kernel_name(), H0.kernel_name());
    EXPECT_EQ(w[0].median_ms, 1.25);
    EXPECT_EQ(db.code_object(w[0].code_object_id)->bytes, (std::vector<std::uint8_t>{1, 2}));
    auto p = db.provenance(w[0].measurement_id);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->source, "");
    EXPECT_EQ(p->sweep, "old-sweep");
    EXPECT_EQ(p->device_id, 1);
    EXPECT_EQ(p->recorded_at, "2026-01-01T00:00:00.000Z");
  }
  EXPECT_EQ(Database::open(path, Mode::ReadOnly).schema_version(), schema::latest_version());
}

// ---- explain --------------------------------------------------------------------------------

TEST_F(DbToolsTest, ExplainExactMatchAndUntuned) {
  Database db = Database::open(a_, Mode::ReadOnly);
  Explanation e = explain(db, P1, kHost);
  ASSERT_EQ(e.choice, Explanation::Choice::Tuned) << format(e);
  EXPECT_EQ(e.winner->solution.kernel_name(), H0.kernel_name());
  ASSERT_TRUE(e.measurement.has_value());
  EXPECT_EQ(e.measurement->median_ms, 2.0);
  ASSERT_TRUE(e.code_object.has_value());
  std::string text = format(e);
  EXPECT_NE(text.find("TUNED"), std::string::npos) << text;
  EXPECT_NE(text.find(H0.kernel_name()), std::string::npos) << text;
  EXPECT_NE(text.find("stored code object"), std::string::npos) << text;

  // A problem given with explicit packed leading dimensions is the same problem.
  GemmProblem same = P1;
  same.lda = 256;
  EXPECT_EQ(explain(db, same, kHost).choice, Explanation::Choice::Tuned);

  // Untuned but near a tuned problem of the same types and layout: that problem's winner.
  GemmProblem near = problem(DataType::F32, 257, 129, 65);
  e = explain(db, near, kHost);
  ASSERT_EQ(e.choice, Explanation::Choice::Nearest) << format(e);
  EXPECT_EQ(e.neighbour->problem_key, P1.key());
  EXPECT_LT(e.distance, kMaxNearestDistance);
  EXPECT_NE(format(e).find("NEAREST"), std::string::npos);

  // Untuned and far from everything tuned: the first ranked template whose default admits it.
  GemmProblem odd = problem(DataType::F32, 2570, 1290, 650);
  e = explain(db, odd, kHost);
  ASSERT_EQ(e.choice, Explanation::Choice::Fallback) << format(e);
  EXPECT_EQ(e.fallback.template_name, "host_gemm");
  EXPECT_EQ(e.fallback, find_template("host_gemm").default_solution());
  EXPECT_NE(e.untuned_reason.find("no winner"), std::string::npos);
  text = format(e);
  EXPECT_NE(text.find("FALLBACK"), std::string::npos) << text;
  EXPECT_NE(text.find(P1.key()), std::string::npos) << "nearest tuned problem listed:\n" << text;

  // The rule the runtime applies, on a CUDA arch: the first ranked template that fits.
  e = explain(db, odd, kCuda);
  ASSERT_EQ(e.choice, Explanation::Choice::Fallback) << format(e);
  auto ranked = fallback_templates(gpu::BackendKind::Cuda);
  ASSERT_FALSE(ranked.empty());
  FallbackChoice c = choose_fallback(ranked, odd.canonical(), device_for_arch(kCuda, std::nullopt));
  ASSERT_NE(c.tmpl, nullptr);
  EXPECT_EQ(e.fallback.template_name, c.tmpl->name());
  EXPECT_EQ(e.device.compute_capability, 90);
  EXPECT_EQ(e.device.multiprocessors, 132);  // from the devices table
  EXPECT_EQ(explain(db, P1, kCuda).winner->solution.kernel_name(), S1.kernel_name());

  // Several arches: --arch is required; an unknown one is named.
  std::string err = error_of([&] { explain(db, P1, ""); });
  EXPECT_NE(err.find("several arches"), std::string::npos) << err;
  err = error_of([&] { explain(db, P1, "gfx90a"); });
  EXPECT_NE(err.find("unknown arch 'gfx90a'"), std::string::npos) << err;

  // One arch: it is the default.
  const std::string one = file("one.db");
  pack(a_, one, {kHost}, false);
  Database packed = Database::open(one, Mode::ReadOnly);
  e = explain(packed, P2, "");
  EXPECT_EQ(e.arch, kHost);
  EXPECT_EQ(e.choice, Explanation::Choice::Tuned);
  ASSERT_TRUE(e.provenance.has_value());
  EXPECT_EQ(e.provenance->source, abs_path(a_));
}

TEST(DbExplain, ProblemJson) {
  GemmProblem p = parse_problem_json(
      R"({"dtype": "bf16", "transA": "T", "transB": "N", "m": 1024, "n": 256, "k": 128, "beta_zero": false})").gemm();
  EXPECT_EQ(p.a_type, DataType::BF16);
  EXPECT_TRUE(p.trans_a);
  EXPECT_FALSE(p.beta_zero);
  EXPECT_EQ(p.lda, 128);  // canonical
  EXPECT_TRUE(parse_problem_json(R"({"dtype": "tf32", "m": 8, "n": 8, "k": 8})").gemm().compute_tf32);
  auto expect_bad = [](const std::string& text, const std::string& part) {
    std::string e = error_of([&] { parse_problem_json(text); });
    EXPECT_NE(e.find("bad problem JSON"), std::string::npos) << e;
    EXPECT_NE(e.find(part), std::string::npos) << "'" << part << "' not in: " << e;
  };
  expect_bad("{m: 1", "not valid JSON");
  expect_bad("[1, 2]", "expected an object");
  expect_bad(R"({"m": 8, "n": 8, "k": 8, "mm": 3})", "unknown field 'mm'");
  expect_bad(R"({"m": 8, "n": 8})", "'k'");
  expect_bad(R"({"dtype": "f64", "m": 8, "n": 8, "k": 8})", "f64");
  expect_bad(R"({"m": 0, "n": 8, "k": 8})", "m");
  expect_bad(R"({"m": "big", "n": 8, "k": 8})", "m");
  expect_bad(R"({"m": 64, "n": 8, "k": 8, "lda": 3})", "lda");
}

// ---- the program ----------------------------------------------------------------------------

using tiletune::ProgramOutput;
using tiletune::testing::run_tiletune;

// Beside the winners, pack pools per arch and class of problems the kernels of highest mean
// efficiency over the class's measured problems (best time over theirs, 0 where not measured), each
// with its measurement on the problem it fit best; a pooled measurement never changes a winner.
TEST_F(DbToolsTest, PackPoolsGenericKernelsBesideTheWinners) {
  const std::string out = file("ship.db");
  const PackResult r = pack(a_, out, {}, false);  // kGenericPerClass
  EXPECT_EQ(r.generic, 4u);                       // per arch, its one class's two kernels
  EXPECT_EQ(winner_map(out), winner_map(a_));
  Database db = Database::open(out, Mode::ReadOnly);
  std::set<std::string> pooled;
  for (const std::string& arch : {kHost, kCuda})
    for (const auto& g : db.pool_kernels(arch)) {
      pooled.insert(g.solution.kernel_name() + "|" + arch + "|" + g.problem_key);
      EXPECT_GT(g.median_ms, 0);
      EXPECT_NE(g.code_object_id, 0) << "its code object ships with it";
    }
  const std::string p1 = Problem(P1).key();
  // H0 won both host problems (efficiency 1); H1 ran 2/3 of the best on P1 and failed P2. Each is
  // measured on P1, where it fit best.
  EXPECT_EQ(pooled, (std::set<std::string>{H0.kernel_name() + "|" + kHost + "|" + p1, H1.kernel_name() + "|" + kHost + "|" + p1,
                                           S0.kernel_name() + "|" + kCuda + "|" + p1,
                                           S1.kernel_name() + "|" + kCuda + "|" + p1}));
  EXPECT_EQ(pack(a_, file("one.db"), {}, false, nullptr, 1).generic, 2u) << "the best kernel of each arch's class";
  // One kernel pooled for two classes keeps an entry for each: B's host measured H0 on the f32
  // problems and on the bf16 P3.
  EXPECT_EQ(pack(b_, file("two.db"), {kHost}, false, nullptr, 2).generic, 3u);
  Database two = Database::open(file("two.db"), Mode::ReadOnly);
  std::set<std::string> classes;
  for (const auto& g : two.pool_kernels(kHost)) classes.insert(g.solution.kernel_name() + "|" + g.problem_key);
  EXPECT_EQ(classes.size(), 3u);
  EXPECT_TRUE(classes.count(H0.kernel_name() + "|" + Problem(P3).key())) << "H0 for the bf16 class";
  Database one = Database::open(file("one.db"), Mode::ReadOnly);
  ASSERT_EQ(one.pool_kernels(kHost).size(), 1u);
  EXPECT_EQ(one.pool_kernels(kHost)[0].solution.kernel_name(), H0.kernel_name());
}

TEST_F(DbToolsTest, ProgramSucceeds) {
  ProgramOutput r = run_tiletune({"db", "pack", a_, file("ship.db"), "--generic", "0"});
  EXPECT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("packed 3 winners"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("KiB"), std::string::npos) << r.text;  // sizes before and after

  r = run_tiletune({"db", "merge", file("m.db"), a_, b_});
  EXPECT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("3 replaced"), std::string::npos) << r.text;
  r = run_tiletune({"db", "check", file("m.db")});
  EXPECT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("schema version " + std::to_string(schema::latest_version()) + ", integrity ok"), std::string::npos) << r.text;

  r = run_tiletune({"db", "explain", file("ship.db"), "--arch", kHost, "--problem",
                    R"({"dtype": "f32", "transA": "N", "transB": "N", "m": 256, "n": 128, "k": 64})"});
  EXPECT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("TUNED"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find(H0.kernel_name()), std::string::npos) << r.text;
  std::ofstream(file("p.json")) << R"({"dtype": "f32", "m": 3000, "n": 3000, "k": 3000})";
  r = run_tiletune({"db", "explain", file("ship.db"), "--arch", kHost, "--problem", "@" + file("p.json")});
  EXPECT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("FALLBACK"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("host_gemm"), std::string::npos) << r.text;
  // Packed with its generic kernels (the default), the far problem gets one of them.
  r = run_tiletune({"db", "pack", a_, file("pooled.db")});
  EXPECT_NE(r.text.find("and 4 generic kernels"), std::string::npos) << r.text;
  r = run_tiletune({"db", "explain", file("pooled.db"), "--arch", kHost, "--problem", "@" + file("p.json")});
  EXPECT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("NEAREST"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("the generic kernel " + H0.kernel_name()), std::string::npos) << r.text;
}

// Exit codes (tools/commands.h): a usage error is 64 and names what was wrong; --help and
// --version are 0.
TEST_F(DbToolsTest, ProgramUsageErrorsExitWith64) {
  ProgramOutput r = run_tiletune({"db", "pack", a_, file("x.db"), "--bogus"});
  EXPECT_EQ(r.status, 64) << r.text;
  EXPECT_NE(r.text.find("--bogus"), std::string::npos) << r.text;
  r = run_tiletune({"db", "pack", a_});  // dst missing
  EXPECT_EQ(r.status, 64) << r.text;
  r = run_tiletune({});  // no subcommand
  EXPECT_EQ(r.status, 64) << r.text;
  r = run_tiletune({"--help"});
  EXPECT_EQ(r.status, 0) << r.text;
  r = run_tiletune({"--version"});
  EXPECT_EQ(r.status, 0) << r.text;
  EXPECT_EQ(r.text.rfind("tiletune ", 0), 0u) << r.text;
  EXPECT_FALSE(fs::exists(file("x.db")));
}

TEST_F(DbToolsTest, ProgramErrorsNameTheCause) {
  const std::string missing = file("missing.db");
  const std::string text = file("notes.txt");
  std::ofstream(text) << "these are not the tuning results you are looking for\n";
  const std::string corrupt = file("corrupt.db");
  fs::copy_file(a_, corrupt);
  {  // keep page 1 (the header and schema), scribble over the rest
    std::fstream f(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    std::string junk(fs::file_size(corrupt) - 4096, '\x5a');
    f.write(junk.data(), std::streamsize(junk.size()));
  }
  const std::string foreign = file("foreign.db");
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(foreign.c_str(), &raw), SQLITE_OK);
    sqlite3_exec(raw, "CREATE TABLE t(x);", nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  }
  const std::string p = R"({"dtype": "f32", "m": 8, "n": 8, "k": 8})";
  fs::copy_file(a_, file("exists.db"));

  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {{"db", "pack", missing, file("o1.db")}, {missing, "does not exist"}},
      {{"db", "pack", text, file("o2.db")}, {text, "not a SQLite database"}},
      {{"db", "pack", foreign, file("o3.db")}, {foreign, "not a tiletune database"}},
      {{"db", "pack", corrupt, file("o4.db")}, {corrupt, "corrupt"}},
      {{"db", "pack", a_, file("o5.db"), "--arch", "sm_100"}, {"unknown arch 'sm_100'"}},
      {{"db", "pack", a_, file("exists.db")}, {"already exists", "--force"}},
      {{"db", "merge", file("o6.db"), a_, missing}, {missing, "does not exist"}},
      {{"db", "merge", file("o7.db"), text}, {text, "not a SQLite database"}},
      {{"db", "merge", file("o8.db"), foreign}, {foreign, "not a tiletune database"}},
      {{"db", "merge", file("o9.db"), corrupt}, {corrupt, "corrupt"}},
      {{"db", "merge", text, a_}, {text, "not a SQLite database"}},
      {{"db", "explain", missing, "--problem", p}, {missing, "does not exist"}},
      {{"db", "explain", foreign, "--problem", p}, {foreign, "not a tiletune database"}},
      {{"db", "explain", a_, "--problem", p}, {"several arches", kCuda, kHost}},
      {{"db", "explain", a_, "--arch", "gfx942", "--problem", p}, {"unknown arch 'gfx942'"}},
      {{"db", "explain", a_, "--arch", kHost, "--problem", "{\"m\": 8"}, {"bad problem JSON"}},
      {{"db", "explain", a_, "--arch", kHost, "--problem", R"({"m": 8, "n": 8, "k": -1})"}, {"bad problem JSON", "k"}},
      {{"db", "explain", a_, "--arch", kHost, "--problem", R"({"m": 8, "n": 8, "k": 8, "alpha": 2})"},
       {"unknown field 'alpha'"}},
      {{"db", "explain", a_, "--arch", kHost, "--problem", "@" + missing}, {"cannot read the problem file"}},
  };
  for (const auto& c : cases) {
    ProgramOutput r = run_tiletune(c.args);
    std::string cmd;
    for (const auto& a : c.args) cmd += a + " ";
    EXPECT_EQ(r.status, 1) << cmd << "\n" << r.text;  // an error, not a crash (2: internal error, 128+: signal)
    EXPECT_NE(r.text.find("tiletune: error:"), std::string::npos) << cmd << "\n" << r.text;
    for (const auto& part : c.parts) EXPECT_NE(r.text.find(part), std::string::npos) << cmd << ": '" << part << "' not in\n" << r.text;
  }
  for (const char* o : {"o1.db", "o2.db", "o3.db", "o4.db", "o5.db", "o6.db", "o7.db", "o8.db", "o9.db"})
    EXPECT_FALSE(fs::exists(file(o))) << o;
  EXPECT_EQ(fs::file_size(file("exists.db")), fs::file_size(a_));
}

// ---- compile-only candidates (schema 8) ------------------------------------------------------

namespace {

const std::string kMi300 = "gfx942";
const GemmProblem Big = tiletune::testing::gemm(DataType::BF16, DataType::BF16, false, true, 4096, 4096, 4096, 1);
const GemmProblem Mid = tiletune::testing::gemm(DataType::BF16, DataType::BF16, false, false, 1024, 1024, 1024, 1);

Solution mfma(std::map<std::string, std::int64_t> params) {
  Solution s = find_template("mfma_gemm").default_solution();
  for (const auto& [k, v] : params) s.params[k] = v;
  return s;
}
const Solution M0 = mfma({});
const Solution M1 = mfma({{"MT0", 128}, {"MT1", 128}, {"DU", 32}, {"WM", 64}, {"WN", 64}, {"MI", 32}, {"VW", 8},
                          {"PAD", 8}, {"DB", 1}});
// 108 KiB of LDS: within gfx950's, beyond gfx942's (the constraints prune it there).
const Solution M2 = mfma({{"MT0", 256}, {"MT1", 128}, {"DU", 64}, {"WM", 64}, {"WN", 64}, {"MI", 32}, {"VW", 8},
                          {"PAD", 8}, {"DB", 1}});
const char* const kFigures =
    R"({"vgpr": 128, "agpr": 0, "sgpr": 40, "lds_bytes": 16384, "scratch_bytes": 0, "vgpr_spills": 0, "sgpr_spills": 0, "mfma_instructions": 64})";

// What `tune --compile-only --arch gfx942` leaves: code objects, their figures and the compiled
// rows; no measurement.
void build_compile_only(const std::string& path, const std::vector<std::pair<GemmProblem, Solution>>& candidates) {
  Database db = Database::open(path, Mode::ReadWrite);
  db.upsert_device({"hip", kMi300, "(compile-only: assumed from the arch)", 304, "compile-only"});
  for (const auto& [p, s] : candidates) {
    const std::int64_t pid = db.upsert_problem(p);
    const std::int64_t sid = db.upsert_solution(s, find_template(s.template_name).source_hash());
    CodeObjectRecord c;
    c.cache_key = s.kernel_name() + "|" + p.key() + "|" + kMi300;
    c.solution_id = sid;
    c.arch = kMi300;
    c.compiler_version = "clang-offline 22";
    c.ok = true;
    c.symbol = s.kernel_name();
    c.bytes = fake_code(c.cache_key, 5000);
    db.set_meta(kFiguresMetaPrefix + c.cache_key, kFigures);
    db.add_compiled(kMi300, pid, sid, db.put_code_object(c));
  }
}

// The host device dressed as an MI300X: what a runtime on one reads of its device when it loads a
// database (it launches nothing here).
class AsMi300 final : public gpu::Device {
 public:
  AsMi300() : host_(gpu::open_device(gpu::BackendKind::Host, 0)), info_(device_for_arch(kMi300, std::nullopt)) {}
  const gpu::DeviceInfo& info() const override { return info_; }
  const gpu::Compiler& compiler() const override { return host_->compiler(); }
  std::shared_ptr<gpu::Kernel> load(const gpu::CodeObject& code) override { return host_->load(code); }
  void launch(gpu::Kernel& k, const gpu::LaunchDims& d, const void* arg, std::size_t n, gpu::Stream s) override {
    host_->launch(k, d, arg, n, s);
  }
  void* alloc(std::size_t bytes) override { return host_->alloc(bytes); }
  void free(void* p) noexcept override { host_->free(p); }
  void copy_to_device(void* d, const void* s, std::size_t n) override { host_->copy_to_device(d, s, n); }
  void copy_to_host(void* d, const void* s, std::size_t n) override { host_->copy_to_host(d, s, n); }
  void fill_bytes(void* d, std::uint8_t v, std::size_t n) override { host_->fill_bytes(d, v, n); }
  void copy_2d(void* d, std::size_t dp, const void* s, std::size_t sp, std::size_t w, std::size_t r,
               gpu::Stream st) override {
    host_->copy_2d(d, dp, s, sp, w, r, st);
  }
  void synchronize() override { host_->synchronize(); }
  gpu::Event create_event() override { return host_->create_event(); }
  void destroy_event(gpu::Event e) noexcept override { host_->destroy_event(e); }
  void record(gpu::Event e, gpu::Stream s) override { host_->record(e, s); }
  float elapsed_ms(gpu::Event a, gpu::Event b) override { return host_->elapsed_ms(a, b); }

 private:
  std::unique_ptr<gpu::Device> host_;
  gpu::DeviceInfo info_;
};

}  // namespace

// A database compiled for a GPU that is not here: pack keeps, per problem, the candidate the model
// ranks first among those the arch admits, as compiled and unmeasured; explain shows it as such;
// a runtime on the arch serves none of it, and one elsewhere opens the file as one without winners.
TEST_F(DbToolsTest, CompileOnlyDatabasePacksAndExplainsAsUnmeasured) {
  const std::string co = file("mi300-compiled.db");
  build_compile_only(co, {{Big, M0}, {Big, M1}, {Big, M2}, {Mid, M0}});
  {
    Database src = Database::open(co, Mode::ReadOnly);
    EXPECT_TRUE(src.arches().empty());  // no measurement
    EXPECT_EQ(src.compiled_arches(), std::vector<std::string>{kMi300});
    std::vector<std::string> skipped;
    std::vector<CompiledRecord> big;
    for (const auto& c : src.compiled(kMi300))
      if (c.problem_key == Big.key()) big.push_back(c);
    ASSERT_EQ(big.size(), 3u);
    const auto ranked = rank_compiled(big, compiled_device(src, kMi300), &skipped);
    ASSERT_EQ(ranked.size(), 2u);
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_NE(skipped[0].find("lds_fits"), std::string::npos) << skipped[0];
    EXPECT_FALSE(model_before(ranked[1].estimate, ranked[0].estimate));
  }

  const std::string ship = file("mi300.db");
  const PackResult r = pack(co, ship, {}, false);
  EXPECT_EQ(r.winners, 0u);
  EXPECT_EQ(r.compiled, 2u);  // one per problem
  EXPECT_EQ(r.arches, std::vector<std::string>{kMi300});
  Database packed = Database::open(ship, Mode::ReadOnly);
  EXPECT_TRUE(packed.winners("").empty());
  EXPECT_TRUE(packed.all_measurements().empty());
  const auto kept = packed.compiled("");
  ASSERT_EQ(kept.size(), 2u);
  Database source = Database::open(co, Mode::ReadOnly);
  const Explanation before = explain(source, Big, "");
  ASSERT_EQ(before.compiled.size(), 2u);
  for (const auto& c : kept) {
    EXPECT_EQ(c.figures, kFigures);
    EXPECT_EQ(c.code_bytes, 5000);
    if (c.problem_key == Big.key()) EXPECT_EQ(c.solution, before.compiled[0].record.solution);
    else EXPECT_EQ(c.solution, M0);
  }
  EXPECT_TRUE(verify_code_objects(packed).empty());

  // explain: the arch is the only one; nothing tuned, the candidate shown as unmeasured.
  const Explanation e = explain(packed, Big, "");
  EXPECT_EQ(e.arch, kMi300);
  EXPECT_NE(e.choice, Explanation::Choice::Tuned);
  EXPECT_FALSE(e.measured);
  ASSERT_EQ(e.compiled.size(), 1u);
  const std::string text = format(e);
  EXPECT_EQ(text.find("TUNED"), std::string::npos) << text;
  EXPECT_NE(text.find("measured nothing"), std::string::npos) << text;
  EXPECT_NE(text.find("compiled " + e.compiled[0].record.solution.kernel_name() + ": UNMEASURED"), std::string::npos)
      << text;
  EXPECT_NE(text.find("VGPR 128, AGPR 0, SGPR 40, LDS 16384 bytes"), std::string::npos) << text;
  const auto j = to_json(e);
  EXPECT_EQ(j["measured"], false);
  ASSERT_EQ(j["compiled"].size(), 1u);
  EXPECT_EQ(j["compiled"][0]["measured"], false);
  EXPECT_EQ(j["compiled"][0]["figures"]["vgpr"], 128);
  EXPECT_NE(j["choice"], "tuned");

  // A runtime on an MI300X loads it, serves none of it, and says why.
  ::testing::internal::CaptureStderr();
  {
    runtime::Runtime rt(std::make_unique<AsMi300>(), runtime::Databases{ship, "", ""});
    EXPECT_EQ(rt.tuned_problems(), 0u);
    EXPECT_FALSE(rt.has_exact_winner(Big));
  }
  const std::string warned = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("2 compile-only candidates for gfx942 were never run or timed and are not served"),
            std::string::npos)
      << warned;
  // ... and one on another device opens it as a database without its winners.
  tiletune_handle_t h = nullptr;
  ASSERT_EQ(tiletune_create(&h, ship.c_str(), "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
  tiletune_destroy(h);

  // merge carries the candidates and their figures; a file with neither winners nor candidates
  // is still refused.
  merge(file("m.db"), {co});
  Database merged = Database::open(file("m.db"), Mode::ReadOnly);
  EXPECT_EQ(merged.compiled("").size(), 4u);
  EXPECT_EQ(merged.compiled(kMi300)[0].figures, kFigures);
  Database::open(file("empty.db"), Mode::ReadWrite);
  const std::string err = error_of([&] { pack(file("empty.db"), file("x.db"), {}, false); });
  EXPECT_NE(err.find("nothing to pack"), std::string::npos) << err;

  // The program: pack and explain say it.
  ProgramOutput pr = run_tiletune({"db", "pack", co, file("ship2.db")});
  EXPECT_EQ(pr.status, 0) << pr.text;
  EXPECT_NE(pr.text.find("2 compile-only candidates"), std::string::npos) << pr.text;
  EXPECT_NE(pr.text.find("UNMEASURED"), std::string::npos) << pr.text;
  pr = run_tiletune({"db", "explain", file("ship2.db"), "--problem",
                     R"({"dtype": "bf16", "transA": "N", "transB": "T", "m": 4096, "n": 4096, "k": 4096})"});
  EXPECT_EQ(pr.status, 0) << pr.text;
  EXPECT_NE(pr.text.find("UNMEASURED"), std::string::npos) << pr.text;
}
