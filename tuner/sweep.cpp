#include "tuner/sweep.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/error.h"
#include "db/database.h"
#include "tuner/enumerator.h"
#include "tuner/progress.h"
#include "tuner/search.h"
#include "tuner/worker.h"

namespace tiletune::tuner {
namespace {

std::string first_lines(const std::string& text, std::size_t max_chars = 600) {
  return text.size() <= max_chars ? text : text.substr(0, max_chars) + "...";
}

struct CompileJob {
  std::string cache_key;
  Solution solution;
  gpu::CompileRequest request;
  std::int64_t solution_id;
};

}  // namespace

std::string compile_cache_key(const std::string& source_hash, const gpu::CompileRequest& r,
                              const std::string& compiler_version) {
  // Bump when a backend's built-in compiler flags change (they live in gpu/*/ code, not in requests).
  constexpr const char* kFlagsVersion = "flags-1";
  std::string all = source_hash + "|" + content_hash(r.source) + "|" + r.name_expression + "|" + r.arch + "|" +
                    compiler_version + "|" + kFlagsVersion;
  for (const auto& o : r.options) all += "|" + o;
  return content_hash(all);
}

SweepSummary run_sweep(const TuningConfig& config, const SweepOptions& options, std::FILE* log) {
  std::unique_ptr<gpu::Device> dev = gpu::open_device(options.backend, options.device);
  const gpu::DeviceInfo& info = dev->info();
  db::Database db = db::Database::open(options.db_path, db::Mode::ReadWrite);
  std::int64_t device_id = db.upsert_device(
      {gpu::to_string(info.backend), info.arch, info.name, info.multiprocessors, info.driver_version});
  const std::string compiler_version = dev->compiler().version();

  SweepSummary sum;
  sum.arch = info.arch;
  sum.device_name = info.name;
  std::fprintf(log, "tiletune: %s device %d: %s (%s, %d multiprocessors), compiler %s\n", gpu::to_string(info.backend),
               options.device, info.name.c_str(), info.arch.c_str(), info.multiprocessors, compiler_version.c_str());

  Enumeration e = enumerate(config.templates, config.problems, info);
  sum.total = e.total;
  sum.pruned = e.pruned.size();
  sum.candidates = e.candidates.size();
  sum.pruned_by_reason = e.pruned_by_reason;
  std::fprintf(log, "enumerated %zu candidates for %zu problems; pruned %zu; %zu remain\n", e.total,
               config.problems.size(), e.pruned.size(), e.candidates.size());
  for (const auto& [reason, count] : e.pruned_by_reason) std::fprintf(log, "  pruned %6zu  %s\n", count, reason.c_str());
  if (options.list_pruned)
    for (const auto& p : e.pruned)
      std::fprintf(log, "  pruned %s for %s: %s\n", p.solution.kernel_name().c_str(),
                   config.problems[p.problem_index].key().c_str(), p.reason.c_str());
  if (e.candidates.empty()) throw Error("no candidate survives pruning for this device: nothing to tune");

  // Database ids; which candidates the search strategy picks (tuner/search.h), per problem; and
  // which of those are already finished (a resumed sweep skips them).
  validate(config.search);
  std::vector<std::int64_t> problem_ids;
  for (const auto& p : config.problems) problem_ids.push_back(db.upsert_problem(p));
  struct Work {
    const Candidate* cand;
    std::int64_t solution_id;
    std::string cache_key;
  };
  std::vector<std::vector<const Candidate*>> by_problem(config.problems.size());
  for (const auto& c : e.candidates) by_problem[c.problem_index].push_back(&c);
  auto make_work = [&](const Candidate& c, std::int64_t sid) {
    gpu::CompileRequest req = c.tmpl->compile_request(c.solution, config.problems[c.problem_index], info);
    return std::make_pair(Work{&c, sid, compile_cache_key(c.tmpl->source_hash(), req, compiler_version)}, std::move(req));
  };
  std::vector<std::vector<Work>> work(config.problems.size());
  std::vector<std::vector<std::pair<std::int64_t, const Candidate*>>> selected(config.problems.size());  // solution id
  std::unordered_map<std::string, CompileJob> jobs;
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi) {
    std::vector<SearchCandidate> sc;
    for (const Candidate* c : by_problem[pi]) sc.push_back({c->tmpl.get(), &c->solution});
    std::vector<std::size_t> pick = select_candidates(config.search, sc, config.problems[pi], info);
    sum.not_selected += by_problem[pi].size() - pick.size();
    for (std::size_t i : pick) {
      const Candidate& c = *by_problem[pi][i];
      std::int64_t sid = db.upsert_solution(c.solution, c.tmpl->source_hash());
      selected[pi].emplace_back(sid, &c);
      if (db.find_measurement(problem_ids[pi], sid, info.arch)) {
        ++sum.already_done;
        continue;
      }
      auto [w, req] = make_work(c, sid);
      if (!jobs.count(w.cache_key)) jobs.emplace(w.cache_key, CompileJob{w.cache_key, c.solution, std::move(req), sid});
      work[pi].push_back(std::move(w));
    }
  }
  if (config.search.strategy != "exhaustive" || config.search.budget || config.search.budget_seconds > 0)
    std::fprintf(log, "search: %s (budget %zu candidates, %g s per problem, seed %llu): %zu candidates not selected\n",
                 config.search.strategy.c_str(), config.search.budget, config.search.budget_seconds,
                 static_cast<unsigned long long>(config.search.seed), sum.not_selected);
  if (sum.already_done) std::fprintf(log, "resuming: %zu candidates already measured in %s\n", sum.already_done, options.db_path.c_str());

