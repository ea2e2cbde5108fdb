#include "tuner/sweep.h"

#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/error.h"
#include "db/database.h"
#include "gpu/arguments.h"
#include "gpu/vendor_gemm.h"
#include "tuner/benchmark.h"
#include "tuner/enumerator.h"
#include "tuner/problem_data.h"
#include "tuner/progress.h"

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
  std::string all = source_hash + "|" + r.name_expression + "|" + r.arch + "|" + compiler_version;
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

  // Database ids, and which candidates are already finished (a resumed sweep skips them).
  std::vector<std::int64_t> problem_ids;
  for (const auto& p : config.problems) problem_ids.push_back(db.upsert_problem(p));
  struct Work {
    const Candidate* cand;
    std::int64_t solution_id;
    std::string cache_key;
  };
  std::vector<Work> work;
  std::unordered_map<std::string, CompileJob> jobs;
  for (const auto& c : e.candidates) {
    std::int64_t sid = db.upsert_solution(c.solution, c.tmpl->source_hash());
    if (db.find_measurement(problem_ids[c.problem_index], sid, info.arch)) {
      ++sum.already_done;
      continue;
    }
    gpu::CompileRequest req = c.tmpl->compile_request(c.solution, config.problems[c.problem_index], info);
    std::string key = compile_cache_key(c.tmpl->source_hash(), req, compiler_version);
    work.push_back({&c, sid, key});
    if (!jobs.count(key)) jobs.emplace(key, CompileJob{key, c.solution, std::move(req), sid});
  }
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
    auto worker = [&] {
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
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads && t < todo.size(); ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    progress.finish(std::to_string(sum.compiled) + " compiled, " + std::to_string(sum.compile_failed) + " failed");
  }

  // Validate and time, problem by problem, so that one problem's buffers are alive at a time.
  std::unique_ptr<gpu::VendorGemm> vendor = options.compare_vendor ? gpu::make_vendor_gemm(*dev) : nullptr;
  if (vendor) sum.vendor = vendor->name();
  std::unordered_map<std::int64_t, std::shared_ptr<gpu::Kernel>> kernels;
  std::vector<double> vendor_tflops(config.problems.size(), -1);
  Progress progress("measure", work.size(), log);
  double best_tflops = 0;
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi) {
    const GemmProblem& problem = config.problems[pi];
    std::unique_ptr<ProblemData> data;
    for (const Work& w : work) {
      if (w.cand->problem_index != pi) continue;
      if (!data) data = std::make_unique<ProblemData>(*dev, problem);
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
        try {
          auto& kernel = kernels[code->id];
          if (!kernel) kernel = dev->load({code->bytes, code->symbol});
          const KernelTemplate& tmpl = *w.cand->tmpl;
          Variables vars = tmpl.variables(w.cand->solution, problem, info);
          gpu::DeviceBuffer workspace;
          if (std::int64_t bytes = tmpl.workspace_bytes(vars); bytes > 0) {
            workspace = gpu::DeviceBuffer(*dev, std::size_t(bytes));
            dev->fill_bytes(workspace.get(), 0, std::size_t(bytes));
          }
          auto launch = [&](TtGemmParams args) {
            args.workspace = workspace.get();
            std::vector<std::uint8_t> bytes = gpu::kernel_arguments(tmpl, args, problem, vars);
            dev->launch(*kernel, w.cand->dims, bytes.data(), bytes.size());
          };
          ValidationResult v = data->validate(launch);
          m.rel_error = v.rel_error;
          if (!v.ok) {
            m.status = "invalid";
            m.reason = v.reason;
          } else {
            Timing t = time_runs(*dev, *data, config.benchmark, launch);
            m.min_ms = t.min_ms;
            m.median_ms = t.median_ms;
            m.max_ms = t.max_ms;
            m.tflops = problem.flops() / (t.median_ms * 1e-3) / 1e12;
            best_tflops = std::max(best_tflops, m.tflops);
          }
        } catch (const Error& err) {
          m.status = "launch_failed";
          m.reason = err.what();
          // A fault can leave the device unusable (CUDA's sticky errors); then every later
          // candidate would be recorded as failed too. Record this one as the culprit and stop:
          // rerunning the sweep resumes after it. (Worker-process isolation is the full answer.)
          bool device_alive = true;
          try {
            dev->synchronize();
          } catch (const Error&) {
            device_alive = false;
          }
          if (!device_alive) {
            m.status = "crashed";
            db.put_measurement(m);
            throw Error("the device failed after " + w.cand->solution.kernel_name() + " (" + err.what() +
                        "); it is recorded as crashed, rerun the same command to resume");
          }
        }
      }
      if (m.status == "ok") ++sum.benchmarked;
      else if (m.status == "invalid") ++sum.invalid;
      else if (m.status == "launch_failed") ++sum.launch_failed;
      db.put_measurement(m);
      char note[128];
      std::snprintf(note, sizeof note, "best %.2f TFLOP/s", best_tflops);
      progress.step(note);
    }
    if (vendor && vendor->supports(problem)) {
      if (!data) data = std::make_unique<ProblemData>(*dev, problem);
      try {
        auto launch = [&](const TtGemmParams& args) { vendor->run(problem, args); };
        ValidationResult v = data->validate(launch);
        if (!v.ok) std::fprintf(log, "warning: %s disagrees with the reference on %s: %s\n", vendor->name().c_str(),
                                problem.key().c_str(), v.reason.c_str());
        Timing t = time_runs(*dev, *data, config.benchmark, launch);
        vendor_tflops[pi] = problem.flops() / (t.median_ms * 1e-3) / 1e12;
      } catch (const Error& err) {
        std::fprintf(log, "warning: %s failed on %s: %s\n", vendor->name().c_str(), problem.key().c_str(), err.what());
      }
    }
  }
  progress.finish(std::to_string(sum.benchmarked) + " benchmarked, " + std::to_string(sum.invalid) + " invalid, " +
                  std::to_string(sum.launch_failed) + " failed to launch");

  std::vector<db::WinnerRecord> winners = db.winners(info.arch);
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi)
    for (const auto& w : winners)
      if (w.problem_id == problem_ids[pi])
        sum.winners.push_back({config.problems[pi], w.solution.kernel_name(), w.median_ms, w.tflops, vendor_tflops[pi]});
  return sum;
}

