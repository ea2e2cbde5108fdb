// Crash isolation: candidates that segfault, hang or give wrong results (the test-only template
// tests/templates/crashy_gemm) are measured in a worker process and recorded as failed with their
// reason; the sweep completes, the good candidate wins, and a rerun measures nothing again.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "db/database.h"
#include "gpu/backend.h"
#include "tuner/config.h"
#include "solutions/kernel_template.h"
#include "tuner/compile_process.h"
#include "tuner/enumerator.h"
#include "tuner/sweep.h"
#include "tuner/worker.h"
#include "tests/runtime_test_util.h"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

const char* kConfig = R"({
  "name": "isolation-test",
  "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 40, "n": 24, "k": 16}],
  "templates": {"crashy_gemm": {"parameters": {"MODE": [0, 1, 2, 3]}}},
  "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 5, "timeout_s": 3}
})";

std::string kernel(int mode) { return "crashy_gemm_MODE-" + std::to_string(mode); }

// Before anything loads templates (builtin_templates() reads it once); the workers inherit it.
const bool kTemplatePathSet = ::setenv("TILETUNE_TEMPLATE_PATH", TILETUNE_SOURCE_DIR "/tests/templates", 1) == 0;

class Isolation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(kTemplatePathSet);
    dir_ = fs::temp_directory_path() / ("tiletune-isolation-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    db_ = (dir_ / "tuned.db").string();
    config_ = tuner::parse_config(kConfig, dir_.string());
    first_ = tuner::run_sweep(config_, options(), stderr);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static tuner::SweepOptions options() {
    tuner::SweepOptions o;
    o.backend = gpu::BackendKind::Host;
    o.compare_vendor = false;  // the candidates' isolation is under test; the vendor would win
    o.db_path = db_;
    o.isolation = tuner::Isolation::Process;
    o.worker_exe = TILETUNE_EXE;
    return o;
  }

  // kernel name -> its measurement
  static std::map<std::string, db::MeasurementRow> measurements() {
    db::Database d = db::Database::open(db_, db::Mode::ReadOnly);
    auto pid = d.find_problem(config_.problems[0].key());
    EXPECT_TRUE(pid);
    std::map<std::string, db::MeasurementRow> out;
    if (pid)
      for (const auto& m : d.measurements(*pid)) out[m.kernel_name] = m;
    return out;
  }

  static fs::path dir_;
  static std::string db_;
  static tuner::TuningConfig config_;
  static tuner::SweepSummary first_;
};
fs::path Isolation::dir_;
std::string Isolation::db_;
tuner::TuningConfig Isolation::config_;
tuner::SweepSummary Isolation::first_;

TEST_F(Isolation, EveryFailureIsRecordedWithItsReasonAndTheSweepCompletes) {
  EXPECT_EQ(first_.candidates, 4u);
  EXPECT_EQ(first_.benchmarked, 1u);
  EXPECT_EQ(first_.crashed, 1u);
  EXPECT_EQ(first_.timed_out, 1u);
  EXPECT_EQ(first_.invalid, 1u);
  EXPECT_EQ(first_.launch_failed, 0u);

  auto m = measurements();
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[kernel(0)].status, db::Status::Ok) << m[kernel(0)].reason;
  EXPECT_GT(m[kernel(0)].median_ms, 0);
  EXPECT_EQ(m[kernel(1)].status, db::Status::Crashed);
  EXPECT_NE(m[kernel(1)].reason.find("SIGSEGV"), std::string::npos) << m[kernel(1)].reason;
  EXPECT_EQ(m[kernel(2)].status, db::Status::Timeout);
  EXPECT_NE(m[kernel(2)].reason.find("3 s"), std::string::npos) << m[kernel(2)].reason;
  EXPECT_EQ(m[kernel(3)].status, db::Status::Invalid);
  EXPECT_GT(m[kernel(3)].rel_error, 0.01);
}