  // Compile what the cache does not hold, on all cores; failures are cached too.
  std::vector<CompileJob*> todo;
  for (auto& [key, job] : jobs) {
    if (db.find_code_object(key)) ++sum.compile_cached;
    else todo.push_back(&job);
  }
  if (!todo.empty()) {
    unsigned threads = options.compile_jobs > 0 ? unsigned(options.compile_jobs)
                                                : std::max(1u, std::thread::hardware_concurrency());
    Progress progress("compile", todo.size(), log);
    std::mutex mu;
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;  // the first exception of any compile thread, rethrown after the joins
    auto worker = [&] {
      try {
      for (std::size_t i; (i = next.fetch_add(1)) < todo.size();) {
        CompileJob& job = *todo[i];
        gpu::CompileResult r = dev->compiler().compile(job.request);
        db::CodeObjectRecord rec;
        rec.cache_key = job.cache_key;
        rec.solution_id = job.solution_id;
        rec.arch = info.arch;
        rec.compiler_version = compiler_version;
        rec.ok = r.ok;
        rec.log = r.log;
        rec.symbol = r.code.symbol;
        rec.bytes = std::move(r.code.bytes);
        std::lock_guard<std::mutex> lock(mu);
        db.put_code_object(rec);
        ++(r.ok ? sum.compiled : sum.compile_failed);
        progress.step(job.solution.kernel_name());
      }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
        next = todo.size();  // the others stop after their current compile
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads && t < todo.size(); ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
    progress.finish(std::to_string(sum.compiled) + " compiled, " + std::to_string(sum.compile_failed) + " failed");
  }

  // Validate and time, problem by problem, so that one problem's buffers are alive at a time:
  // in this process, or (Isolation::Process) in a worker process that may crash or hang.
  std::unique_ptr<Measurer> local;
  std::unique_ptr<WorkerProcess> worker;
  if (options.isolation == Isolation::InProcess) {
    local = std::make_unique<Measurer>(*dev, db);
  } else {
    if (options.worker_exe.empty()) throw Error("process isolation needs the path of the tiletune program (worker_exe)");
    worker = std::make_unique<WorkerProcess>(options.worker_exe, info.backend, options.device, options.db_path, info.arch);
    std::fprintf(log, "measuring in a worker process (%s), time-out %g s per candidate\n", options.worker_exe.c_str(),
                 config.benchmark.timeout_s);
  }
  auto measure = [&](const MeasureRequest& r) {
    return local ? local->measure(r) : worker->measure(r, config.benchmark.timeout_s);
  };

  const bool halving = config.search.strategy == "halving";
  const BenchmarkOptions short_bench = short_benchmark(config.benchmark);
  std::size_t planned = 0;
  for (const auto& ws : work) {
    planned += ws.size();
    if (halving) {
      std::size_t keep = (ws.size() + 2) / 3;
      if (config.search.budget) keep = std::min(keep, config.search.budget);
      planned += keep + std::min(keep, kHalvingFinal);
    }
  }
  std::vector<double> vendor_tflops(config.problems.size(), -1);
  Progress progress("measure", planned, log);
  double best_tflops = 0;
  // Measures one candidate with `bench` and records it (failures too: a rerun does not retry
  // them). `kind`: 0 the only timing, 1 a short halving timing, 2 a later full timing of a
  // candidate recorded before (it replaces that row; not counted again).
  auto measure_one = [&](std::size_t pi, const Work& w, const BenchmarkOptions& bench, int kind,
                         bool count_step) -> db::MeasurementRecord {
    const Problem& problem = config.problems[pi];
    db::MeasurementRecord m;
    m.problem_id = problem_ids[pi];
    m.solution_id = w.solution_id;
    m.device_id = device_id;
    m.arch = info.arch;
    m.sweep = config.name;
    auto code = db.find_code_object(w.cache_key);
    if (!code || !code->ok) {
      m.status = "compile_failed";
      m.reason = code ? first_lines(code->log) : "code object missing";
    } else {
      m.code_object_id = code->id;
      MeasureRequest r;
      r.problem = problem;
      r.solution = w.cand->solution;
      r.code_object_id = code->id;
      r.benchmark = bench;
      r.tmpl = w.cand->tmpl.get();
      MeasureResult res = measure(r);
      m.status = res.status;
      m.reason = res.reason;
      m.rel_error = res.rel_error;
      if (res.status == "ok") {
        m.min_ms = res.min_ms;
        m.median_ms = res.median_ms;
        m.max_ms = res.max_ms;
        m.tflops = problem.flops() / (res.median_ms * 1e-3) / 1e12;
        if (kind == 1) m.reason = kShortTimingReason;  // until a full timing replaces it
        else best_tflops = std::max(best_tflops, m.tflops);
      }
    }
    if (kind == 2) ++sum.remeasured;  // recorded all the same: the row says what happened last
    else if (m.status == "ok") ++sum.benchmarked;
    else if (m.status == "invalid") ++sum.invalid;
    else if (m.status == "launch_failed") ++sum.launch_failed;
    else if (m.status == "crashed") ++sum.crashed;
    else if (m.status == "timeout") ++sum.timed_out;
    db.put_measurement(m);
    if (m.status == "crashed" || m.status == "timeout")
      progress.message(w.cand->solution.kernel_name() + ": " + m.status + ": " + m.reason);
    // In this process a crashed device cannot go on: the culprit is recorded, a rerun resumes
    // after it. (A worker process is simply replaced.)
    if (m.status == "crashed" && local)
      throw Error("the device failed after " + w.cand->solution.kernel_name() + " (" + m.reason +
                  "); it is recorded as crashed, rerun the same command to resume");
    char note[128];
    std::snprintf(note, sizeof note, "best %.2f TFLOP/s", best_tflops);
    if (count_step) progress.step(note);
    return m;
  };
  using clock = std::chrono::steady_clock;
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi) {
    const Problem& problem = config.problems[pi];
    const auto start = clock::now();
    std::size_t measured_here = 0;
    // Whether the problem's seconds budget allows another candidate (always the first one).
    auto in_budget = [&] {
      if (config.search.budget_seconds <= 0 || measured_here == 0) return true;
      return std::chrono::duration<double>(clock::now() - start).count() < config.search.budget_seconds;
    };
    const std::vector<Work>& ws = work[pi];
    if (!halving) {
      for (const Work& w : ws) {
        if (!in_budget()) {
          sum.over_budget += ws.size() - measured_here;
          break;
        }
        measure_one(pi, w, config.benchmark, 0, true);
        ++measured_here;
      }
    } else {
      // Round 1: a short timing for every candidate, recorded as 'ok' with kShortTimingReason.
      std::vector<double> short_ms(ws.size(), NAN);
      for (std::size_t i = 0; i < ws.size(); ++i) {
        if (!in_budget()) {
          sum.over_budget += ws.size() - i;
          break;
        }
        db::MeasurementRecord m = measure_one(pi, ws[i], short_bench, 1, true);
        ++measured_here;
        if (m.status == "ok") {
          short_ms[i] = m.median_ms;
          ++sum.short_timed;
        }
      }
      // Round 2: the best third (at most the budget) fully timed; the row is replaced.
      std::vector<std::size_t> keep = halving_contenders(short_ms, config.search.budget);
      std::vector<std::pair<double, std::size_t>> full;
      for (std::size_t n = 0; n < keep.size(); ++n) {
        if (n > 0 && !in_budget()) break;
        db::MeasurementRecord m = measure_one(pi, ws[keep[n]], config.benchmark, 2, true);
        --sum.short_timed;
        ++sum.fully_timed;
        if (m.status == "ok") full.emplace_back(m.median_ms, keep[n]);
      }
      // Round 3: the best few timed fully once more; the later measurement is the one recorded.
      std::sort(full.begin(), full.end());
      for (std::size_t n = 0; n < full.size() && n < kHalvingFinal && full.size() > 1; ++n) {
        if (!in_budget()) break;
        measure_one(pi, ws[full[n].second], config.benchmark, 2, true);
      }
    }
    // Whatever the strategy and however often the sweep was resumed: the problem's winner is
    // never a short timing. While it is one, it is fully timed (and may then lose its place).
    for (std::size_t guard = 0; guard < selected[pi].size(); ++guard) {
      auto win = db.find_winner(info.arch, problem.key());
      if (!win) break;
      auto rec = db.find_measurement(problem_ids[pi], win->solution_id, info.arch);
      if (!rec || rec->reason != kShortTimingReason) break;
      const Candidate* c = nullptr;
      for (const auto& [sid, cand] : selected[pi])
        if (sid == win->solution_id) c = cand;
      if (!c) break;  // not a candidate of this config: leave it
      Work w = make_work(*c, win->solution_id).first;
      measure_one(pi, w, config.benchmark, 2, false);
      if (sum.short_timed) --sum.short_timed;
      ++sum.promoted;
    }
    if (options.compare_vendor) {
      MeasureRequest r;
      r.problem = problem;
      r.vendor = true;
      r.benchmark = config.benchmark;
      MeasureResult res = measure(r);
      if (!res.vendor.empty()) sum.vendor = res.vendor;
      if (res.status == "ok" || res.status == "invalid") {
        if (res.status == "invalid")
          std::fprintf(log, "warning: %s disagrees with the reference on %s: %s\n", res.vendor.c_str(),
                       problem.key().c_str(), res.reason.c_str());
        if (res.median_ms > 0) vendor_tflops[pi] = problem.flops() / (res.median_ms * 1e-3) / 1e12;
      } else if (res.status != "unsupported") {
        std::fprintf(log, "warning: the vendor library failed on %s: %s: %s\n", problem.key().c_str(), res.status.c_str(),
                     res.reason.c_str());
        if (res.status == "crashed" && local)
          throw Error("the device failed in the vendor library (" + res.reason + ")");
      }
    }
  }
  progress.finish(std::to_string(sum.benchmarked) + " benchmarked, " + std::to_string(sum.invalid) + " invalid, " +
                  std::to_string(sum.launch_failed) + " failed to launch, " + std::to_string(sum.crashed) +
                  " crashed, " + std::to_string(sum.timed_out) + " timed out" +
                  (worker && worker->starts() > 1 ? " (" + std::to_string(worker->starts()) + " worker processes)" : ""));
  worker.reset();  // ends the worker

  std::vector<db::WinnerRecord> winners = db.winners(info.arch);
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi)
    for (const auto& w : winners)
      if (w.problem_id == problem_ids[pi])
        sum.winners.push_back({config.problems[pi], w.solution.kernel_name(), w.median_ms, w.tflops, vendor_tflops[pi]});
  return sum;
}

