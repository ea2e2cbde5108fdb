#include "tuner/sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "db/database.h"
#include "vendors/vendor.h"
#include "tuner/compile_pool.h"
#include "tuner/compile_process.h"
#include "tuner/enumerator.h"
#include "tuner/measure_slots.h"
#include "tuner/progress.h"
#include "tuner/search.h"
#include "tuner/strategy.h"
#include "tuner/sweep_run.h"
#include "tuner/worker.h"

namespace tiletune::tuner {
namespace {

std::string first_lines(const std::string& text, std::size_t max_chars = 600) {
  return text.size() <= max_chars ? text : text.substr(0, max_chars) + "...";
}

// The devices to measure on, each with its description (all of one arch: one sweep, one arch).
std::vector<std::pair<int, gpu::DeviceInfo>> sweep_devices(const SweepOptions& o, const gpu::DeviceInfo& first) {
  std::vector<int> indices = o.devices.empty() ? std::vector<int>{o.device} : o.devices;
  std::vector<std::pair<int, gpu::DeviceInfo>> out;
  if (gpu::traits(o.backend).host_memory) {
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

// The database's merge keeps a finalist's re-timing by these names (db::Database::better).
static_assert(std::string_view(kFinalTimingReason) == db::kFinalistReason &&
              std::string_view(kFinalTimingReasonV1) == db::kFinalistReasonV1);

HalvingRow halving_row(const db::MeasurementRecord& m) {
  HalvingRow r;
  r.measured = true;
  if (m.status == db::Status::Ok) {
    if (m.reason == kShortTimingReason) r.short_ms = m.median_ms;
    else r.full_ms = m.median_ms, r.promoted = m.reason == kPromotedReason,
      r.final = db::is_finalist_reason(m.reason);
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

// ---- setting up ---------------------------------------------------------------------------------

Sweep::Sweep(const TuningConfig& config, const SweepOptions& options, std::FILE* log)
    : config_(config),
      options_(options),
      log_(log),
      strategy_(find_strategy(config.search.strategy)),
      host_(gpu::traits(options.backend).host_memory),
      device_list_(options.devices.empty() ? std::vector<int>{options.device} : options.devices),
      dev_(nullptr),
      final_bench_(final_benchmark(config.benchmark, options.backend)),
      db_([&] {
        if (device_list_.size() > 1 && options.isolation != Isolation::Process)
          throw Error("measuring on several devices needs a worker process per device (--isolation process)");
        // This process compiles for (and, in-process, measures on) the first device.
        dev_ = gpu::open_device(options.backend, host_ ? 0 : device_list_[0]);
        return db::Database::open(options.db_path, db::Mode::ReadWrite);
      }()),
      compiler_version_(dev_->compiler().version()),
      vendor_tflops_(config.problems.size(), -1),
      unprepared_(config.problems.size()),
      first_start_(new std::atomic<long long>[config.problems.size()]),
      started_here_(config.problems.size(), 0),
      vendor_done_(config.problems.size(), 0),
      batch_left_(config.problems.size(), 0) {
  const gpu::DeviceInfo& info = dev_->info();
  sum_.arch = info.arch;
  sum_.device_name = info.name;
  std::fprintf(log_, "tiletune: %s device %d: %s (%s, %d %s), compiler %s\n", gpu::to_string(info.backend),
               device_list_[0], info.name.c_str(), info.arch.c_str(), info.multiprocessors,
               host_ ? "threads" : "multiprocessors", compiler_version_.c_str());
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi) first_start_[pi] = 0;
  open_slots();
  enumerate_candidates();
  select_work();
}

Sweep::~Sweep() = default;

void Sweep::open_slots() {
  for (const auto& [index, dinfo] : sweep_devices(options_, dev_->info())) {
    MeasureSlot s;
    s.device = index;
    s.device_id = db_.upsert_device(
        {gpu::to_string(dinfo.backend), dinfo.arch, dinfo.name, dinfo.multiprocessors, dinfo.driver_version});
    slots_.push_back(std::move(s));
  }
}

// Whether this sweep finishes problem `pi` (its finals and vendor timing): not a part of a problem
// split over shards, which leaves them to the merged database (tune --finish-shards).
static bool finishes(const SweepOptions& o, std::size_t pi) { return !o.filter.finish || o.filter.finish(pi); }
static bool times_vendor(const SweepOptions& o, std::size_t pi) { return o.compare_vendor && finishes(o, pi); }

void Sweep::enumerate_candidates() {
  enumeration_ = enumerate(config_.templates, config_.problems, dev_->info(), {.keep_pruned = options_.list_pruned});
  const Enumeration& e = enumeration_;
  sum_.total = e.total;
  sum_.pruned = e.pruned_count;
  sum_.candidates = e.candidates.size();
  sum_.pruned_by_reason = e.pruned_by_reason;
  if (config_.duplicates_dropped)
    std::fprintf(log_, "%zu problem(s) named more than once in the config: each is tuned once\n", config_.duplicates_dropped);
  std::fprintf(log_, "enumerated %zu candidates for %zu problems; pruned %zu; %zu remain\n", e.total,
               config_.problems.size(), e.pruned_count, e.candidates.size());
  for (const auto& [reason, count] : e.pruned_by_reason) std::fprintf(log_, "  pruned %6zu  %s\n", count, reason.c_str());
  if (options_.list_pruned)
    for (const auto& p : e.pruned)
      std::fprintf(log_, "  pruned %s for %s: %s\n", p.solution.kernel_name().c_str(),
                   config_.problems[p.problem_index].key().c_str(), p.reason.c_str());
  // With no candidate left the vendor is still timed, so that the problems have a winner.
  if (e.candidates.empty() && !options_.compare_vendor)
    throw Error("no candidate survives pruning for this device: nothing to tune");
  {
    std::vector<std::size_t> admitted(config_.problems.size(), 0);
    for (const auto& c : e.candidates) ++admitted[c.problem_index];
    for (std::size_t pi = 0; pi < config_.problems.size(); ++pi) {
      if (admitted[pi]) continue;
      std::string most = "no template of this kind on this backend";
      std::size_t count = 0;
      for (const auto& [reason, n] : e.pruned_by_problem[pi])
        if (n > count) most = reason, count = n;
      sum_.no_candidate.push_back(config_.problems[pi].key() + ": " + most);
      std::fprintf(log_, "warning: no generated candidate admits %s (most were pruned by %s)\n",
                   config_.problems[pi].key().c_str(), most.c_str());
    }
  }
  // A shard's part of its problems' candidates, after the check above: a part left empty by pruning
  // leaves its problem to the other parts, uncovered by none.
  if (options_.filter.candidate) {
    std::vector<std::size_t> ordinal(config_.problems.size(), 0);
    std::erase_if(enumeration_.candidates, [&](const Candidate& c) {
      return !options_.filter.candidate(c.problem_index, ordinal[c.problem_index]++);
    });
    sum_.candidates = enumeration_.candidates.size();
    std::fprintf(log_, "%zu of them in this shard\n", sum_.candidates);
  }
}

// Database ids; which candidates the strategy picks, per problem; and which of those are already
// finished (a resumed sweep skips them, unless its strategy plans rounds from them).
void Sweep::select_work() {
  validate(config_.search);
  // What the sweep searched with, for `tiletune report`'s convergence plot (measurements name only
  // their sweep).
  const SearchOptions& so = config_.search;
  db_.set_meta(std::string(db::kSearchMetaPrefix) + config_.name,
               nlohmann::json{{"strategy", so.strategy}, {"budget", so.budget}, {"budget_seconds", so.budget_seconds},
                              {"seed", so.seed}}.dump());
  const gpu::DeviceInfo& info = dev_->info();
  for (const auto& p : config_.problems) problem_ids_.push_back(db_.upsert_problem(p));
  std::vector<std::vector<const Candidate*>> by_problem(config_.problems.size());
  for (const auto& c : enumeration_.candidates) by_problem[c.problem_index].push_back(&c);
  work_.resize(config_.problems.size());
  selected_.resize(config_.problems.size());
  std::vector<CompileJob> jobs;  // in the order the measuring asks for them (sorted below)
  std::vector<std::pair<std::size_t, std::size_t>> job_at;  // per job: the (problem, rank) first needing it
  std::unordered_set<std::string> job_keys;
  std::vector<std::string> forget;  // failed compiles to try again (retry_failed)
  for (std::size_t pi = 0; pi < config_.problems.size(); ++pi) {
    std::vector<SearchCandidate> sc;
    for (const Candidate* c : by_problem[pi]) sc.push_back({c->tmpl.get(), &c->solution});
    std::vector<std::size_t> pick = strategy_.select(config_.search, sc, config_.problems[pi], info);
    if (options_.list_selected) print_selection(log_, config_.problems[pi], sc, pick, info);
    sum_.not_selected += by_problem[pi].size() - pick.size();
    for (std::size_t i : pick) {
      const Candidate& c = *by_problem[pi][i];
      std::int64_t sid = db_.upsert_solution(c.solution, c.tmpl->source_hash());
      selected_[pi].emplace_back(sid, &c);
      HalvingRow row;
      gpu::CompileRequest req = c.tmpl->instantiation(c.solution, config_.problems[pi], info);
      std::string key = compile_cache_key(c.tmpl->source_hash(), req, compiler_version_);
      if (auto m = db_.find_measurement(problem_ids_[pi], sid, info.arch)) {
        // A compile failure is finished only for the compiler (and flags) that failed: under
        // another one the cache key differs, no failed code object is found for it, and the
        // candidate is compiled and measured again.
        const bool retry = m->status == db::Status::CompileFailed && !failed_code_object(db_, key);
        if (options_.retry_failed && m->status != db::Status::Ok) ++sum_.retried;
        else if (!retry) {
          ++sum_.already_done;
          if (!strategy_.in_rounds()) continue;
          row = halving_row(*m);
        }
      }
      Work w{&c, sid, std::move(key), row};
      if (job_keys.insert(w.cache_key).second) {
        const bool failed = failed_code_object(db_, w.cache_key);
        if (failed && options_.retry_failed) forget.push_back(w.cache_key);
        if (db_.find_code_object(w.cache_key) && !(failed && options_.retry_failed)) ++sum_.compile_cached;
        else {
          c.tmpl->add_headers(req);  // only for what is compiled: they are every kernel source
          jobs.push_back({w.cache_key, c.solution.kernel_name(), std::move(req), sid});
          job_at.emplace_back(pi, work_[pi].size());
        }
      }
      work_[pi].push_back(std::move(w));
    }
  }
  order_compile_jobs(jobs, job_at);
  db_.forget_failed_code_objects(forget);
  if (sum_.retried)
    std::fprintf(log_, "retrying %zu recorded failures (--retry-failed); %zu failed code objects to compile again\n",
                 sum_.retried, forget.size());
  const SearchOptions& s = config_.search;
  if (s.strategy != "exhaustive" || s.budget || s.budget_seconds > 0)
    std::fprintf(log_, "search: %s (budget %zu candidates, %g s per problem, seed %llu): %zu candidates not selected\n",
                 s.strategy.c_str(), s.budget, s.budget_seconds, static_cast<unsigned long long>(s.seed), sum_.not_selected);
  if (sum_.already_done)
    std::fprintf(log_, "resuming: %zu candidates already measured in %s\n", sum_.already_done, options_.db_path.c_str());
  start(std::move(jobs));
}

// The measuring side starts the first `slots` problems at once (one device each, see SlotRunner;
// a strategy in rounds goes one problem at a time on all of them) and then takes the next ones in
// order: compile in the same order, the first candidates of those problems first.
void Sweep::order_compile_jobs(std::vector<CompileJob>& jobs,
                               const std::vector<std::pair<std::size_t, std::size_t>>& job_at) const {
  const std::size_t together = strategy_.in_rounds() ? 1 : slots_.size();
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

// The measuring slots (this process's device, or a worker process per device), the progress line,
// the compile pool and the workers, which start while the pool compiles.
void Sweep::start(std::vector<CompileJob> jobs) {
  const gpu::DeviceInfo& info = dev_->info();
  if (options_.isolation == Isolation::InProcess) {
    slots_[0].local = std::make_unique<Measurer>(*dev_, db_);
  } else {
    if (options_.worker_exe.empty()) throw Error("process isolation needs the path of the tiletune program (worker_exe)");
    for (auto& s : slots_)
      s.worker = std::make_unique<WorkerProcess>(options_.worker_exe, info.backend, host_ ? 0 : s.device,
                                                 options_.db_path, info.arch);
  }
  std::size_t planned = 0;
  for (std::size_t pi = 0; pi < work_.size(); ++pi) planned += strategy_.planned(rows(pi), config_.search);
  progress_ = std::make_unique<Progress>(log_);
  compile_stage_ = jobs.empty() ? 0 : progress_->add_stage("compile", jobs.size());
  measure_stage_ = progress_->add_stage("measure", planned, jobs.empty() ? Progress::kNoFeeder : compile_stage_);
  const unsigned threads = options_.compile_jobs > 0 ? unsigned(options_.compile_jobs)
                                                     : std::max(1u, std::thread::hardware_concurrency());
  // --compile-servers (compile_exe set): a compile server process per compile thread, since NVRTC
  // compiles one program at a time per process (tuner/compile_process.h).
  if (!options_.compile_exe.empty() && !host_ && threads > 1 && jobs.size() > 1)
    servers_ = std::make_unique<ProcessCompiler>(options_.compile_exe, info.backend, dev_->compiler());
  const gpu::Compiler& compiler = servers_ ? static_cast<const gpu::Compiler&>(*servers_) : dev_->compiler();
  compile_ = std::make_unique<CompilePool>(std::move(jobs), compiler, options_.db_path, info.arch, compiler_version_,
                                           threads, [this](const CompileJob&, bool ok) {
                                             {
                                               std::lock_guard<std::mutex> lock(mu_);
                                               ++(ok ? sum_.compiled : sum_.compile_failed);
                                             }
                                             progress_->step(compile_stage_);
                                           });
  if (options_.isolation == Isolation::Process) start_measuring();
}

// The workers start while the pool compiles (a device slow to open does not hold the compiler
// up); one whose worker does not start is left out, not the sweep stopped (unless none starts).
void Sweep::start_measuring() {
  sum_.devices_left_out = start_workers(slots_);
  for (const auto& l : sum_.devices_left_out) progress_->message("left out " + l);
  std::string names;
  for (const auto& s : slots_) names += (names.empty() ? "" : ",") + std::to_string(s.device);
  char line[512];
  std::snprintf(line, sizeof line, "measuring in %zu worker process%s (%s %s: %s), time-out %g s per candidate, %g s to prepare a problem",
                slots_.size(), slots_.size() > 1 ? "es" : "", host_ && slots_.size() > 1 ? "logical workers" : slots_.size() > 1 ? "devices" : "device",
                names.c_str(), options_.worker_exe.c_str(), config_.benchmark.timeout_s, config_.benchmark.prepare_timeout_s);
  progress_->message(line);
}

// ---- measuring and recording --------------------------------------------------------------------

long long Sweep::now_ns() const {
  return (long long)std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The one way a measurement becomes its database record.
db::MeasurementRecord Sweep::new_record(std::size_t pi, std::int64_t solution_id, const MeasureSlot& slot) const {
  db::MeasurementRecord m;
  m.problem_id = problem_ids_[pi];
  m.solution_id = solution_id;
  m.device_id = slot.device_id;
  m.arch = dev_->info().arch;
  m.sweep = config_.name;
  return m;
}

namespace {
void take_result(db::MeasurementRecord& m, const MeasureResult& res, const Problem& problem) {
  static_cast<db::Outcome&>(m) = res;
  if (res.status != db::Status::Ok) {  // a failure's timings (a wrong vendor result is timed) are not kept
    m.min_ms = m.median_ms = m.max_ms = db::kNotMeasured;
    return;
  }
  m.tflops = problem.flops() / (res.median_ms * 1e-3) / 1e12;
}
}  // namespace

// Times one candidate with `bench` on `slot`, recording nothing: its code object's failure to
// compile, or the worker's result (`code_object_id` set). A problem whose data could not be
// prepared is noted (status PrepareTimeout).
MeasureResult Sweep::time_work(MeasureSlot& slot, std::size_t pi, const Work& w, const BenchmarkOptions& bench,
                               std::int64_t& code_object_id) {
  std::optional<db::CodeObjectRecord> code;
  {
    std::lock_guard<std::mutex> lock(mu_);
    code = db_.find_code_object(w.cache_key);
  }
  MeasureResult res;
  if (!code || !code->ok) {
    res.status = db::Status::CompileFailed;
    res.reason = code ? first_lines(code->log) : "code object missing";
    return res;
  }
  MeasureRequest r;
  r.problem = config_.problems[pi];
  r.solution = w.cand->solution;
  r.code_object_id = code->id;
  r.benchmark = bench;
  r.tmpl = w.cand->tmpl.get();
  code_object_id = code->id;
  res = slot.measure(r, config_.benchmark.timeout_s, config_.benchmark.prepare_timeout_s);
  std::lock_guard<std::mutex> lock(mu_);
  sum_.prepare_s += res.prepare_s;
  sum_.validate_s += res.validate_s;
  sum_.timing_s += res.timing_s;
  if (res.status == db::Status::PrepareTimeout && unprepared_[pi].empty()) unprepared_[pi] = res.reason;
  return res;
}

// Measures one candidate with `bench` on `slot` and records it (failures too: a rerun does not
// retry them). Empty when the problem could not be prepared.
std::optional<db::MeasurementRecord> Sweep::measure_one(MeasureSlot& slot, std::size_t pi, const Work& w,
                                                        const BenchmarkOptions& bench, RecordAs timing, bool count_step) {
  const Problem& problem = config_.problems[pi];
  {
    // Time spent waiting for the compiler is not the measuring's own pace (the progress line's
    // time left); each slot waits on its own, so its share of the stage is 1 / slots.
    const auto t0 = std::chrono::steady_clock::now();
    compile_->wait(w.cache_key);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (waited > 1e-3) progress_->waited(measure_stage_, waited / double(slots_.size()));
  }
  long long unset = 0;
  first_start_[pi].compare_exchange_strong(unset, now_ns());
  db::MeasurementRecord m = new_record(pi, w.solution_id, slot);
  const MeasureResult res = time_work(slot, pi, w, bench, m.code_object_id);
  if (res.status == db::Status::PrepareTimeout) return std::nullopt;
  take_result(m, res, problem);
  if (res.status == db::Status::Ok) {
    if (timing == RecordAs::Short) m.reason = kShortTimingReason;  // until a full timing replaces it
    if (timing == RecordAs::Final) m.reason = kFinalTimingReason;
    if (timing == RecordAs::Promote) m.reason = kPromotedReason;
  }
  record(m, slot, w, timing, count_step);
  return m;
}

void Sweep::record(db::MeasurementRecord& m, MeasureSlot& slot, const Work& w, RecordAs timing, bool count_step) {
  char note[128];
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (m.status == db::Status::Ok && timing != RecordAs::Short) best_tflops_ = std::max(best_tflops_, m.tflops);
    if (timing != RecordAs::First && timing != RecordAs::Short) ++sum_.remeasured;  // recorded all the same
    else if (m.status == db::Status::Ok) ++sum_.benchmarked;
    else if (m.status == db::Status::Invalid) ++sum_.invalid;
    else if (m.status == db::Status::LaunchFailed) ++sum_.launch_failed;
    else if (m.status == db::Status::Crashed) ++sum_.crashed;
    else if (m.status == db::Status::Timeout) ++sum_.timed_out;
    db_.put_measurement(m);
    ++slot.measured;
    std::snprintf(note, sizeof note, "best %.2f TFLOP/s", best_tflops_);
  }
  if (m.status == db::Status::Crashed || m.status == db::Status::Timeout)
    progress_->message(w.cand->solution.kernel_name() + ": " + db::to_string(m.status) + ": " + m.reason);
  // In this process a crashed device cannot go on: the culprit is recorded, a rerun resumes
  // after it. (A worker process is simply replaced.)
  if (m.status == db::Status::Crashed && slot.local)
    throw Error("the device failed after " + w.cand->solution.kernel_name() + " (" + m.reason +
                "); it is recorded as crashed, rerun the same command to resume");
  if (count_step) progress_->step(measure_stage_, note);
}

bool Sweep::unprepared(std::size_t pi) {
  std::lock_guard<std::mutex> lock(mu_);
  return !unprepared_[pi].empty();
}

std::vector<std::size_t> Sweep::fresh(std::size_t pi) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < work_[pi].size(); ++i)
    if (!work_[pi][i].row.measured) out.push_back(i);
  return out;
}

std::vector<HalvingRow> Sweep::rows(std::size_t pi) const {
  std::vector<HalvingRow> r;
  for (const Work& w : work_[pi]) r.push_back(w.row);
  return r;
}

// ---- the vendor library ---------------------------------------------------------------------------

// The vendor library is a candidate like any other: its default and each of its other algorithms
// (cuBLASLt's heuristic's first few, cuDNN's engine configurations) are measurements that can be
// the winner, which the runtime then serves by calling the library with that algorithm. Their
// "source" is the library's name.
MeasureResult Sweep::time_vendor(MeasureSlot& slot, std::size_t pi, const Solution& choice, int alternatives,
                                 const BenchmarkOptions& bench) {
  MeasureRequest r;
  r.problem = config_.problems[pi];
  r.vendor = true;
  r.solution = choice;
  r.vendor_alternatives = alternatives;
  r.benchmark = bench;
  return slot.measure(r, config_.benchmark.timeout_s, config_.benchmark.prepare_timeout_s);
}

MeasureResult Sweep::measure_vendor_choice(MeasureSlot& slot, std::size_t pi, const Solution& choice, int alternatives,
                                           bool final) {
  const Problem& problem = config_.problems[pi];
  MeasureResult res = time_vendor(slot, pi, choice, alternatives, final ? final_bench_ : config_.benchmark);
  std::lock_guard<std::mutex> lock(mu_);
  if (res.status != db::Status::Unsupported && !res.vendor.empty()) {
    db::MeasurementRecord m = new_record(pi, db_.upsert_solution(choice, res.vendor), slot);
    take_result(m, res, problem);
    if (final && m.status == db::Status::Ok) m.reason = kFinalTimingReason;
    db_.put_measurement(m);
  }
  return res;
}

// The vendor on problem pi, timed by `slot` (whose worker has the problem's data when it just
// measured its candidates): its default, its other algorithms, and - as the kernels' finals - the
// fastest few again for final_ms, until they are all so timed (a longer timing may drop one
// behind the next, which is then timed so too); the default alone too, so that the vendor is
// compared with the kernels' finalists under the same sustained load.
void Sweep::compare_vendor(MeasureSlot& slot, std::size_t pi) {
  const Solution library_default{kVendorTemplate, {}};
  MeasureResult res = measure_vendor_choice(slot, pi, library_default, options_.vendor_algorithms, false);
  struct Timed {
    double ms;
    VendorChoiceRow row;
    bool final = false;
  };
  std::vector<Timed> timed;
  if (res.status == db::Status::Ok) timed.push_back({res.median_ms, {library_default, res.vendor}});
  for (const auto& choice : res.alternatives) {
    const MeasureResult alt = measure_vendor_choice(slot, pi, Solution{kVendorTemplate, choice}, 0, false);
    if (alt.status == db::Status::Crashed && slot.local) throw Error("the device failed in the vendor library (" + alt.reason + ")");
    if (alt.status == db::Status::Ok) timed.push_back({alt.median_ms, {Solution{kVendorTemplate, choice}, alt.vendor}});
  }
  for (bool more = !timed.empty(); more;) {
    more = false;
    std::stable_sort(timed.begin(), timed.end(), [](const Timed& a, const Timed& b) { return a.ms < b.ms; });
    for (std::size_t i = 0; i < std::min(kFinalists, timed.size()) && !more; ++i) {
      if (timed[i].final) continue;
      const MeasureResult again = measure_vendor_choice(slot, pi, timed[i].row.choice, 0, true);
      if (again.status == db::Status::Crashed && slot.local) throw Error("the device failed in the vendor library (" + again.reason + ")");
      timed[i].final = true;
      timed[i].ms = again.status == db::Status::Ok ? again.median_ms : std::numeric_limits<double>::infinity();
      if (timed[i].row.choice.params.empty() && again.status == db::Status::Ok) res.median_ms = again.median_ms;
      more = true;
    }
  }
  std::vector<VendorChoiceRow> choices;
  std::size_t finalists = 0;
  for (const Timed& t : timed) {
    choices.push_back(t.row);
    choices.back().finalist = t.final && std::isfinite(t.ms) && finalists < kFinalists;
    finalists += choices.back().finalist;
  }
  if (!res.vendor.empty()) {
    head_to_head(slot, pi, choices);
    std::lock_guard<std::mutex> lock(mu_);
    const auto m = db_.find_measurement(problem_ids_[pi], db_.upsert_solution(library_default, res.vendor), dev_->info().arch);
    if (res.status == db::Status::Ok && m && m->status == db::Status::Ok) res.median_ms = m->median_ms;
  }
  note_vendor(pi, res, slot);
}

// ---- the verdict --------------------------------------------------------------------------------

// The finals time each finalist in one stretch, one after another, the kernels' before the
// vendor's. On an H100 a kernel 15% ahead of cuBLASLt in them only matched it under do_bench
// beside torch.matmul (results/gemm/2026-12-07_h100_storers_ab_tables_75a0e11.md): a timing
// right after an idle stretch runs at clocks that sustained load does not keep. So the finalists
// of both sides meet at the end, timed one after another in kHeadToHeadRounds rounds, each round
// in another order, each recorded at the median of its rounds (benchmarks/vs_torch.py compares
// two sides so). A candidate whose earlier timing is then among the kFinalists fastest, or the
// fastest of its side, joins another such match (each candidate once) with the fastest of each
// side so far, so that neither side's best stands on a timing the other side did not share.
void Sweep::head_to_head(MeasureSlot& slot, std::size_t pi, const std::vector<VendorChoiceRow>& vendor_choices) {
  const Problem& problem = config_.problems[pi];
  const std::string& arch = dev_->info().arch;
  struct Contender {
    std::int64_t sid = 0;
    const Candidate* kernel = nullptr;  // else the vendor's `choice`
    Solution choice;
  };
  std::map<std::int64_t, Contender> known;  // every candidate of this problem that can be timed again
  std::vector<Contender> first, vendor_first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const VendorChoiceRow& c : vendor_choices) {
      const std::int64_t sid = db_.upsert_solution(c.choice, c.source);
      known[sid] = {sid, nullptr, c.choice};
      if (c.finalist) vendor_first.push_back(known[sid]);
    }
    std::vector<std::pair<double, std::int64_t>> kernels;
    for (const auto& [sid, cand] : selected_[pi]) {
      known[sid] = {sid, cand, {}};
      auto m = db_.find_measurement(problem_ids_[pi], sid, arch);
      if (m && m->status == db::Status::Ok && db::is_finalist_reason(m->reason))
        kernels.emplace_back(m->median_ms, sid);
    }
    std::sort(kernels.begin(), kernels.end());
    if (kernels.empty() || vendor_first.empty()) return;  // nothing to compare
    for (std::size_t i = 0; i < std::min(kFinalists, kernels.size()); ++i) first.push_back(known[kernels[i].second]);
    first.insert(first.end(), vendor_first.begin(), vendor_first.end());
  }
  BenchmarkOptions bench = final_bench_;
  bench.target_ms = std::max(config_.benchmark.target_ms, final_bench_.target_ms / double(kHeadToHeadRounds));
  std::set<std::int64_t> together;
  // Each match times at least one candidate for the first time, so there are at most as many as
  // there are candidates; in practice one or two.
  for (std::vector<Contender> match = first; match.size() >= 2;) {
    struct Timings {
      std::int64_t code_object_id = 0;
      MeasureResult last;  // the failure, or the last 'ok' result
      std::vector<double> ms;
      double min_ms = std::numeric_limits<double>::infinity(), max_ms = 0;
    };
    std::vector<Timings> t(match.size());
    std::vector<std::optional<Work>> work(match.size());
    for (std::size_t i = 0; i < match.size(); ++i)
      if (match[i].kernel && !(work[i] = measured_again(pi, match[i].sid, match[i].kernel)))
        t[i].last.status = db::Status::CompileFailed, t[i].last.reason = "code object missing";
    for (std::size_t r = 0; r < kHeadToHeadRounds; ++r)
      for (std::size_t i : head_to_head_order(match.size(), r)) {
        if (t[i].last.status != db::Status::Ok) continue;  // failed to compile, or in an earlier round
        const std::optional<Work>& w = work[i];
        MeasureResult res = w ? time_work(slot, pi, *w, bench, t[i].code_object_id)
                              : time_vendor(slot, pi, match[i].choice, 0, bench);
        if (res.status == db::Status::PrepareTimeout) return;
        if (res.status == db::Status::Crashed && slot.local)
          throw Error("the device failed in a head-to-head timing of " + problem.key() + " (" + res.reason + ")");
        t[i].last = res;
        if (res.status != db::Status::Ok) continue;
        t[i].ms.push_back(res.median_ms);
        t[i].min_ms = std::min(t[i].min_ms, res.min_ms);
        t[i].max_ms = std::max(t[i].max_ms, res.max_ms);
      }
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = 0; i < match.size(); ++i) {
      MeasureResult res = t[i].last;
      if (res.status == db::Status::Ok) {
        std::sort(t[i].ms.begin(), t[i].ms.end());
        const std::size_t n = t[i].ms.size();
        res.median_ms = n % 2 ? t[i].ms[n / 2] : 0.5 * (t[i].ms[n / 2 - 1] + t[i].ms[n / 2]);
        res.min_ms = t[i].min_ms, res.max_ms = t[i].max_ms;
      }
      db::MeasurementRecord m = new_record(pi, match[i].sid, slot);
      take_result(m, res, problem);
      m.code_object_id = t[i].code_object_id;
      if (m.status == db::Status::Ok) m.reason = db::kHeadToHeadReason;
      db_.put_measurement(m);
      ++sum_.head_to_head;
      together.insert(match[i].sid);
    }
    // The kFinalists fastest now, and the fastest of each side: any not timed together join the
    // next match, with the fastest kernel and the fastest vendor choice of those that were.
    std::vector<Contender> next;
    std::optional<Contender> best_kernel, best_vendor;
    std::size_t fastest = 0;
    bool kernel_seen = false, vendor_seen = false;
    for (const db::MeasurementRow& row : db_.measurements(problem_ids_[pi])) {
      if (row.arch != arch || row.status != db::Status::Ok || row.reason == kShortTimingReason) continue;
      auto it = known.find(row.solution_id);
      if (it == known.end()) continue;  // not a candidate of this sweep: left as it is
      const bool is_kernel = it->second.kernel != nullptr;
      bool& seen = is_kernel ? kernel_seen : vendor_seen;
      if (together.count(row.solution_id)) {
        auto& best = is_kernel ? best_kernel : best_vendor;
        if (!best) best = it->second;
      } else if (fastest < kFinalists || !seen) {
        next.push_back(it->second);
      }
      seen = true;
      ++fastest;
    }
    if (next.empty()) break;
    for (const auto& b : {best_kernel, best_vendor})
      if (b) next.push_back(*b);
    match = std::move(next);
  }
}

// The vendor's default, beside the winners in the summary; its failures are warnings.
void Sweep::note_vendor(std::size_t pi, const MeasureResult& res, const MeasureSlot& slot) {
  const Problem& problem = config_.problems[pi];
  std::lock_guard<std::mutex> lock(mu_);
  vendor_done_[pi] = 1;
  if (!res.vendor.empty()) sum_.vendor = res.vendor;
  if (res.status == db::Status::Ok || res.status == db::Status::Invalid) {
    if (res.status == db::Status::Invalid)
      progress_->message("warning: " + res.vendor + " disagrees with the reference on " + problem.key() + ": " + res.reason);
    if (res.median_ms > 0) vendor_tflops_[pi] = problem.flops() / (res.median_ms * 1e-3) / 1e12;
  } else if (res.status != db::Status::Unsupported) {
    progress_->message("warning: the vendor library failed on " + problem.key() + ": " + db::to_string(res.status) + ": " + res.reason);
    if (res.status == db::Status::Crashed && slot.local) throw Error("the device failed in the vendor library (" + res.reason + ")");
  }
}

// ---- budgets, finals, promotions ------------------------------------------------------------------

// Whether problem pi's seconds budget (counted from first_start_) allows another candidate: always
// while nothing measures yet, and with `first_of_round` the first of each round too. Asked under
// the runner's lock, or by a problem's finals when none of its tasks can be admitted any more.
bool Sweep::in_budget(std::size_t pi, std::size_t& started_in_round, bool first_of_round) {
  const long long t0 = first_start_[pi].load();
  bool ok = config_.search.budget_seconds <= 0 || started_here_[pi] == 0 || t0 == 0 ||
            (first_of_round && started_in_round == 0) || (now_ns() - t0) * 1e-9 < config_.search.budget_seconds;
  if (ok) {
    ++started_here_[pi];
    ++started_in_round;
  }
  return ok;
}

// The Work to time candidate `sid` of problem pi once more (finals, promotions), whether or not
// this sweep measured it first; a code object gone since (a packed database) is compiled again
// here, on this thread, so that a rerun does not skip the candidate forever. None when it does
// not compile.
std::optional<Sweep::Work> Sweep::measured_again(std::size_t pi, std::int64_t sid, const Candidate* c) {
  Work w{c, sid, {}, {}};
  // The key select_work made for it, where it selected the candidate in this sweep.
  for (const Work& selected : work_[pi])
    if (selected.solution_id == sid) w.cache_key = selected.cache_key;
  if (w.cache_key.empty())
    w.cache_key = compile_cache_key(c->tmpl->source_hash(), c->tmpl->instantiation(c->solution, config_.problems[pi], dev_->info()),
                                    compiler_version_);
  compile_->wait(w.cache_key);
  bool gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gone = !db_.find_code_object(w.cache_key);
  }
  if (gone && compile_->compile_now({w.cache_key, c->solution.kernel_name(),
                                     c->tmpl->compile_request(c->solution, config_.problems[pi], dev_->info()), sid})) {
    std::lock_guard<std::mutex> lock(mu_);
    ++sum_.recompiled;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto code = db_.find_code_object(w.cache_key);
  if (!code || !code->ok) return std::nullopt;
  return w;
}

void Sweep::candidate_done(std::size_t pi) {
  std::lock_guard<std::mutex> lock(batch_mu_);
  --batch_left_[pi];
  batch_cv_.notify_all();
}

// Every strategy's finals: the problem's fastest fully timed candidates of this config (kFinalists,
// from what the database holds, so that a resumed sweep counts those measured before) timed once
// more one after another on `slot`'s device, the later timing recorded: a winner is then not the
// luck of one timing, and the finalists were compared on the same GPU. First waits for the
// problem's batch tasks still running on other slots. Not past a seconds budget, nor in a shard
// holding only a part of the problem's candidates: the finalists are the whole problem's.
void Sweep::final_round(MeasureSlot& slot, std::size_t pi) {
  if (!finishes(options_, pi)) return;
  {
    std::unique_lock<std::mutex> lock(batch_mu_);
    batch_cv_.wait(lock, [&] { return batch_left_[pi] == 0; });
  }
  // Until the fastest few are all re-timed: a re-timing may drop a finalist behind the next
  // candidate, which then gets its second timing too (each candidate at most once), so that a
  // rerun finds the finals done.
  std::size_t started_in_round = 0;
  for (bool more = true; more;) {
    more = false;
    std::vector<HalvingRow> rows;
    std::vector<std::size_t> at;  // position in selected_[pi]
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (std::size_t i = 0; i < selected_[pi].size(); ++i)
        if (auto m = db_.find_measurement(problem_ids_[pi], selected_[pi][i].first, dev_->info().arch)) {
          rows.push_back(halving_row(*m));
          at.push_back(i);
        }
    }
    for (std::size_t k : finalists(rows, strategy_.in_rounds())) {
      const auto& [sid, c] = selected_[pi][at[k]];
      std::optional<Work> w = measured_again(pi, sid, c);
      if (!w) continue;
      // No task of this problem is admitted any more (this one came last), so in_budget's
      // counters for it are this thread's alone.
      if (unprepared(pi) || !in_budget(pi, started_in_round, false)) return;
      // Anything recorded changes the order (a failed re-timing drops the candidate): look again.
      if (measure_one(slot, pi, *w, final_bench_, RecordAs::Final, false)) more = true;
    }
  }
}

