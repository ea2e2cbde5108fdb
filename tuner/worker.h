// Measuring one candidate (validate against the reference, then time it), and crash isolation:
// running that measurement in a worker process, so that a kernel that faults, hangs or kills its
// process is recorded as failed and the sweep goes on with a fresh worker.
//
//   Measurer       - measures in this process (on a device and a database given to it).
//   run_worker     - the `tiletune worker` subcommand: a Measurer behind a line protocol.
//   WorkerProcess  - the sweep's side: starts `tiletune worker` (fork + exec), sends requests,
//                    waits with a time-out, kills and restarts it when needed.
//
// The protocol: one JSON object per line, over the worker's stdin and stdout (the worker's
// stderr passes through; anything a kernel or library prints on stdout goes to stderr too).
//   worker -> parent, once at start:  {"hello": "tiletune-worker", "arch": "sm_90a", "pid": 123}
//   parent -> worker, per candidate:  {"problem": {GemmProblem spec}, "template": "simt_gemm",
//                                      "params": {"MT0": 128, ...}, "code_object_id": 42,
//                                      "benchmark": {"warmup": 2, "min_iterations": 5, ...}}
//                     or for the vendor library:  {"problem": {...}, "vendor": true, "benchmark": {...}}
//                       with "choice": {algorithm fields} for one of its other algorithms, and
//                       "alternatives": N to be told up to N of them
//   worker -> parent:  {"phase": "ready"}  when the problem data are made and the kernel loaded:
//                      the per-candidate time-out starts here (making a problem's inputs and its
//                      fp64 reference can take long, and is done once per problem). Before it,
//                      the prepare time-out runs; overrunning it is the tuner's failure, not the
//                      candidate's: the parent answers Status::PrepareTimeout.
//   worker -> parent:  {"status": "ok" | "invalid" | "launch_failed" | "crashed" | "unsupported",
//                       "reason": "...", "rel_error": x, "min_ms": x, "median_ms": x, "max_ms": x,
//                       "vendor": "cuBLAS", "alternatives": [{...}, ...]}   (unmeasured numbers are null)
// The worker answers "crashed" when a launch failed and the device is unusable afterwards (CUDA's
// sticky errors, e.g. an illegal address), then exits. It exits when its stdin closes.
// The parent adds "crashed" (the worker died: "worker killed by SIGSEGV (Segmentation fault)")
// and "timeout" (no result in time: the worker is killed with SIGKILL).
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "db/records.h"
#include "gpu/backend.h"
#include "solutions/kernel_template.h"
#include "solutions/gemm_problem.h"
#include "solutions/solution.h"
#include "tuner/child_process.h"
#include "tuner/config.h"

namespace tiletune::db {
class Database;
}
namespace tiletune::gpu {
class Vendor;
}
namespace tiletune::ops {
class Inputs;
}

namespace tiletune::tuner {


// How many problems' data a measuring worker keeps at once: the problems a slot works on while
// the compiler is behind (SlotRunner's groups per slot: one fewer) and the one it just finished.
inline constexpr std::size_t kProblemsKept = 4;

struct MeasureRequest {
  Problem problem;
  bool vendor = false;               // time the vendor library (cuBLAS, cuDNN) instead of a kernel
  Solution solution;                 // template name and parameter values (vendor: the algorithm's)
  int vendor_alternatives = 0;       // vendor: name up to this many of its other algorithms
  std::int64_t code_object_id = 0;   // the compiled kernel, in the database
  BenchmarkOptions benchmark;
  // In-process only (never sent): the template to use instead of find_template(solution's).
  const KernelTemplate* tmpl = nullptr;
};


// The Outcome (status Unsupported: the vendor only; timings NaN where not measured), and what
// the worker adds for the sweep.
struct MeasureResult : db::Outcome {
  std::string vendor;         // the vendor library's name (vendor requests)
  std::vector<std::map<std::string, std::int64_t>> alternatives;  // its other algorithms (when asked)
  // Where the worker's time went (seconds), to see what limits a sweep's rate: the problem's data
  // (inputs, reference: once per problem) and the code object; validation; the timed runs.
  double prepare_s = 0, validate_s = 0, timing_s = 0;
};

nlohmann::json to_json(const MeasureRequest& r);
MeasureRequest request_from_json(const nlohmann::json& j);  // throws Error on bad fields
nlohmann::json to_json(const MeasureResult& r);
MeasureResult result_from_json(const nlohmann::json& j);

// Measures candidates on one device. Keeps the current problem's data (inputs, reference) across
// requests for the same problem, and loaded kernels by code object id.
class Measurer {
 public:
  // `db` is only read (code objects).
  Measurer(gpu::Device& dev, db::Database& db);
  ~Measurer();
  // A kernel's failure is a result, never an exception. `on_ready` runs once the problem data
  // exist and the kernel is loaded, just before its first launch.
  MeasureResult measure(const MeasureRequest& r, const std::function<void()>& on_ready = {});

 private:
  ops::Inputs& inputs_for(const Problem& p);
  std::shared_ptr<gpu::Kernel> load_kernel(std::int64_t code_object_id);
  MeasureResult measure_kernel(const MeasureRequest& r, const std::function<void()>& on_ready);
  MeasureResult measure_vendor(const MeasureRequest& r, const std::function<void()>& on_ready);

  gpu::Device& dev_;
  db::Database& db_;
  // The data (inputs, reference) of the last kProblemsKept problems measured, most recent last:
  // a slot may work on several problems at once while the compiler is behind (SlotRunner).
  struct Cached {
    std::string key;
    std::unique_ptr<ops::Inputs> inputs;
  };
  std::vector<Cached> cache_;
  std::unordered_map<std::int64_t, std::shared_ptr<gpu::Kernel>> kernels_;
  std::unique_ptr<gpu::Vendor> vendor_;  // made on the first vendor request
};

// `tiletune worker`: opens the device and the database (read-only), says hello, then answers
// requests from stdin until it closes. Returns the process's exit status.
int run_worker(gpu::BackendKind backend, int device, const std::string& db_path);

// The parent's handle on one worker process, started lazily and restarted after it dies.
class WorkerProcess {
 public:
  // `exe` is the tiletune program; `arch` the parent's device arch (a worker that sees another
  // one is refused).
  WorkerProcess(std::string exe, gpu::BackendKind backend, int device, std::string db_path, std::string arch);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Starts a worker if none runs (Error if it cannot start or says no hello), sends `r`, waits at
  // most `prepare_timeout_s` for the worker's "ready" and then at most `timeout_s` for the result.
  // A worker that dies gives "crashed", one that overruns is killed and gives "timeout" (or
  // PrepareTimeout before "ready"); either way the next call starts a fresh one. A worker killed
  // by a SIGKILL this side did not send (the OOM killer) is not the candidate's fault: it is
  // measured once more in a fresh worker before "crashed" is its result.
  MeasureResult measure(const MeasureRequest& r, double timeout_s, double prepare_timeout_s = 1800);
  int starts() const { return starts_; }  // workers started so far

  // Starting ahead of the first measure, in two halves so that several workers open their
  // devices at once: launch() the process, then await_hello() (Error as start() would give; the
  // process is stopped then). Call both on a thread that outlives the worker (see SlotRunner).
  void launch();
  void await_hello();

 private:
  MeasureResult measure_once(const MeasureRequest& r, double timeout_s, double prepare_timeout_s);
  void start() {
    launch();
    await_hello();
  }

  std::string exe_, arch_;
  ChildProcess child_;
  int starts_ = 0;
};

}  // namespace tiletune::tuner