void print_summary(const SweepSummary& s, std::FILE* out) {
  std::fprintf(out, "\nsummary: %zu enumerated, %zu pruned, %zu already measured, %zu compiled (%zu cached, %zu failed), "
                    "%zu benchmarked, %zu failed\n",
               s.total, s.pruned, s.already_done, s.compiled, s.compile_cached, s.compile_failed, s.benchmarked,
               s.invalid + s.launch_failed + s.crashed + s.timed_out);
  if (s.not_selected || s.over_budget || s.short_timed || s.fully_timed)
    std::fprintf(out, "search: %zu not selected, %zu left over the seconds budget, %zu with a short timing only, "
                      "%zu fully timed as contenders (+%zu short-timed winners promoted), %zu full re-measurements\n",
                 s.not_selected, s.over_budget, s.short_timed, s.fully_timed, s.promoted, s.remeasured);
  std::fprintf(out, "failed by reason: %zu invalid, %zu failed to launch, %zu crashed, %zu timed out\n", s.invalid,
               s.launch_failed, s.crashed, s.timed_out);
  std::fprintf(out, "\nwinners on %s (%s):\n", s.arch.c_str(), s.device_name.c_str());
  std::fprintf(out, "%-48s %10s %10s %10s  %s\n", "problem", "ms", "TFLOP/s", s.vendor.empty() ? "" : ("x " + s.vendor).c_str(), "kernel");
  for (const auto& w : s.winners) {
    char ratio[32] = "";
    if (w.vendor_tflops > 0) std::snprintf(ratio, sizeof ratio, "%.2f", w.tflops / w.vendor_tflops);
    const std::string shape = w.problem.describe();
    std::fprintf(out, "%-48s %10.4f %10.3f %10s  %s\n", shape.c_str(), w.median_ms, w.tflops, ratio, w.kernel_name.c_str());
  }
}

}  // namespace tiletune::tuner