// Whatever the strategy and however often the sweep was resumed: the problem's winner is never a
// short timing. While it is one, it is fully timed (and may then lose its place). Outside rounds
// (a database a halving sweep began) a promotion is followed by the finals again, which may in
// turn leave a short timing on top: each candidate is promoted once.
void Sweep::promote_short_winners(std::size_t pi) {
  const Problem& problem = config_.problems[pi];
  for (bool again = true; again;) {
    again = false;
    for (std::size_t guard = 0; guard < selected_[pi].size(); ++guard) {
      auto win = db_.find_winner(dev_->info().arch, problem.key());
      if (!win) break;
      auto rec = db_.find_measurement(problem_ids_[pi], win->solution_id, dev_->info().arch);
      if (!rec || rec->reason != kShortTimingReason) break;
      auto it = std::find_if(selected_[pi].begin(), selected_[pi].end(),
                             [&](const auto& sc) { return sc.first == win->solution_id; });
      if (it == selected_[pi].end()) break;  // not a candidate of this config: leave it
      std::optional<Work> w = measured_again(pi, it->first, it->second);
      if (!w || !measure_one(slots_[0], pi, *w, config_.benchmark, RecordAs::Promote, false)) break;
      if (sum_.short_timed) --sum_.short_timed;
      ++sum_.promoted;
      again = !strategy_.in_rounds();
    }
    if (again) final_round(slots_[0], pi);
  }
}

