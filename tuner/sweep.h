// One tuning sweep: enumerate -> compile (parallel, cached in the database) -> validate ->
// benchmark -> database, one committed row per finished candidate so that a sweep stopped at any
// point keeps its work and a rerun of the same config redoes none of it.
#pragma once
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "tuner/config.h"

namespace tiletune::tuner {

// Where candidates are validated and timed.
enum class Isolation {
  InProcess,  // in the sweep's own process: a kernel that faults takes the sweep down (a rerun resumes)
  Process,    // in a worker process (`tiletune worker`): a fault, a hang or a kill is recorded as the
              // candidate's failure ("crashed", "timeout") and a fresh worker goes on
};

// A part of a config's work (a shard, tuner/shard.h): which of a problem's enumerated candidates
// (by position among that problem's, in enumeration order) are tuned here, and whether the problem
// is finished here: its finals (the fastest few timed again) and the vendor library. A part of a
// problem sees only its own candidates' times, so the problem's finals wait until its parts are
// merged (tune --finish-shards). An empty function keeps everything.
struct WorkFilter {
  std::function<bool(std::size_t problem, std::size_t ordinal)> candidate;
  std::function<bool(std::size_t problem)> finish;
};

struct SweepOptions {
  gpu::BackendKind backend = gpu::BackendKind::Host;
  int device = 0;
  // Measure on these devices, a worker process each (Isolation::Process), candidates handed to
  // whichever is free; empty: `device` alone. On the host backend: logical workers on the CPU.
  std::vector<int> devices;
  std::string db_path;
  int compile_jobs = 0;       // 0: one per core
  bool compare_vendor = true;  // time the vendor library on every problem too
  int vendor_algorithms = 8;   // ... and up to this many of its other algorithms (cuBLASLt's, cuDNN's engine configurations)
  bool list_pruned = false;    // print every pruned candidate with its reason
  bool list_selected = false;  // print each problem's picks in measuring order, with the model's estimate
  // Recorded failures of the config's candidates (failed compiles, invalid results, launch
  // failures, crashes, time-outs) are finished work that a rerun skips; with this they are
  // forgotten and the candidates compiled and measured again (`tune --retry-failed`).
  bool retry_failed = false;
  Isolation isolation = Isolation::InProcess;
  std::string worker_exe;      // the tiletune program, for Isolation::Process (the CLI: /proc/self/exe)
  // The tiletune program for compile servers (tuner/compile_process.h; the CLI's --compile-servers):
  // GPU backends compile in helper processes when it is set and more than one compile job runs;
  // empty: on compile threads of this process.
  std::string compile_exe;
  WorkFilter filter;
};

struct WinnerRow {
  Problem problem;
  std::string kernel_name;
  double median_ms = 0, tflops = 0;
  double vendor_tflops = -1;  // < 0: no vendor library
  double vendor_ms = -1;      // the vendor library's default on the problem (< 0: not timed)
  bool vendor = false;        // the winner is one of the vendor library's algorithms
};

struct SweepSummary {
  std::string arch, device_name, vendor;
  std::size_t total = 0, pruned = 0, candidates = 0, already_done = 0;
  std::size_t compiled = 0, compile_cached = 0, compile_failed = 0;
  std::size_t retried = 0;     // recorded failures tried again (retry_failed)
  std::size_t recompiled = 0;  // code objects of earlier sweeps' candidates built again to re-time them (packed database)
  std::size_t invalid = 0, launch_failed = 0, benchmarked = 0;
  std::size_t crashed = 0, timed_out = 0;  // the worker died / was killed for overrunning its time-out
  // Measuring time inside the workers, summed over candidates (MeasureResult's split), and the
  // wall time of the measuring stage: what is left is protocol, database and scheduling.
  double prepare_s = 0, validate_s = 0, timing_s = 0, measure_wall_s = 0;
  // The compile side (CompilePool::Stats): wall, time inside compile calls, compiler CPU; threads.
  double compile_wall_s = 0, compile_busy_s = 0, compile_cpu_s = 0;
  unsigned compile_threads = 0;
  bool compile_cpu_known = false;  // false on the host backend: its compiler runs in child processes
  // Search (tuner/search.h): candidates the strategy did not pick; not measured because a
  // problem's budget_seconds ran out; halving: candidates left with only a short timing, those
  // fully timed as contenders after it (at most the budget), short-timed ones fully timed because
  // they had become the problem's winner (a winner is never a short timing), and every later full
  // timing of a candidate already recorded (contenders, the final re-measurements, promotions).
  std::size_t not_selected = 0, over_budget = 0, short_timed = 0, fully_timed = 0, promoted = 0, remeasured = 0;
  // Finalists timed at the end against the other side's (generated kernels against the vendor's
  // algorithms), in rounds: one per finalist and match.
  std::size_t head_to_head = 0;
  std::map<std::string, std::size_t> pruned_by_reason;
  struct DeviceCount {
    int device = 0;
    std::size_t measured = 0;  // measurements recorded (first timings and re-measurements)
    int worker_starts = 0;     // worker processes started for it (more than one: after crashes)
  };
  std::vector<DeviceCount> per_device;
  std::string first_compile_error;  // the first failed compile's kernel and compiler log ("" if none)
  // Problems skipped because a worker could not prepare their data (inputs, reference) within
  // benchmark.prepare_timeout_s: "key: why". Nothing is recorded for them; a rerun tries again.
  std::vector<std::string> unprepared;
  // Problems no generated candidate admits ("key: the constraint that pruned most of them"): they
  // run on the vendor library (or a template default) until a template covers them.
  std::vector<std::string> no_candidate;
  // Problems whose every candidate failed to compile, in this sweep or an earlier one into the
  // same database ("key: the first compiler message"): nothing generated serves them.
  std::vector<std::string> uncompiled;
  // Devices left out because their worker process did not start ("device N: why"); the others
  // measured everything (tuner/measure_slots.h, start_workers).
  std::vector<std::string> devices_left_out;
  std::vector<WinnerRow> winners;
};

// The key under which a code object is cached: every input that can change the binary.
std::string compile_cache_key(const std::string& source_hash, const gpu::CompileRequest& request,
                              const std::string& compiler_version);

SweepSummary run_sweep(const TuningConfig& config, const SweepOptions& options, std::FILE* log = stderr);

void print_summary(const SweepSummary& s, std::FILE* out);

// The first `lines` lines of a compiler's log, each indented: enough to see a missing compiler or
// a bad option without the whole log.
std::string log_head(const std::string& log, std::size_t lines = 12);

}  // namespace tiletune::tuner