void print_summary(const SweepSummary& s, std::FILE* out) {
  std::fprintf(out, "\nsummary: %zu enumerated, %zu pruned, %zu already measured, %zu compiled (%zu cached, %zu failed), "
                    "%zu invalid, %zu failed to launch, %zu benchmarked\n",
               s.total, s.pruned, s.already_done, s.compiled, s.compile_cached, s.compile_failed, s.invalid,
               s.launch_failed, s.benchmarked);
  std::fprintf(out, "\nwinners on %s (%s):\n", s.arch.c_str(), s.device_name.c_str());
  std::fprintf(out, "%-48s %10s %10s %10s  %s\n", "problem", "ms", "TFLOP/s", s.vendor.empty() ? "" : ("x " + s.vendor).c_str(), "kernel");
  for (const auto& w : s.winners) {
    char ratio[32] = "";
    if (w.vendor_tflops > 0) std::snprintf(ratio, sizeof ratio, "%.2f", w.tflops / w.vendor_tflops);
    std::string shape = std::string(to_string(w.problem.a_type)) + ">" + to_string(w.problem.c_type) + " " +
                        (w.problem.trans_a ? "T" : "N") + (w.problem.trans_b ? "T" : "N") + " " +
                        std::to_string(w.problem.m) + "x" + std::to_string(w.problem.n) + "x" +
                        std::to_string(w.problem.k) + (w.problem.batch > 1 ? " b" + std::to_string(w.problem.batch) : "");
    std::fprintf(out, "%-48s %10.4f %10.3f %10s  %s\n", shape.c_str(), w.median_ms, w.tflops, ratio, w.kernel_name.c_str());
  }
}

}  // namespace tiletune::tuner