// ---- what strategies lay out --------------------------------------------------------------------

void Sweep::measure_batch() {
  constexpr std::size_t kFinish = std::size_t(-1);
  std::vector<std::pair<std::size_t, std::size_t>> tasks;  // (problem, work item or kFinish)
  for (std::size_t pi = 0; pi < work_.size(); ++pi) {
    for (std::size_t i = 0; i < work_[pi].size(); ++i)
      if (!work_[pi][i].row.measured) tasks.emplace_back(pi, i), ++batch_left_[pi];
    tasks.emplace_back(pi, kFinish);
  }
  std::vector<std::size_t> started(config_.problems.size(), 0);
  std::size_t skipped = 0;
  auto may_start = [&](std::size_t t) {
    const auto [pi, i] = tasks[t];
    if (i == kFinish) return !unprepared(pi);
    bool ok = !unprepared(pi);  // not over budget: skipped as a whole
    if (ok) {
      ok = in_budget(pi, started[pi], false);
      skipped += !ok;
    }
    if (!ok) candidate_done(pi);  // a task not run is one the finals need not wait for
    return ok;
  };
  auto task = [&](MeasureSlot& slot, std::size_t t) {
    const auto [pi, i] = tasks[t];
    if (i == kFinish) {
      final_round(slot, pi);
      if (times_vendor(options_, pi)) compare_vendor(slot, pi);
      return;
    }
    struct Done {  // also when the measurement throws: the finals must not wait forever
      std::function<void()> f;
      ~Done() { f(); }
    } done{[&, pi = pi] { candidate_done(pi); }};
    measure_one(slot, pi, work_[pi][i], config_.benchmark, RecordAs::First, true);
  };
  // While the compiler is behind, a slot takes up to kProblemsKept - 1 problems at once, so that
  // each new code object gives it a candidate of each (its worker keeps their data). Not with a
  // seconds budget: a problem's seconds run from its first candidate on, also while its slot is
  // busy with the others.
  runner_->run(
      tasks.size(), may_start, task, [&](std::size_t t) { return tasks[t].first; },
      [&](std::size_t t) { return tasks[t].second == kFinish || compile_->ready(work_[tasks[t].first][tasks[t].second].cache_key); },
      config_.search.budget_seconds > 0 ? 1 : kProblemsKept - 1);
  sum_.over_budget += skipped;
}

