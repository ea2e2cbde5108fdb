#include "tuner/sweep.h"


#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <unordered_set>

#include "common/error.h"
#include "db/database.h"
#include "gpu/vendor.h"
#include "tuner/compile_pool.h"
#include "tuner/compile_process.h"
#include "tuner/enumerator.h"
#include "tuner/measure_slots.h"
#include "tuner/progress.h"
#include "tuner/search.h"
#include "tuner/worker.h"

namespace tiletune::tuner {
namespace {

std::string first_lines(const std::string& text, std::size_t max_chars = 600) {
  return text.size() <= max_chars ? text : text.substr(0, max_chars) + "...";
}

// How a measurement is recorded: the candidate's first (a short one in halving's round one), or
// a later full timing that replaces its row (halving's rounds two and three, promotions).
enum class Timing { First, Short, Again, Final, Promote };

struct Work {
  const Candidate* cand;
  std::int64_t solution_id;
  std::string cache_key;
  HalvingRow row;  // halving: what the database already holds for it (a resumed sweep)
};

// The devices to measure on, each with its description (all of one arch: one sweep, one arch).
std::vector<std::pair<int, gpu::DeviceInfo>> sweep_devices(const SweepOptions& o, const gpu::DeviceInfo& first) {
  std::vector<int> indices = o.devices.empty() ? std::vector<int>{o.device} : o.devices;
  std::vector<std::pair<int, gpu::DeviceInfo>> out;
  if (o.backend == gpu::BackendKind::Host) {
    for (int i : indices) out.emplace_back(i, first);  // logical workers on the one CPU
    return out;
  }
  std::vector<gpu::DeviceInfo> found = gpu::list_devices(o.backend);
  for (int i : indices) {
    auto it = std::find_if(found.begin(), found.end(), [&](const gpu::DeviceInfo& d) { return d.index == i; });
    if (it == found.end()) throw Error(std::string(gpu::to_string(o.backend)) + " device " + std::to_string(i) + " does not exist");
    if (it->arch != first.arch)
      throw Error("device " + std::to_string(i) + " is " + it->arch + " but device " + std::to_string(indices[0]) + " is " +
                  first.arch + ": one sweep tunes one arch; run one sweep per arch");
    out.emplace_back(i, *it);
  }
  return out;
}

HalvingRow halving_row(const db::MeasurementRecord& m) {
  HalvingRow r;
  r.measured = true;
  if (m.status == "ok") {
    if (m.reason == kShortTimingReason) r.short_ms = m.median_ms;
    else r.full_ms = m.median_ms, r.promoted = m.reason == kPromotedReason,
      r.final = m.reason == kFinalTimingReason || m.reason == kFinalTimingReasonV1;
  }
  return r;
}

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

namespace {

bool failed_code_object(db::Database& db, const std::string& cache_key) {
  const auto code = db.find_code_object(cache_key);
  return code && !code->ok;
}

}  // namespace

SweepSummary run_sweep(const TuningConfig& config, const SweepOptions& options, std::FILE* log) {
  const std::vector<int> device_list = options.devices.empty() ? std::vector<int>{options.device} : options.devices;
  if (device_list.size() > 1 && options.isolation != Isolation::Process)
    throw Error("measuring on several devices needs a worker process per device (--isolation process)");
  // This process compiles for (and, in-process, measures on) the first device.
  const bool host = options.backend == gpu::BackendKind::Host;
  std::unique_ptr<gpu::Device> dev = gpu::open_device(options.backend, host ? 0 : device_list[0]);
  const gpu::DeviceInfo& info = dev->info();
  const BenchmarkOptions final_bench = final_benchmark(config.benchmark, options.backend);
  db::Database db = db::Database::open(options.db_path, db::Mode::ReadWrite);
  const std::string compiler_version = dev->compiler().version();

  SweepSummary sum;
  sum.arch = info.arch;
  sum.device_name = info.name;
  std::fprintf(log, "tiletune: %s device %d: %s (%s, %d multiprocessors), compiler %s\n", gpu::to_string(info.backend),
               device_list[0], info.name.c_str(), info.arch.c_str(), info.multiprocessors, compiler_version.c_str());
  std::vector<MeasureSlot> slots;
  for (const auto& [index, dinfo] : sweep_devices(options, info)) {
    MeasureSlot s;
    s.device = index;
    s.device_id = db.upsert_device(
        {gpu::to_string(dinfo.backend), dinfo.arch, dinfo.name, dinfo.multiprocessors, dinfo.driver_version});
    slots.push_back(std::move(s));
  }

  Enumeration e = enumerate(config.templates, config.problems, info);
  sum.total = e.total;
  sum.pruned = e.pruned.size();
  sum.candidates = e.candidates.size();
  sum.pruned_by_reason = e.pruned_by_reason;
  if (config.duplicates_dropped)
    std::fprintf(log, "%zu problem(s) named more than once in the config: each is tuned once\n", config.duplicates_dropped);
  std::fprintf(log, "enumerated %zu candidates for %zu problems; pruned %zu; %zu remain\n", e.total,
               config.problems.size(), e.pruned.size(), e.candidates.size());
  for (const auto& [reason, count] : e.pruned_by_reason) std::fprintf(log, "  pruned %6zu  %s\n", count, reason.c_str());
  if (options.list_pruned)
    for (const auto& p : e.pruned)
      std::fprintf(log, "  pruned %s for %s: %s\n", p.solution.kernel_name().c_str(),
                   config.problems[p.problem_index].key().c_str(), p.reason.c_str());
  // With no candidate left the vendor is still timed, so that the problems have a winner.
  if (e.candidates.empty() && !options.compare_vendor)
    throw Error("no candidate survives pruning for this device: nothing to tune");
  {
    std::vector<std::size_t> admitted(config.problems.size(), 0);
    for (const auto& c : e.candidates) ++admitted[c.problem_index];
    std::vector<std::map<std::string, std::size_t>> why(config.problems.size());
    for (const auto& p : e.pruned) ++why[p.problem_index][p.reason.substr(0, p.reason.find(':'))];
    for (std::size_t pi = 0; pi < config.problems.size(); ++pi) {
      if (admitted[pi]) continue;
      std::string most = "no template of this kind on this backend";
      std::size_t count = 0;
      for (const auto& [reason, n] : why[pi])
        if (n > count) most = reason, count = n;
      sum.no_candidate.push_back(config.problems[pi].key() + ": " + most);
      std::fprintf(log, "warning: no generated candidate admits %s (most were pruned by %s)\n",
                   config.problems[pi].key().c_str(), most.c_str());
    }
  }

  // Database ids; which candidates the search strategy picks (tuner/search.h), per problem; and
  // which of those are already finished (a resumed sweep skips them). Halving keeps its measured
  // candidates: a short timing is not finished, a later round may still time it fully.
  validate(config.search);
  const bool halving = config.search.strategy == "halving";
  std::vector<std::int64_t> problem_ids;
  for (const auto& p : config.problems) problem_ids.push_back(db.upsert_problem(p));
  std::vector<std::vector<const Candidate*>> by_problem(config.problems.size());
  for (const auto& c : e.candidates) by_problem[c.problem_index].push_back(&c);
  std::vector<std::vector<Work>> work(config.problems.size());
  std::vector<std::vector<std::pair<std::int64_t, const Candidate*>>> selected(config.problems.size());  // solution id
  std::vector<CompileJob> jobs;  // in the order the measuring asks for them (sorted below)
  std::vector<std::pair<std::size_t, std::size_t>> job_at;  // per job: the (problem, rank) first needing it
  std::unordered_set<std::string> job_keys;
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi) {
    std::vector<SearchCandidate> sc;
    for (const Candidate* c : by_problem[pi]) sc.push_back({c->tmpl.get(), &c->solution});
    std::vector<std::size_t> pick = select_candidates(config.search, sc, config.problems[pi], info);
    sum.not_selected += by_problem[pi].size() - pick.size();
    for (std::size_t i : pick) {
      const Candidate& c = *by_problem[pi][i];
      std::int64_t sid = db.upsert_solution(c.solution, c.tmpl->source_hash());
      selected[pi].emplace_back(sid, &c);
      HalvingRow row;
      gpu::CompileRequest req = c.tmpl->compile_request(c.solution, config.problems[pi], info);
      std::string key = compile_cache_key(c.tmpl->source_hash(), req, compiler_version);
      if (auto m = db.find_measurement(problem_ids[pi], sid, info.arch)) {
        // A compile failure is finished only for the compiler (and flags) that failed: under
        // another one the cache key differs, no failed code object is found for it, and the
        // candidate is compiled and measured again.
        const bool retry = m->status == "compile_failed" && !failed_code_object(db, key);
        if (!retry) {
          ++sum.already_done;
          if (!halving) continue;
          row = halving_row(*m);
        }
      }
      Work w{&c, sid, std::move(key), row};
      if (job_keys.insert(w.cache_key).second) {
        if (db.find_code_object(w.cache_key)) ++sum.compile_cached;
        else {
          jobs.push_back({w.cache_key, c.solution.kernel_name(), std::move(req), sid});
          job_at.emplace_back(pi, work[pi].size());
        }
      }
      work[pi].push_back(std::move(w));
    }
  }
  {
    // The measuring side starts the first `slots` problems at once (one device each, see
    // SlotRunner; halving goes one problem at a time on all of them) and then takes the next
    // ones in order: compile in the same order, the first candidates of those problems first.
    const std::size_t together = halving ? 1 : slots.size();
    std::vector<std::size_t> order(jobs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto key = [&](std::size_t i) {
      const auto [pi, rank] = job_at[i];
      return std::make_tuple(pi / together, rank, pi % together);
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    std::vector<CompileJob> sorted;
    for (std::size_t i : order) sorted.push_back(std::move(jobs[i]));
    jobs = std::move(sorted);
  }
  if (config.search.strategy != "exhaustive" || config.search.budget || config.search.budget_seconds > 0)
    std::fprintf(log, "search: %s (budget %zu candidates, %g s per problem, seed %llu): %zu candidates not selected\n",
                 config.search.strategy.c_str(), config.search.budget, config.search.budget_seconds,
                 static_cast<unsigned long long>(config.search.seed), sum.not_selected);
  if (sum.already_done) std::fprintf(log, "resuming: %zu candidates already measured in %s\n", sum.already_done, options.db_path.c_str());

  // Measuring needs a device per slot: this process's, or a worker process per device.
  if (options.isolation == Isolation::InProcess) {
    slots[0].local = std::make_unique<Measurer>(*dev, db);
  } else {
    if (options.worker_exe.empty()) throw Error("process isolation needs the path of the tiletune program (worker_exe)");
    for (auto& s : slots)
      s.worker = std::make_unique<WorkerProcess>(options.worker_exe, info.backend, host ? 0 : s.device, options.db_path,
                                                 info.arch);
  }

  std::size_t planned = 0;
  for (const auto& ws : work) {
    std::size_t fresh = 0, full = 0;
    for (const Work& w : ws) {
      fresh += !w.row.measured;
      full += std::isfinite(w.row.full_ms);
    }
    planned += fresh;
    if (halving) {
      std::size_t keep = (ws.size() + 2) / 3;
      if (config.search.budget) keep = std::min(keep, config.search.budget);
      if (keep > full) planned += keep - full;
    }
  }

  // Everything below may run on several threads at once (compile threads, one per measuring
  // slot): `mu` guards the summary, the database connection `db` and the best-so-far.
  std::mutex mu;
  Progress progress(log);
  const std::size_t compile_stage = jobs.empty() ? 0 : progress.add_stage("compile", jobs.size());
  const std::size_t measure_stage = progress.add_stage("measure", planned);
  const unsigned threads = options.compile_jobs > 0 ? unsigned(options.compile_jobs)
                                                    : std::max(1u, std::thread::hardware_concurrency());
  // --compile-servers (compile_exe set): a compile server process per compile thread, since NVRTC
  // compiles one program at a time per process (tuner/compile_process.h).
  std::unique_ptr<ProcessCompiler> servers;
  if (!options.compile_exe.empty() && !host && threads > 1 && jobs.size() > 1)
    servers = std::make_unique<ProcessCompiler>(options.compile_exe, info.backend, dev->compiler());
  const gpu::Compiler& compiler = servers ? static_cast<const gpu::Compiler&>(*servers) : dev->compiler();
  CompilePool compile(std::move(jobs), compiler, options.db_path, info.arch, compiler_version, threads,
                      [&](const CompileJob&, bool ok) {
                        {
                          std::lock_guard<std::mutex> lock(mu);
                          ++(ok ? sum.compiled : sum.compile_failed);
                        }
                        progress.step(compile_stage);
                      });
  if (options.isolation == Isolation::Process) {
    // The workers start while the pool compiles (a device slow to open does not hold the
    // compiler up); one whose worker does not start is left out, not the sweep stopped (unless
    // none starts). The compile order above planned for every device: only an ordering.
    sum.devices_left_out = start_workers(slots);
    for (const auto& l : sum.devices_left_out) progress.message("left out " + l);
    std::string names;
    for (const auto& s : slots) names += (names.empty() ? "" : ",") + std::to_string(s.device);
    char line[512];
    std::snprintf(line, sizeof line, "measuring in %zu worker process%s (%s %s: %s), time-out %g s per candidate, %g s to prepare a problem",
                  slots.size(), slots.size() > 1 ? "es" : "", host && slots.size() > 1 ? "logical workers" : slots.size() > 1 ? "devices" : "device",
                  names.c_str(), options.worker_exe.c_str(), config.benchmark.timeout_s, config.benchmark.prepare_timeout_s);
    progress.message(line);
  }

  std::vector<double> vendor_tflops(config.problems.size(), -1);
  double best_tflops = 0;
  // A problem whose data a worker could not prepare in time: nothing of it is recorded (no
  // candidate is to blame), its remaining candidates are skipped, a rerun tries it again.
  std::vector<std::string> unprepared(config.problems.size());
  // Per problem: when its first candidate's code object was ready and its measuring began
  // (steady-clock nanoseconds, 0 until then): its seconds budget counts from there, not from
  // a wait for the compiler.
  std::unique_ptr<std::atomic<long long>[]> first_start(new std::atomic<long long>[config.problems.size()]);
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi) first_start[pi] = 0;
  auto now_ns = [] {
    return (long long)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  // The one way a measurement becomes its database record.
  auto new_record = [&](std::size_t pi, std::int64_t solution_id, const MeasureSlot& slot) {
    db::MeasurementRecord m;
    m.problem_id = problem_ids[pi];
    m.solution_id = solution_id;
    m.device_id = slot.device_id;
    m.arch = info.arch;
    m.sweep = config.name;
    return m;
  };
  auto take_result = [](db::MeasurementRecord& m, const MeasureResult& res, const Problem& problem) {
    m.status = res.status;
    m.reason = res.reason;
    m.rel_error = res.rel_error;
    if (res.status != "ok") return;
    m.min_ms = res.min_ms;
    m.median_ms = res.median_ms;
    m.max_ms = res.max_ms;
    m.tflops = problem.flops() / (res.median_ms * 1e-3) / 1e12;
  };
  // Measures one candidate with `bench` on `slot` and records it (failures too: a rerun does not
  // retry them). Empty when the problem could not be prepared.
  auto measure_one = [&](MeasureSlot& slot, std::size_t pi, const Work& w, const BenchmarkOptions& bench, Timing timing,
                         bool count_step) -> std::optional<db::MeasurementRecord> {
    const Problem& problem = config.problems[pi];
    compile.wait(w.cache_key);
    long long unset = 0;
    first_start[pi].compare_exchange_strong(unset, now_ns());
    db::MeasurementRecord m = new_record(pi, w.solution_id, slot);
    std::optional<db::CodeObjectRecord> code;
    {
      std::lock_guard<std::mutex> lock(mu);
      code = db.find_code_object(w.cache_key);
    }
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
      MeasureResult res = slot.measure(r, config.benchmark.timeout_s, config.benchmark.prepare_timeout_s);
      {
        std::lock_guard<std::mutex> lock(mu);
        sum.prepare_s += res.prepare_s;
        sum.validate_s += res.validate_s;
        sum.timing_s += res.timing_s;
      }
      if (res.status == kPrepareTimeout) {
        std::lock_guard<std::mutex> lock(mu);
        if (unprepared[pi].empty()) unprepared[pi] = res.reason;
        return std::nullopt;
      }
      take_result(m, res, problem);
      if (res.status == "ok") {
        if (timing == Timing::Short) m.reason = kShortTimingReason;  // until a full timing replaces it
        if (timing == Timing::Final) m.reason = kFinalTimingReason;
        if (timing == Timing::Promote) m.reason = kPromotedReason;
      }
    }
    char note[128];
    {
      std::lock_guard<std::mutex> lock(mu);
      if (m.status == "ok" && timing != Timing::Short) best_tflops = std::max(best_tflops, m.tflops);
      if (timing != Timing::First && timing != Timing::Short) ++sum.remeasured;  // recorded all the same
      else if (m.status == "ok") ++sum.benchmarked;
      else if (m.status == "invalid") ++sum.invalid;
      else if (m.status == "launch_failed") ++sum.launch_failed;
      else if (m.status == "crashed") ++sum.crashed;
      else if (m.status == "timeout") ++sum.timed_out;
      db.put_measurement(m);
      ++slot.measured;
      std::snprintf(note, sizeof note, "best %.2f TFLOP/s", best_tflops);
    }
    if (m.status == "crashed" || m.status == "timeout")
      progress.message(w.cand->solution.kernel_name() + ": " + m.status + ": " + m.reason);
    // In this process a crashed device cannot go on: the culprit is recorded, a rerun resumes
    // after it. (A worker process is simply replaced.)
    if (m.status == "crashed" && slot.local)
      throw Error("the device failed after " + w.cand->solution.kernel_name() + " (" + m.reason +
                  "); it is recorded as crashed, rerun the same command to resume");
    if (count_step) progress.step(measure_stage, note);
    return m;
  };

  auto problem_unprepared = [&](std::size_t pi) {
    std::lock_guard<std::mutex> lock(mu);
    return !unprepared[pi].empty();
  };

  using clock = std::chrono::steady_clock;
  // On the host the kernels being timed use every core: a compiler running beside them would
  // disturb their timings, so there the whole compile stage comes first.
  if (options.backend == gpu::BackendKind::Host) compile.wait_all();
  const auto measure_start = clock::now();
  // The vendor library on problem pi, timed by `slot` (whose worker has the problem's data when it
  // just measured its candidates); the result goes beside the winners.
  std::vector<char> vendor_done(config.problems.size(), 0);
  // The vendor library is a candidate like any other: its default and each of its other
  // algorithms (cuBLASLt's heuristic's first few) are measurements that can be the winner, which
  // the runtime then serves by calling the library with that algorithm. Their "source" is the
  // library's name.
  // The fastest few are timed again for final_ms, as the kernels' finalists are.
  auto measure_vendor_choice = [&](MeasureSlot& slot, std::size_t pi, const Solution& choice, int alternatives,
                                   bool final) {
    const Problem& problem = config.problems[pi];
    MeasureRequest r;
    r.problem = problem;
    r.vendor = true;
    r.solution = choice;
    r.vendor_alternatives = alternatives;
    r.benchmark = final ? final_bench : config.benchmark;
    MeasureResult res = slot.measure(r, config.benchmark.timeout_s, config.benchmark.prepare_timeout_s);
    std::lock_guard<std::mutex> lock(mu);
    if (res.status != "unsupported" && !res.vendor.empty()) {
      db::MeasurementRecord m = new_record(pi, db.upsert_solution(choice, res.vendor), slot);
      take_result(m, res, problem);
      if (final && m.status == "ok") m.reason = kFinalTimingReason;
      db.put_measurement(m);
    }
    return res;
  };
  auto compare_vendor = [&](MeasureSlot& slot, std::size_t pi) {
    const Problem& problem = config.problems[pi];
    MeasureResult res = measure_vendor_choice(slot, pi, Solution{kVendorTemplate, {}}, options.vendor_algorithms, false);
    struct Timed {
      double ms;
      Solution choice;
      bool final = false;
    };
    std::vector<Timed> timed;
    if (res.status == "ok") timed.push_back({res.median_ms, Solution{kVendorTemplate, {}}});
    for (const auto& choice : res.alternatives) {
      const MeasureResult alt = measure_vendor_choice(slot, pi, Solution{kVendorTemplate, choice}, 0, false);
      if (alt.status == "crashed" && slot.local) throw Error("the device failed in the vendor library (" + alt.reason + ")");
      if (alt.status == "ok") timed.push_back({alt.median_ms, Solution{kVendorTemplate, choice}});
    }
    // As the kernels' finals: until the fastest few are all timed for final_ms (a longer timing
    // may drop one behind the next, which is then timed so too); the default alone too, so that
    // the vendor is compared with the kernels' finalists under the same sustained load.
    for (bool more = !timed.empty(); more;) {
      more = false;
      std::stable_sort(timed.begin(), timed.end(), [](const Timed& a, const Timed& b) { return a.ms < b.ms; });
      for (std::size_t i = 0; i < std::min(kFinalists, timed.size()) && !more; ++i) {
        if (timed[i].final) continue;
        const MeasureResult again = measure_vendor_choice(slot, pi, timed[i].choice, 0, true);
        if (again.status == "crashed" && slot.local)
          throw Error("the device failed in the vendor library (" + again.reason + ")");
        timed[i].final = true;
        timed[i].ms = again.status == "ok" ? again.median_ms : std::numeric_limits<double>::infinity();
        if (timed[i].choice.params.empty() && again.status == "ok") res.median_ms = again.median_ms;
        more = true;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    vendor_done[pi] = 1;
    if (!res.vendor.empty()) sum.vendor = res.vendor;
    if (res.status == "ok" || res.status == "invalid") {
      if (res.status == "invalid")
        progress.message("warning: " + res.vendor + " disagrees with the reference on " + problem.key() + ": " + res.reason);
      if (res.median_ms > 0) vendor_tflops[pi] = problem.flops() / (res.median_ms * 1e-3) / 1e12;
    } else if (res.status != "unsupported") {
      progress.message("warning: the vendor library failed on " + problem.key() + ": " + res.status + ": " + res.reason);
      if (res.status == "crashed" && slot.local) throw Error("the device failed in the vendor library (" + res.reason + ")");
    }
  };
  SlotRunner runner(slots);
  // Per problem: how many candidates were handed out. Whether its seconds budget (counted from
  // first_start) allows another one (always while nothing measures yet; with `first_of_round`,
  // the first of each round too). Asked under the runner's lock, or by a problem's finals when
  // none of its tasks can be admitted any more.
  std::vector<std::size_t> started_here(config.problems.size(), 0);
  auto in_budget = [&](std::size_t pi, std::size_t& started_in_round, bool first_of_round) {
    const long long t0 = first_start[pi].load();
    bool ok = config.search.budget_seconds <= 0 || started_here[pi] == 0 || t0 == 0 ||
              (first_of_round && started_in_round == 0) || (now_ns() - t0) * 1e-9 < config.search.budget_seconds;
    if (ok) {
      ++started_here[pi];
      ++started_in_round;
    }
    return ok;
  };
  // The finals of problem `pi`, every strategy: its fastest fully timed candidates of this config
  // (kFinalists, from what the database holds, so that a resumed sweep counts those measured
  // before) timed once more one after another on `slot`'s device, the later timing recorded; a
  // winner is then not the luck of one timing, and the finalists were compared on the same GPU.
  // The batch's finish task first waits for the problem's candidates still timed on other slots
  // (handed out before it, they finish on their own). Not past a seconds budget.
  // measured_again: the Work to time candidate `sid` of problem `pi` once more (finals,
  // promotions), whether or not this sweep measured it first; a code object gone since (a
  // packed database) is compiled again here, on this thread, so that a rerun does not skip the
  // candidate forever. None when it does not compile.
  auto measured_again = [&](std::size_t pi, std::int64_t sid, const Candidate* c) -> std::optional<Work> {
    gpu::CompileRequest req = c->tmpl->compile_request(c->solution, config.problems[pi], info);
    Work w{c, sid, compile_cache_key(c->tmpl->source_hash(), req, compiler_version), {}};
    compile.wait(w.cache_key);
    if (compile.compile_now({w.cache_key, c->solution.kernel_name(), std::move(req), sid})) {  // only if it is gone
      std::lock_guard<std::mutex> lock(mu);
      ++sum.recompiled;
    }
    std::lock_guard<std::mutex> lock(mu);
    auto code = db.find_code_object(w.cache_key);
    if (!code || !code->ok) return std::nullopt;
    return w;
  };
  std::vector<std::size_t> batch_left(config.problems.size(), 0);  // a problem's candidate tasks not yet finished
  std::mutex batch_mu;
  std::condition_variable batch_cv;
  auto candidate_done = [&](std::size_t pi) {
    std::lock_guard<std::mutex> lock(batch_mu);
    --batch_left[pi];
    batch_cv.notify_all();
  };
  auto final_round = [&](MeasureSlot& slot, std::size_t pi) {
    {
      std::unique_lock<std::mutex> lock(batch_mu);
      batch_cv.wait(lock, [&] { return batch_left[pi] == 0; });
    }
    // Until the fastest few are all re-timed: a re-timing may drop a finalist behind the next
    // candidate, which then gets its second timing too (each candidate at most once), so that a
    // rerun finds the finals done.
    std::size_t started_in_round = 0;
    for (bool more = true; more;) {
      more = false;
      std::vector<HalvingRow> rows;
      std::vector<std::size_t> at;  // position in selected[pi]
      {
        std::lock_guard<std::mutex> lock(mu);
        for (std::size_t i = 0; i < selected[pi].size(); ++i)
          if (auto m = db.find_measurement(problem_ids[pi], selected[pi][i].first, info.arch)) {
            rows.push_back(halving_row(*m));
            at.push_back(i);
          }
      }
      for (std::size_t k : finalists(rows, halving)) {
        const auto& [sid, c] = selected[pi][at[k]];
        std::optional<Work> w = measured_again(pi, sid, c);
        if (!w) continue;
        // No task of this problem is admitted any more (this one came last), so in_budget's
        // counters for it are this thread's alone.
        if (problem_unprepared(pi) || !in_budget(pi, started_in_round, false)) return;
        // Anything recorded changes the order (a failed re-timing drops the candidate): look again.
        if (measure_one(slot, pi, *w, final_bench, Timing::Final, false)) more = true;
      }
    }
  };
  if (!halving) {
    // One batch over every problem's fresh candidates: the slots spread over the problems (see
    // SlotRunner) instead of all waiting for the slowest one at the end of each problem, and a
    // worker prepares the data of only the problems it measures.
    // Each problem's last task is its finals and the vendor comparison, so that they run where
    // the data is while other devices go on with other problems.
    constexpr std::size_t kFinish = std::size_t(-1);
    std::vector<std::pair<std::size_t, std::size_t>> tasks;  // (problem, work item or kFinish)
    for (std::size_t pi = 0; pi < work.size(); ++pi) {
      for (std::size_t i = 0; i < work[pi].size(); ++i)
        if (!work[pi][i].row.measured) tasks.emplace_back(pi, i), ++batch_left[pi];
      tasks.emplace_back(pi, kFinish);
    }
    std::vector<std::size_t> started(config.problems.size(), 0);
    std::size_t skipped = 0;
    runner.run(
        tasks.size(),
        [&](std::size_t t) {
          const auto [pi, i] = tasks[t];
          if (i == kFinish) return !problem_unprepared(pi);
          bool ok = !problem_unprepared(pi);  // not over budget: skipped as a whole
          if (ok) {
            ok = in_budget(pi, started[pi], false);
            skipped += !ok;
          }
          if (!ok) candidate_done(pi);  // a task not run is one the finals need not wait for
          return ok;
        },
        [&](MeasureSlot& slot, std::size_t t) {
          const auto [pi, i] = tasks[t];
          if (i == kFinish) {
            final_round(slot, pi);
            if (options.compare_vendor) compare_vendor(slot, pi);
            return;
          }
          struct Done {  // also when the measurement throws: the finals must not wait forever
            std::function<void()> f;
            ~Done() { f(); }
          } done{[&, pi = pi] { candidate_done(pi); }};
          measure_one(slot, pi, work[pi][i], config.benchmark, Timing::First, true);
        },
        [&](std::size_t t) { return tasks[t].first; },
        // While the compiler is behind, a slot takes up to kProblemsKept - 1 problems at once, so
        // that each new code object gives it a candidate of each (its worker keeps their data).
        // Not with a seconds budget: a problem's seconds run from its first candidate on, also
        // while its slot is busy with the others.
        [&](std::size_t t) { return tasks[t].second == kFinish || compile.ready(work[tasks[t].first][tasks[t].second].cache_key); },
        config.search.budget_seconds > 0 ? 1 : kProblemsKept - 1);
    sum.over_budget += skipped;
  }
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi) {
    const Problem& problem = config.problems[pi];
    std::vector<Work>& ws = work[pi];
    // One round: `which` measured over all slots, each as it frees up.
    auto round = [&](const std::vector<std::size_t>& which, const BenchmarkOptions& bench, Timing timing,
                     bool first_of_round) {
      std::size_t started = 0, skipped = 0;
      runner.run(
          which.size(),
          [&](std::size_t) {
            if (problem_unprepared(pi)) return false;  // not over budget: skipped as a whole
            bool ok = in_budget(pi, started, first_of_round);
            skipped += !ok;
            return ok;
          },
          [&](MeasureSlot& slot, std::size_t n) {
            Work& w = ws[which[n]];
            std::optional<db::MeasurementRecord> m = measure_one(slot, pi, w, bench, timing, true);
            if (!m) return;
            std::lock_guard<std::mutex> lock(mu);
            w.row = halving_row(*m);
            if (timing == Timing::Short && m->status == "ok") ++sum.short_timed;
            if (timing == Timing::Again) {
              if (sum.short_timed) --sum.short_timed;
              ++sum.fully_timed;
            }
          });
      return skipped;
    };
    std::vector<std::size_t> fresh;
    for (std::size_t i = 0; i < ws.size(); ++i)
      if (!ws[i].row.measured) fresh.push_back(i);
    if (halving) {
      // Round 1: a short timing for every candidate not yet measured, recorded as 'ok' with
      // kShortTimingReason. Round 2: the best third (at most the budget) fully timed, counting
      // those a stopped sweep already timed fully; the row is replaced. Each round waits for the
      // one before it: which candidates go on depends on all of its timings.
      sum.over_budget += round(fresh, short_benchmark(config.benchmark), Timing::Short, false);
      auto rows = [&] {
        std::vector<HalvingRow> r;
        for (const Work& w : ws) r.push_back(w.row);
        return r;
      };
      if (!problem_unprepared(pi)) round(halving_round2(rows(), config.search.budget), config.benchmark, Timing::Again, true);
    }
    if (halving && !problem_unprepared(pi)) final_round(slots[0], pi);
    if (problem_unprepared(pi)) {
      sum.unprepared.push_back(problem.key() + ": " + unprepared[pi]);
      progress.message("skipping " + problem.key() + ": " + unprepared[pi] +
                       "; nothing is recorded for it, a rerun tries again (--prepare-timeout sets the limit)");
      continue;
    }
    // Whatever the strategy and however often the sweep was resumed: the problem's winner is
    // never a short timing. While it is one, it is fully timed (and may then lose its place).
    // Outside halving (a database a halving sweep began) a promotion is followed by the finals
    // again, which may in turn leave a short timing on top: each candidate is promoted once.
    for (bool again = true; again;) {
      again = false;
      for (std::size_t guard = 0; guard < selected[pi].size(); ++guard) {
        auto win = db.find_winner(info.arch, problem.key());
        if (!win) break;
        auto rec = db.find_measurement(problem_ids[pi], win->solution_id, info.arch);
        if (!rec || rec->reason != kShortTimingReason) break;
        auto it = std::find_if(selected[pi].begin(), selected[pi].end(),
                               [&](const auto& sc) { return sc.first == win->solution_id; });
        if (it == selected[pi].end()) break;  // not a candidate of this config: leave it
        std::optional<Work> w = measured_again(pi, it->first, it->second);
        if (!w || !measure_one(slots[0], pi, *w, config.benchmark, Timing::Promote, false)) break;
        if (sum.short_timed) --sum.short_timed;
        ++sum.promoted;
        again = !halving;
      }
      if (again) final_round(slots[0], pi);
    }
    if (options.compare_vendor && !vendor_done[pi]) compare_vendor(slots[0], pi);
  }
  compile.wait_all();  // a compile that failed with an exception fails the sweep, as before
  sum.measure_wall_s = std::chrono::duration<double>(clock::now() - measure_start).count();
  const CompilePool::Stats cs = compile.stats();
  sum.compile_wall_s = cs.wall_s, sum.compile_busy_s = cs.busy_s, sum.compile_cpu_s = cs.cpu_s;
  sum.compile_threads = cs.threads;
  sum.compile_cpu_known = !host;
  int worker_starts = 0;
  for (const auto& s : slots) {
    worker_starts += s.worker_starts();
    sum.per_device.push_back({s.device, s.measured, s.worker_starts()});
  }
  progress.finish(std::to_string(sum.benchmarked) + " benchmarked, " + std::to_string(sum.invalid) + " invalid, " +
                  std::to_string(sum.launch_failed) + " failed to launch, " + std::to_string(sum.crashed) +
                  " crashed, " + std::to_string(sum.timed_out) + " timed out" +
                  (worker_starts > int(slots.size()) ? " (" + std::to_string(worker_starts) + " worker processes)" : ""));
  for (auto& s : slots) s.worker.reset();  // ends the workers

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
  if (s.not_selected || s.over_budget || s.short_timed || s.fully_timed || s.remeasured)
    std::fprintf(out, "search: %zu not selected, %zu left over the seconds budget, %zu with a short timing only, "
                      "%zu fully timed as contenders (+%zu short-timed winners promoted), %zu full re-measurements (finals, promotions)\n",
                 s.not_selected, s.over_budget, s.short_timed, s.fully_timed, s.promoted, s.remeasured);
  std::fprintf(out, "failed by reason: %zu invalid, %zu failed to launch, %zu crashed, %zu timed out\n", s.invalid,
               s.launch_failed, s.crashed, s.timed_out);
  if (s.recompiled)
    std::fprintf(out, "%zu code objects of earlier sweeps' candidates compiled again to re-time them (finals, promotions)\n",
                 s.recompiled);
  for (const auto& l : s.devices_left_out)
    std::fprintf(out, "left out (its worker did not start; the others measured its share): %s\n", l.c_str());
  if (s.per_device.size() > 1) {
    std::fprintf(out, "per device:");
    for (const auto& d : s.per_device)
      std::fprintf(out, "  %d: %zu measured%s", d.device, d.measured,
                   d.worker_starts > 1 ? (" (" + std::to_string(d.worker_starts) + " workers)").c_str() : "");
    std::fprintf(out, "\n");
  }
  if (s.compile_wall_s > 0) {
    const double n = double(std::max<std::size_t>(1, s.compiled + s.compile_failed));
    std::fprintf(out, "compiling: %.1f s wall on %u threads; %.1f s in compile calls (%.2f s each, %.1f at once on average)",
                 s.compile_wall_s, s.compile_threads, s.compile_busy_s, s.compile_busy_s / n,
                 s.compile_busy_s / s.compile_wall_s);
    if (s.compile_cpu_known) std::fprintf(out, ", %.1f s of compiler CPU (%.2f s each)", s.compile_cpu_s, s.compile_cpu_s / n);
    std::fprintf(out, "\n");
  }
  if (s.measure_wall_s > 0)
    std::fprintf(out, "measuring: %.1f s wall; in the workers (summed over devices) %.1f s preparing (data, code "
                      "objects), %.1f s validating, %.1f s timing\n",
                 s.measure_wall_s, s.prepare_s, s.validate_s, s.timing_s);
  for (const auto& u : s.unprepared) std::fprintf(out, "not tuned (its data were not ready in time): %s\n", u.c_str());
  for (const auto& u : s.no_candidate)
    std::fprintf(out, "no generated candidate (the vendor library serves it, if it computes it): %s\n", u.c_str());
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