TEST_F(Isolation, TheCorrectCandidateWins) {
  ASSERT_EQ(first_.winners.size(), 1u);
  EXPECT_EQ(first_.winners[0].kernel_name, kernel(0));
  db::Database d = db::Database::open(db_, db::Mode::ReadOnly);
  auto w = d.winners("");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].solution.kernel_name(), kernel(0));
  EXPECT_EQ(d.integrity_check(), "ok");
}

TEST_F(Isolation, RerunMeasuresNothingAgain) {
  tuner::SweepSummary again = tuner::run_sweep(config_, options(), stderr);
  EXPECT_EQ(again.already_done, 4u);
  EXPECT_EQ(again.compiled, 0u);
  EXPECT_EQ(again.benchmarked + again.invalid + again.crashed + again.timed_out + again.launch_failed, 0u);
  ASSERT_EQ(again.winners.size(), 1u);
  EXPECT_EQ(again.winners[0].kernel_name, kernel(0));
}

TEST_F(Isolation, InProcessMeasuringStillWorksForWellBehavedKernels) {
  tuner::TuningConfig c = tuner::parse_config(kConfig, dir_.string());
  c.templates[0].set_values("MODE", {0, 3});
  tuner::SweepOptions o = options();
  o.isolation = tuner::Isolation::InProcess;
  o.db_path = (dir_ / "in_process.db").string();
  tuner::SweepSummary s = tuner::run_sweep(c, o, stderr);
  EXPECT_EQ(s.benchmarked, 1u);
  EXPECT_EQ(s.invalid, 1u);
  ASSERT_EQ(s.winners.size(), 1u);
  EXPECT_EQ(s.winners[0].kernel_name, kernel(0));
}

TEST_F(Isolation, AWorkerThatCannotStartStopsTheSweepWithoutRecordingAnything) {
  tuner::TuningConfig c = tuner::parse_config(kConfig, dir_.string());
  c.templates[0].set_values("MODE", {0});
  tuner::SweepOptions o = options();
  o.db_path = (dir_ / "bad_worker.db").string();
  o.worker_exe = "/bin/false";
  EXPECT_THROW(tuner::run_sweep(c, o, stderr), Error);
  db::Database d = db::Database::open(o.db_path, db::Mode::ReadOnly);
  auto pid = d.find_problem(c.problems[0].key());
  ASSERT_TRUE(pid);
  EXPECT_TRUE(d.measurements(*pid).empty());
}

// On several devices, one whose worker does not start (here one of two logical workers: a wrapper
// that fails whichever launch runs first) is left out with its reason and the other measures
// everything; when no worker starts, the error names every device.
TEST_F(Isolation, ADeviceWhoseWorkerCannotStartIsLeftOutAndTheOthersMeasureEverything) {
  tuner::TuningConfig c = tuner::parse_config(kConfig, dir_.string());
  c.templates[0].set_values("MODE", {0, 3});
  const fs::path wrapper = dir_ / "fails_first.sh";
  std::ofstream(wrapper) << "#!/bin/sh\nif mkdir '" << (dir_ / "first_launch").string()
                         << "' 2>/dev/null; then echo 'no device here' >&2; exit 3; fi\nexec '" TILETUNE_EXE "' \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  tuner::SweepOptions o = options();
  o.db_path = (dir_ / "one_left_out.db").string();
  o.worker_exe = wrapper.string();
  o.devices = {0, 1};
  const tuner::SweepSummary s = tuner::run_sweep(c, o, stderr);
  ASSERT_EQ(s.devices_left_out.size(), 1u);
  const int lost = s.devices_left_out[0].rfind("device 1: ", 0) == 0 ? 1 : 0;
  EXPECT_EQ(s.devices_left_out[0].rfind("device " + std::to_string(lost) + ": ", 0), 0u) << s.devices_left_out[0];
  EXPECT_NE(s.devices_left_out[0].find("status 3"), std::string::npos) << s.devices_left_out[0];
  EXPECT_EQ(s.benchmarked + s.invalid, 2u);
  ASSERT_EQ(s.per_device.size(), 1u);
  EXPECT_EQ(s.per_device[0].device, 1 - lost);
  EXPECT_EQ(s.per_device[0].measured, 2u);
  ASSERT_EQ(s.winners.size(), 1u);
  EXPECT_EQ(s.winners[0].kernel_name, kernel(0));

  o.db_path = (dir_ / "none_started.db").string();
  o.worker_exe = "/bin/false";
  try {
    tuner::run_sweep(c, o, stderr);
    ADD_FAILURE() << "a sweep whose workers all fail to start ran";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("device 0: "), std::string::npos) << what;
    EXPECT_NE(what.find("device 1: "), std::string::npos) << what;
  }
}