std::size_t Sweep::round(std::size_t pi, const std::vector<std::size_t>& which, const BenchmarkOptions& bench,
                         RecordAs timing, bool first_of_round) {
  std::size_t started = 0, skipped = 0;
  runner_->run(
      which.size(),
      [&](std::size_t) {
        if (unprepared(pi)) return false;  // not over budget: skipped as a whole
        bool ok = in_budget(pi, started, first_of_round);
        skipped += !ok;
        return ok;
      },
      [&](MeasureSlot& slot, std::size_t n) {
        Work& w = work_[pi][which[n]];
        std::optional<db::MeasurementRecord> m = measure_one(slot, pi, w, bench, timing, true);
        if (!m) return;
        std::lock_guard<std::mutex> lock(mu_);
        w.row = halving_row(*m);
        if (timing == RecordAs::Short && m->status == db::Status::Ok) ++sum_.short_timed;
        if (timing == RecordAs::Again) {
          if (sum_.short_timed) --sum_.short_timed;
          ++sum_.fully_timed;
        }
      });
  return skipped;
}

void Sweep::finish_problem(std::size_t pi) {
  const Problem& problem = config_.problems[pi];
  if (unprepared(pi)) {
    sum_.unprepared.push_back(problem.key() + ": " + unprepared_[pi]);
    progress_->message("skipping " + problem.key() + ": " + unprepared_[pi] +
                       "; nothing is recorded for it, a rerun tries again (--prepare-timeout sets the limit)");
    return;
  }
  promote_short_winners(pi);
  if (times_vendor(options_, pi) && !vendor_done_[pi]) compare_vendor(slots_[0], pi);
}

