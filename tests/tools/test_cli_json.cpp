// `--json` through the program: each command prints exactly one JSON document on stdout with the
// keys docs/cli-json.md names, its text on stderr (tune) or nowhere; a command that fails prints
// a document with "error" and the same exit code.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "db/database.h"
#include "tests/process_util.h"
#include "tests/tiny_sweep.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::testing;
using nlohmann::json;

namespace {

class CliJson : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("TILETUNE_VENDOR", "off", 1);
    dir_ = fs::temp_directory_path() / ("tiletune-cli-json-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "tuned.db").string();
    problem_ = tune_tiny_host_database(db_, dir_.string());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // Runs tiletune; stdout must be one JSON document, whose "command", "schema" and "exit_code" are
  // checked against `command` and the exit status.
  static json run(const std::vector<std::string>& args, const std::string& command, int expect_code = 0,
                  std::string* err = nullptr) {
    std::vector<std::string> argv = {TILETUNE_EXE};
    argv.insert(argv.end(), args.begin(), args.end());
    const Output o = run_to_end(argv, dir_.string(), {"TILETUNE_VENDOR=off"});
    if (err) *err = o.err;
    EXPECT_EQ(o.code, expect_code) << o.err;
    json d;
    try {
      d = json::parse(o.out);  // throws on anything beside the one document
    } catch (const std::exception& e) {
      ADD_FAILURE() << "stdout is not one JSON document: " << e.what() << "\n" << o.out << "\nstderr:\n" << o.err;
      return json::object();
    }
    EXPECT_EQ(d.value("command", ""), command);
    EXPECT_EQ(d.value("schema", 0), 1);
    EXPECT_EQ(d.value("exit_code", -1), expect_code);
    return d;
  }
  static std::string problem_json() { return json(Problem(problem_)).dump(); }

  static fs::path dir_;
  static std::string db_;
  static GemmProblem problem_;
};
fs::path CliJson::dir_;
std::string CliJson::db_;
GemmProblem CliJson::problem_;

TEST_F(CliJson, DbProblems) {
  const json d = run({"db", "problems", db_, "--json"}, "db problems");
  EXPECT_EQ(d.value("database", ""), db_);
  ASSERT_EQ(d["problems"].size(), 1u);
  const json& p = d["problems"][0];
  EXPECT_EQ(p.value("key", ""), Problem(problem_).key());
  EXPECT_EQ(p.value("m", 0), problem_.m);
  EXPECT_EQ(p.value("n", 0), problem_.n);
  EXPECT_EQ(p.value("k", 0), problem_.k);
  EXPECT_EQ(p.value("batch", 0), 1);
  EXPECT_GE(p.value("measurements", 0), 1);
  EXPECT_TRUE(p["id"].is_number_integer());
}

TEST_F(CliJson, DbWinners) {
  const json d = run({"db", "winners", db_, "--json"}, "db winners");
  EXPECT_TRUE(d["arch"].is_null());
  ASSERT_EQ(d["winners"].size(), 1u);
  const json& w = d["winners"][0];
  EXPECT_EQ(w.value("problem", ""), Problem(problem_).key());
  EXPECT_EQ(w.value("template", ""), "host_gemm");
  EXPECT_EQ(w.value("kernel", "").rfind("host_gemm_", 0), 0u);
  EXPECT_EQ(w["params"].value("MT0", 0), 16);
  EXPECT_GT(w.value("ms", 0.0), 0.0);
  EXPECT_GT(w.value("tflops", 0.0), 0.0);
  EXPECT_TRUE(w["vendor_ms"].is_null());  // the vendor was not timed
  EXPECT_TRUE(w["speedup"].is_null());
  EXPECT_TRUE(w["code_object_id"].is_number_integer());
  // --arch filters: an arch with no winners lists none.
  EXPECT_TRUE(run({"db", "winners", db_, "--arch", "sm_90a", "--json"}, "db winners")["winners"].empty());
}

TEST_F(CliJson, DbShow) {
  const json d = run({"db", "show", db_, Problem(problem_).key(), "--json"}, "db show");
  ASSERT_FALSE(d["measurements"].empty());
  const json& m = d["measurements"][0];
  EXPECT_EQ(m.value("status", ""), "ok");
  EXPECT_GT(m.value("median_ms", 0.0), 0.0);
  for (const char* key : {"id", "arch", "kernel", "min_ms", "max_ms", "tflops", "rel_error", "reason", "sweep", "created_at"})
    EXPECT_TRUE(m.contains(key)) << key;
}

TEST_F(CliJson, DbCheckSoundAndFaulty) {
  const json ok = run({"db", "check", db_, "--json"}, "db check");
  EXPECT_TRUE(ok.value("ok", false));
  EXPECT_EQ(ok.value("integrity", ""), "ok");
  EXPECT_TRUE(ok["faults"].empty());
  EXPECT_GT(ok.value("schema_version", 0), 0);

  const std::string bad = (dir_ / "faulty.db").string();
  fs::copy_file(db_, bad, fs::copy_options::overwrite_existing);
  {
    db::Database d = db::Database::open(bad, db::Mode::ReadWrite);
    ASSERT_EQ(sqlite3_exec(d.native_handle(), "UPDATE code_objects SET bytes = x'00' WHERE ok = 1", nullptr, nullptr, nullptr),
              SQLITE_OK);
  }
  const json faulty = run({"db", "check", bad, "--json"}, "db check", 1);
  EXPECT_FALSE(faulty.value("ok", true));
  EXPECT_FALSE(faulty["faults"].empty());
}

TEST_F(CliJson, DbExplainTunedAndUntuned) {
  const json tuned = run({"db", "explain", db_, "--problem", problem_json(), "--json"}, "db explain");
  EXPECT_EQ(tuned.value("choice", ""), "tuned");
  EXPECT_EQ(tuned.value("problem", ""), Problem(problem_).key());
  EXPECT_EQ(tuned["solution"].value("template", ""), "host_gemm");
  EXPECT_GT(tuned["measurement"].value("median_ms", 0.0), 0.0);
  EXPECT_TRUE(tuned["code_object"].is_number_integer());

  GemmProblem other = problem_;
  other.m = 999, other.lda = 999, other.ldc = 999;
  const json untuned = run({"db", "explain", db_, "--problem", json(Problem(other)).dump(), "--json"}, "db explain");
  EXPECT_NE(untuned.value("choice", ""), "tuned");
  EXPECT_FALSE(untuned.value("reason", "").empty());
  EXPECT_TRUE(untuned.contains("solution"));
}

TEST_F(CliJson, DbPackMergeKeygen) {
  const std::string priv = (dir_ / "key.pem").string(), pub = (dir_ / "key.pub").string();
  const json key = run({"db", "keygen", priv, pub, "--json"}, "db keygen");
  EXPECT_FALSE(key.value("key_id", "").empty());
  EXPECT_EQ(key.value("public_key", ""), pub);

  const std::string packed = (dir_ / "packed.db").string();
  const json pack = run({"db", "pack", db_, packed, "--force", "--sign", priv, "--json"}, "db pack");
  EXPECT_EQ(pack.value("winners", 0), 1);
  EXPECT_EQ(pack.value("destination", ""), packed);
  EXPECT_EQ(pack.value("signing_key", ""), key.value("key_id", "?"));
  EXPECT_GT(pack.value("packed_bytes", 0), 0);
  EXPECT_EQ(pack["arches"].size(), 1u);

  const std::string merged = (dir_ / "merged.db").string();
  fs::remove(merged);
  const json merge = run({"db", "merge", merged, db_, "--json"}, "db merge");
  ASSERT_EQ(merge["sources"].size(), 1u);
  EXPECT_EQ(merge["sources"][0].value("source", ""), db_);
  EXPECT_GE(merge["sources"][0].value("added", 0), 1);
  EXPECT_EQ(merge.value("winners", 0), 1);
  EXPECT_EQ(merge.value("problems", 0), 1);
}

TEST_F(CliJson, AFailedCommandPrintsAnErrorDocument) {
  std::string err;
  const json d = run({"db", "problems", (dir_ / "missing.db").string(), "--json"}, "db problems", 1, &err);
  EXPECT_NE(d.value("error", "").find("missing.db"), std::string::npos);
  EXPECT_NE(err.find("missing.db"), std::string::npos);  // and on stderr, as without --json
}

TEST_F(CliJson, Devices) {
  const json d = run({"devices", "--json"}, "devices");
  EXPECT_EQ(d.value("auto", ""), "host");  // no GPU where the tests run; the host is always built
  bool host = false;
  for (const json& b : d["backends"]) {
    EXPECT_TRUE(b.contains("built"));
    if (b.value("backend", "") != "host") continue;
    host = true;
    ASSERT_EQ(b["devices"].size(), 1u);
    const json& dev = b["devices"][0];
    EXPECT_EQ(dev.value("kind", ""), "cpu");
    EXPECT_FALSE(dev.contains("gpu"));
    EXPECT_GE(dev["cpu"].value("threads", 0), 1);
    EXPECT_GE(dev["cpu"].value("kernel_threads", 0), 1);
    EXPECT_TRUE(dev["cpu"]["caches"].is_array());
    EXPECT_TRUE(dev["cpu"]["simd"].contains("isa"));
  }
  EXPECT_TRUE(host);
}

TEST_F(CliJson, DevicesInTextSpeaksOfTheCpuInCpuTerms) {
  const Output o = run_to_end({TILETUNE_EXE, "devices"}, dir_.string());
  ASSERT_EQ(o.code, 0) << o.err;
  const std::size_t at = o.out.find("host ");
  ASSERT_NE(at, std::string::npos) << o.out;
  const std::string line = o.out.substr(at, o.out.find('\n', at) - at);
  EXPECT_NE(line.find("threads"), std::string::npos) << line;
  EXPECT_EQ(line.find("multiprocessors"), std::string::npos) << line;
  EXPECT_EQ(line.find("shared/block"), std::string::npos) << line;
}

// The tune summary: counts, per-problem winners, the database, the exit status; the text summary
// moves to stderr.
TEST_F(CliJson, Tune) {
  const std::string config = (dir_ / "tune.json").string(), db = (dir_ / "tune.db").string();
  std::ofstream(config) << R"({"name": "json-tune",
      "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 40, "n": 24, "k": 16}],
      "templates": {"host_gemm": {"parameters": {"MT0": [16], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [2, 4]}}},
      "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 3, "target_ms": 2}})";
  std::string err;
  const json d = run({"tune", config, "--db", db, "--backend", "host", "--no-vendor", "--json"}, "tune", 0, &err);
  EXPECT_NE(err.find("winners on"), std::string::npos) << err;
  EXPECT_EQ(d.value("status", ""), "ok");
  EXPECT_EQ(d.value("database", ""), db);
  EXPECT_EQ(d.value("config", ""), "json-tune");
  EXPECT_EQ(d["device"].value("backend", ""), "host");
  EXPECT_FALSE(d["device"].value("arch", "").empty());
  const json& c = d["candidates"];
  EXPECT_EQ(c.value("enumerated", 0), 2);
  EXPECT_EQ(c.value("pruned", -1), 0);
  EXPECT_EQ(c.value("compiled", 0), 2);
  EXPECT_EQ(c.value("compile_failed", -1), 0);
  EXPECT_EQ(c.value("measured", 0), 2);
  EXPECT_TRUE(d["first_compile_error"].is_null());
  ASSERT_EQ(d["problems"].size(), 1u);
  const json& p = d["problems"][0];
  EXPECT_EQ(p.value("status", ""), "tuned");
  EXPECT_EQ(p.value("shape", ""), "f32>f32 NN 40x24x16");
  const json& w = p["winner"];
  EXPECT_EQ(w.value("kernel", "").rfind("host_gemm_", 0), 0u);
  EXPECT_FALSE(w.value("vendor", true));
  EXPECT_GT(w.value("ms", 0.0), 0.0);
  EXPECT_TRUE(w["vendor_ms"].is_null());
  EXPECT_TRUE(w["speedup"].is_null());

  // A rerun resumes: nothing compiled or measured, the same winner.
  const json again = run({"tune", config, "--db", db, "--backend", "host", "--no-vendor", "--json"}, "tune");
  EXPECT_EQ(again["candidates"].value("already_measured", 0), 2);
  EXPECT_EQ(again["candidates"].value("compiled", -1), 0);
  EXPECT_EQ(again["problems"][0]["winner"].value("kernel", ""), w.value("kernel", "?"));
}

}  // namespace