// A worker slow to get ready (here: a problem whose fp64 reference takes tens of seconds to make, and
// a prepare time-out far below that, yet long enough for the small problem under a sanitizer on busy cores) is the tuner's failure, not a candidate's: nothing is recorded
// for that problem, the next problem is tuned, and a rerun tries the slow one again.
TEST_F(Isolation, AWorkerSlowToPrepareAProblemBlamesNoCandidate) {
  tuner::TuningConfig c = tuner::parse_config(R"({
    "name": "prepare-test",
    "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 4096, "n": 4096, "k": 4096},
                 {"dtype": "f32", "transA": "N", "transB": "N", "m": 40, "n": 24, "k": 16}],
    "templates": {"crashy_gemm": {"parameters": {"MODE": [0]}}},
    "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 5, "timeout_s": 3,
                  "prepare_timeout_s": 2}
  })", dir_.string());
  tuner::SweepOptions o = options();
  o.db_path = (dir_ / "prepare.db").string();
  o.compare_vendor = false;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(run == 0 ? "first run" : "rerun");
    tuner::SweepSummary s = tuner::run_sweep(c, o, stderr);
    ASSERT_EQ(s.unprepared.size(), 1u);
    EXPECT_NE(s.unprepared[0].find(c.problems[0].key()), std::string::npos) << s.unprepared[0];
    EXPECT_NE(s.unprepared[0].find("not ready within 2 s"), std::string::npos) << s.unprepared[0];
    EXPECT_EQ(s.timed_out + s.crashed + s.launch_failed + s.invalid, 0u) << "no candidate blamed";
    EXPECT_EQ(s.over_budget, 0u) << "skipped, not over a budget";
    EXPECT_EQ(s.benchmarked, run == 0 ? 1u : 0u) << "the small problem is tuned once";
    EXPECT_EQ(s.already_done, run == 0 ? 0u : 1u) << "the slow problem has nothing recorded";
    ASSERT_EQ(s.winners.size(), 1u);
    EXPECT_EQ(s.winners[0].problem.key(), c.problems[1].key());
  }
  db::Database d = db::Database::open(o.db_path, db::Mode::ReadOnly);
  EXPECT_TRUE(d.measurements(*d.find_problem(c.problems[0].key())).empty());
}