// ---- the run and its summary -------------------------------------------------------------------

SweepSummary Sweep::run() {
  // On the host the kernels being timed use every core: a compiler running beside them would
  // disturb their timings, so there the whole compile stage comes first.
  if (host_) compile_->wait_all();
  measure_start_ = std::chrono::steady_clock::now();
  progress_->begin(measure_stage_);
  runner_ = std::make_unique<SlotRunner>(slots_);
  strategy_.measure(*this);
  return finish();
}

SweepSummary Sweep::finish() {
  compile_->wait_all();  // a compile that failed with an exception fails the sweep
  sum_.measure_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - measure_start_).count();
  const CompilePool::Stats cs = compile_->stats();
  sum_.compile_wall_s = cs.wall_s, sum_.compile_busy_s = cs.busy_s, sum_.compile_cpu_s = cs.cpu_s;
  sum_.compile_threads = cs.threads;
  sum_.first_compile_error = cs.first_error;
  sum_.compile_cpu_known = !host_;
  int worker_starts = 0;
  for (const auto& s : slots_) {
    worker_starts += s.worker_starts();
    sum_.per_device.push_back({s.device, s.measured, s.worker_starts()});
  }
  progress_->finish(std::to_string(sum_.benchmarked) + " benchmarked, " + std::to_string(sum_.invalid) + " invalid, " +
                    std::to_string(sum_.launch_failed) + " failed to launch, " + std::to_string(sum_.crashed) +
                    " crashed, " + std::to_string(sum_.timed_out) + " timed out" +
                    (worker_starts > int(slots_.size()) ? " (" + std::to_string(worker_starts) + " worker processes)" : ""));
  for (auto& s : slots_) s.worker.reset();  // ends the workers
  std::vector<db::WinnerRecord> winners = db_.winners(dev_->info().arch);
  for (std::size_t pi = 0; pi < config_.problems.size(); ++pi) {
    const Problem& p = config_.problems[pi];
    const double vendor_ms = vendor_tflops_[pi] > 0 ? p.flops() / (vendor_tflops_[pi] * 1e12) * 1e3 : -1;
    for (const auto& w : winners)
      if (w.problem_id == problem_ids_[pi])
        sum_.winners.push_back({p, w.solution.kernel_name(), w.median_ms, w.tflops, vendor_tflops_[pi], vendor_ms,
                                w.solution.template_name == kVendorTemplate});
    note_uncompiled(pi);
  }
  return sum_;
}

// A problem none of whose selected candidates compiled, by what the database holds (a rerun that
// resumes such a sweep compiles nothing and must say so too); a candidate not measured (a seconds
// budget) says nothing either way.
void Sweep::note_uncompiled(std::size_t pi) {
  std::string first;
  for (const auto& [sid, c] : selected_[pi]) {
    const auto m = db_.find_measurement(problem_ids_[pi], sid, dev_->info().arch);
    if (!m) continue;
    if (m->status != db::Status::CompileFailed) return;
    if (first.empty()) first = c->solution.kernel_name() + ": " + m->reason;
  }
  if (!first.empty()) sum_.uncompiled.push_back(config_.problems[pi].key() + ": " + first);
}

SweepSummary run_sweep(const TuningConfig& config, const SweepOptions& options, std::FILE* log) {
  Sweep sweep(config, options, log);
  return sweep.run();
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
  if (s.head_to_head)
    std::fprintf(out, "head to head: %zu finalists timed against the other side's (kernels against the vendor), %zu rounds each\n",
                 s.head_to_head, kHeadToHeadRounds);
  std::fprintf(out, "failed by reason: %zu invalid, %zu failed to launch, %zu crashed, %zu timed out\n", s.invalid,
               s.launch_failed, s.crashed, s.timed_out);
  if (!s.first_compile_error.empty())
    std::fprintf(out, "first compile failure of %zu:\n%s", s.compile_failed, log_head(s.first_compile_error).c_str());
  if (s.retried) std::fprintf(out, "%zu recorded failures retried (--retry-failed)\n", s.retried);
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
  for (const auto& u : s.uncompiled) std::fprintf(out, "no candidate compiled: %s\n", u.substr(0, u.find('\n')).c_str());
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

std::string log_head(const std::string& log, std::size_t lines) {
  std::string head;
  std::size_t n = 0, at = 0;
  while (at < log.size() && n < lines) {
    const std::size_t end = std::min(log.find('\n', at), log.size());
    head += "  " + log.substr(at, end - at) + "\n";
    at = end + 1, ++n;
  }
  return head;
}

}  // namespace tiletune::tuner