// The same on a CUDA GPU: an illegal address (a sticky error: the worker's context is lost) and a
// kernel that never ends; each later candidate gets a fresh worker and a working GPU.
TEST(IsolationCuda, IllegalAddressAndHangAreRecordedAndTheGpuRecovers) {
  if (!gpu::backend_built(gpu::BackendKind::Cuda) || gpu::list_devices(gpu::BackendKind::Cuda).empty())
    GTEST_SKIP() << "no CUDA device";
  fs::path dir = fs::temp_directory_path() / ("tiletune-isolation-cuda-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  tuner::TuningConfig c = tuner::parse_config(R"({
    "name": "isolation-cuda-test",
    "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 256, "n": 128, "k": 64}],
    "templates": {"crashy_gemm_cuda": {"parameters": {"MODE": [0, 1, 2, 3]}}},
    "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 5, "timeout_s": 5}
  })", dir.string());
  tuner::SweepOptions o;
  o.backend = gpu::BackendKind::Cuda;
  o.db_path = (dir / "cuda.db").string();
  o.isolation = tuner::Isolation::Process;
  o.worker_exe = TILETUNE_EXE;
  tuner::SweepSummary s = tuner::run_sweep(c, o, stderr);
  tuner::print_summary(s, stderr);
  EXPECT_EQ(s.benchmarked, 1u);
  EXPECT_EQ(s.crashed, 1u);
  EXPECT_EQ(s.timed_out, 1u);
  EXPECT_EQ(s.invalid, 1u);
  ASSERT_EQ(s.winners.size(), 1u);
  EXPECT_EQ(s.winners[0].kernel_name, "crashy_gemm_cuda_MODE-0");
  EXPECT_GT(s.winners[0].vendor_tflops, 0) << "cuBLAS, timed in a fresh worker after the crash and the hang";
  db::Database d = db::Database::open(o.db_path, db::Mode::ReadOnly);
  for (const auto& m : d.measurements(*d.find_problem(c.problems[0].key()))) {
    std::fprintf(stderr, "%s: %s %s\n", m.kernel_name.c_str(), db::to_string(m.status), m.reason.c_str());
    if (m.kernel_name == "crashy_gemm_cuda_MODE-1") {
      EXPECT_EQ(m.status, db::Status::Crashed);
      EXPECT_NE(m.reason.find("illegal"), std::string::npos) << m.reason;
    }
    if (m.kernel_name == "crashy_gemm_cuda_MODE-2") EXPECT_EQ(m.status, db::Status::Timeout);
  }
  fs::remove_all(dir);
}

TEST(WorkerProtocol, RequestsAndResultsRoundTrip) {
  tuner::MeasureRequest r;
  GemmProblem g;
  g.m = 7;
  g.trans_b = true;
  r.problem = g;
  r.solution = {"crashy_gemm", {{"MODE", 2}}};
  r.code_object_id = 42;
  r.benchmark.timeout_s = 3;
  tuner::MeasureRequest back = tuner::request_from_json(nlohmann::json::parse(tuner::to_json(r).dump()));
  EXPECT_EQ(back.problem.key(), r.problem.key());
  EXPECT_EQ(back.solution, r.solution);
  EXPECT_EQ(back.code_object_id, 42);
  EXPECT_FALSE(back.vendor);
  EXPECT_EQ(back.benchmark.timeout_s, 3);

  tuner::MeasureResult m;
  m.status = db::Status::Invalid;
  m.reason = "off by one";
  m.rel_error = 0.5;
  tuner::MeasureResult mb = tuner::result_from_json(nlohmann::json::parse(tuner::to_json(m).dump()));
  EXPECT_EQ(mb.status, db::Status::Invalid);
  EXPECT_EQ(mb.reason, "off by one");
  EXPECT_EQ(mb.rel_error, 0.5);
  EXPECT_TRUE(std::isnan(mb.median_ms));
}

// Operand repacking on the host (solutions/gemm_problem.h): with "repack" a problem whose A and B have odd
// leading dimensions (or a batch odd strides) gets candidates that copy them first into the
// workspace. crashy_gemm's MODE 4 is right only on 16-byte aligned operands, as a TMA kernel: it
// validates only where the copies were made, in the tuner and in the runtime (on fresh data).
// "REPACKED > 0" leaves only the copying candidates.
TEST(Repack, CopiedOperandCandidatesValidateAndTheRuntimeServesThem) {
  ASSERT_TRUE(kTemplatePathSet);
  const fs::path dir = fs::temp_directory_path() / ("tiletune-repack-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "repack.db").string();
  const tuner::TuningConfig cfg = tuner::parse_config(R"({"name": "repack-test",
      "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 33, "n": 20, "k": 17, "lda": 35, "ldb": 19},
                   {"dtype": "f32", "transA": "T", "transB": "T", "m": 16, "n": 12, "k": 9, "lda": 11, "ldb": 13,
                    "batch": 3, "stride_a": 179, "stride_b": 118, "beta_zero": false}],
      "templates": {"crashy_gemm": {"repack": true, "parameters": {"MODE": [4]}, "constraints": {"copies_only": "REPACKED > 0"}}},
      "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 3, "target_ms": 2}})",
                                                      dir.string());
  ASSERT_EQ(cfg.problems.size(), 2u);
  for (const Problem& p : cfg.problems) EXPECT_GT(repack_plan(p.gemm()).bytes, 0) << p.key();
  tuner::SweepOptions o;
  o.backend = gpu::BackendKind::Host;
  o.compare_vendor = false;
  o.db_path = db;
  o.isolation = tuner::Isolation::Process;  // the worker protocol carries REPACK like any parameter
  o.worker_exe = TILETUNE_EXE;
  const tuner::SweepSummary s = tuner::run_sweep(cfg, o, stderr);
  ASSERT_EQ(s.winners.size(), 2u);
  db::Database d = db::Database::open(db, db::Mode::ReadOnly);
  const std::string arch = gpu::list_devices(gpu::BackendKind::Host)[0].arch;
  for (const auto& w : d.winners(arch)) EXPECT_EQ(w.solution.params.at("REPACK"), 1) << w.solution.kernel_name();
  ::setenv("TILETUNE_VENDOR", "off", 1);
  tiletune_handle_t h = nullptr;
  ASSERT_EQ(tiletune_create(&h, db.c_str(), "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
  for (const Problem& p : cfg.problems) {
    auto r = testing_util::dispatch_host(h, p.gemm());
    EXPECT_TRUE(r.ok) << p.key() << ": " << r.reason;
  }
  tiletune_stats_t st{};
  ASSERT_EQ(tiletune_get_stats(h, &st), TILETUNE_SUCCESS);
  EXPECT_EQ(st.tuned, 2u);
  tiletune_destroy(h);
  ::unsetenv("TILETUNE_VENDOR");
  fs::remove_all(dir);
}

// A worker killed from outside (a SIGKILL, as the OOM killer sends) is not the candidate's fault
// (issue 17): it is measured again in a fresh worker and recorded as what it is. crashy_gemm's
// MODE 5 kills its own worker on its first run only. Before, it was recorded as crashed for good.
TEST(OutsideKill, ACandidateWhoseWorkerIsKilledFromOutsideIsMeasuredAgain) {
  ASSERT_TRUE(kTemplatePathSet);
  const fs::path dir = fs::temp_directory_path() / ("tiletune-outside-kill-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path marker = dir / "killed-once";
  ::setenv("TILETUNE_TEST_MARKER", marker.c_str(), 1);
  const tuner::TuningConfig cfg = tuner::parse_config(R"({"name": "outside-kill",
      "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 40, "n": 24, "k": 16}],
      "templates": {"crashy_gemm": {"parameters": {"MODE": [5]}}},
      "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 3, "target_ms": 2, "timeout_s": 30}})",
                                                      dir.string());
  tuner::SweepOptions o;
  o.backend = gpu::BackendKind::Host;
  o.compare_vendor = false;
  o.db_path = (dir / "kill.db").string();
  o.isolation = tuner::Isolation::Process;
  o.worker_exe = TILETUNE_EXE;
  const tuner::SweepSummary s = tuner::run_sweep(cfg, o, stderr);
  ::unsetenv("TILETUNE_TEST_MARKER");
  EXPECT_TRUE(fs::exists(marker)) << "the first worker was not killed: the test tests nothing";
  ASSERT_EQ(s.winners.size(), 1u) << "the candidate was blamed for the outside kill";
  db::Database d = db::Database::open(o.db_path, db::Mode::ReadOnly);
  for (const auto& m : d.all_measurements()) EXPECT_EQ(m.status, db::Status::Ok) << m.reason;
  fs::remove_all(dir);
}

}  // namespace

// Compile servers (tuner/compile_process.h), on the host backend: a request compiled by a server
// process gives what this process's compiler gives; a server that dies mid-compile costs that
// code object (failed, with the reason) and the next request gets a fresh server; a program that
// is no compile server leaves the compiles to this process.
class CompileServer : public ::testing::Test {
 protected:
  void SetUp() override {
    local_ = gpu::make_compiler(gpu::BackendKind::Host);
    const tuner::TuningConfig config = tuner::parse_config(R"({
      "name": "compile-server-test",
      "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 40, "n": 24, "k": 16}],
      "templates": {"host_gemm": {}}
    })", fs::temp_directory_path().string());
    const auto devs = gpu::list_devices(gpu::BackendKind::Host);
    ASSERT_FALSE(devs.empty());
    const auto e = tuner::enumerate(config.templates, config.problems, devs[0]);
    ASSERT_GE(e.candidates.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      const auto& c = e.candidates[i];
      requests_.push_back(c.tmpl->compile_request(c.solution, config.problems[c.problem_index], devs[0]));
    }
  }
  std::unique_ptr<gpu::Compiler> local_;
  std::vector<gpu::CompileRequest> requests_;
};

TEST_F(CompileServer, CompilesWhatThisProcessCompiles) {
  tuner::ProcessCompiler servers(TILETUNE_EXE, gpu::BackendKind::Host, *local_);
  for (const auto& r : requests_) {
    const gpu::CompileResult here = local_->compile(r), there = servers.compile(r);
    ASSERT_TRUE(here.ok) << here.log;
    EXPECT_TRUE(there.ok) << there.log;
    EXPECT_EQ(there.code.symbol, here.code.symbol);
    EXPECT_GT(there.code.bytes.size(), 1000u);
    EXPECT_GE(there.cpu_s, 0);  // the server's CPU seconds come back with the code object
    EXPECT_LE(here.cpu_s, 0);   // in this process: the caller measures them (0: from the compile cache)
  }
  // Again on the same (now warm) server: its header set is not sent twice, and it still compiles.
  EXPECT_TRUE(servers.compile(requests_[0]).ok);
}

// A server dies with the thread that started it (PR_SET_PDEATHSIG): threads that come and go,
// one after the other (a new one may reuse an old one's id), each still get their compile done.
TEST_F(CompileServer, ThreadsThatComeAndGoEachGetAWorkingServer) {
  tuner::ProcessCompiler servers(TILETUNE_EXE, gpu::BackendKind::Host, *local_);
  for (int i = 0; i < 3; ++i) {
    gpu::CompileResult r;
    std::thread t([&] { r = servers.compile(requests_[std::size_t(i) % requests_.size()]); });
    t.join();
    EXPECT_TRUE(r.ok) << "thread " << i << ": " << r.log;
  }
}

TEST_F(CompileServer, AServerThatDiesCostsOneCodeObject) {
  // Says hello, reads one request, then kills itself as a crashing compiler would.
  const fs::path script = fs::temp_directory_path() / ("tiletune-crashy-compiler-" + std::to_string(::getpid()));
  {
    std::ofstream f(script);
    f << "#!/bin/sh\necho '{\"hello\": \"tiletune-compile-server\"}'\nread line\nkill -SEGV $$\n";
  }
  fs::permissions(script, fs::perms::owner_all);
  tuner::ProcessCompiler servers(script.string(), gpu::BackendKind::Host, *local_);
  for (int i = 0; i < 2; ++i) {  // each compile gets a fresh server, which dies again
    const gpu::CompileResult r = servers.compile(requests_[0]);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.log.find("compile server killed by SIGSEGV"), std::string::npos) << r.log;
    EXPECT_NE(r.log.find("while compiling"), std::string::npos) << r.log;
  }
  fs::remove(script);
}

TEST_F(CompileServer, AProgramThatIsNoServerLeavesTheCompileToThisProcess) {
  tuner::ProcessCompiler servers("/bin/false", gpu::BackendKind::Host, *local_);
  const gpu::CompileResult r = servers.compile(requests_[1]);
  EXPECT_TRUE(r.ok) << r.log;
  EXPECT_EQ(r.code.symbol, local_->compile(requests_[1]).code.symbol);
}
