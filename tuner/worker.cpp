#include "tuner/worker.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "db/database.h"
#include "ops/launch.h"
#include "ops/operation.h"
#include "vendors/vendor.h"
#include "tuner/timing.h"

namespace tiletune::tuner {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double number_or_nan(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? NAN : it->get<double>();
}

}  // namespace

// ---- protocol ------------------------------------------------------------------------------------

json to_json(const MeasureRequest& r) {
  json j;
  json problem;
  tiletune::to_json(problem, r.problem);
  j["problem"] = problem;
  if (r.vendor) {
    j["vendor"] = true;
    if (!r.solution.params.empty()) j["choice"] = r.solution.params;
    if (r.vendor_alternatives > 0) j["alternatives"] = r.vendor_alternatives;
  } else {
    j["template"] = r.solution.template_name;
    j["params"] = r.solution.params;
    j["code_object_id"] = r.code_object_id;
  }
  j["benchmark"] = {{"warmup", r.benchmark.warmup},
                    {"min_iterations", r.benchmark.min_iterations},
                    {"max_iterations", r.benchmark.max_iterations},
                    {"target_ms", r.benchmark.target_ms},
                    {"timeout_s", r.benchmark.timeout_s},
                    {"flush_l2", r.benchmark.flush_l2}};
  return j;
}

MeasureRequest request_from_json(const json& j) {
  MeasureRequest r;
  try {
    tiletune::from_json(j.at("problem"), r.problem);
    r.vendor = j.value("vendor", false);
    if (r.vendor) {
      r.solution.template_name = kVendorTemplate;
      r.solution.params = j.value("choice", std::map<std::string, std::int64_t>());
      r.vendor_alternatives = j.value("alternatives", 0);
    } else {
      r.solution.template_name = j.at("template").get<std::string>();
      r.solution.params = j.at("params").get<std::map<std::string, std::int64_t>>();
      r.code_object_id = j.at("code_object_id").get<std::int64_t>();
    }
    const json& b = j.at("benchmark");
    r.benchmark.warmup = b.at("warmup").get<int>();
    r.benchmark.min_iterations = b.at("min_iterations").get<int>();
    r.benchmark.max_iterations = b.at("max_iterations").get<int>();
    r.benchmark.target_ms = b.at("target_ms").get<double>();
    r.benchmark.timeout_s = b.value("timeout_s", r.benchmark.timeout_s);
    r.benchmark.flush_l2 = b.value("flush_l2", false);
  } catch (const json::exception& e) {
    throw Error(std::string("worker request: ") + e.what());
  }
  return r;
}

json to_json(const MeasureResult& r) {
  json j = {{"status", db::to_string(r.status)}, {"reason", r.reason}};
  // NaN is written as null by nlohmann::json; say so explicitly for clarity.
  auto num = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  j["rel_error"] = num(r.rel_error);
  j["min_ms"] = num(r.min_ms);
  j["median_ms"] = num(r.median_ms);
  j["max_ms"] = num(r.max_ms);
  if (!r.vendor.empty()) j["vendor"] = r.vendor;
  if (!r.alternatives.empty()) j["alternatives"] = r.alternatives;
  j["prepare_s"] = r.prepare_s;
  j["validate_s"] = r.validate_s;
  j["timing_s"] = r.timing_s;
  return j;
}

MeasureResult result_from_json(const json& j) {
  MeasureResult r;
  try {
    const std::string status = j.at("status").get<std::string>();
    const std::optional<db::Status> s = db::status_from_string(status);
    if (!s) throw Error("worker result: unknown status '" + status + "'");
    r.status = *s;
    r.reason = j.value("reason", std::string());
    r.rel_error = number_or_nan(j, "rel_error");
    r.min_ms = number_or_nan(j, "min_ms");
    r.median_ms = number_or_nan(j, "median_ms");
    r.max_ms = number_or_nan(j, "max_ms");
    r.vendor = j.value("vendor", std::string());
    r.alternatives = j.value("alternatives", std::vector<std::map<std::string, std::int64_t>>());
    r.prepare_s = j.value("prepare_s", 0.0);
    r.validate_s = j.value("validate_s", 0.0);
    r.timing_s = j.value("timing_s", 0.0);
  } catch (const json::exception& e) {
    throw Error(std::string("worker result: ") + e.what());
  }
  return r;
}

// ---- measuring -----------------------------------------------------------------------------------

namespace {
// Seconds since the last lap (or construction).
class Stopwatch {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// What every kernel measurement shares once its data and kernel are ready: a zeroed workspace,
// validation on fresh data (poisoned output), then the timed runs over the rotated operand copies.
MeasureResult validate_and_time(gpu::Device& dev, const MeasureRequest& r, const ops::KernelLaunch& launch,
                                gpu::Kernel& kernel, ops::Inputs& data, Stopwatch& clock,
                                const std::function<void()>& on_ready) {
  MeasureResult result;
  gpu::DeviceBuffer workspace;
  if (std::int64_t bytes = launch.workspace_bytes(); bytes > 0) {
    workspace = gpu::DeviceBuffer(dev, std::size_t(bytes));
    dev.fill_bytes(workspace.get(), 0, std::size_t(bytes));
  }
  // With REPACK the operand copies are part of every run, timed with the kernel.
  auto run = [&](const ops::CallParams& p) { launch.launch(dev, kernel, p, workspace.get(), nullptr); };
  if (on_ready) on_ready();
  result.prepare_s = clock.lap();
  ops::ValidationResult v = data.validate_call(run);
  result.validate_s = clock.lap();
  result.rel_error = v.rel_error;
  if (!v.ok) {
    result.status = db::Status::Invalid;
    result.reason = v.reason;
    return result;
  }
  Timing t = time_runs(dev, data.sets(), r.benchmark, [&](std::size_t set) { run(data.call_params(set)); });
  result.timing_s = clock.lap();
  result.min_ms = t.min_ms;
  result.median_ms = t.median_ms;
  result.max_ms = t.max_ms;
  return result;
}
}  // namespace

Measurer::Measurer(gpu::Device& dev, db::Database& db) : dev_(dev), db_(db) {}
Measurer::~Measurer() = default;

ops::Inputs& Measurer::inputs_for(const Problem& p) {
  const std::string key = p.key();
  for (std::size_t i = 0; i < cache_.size(); ++i)
    if (cache_[i].key == key) {
      std::rotate(cache_.begin() + std::ptrdiff_t(i), cache_.begin() + std::ptrdiff_t(i) + 1, cache_.end());
      return *cache_.back().inputs;
    }
  // Make room first: the oldest problem's buffers go before the new ones are allocated.
  while (!cache_.empty() && cache_.size() >= kProblemsKept) cache_.erase(cache_.begin());
  const ops::Operation& op = ops::operation(p);
  std::unique_ptr<ops::Inputs> inputs;
  // Out of memory with other problems' buffers held: free them and try once more.
  auto out_of_memory = [](const std::exception& e) {
    return dynamic_cast<const std::bad_alloc*>(&e) || std::string(e.what()).find("out of memory") != std::string::npos;
  };
  try {
    inputs = op.make_inputs(dev_, p);
  } catch (const std::exception& e) {
    if (cache_.empty() || !out_of_memory(e)) throw;
    cache_.clear();
    inputs = op.make_inputs(dev_, p);
  }
  cache_.push_back({key, std::move(inputs)});
  return *cache_.back().inputs;
}

std::shared_ptr<gpu::Kernel> Measurer::load_kernel(std::int64_t code_object_id) {
  auto& kernel = kernels_[code_object_id];
  if (!kernel) {
    auto code = db_.code_object(code_object_id);
    if (!code || !code->ok) {
      kernels_.erase(code_object_id);
      throw Error("code object " + std::to_string(code_object_id) + (code ? " failed to compile" : " is missing") +
                  " in " + db_.path());
    }
    if (std::string why = code->integrity_problem(); !why.empty()) {
      kernels_.erase(code_object_id);
      throw Error(db_.path() + ": code object " + std::to_string(code_object_id) + " is not loaded: " + why);
    }
    kernel = dev_.load({code->bytes, code->symbol});
  }
  return kernel;
}

MeasureResult Measurer::measure(const MeasureRequest& r, const std::function<void()>& on_ready) {
  MeasureResult result;
  try {
    return r.vendor ? measure_vendor(r, on_ready) : measure_kernel(r, on_ready);
  } catch (const std::exception& err) {  // Error, and e.g. bad_alloc on an oversized problem
    result.status = db::Status::LaunchFailed;
    result.reason = err.what();
  }
  // A fault can leave the device unusable (CUDA's sticky errors, e.g. an illegal address): then
  // this candidate is the culprit, and nothing more can run in this process.
  try {
    dev_.synchronize();
  } catch (const Error& err) {
    result.status = db::Status::Crashed;
    result.reason += std::string("; the device is unusable afterwards: ") + err.what();
    cache_.clear();
  }
  return result;
}

MeasureResult Measurer::measure_kernel(const MeasureRequest& r, const std::function<void()>& on_ready) {
  Stopwatch clock;
  const KernelTemplate& tmpl = r.tmpl ? *r.tmpl : find_template(r.solution.template_name);
  const Problem& problem = r.problem;
  ops::Inputs& data = inputs_for(problem);
  std::shared_ptr<gpu::Kernel> kernel = load_kernel(r.code_object_id);
  // The variables of this worker's device (its multiprocessors size persistent grids and split-K;
  // a sweep's devices share an arch, not a size), once per measurement.
  const ops::KernelLaunch launch(tmpl, tmpl.variables(r.solution, problem, dev_.info()), problem);
  return validate_and_time(dev_, r, launch, *kernel, data, clock, on_ready);
}

MeasureResult Measurer::measure_vendor(const MeasureRequest& r, const std::function<void()>& on_ready) {
  MeasureResult result;
  if (!vendor_) {
    vendor_ = std::make_unique<gpu::Vendor>(dev_);
    vendor_->set_strict(true);
  }
  if (std::string why = vendor_->unsupported(r.problem); !why.empty()) {
    result.status = db::Status::Unsupported;
    result.reason = why;
    return result;
  }
  const gpu::VendorChoice& choice = r.solution.params;
  result.vendor = vendor_->source(r.problem, choice);
  // A vendor result that disagrees with the reference is recorded as "invalid" (it never wins)
  // and timed anyway, for the tables. A convolution library's first run is its own search.
  auto launch = [&](const ops::CallParams& p) { vendor_->run(r.problem, p.data(), nullptr, choice); };
  ops::Inputs& data = inputs_for(r.problem);
  if (on_ready) on_ready();
  const ops::ValidationResult v = data.validate_call(launch);
  const Timing t = time_runs(dev_, data.sets(), r.benchmark, [&](std::size_t set) { launch(data.call_params(set)); });
  const ops::CallParams first = data.call_params(0);
  result.alternatives = vendor_->alternatives(r.problem, first.data(), r.vendor_alternatives);
  result.rel_error = v.rel_error;
  if (!v.ok) {
    result.status = db::Status::Invalid;
    result.reason = v.reason;
  }
  result.min_ms = t.min_ms;
  result.median_ms = t.median_ms;
  result.max_ms = t.max_ms;
  return result;
}

// ---- the worker process --------------------------------------------------------------------------

int run_worker(gpu::BackendKind backend, int device, const std::string& db_path) {
  // The protocol owns the original stdout; whatever else writes to stdout (a kernel's printf, a
  // library's banner) lands on stderr instead.
  std::fflush(stdout);
  int proto_fd = ::dup(1);
  if (proto_fd < 0 || ::dup2(2, 1) < 0) throw Error(std::string("worker: cannot set up stdout: ") + std::strerror(errno));
  ::fcntl(proto_fd, F_SETFD, FD_CLOEXEC);
  auto reply = [&](const json& j) {
    if (!write_all(proto_fd, j.dump() + "\n")) std::exit(0);  // the parent is gone
  };

  std::unique_ptr<gpu::Device> dev = gpu::open_device(backend, device);
  db::Database db = db::Database::open(db_path, db::Mode::ReadOnly);
  Measurer measurer(*dev, db);
  reply({{"hello", "tiletune-worker"}, {"arch", dev->info().arch}, {"pid", ::getpid()}});

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    MeasureResult result;
    try {
      MeasureRequest r = request_from_json(json::parse(line));
      result = measurer.measure(r, [&] { reply({{"phase", "ready"}}); });
    } catch (const json::exception& e) {
      result.status = db::Status::LaunchFailed;
      result.reason = std::string("worker: bad request: ") + e.what();
    } catch (const Error& e) {
      result.status = db::Status::LaunchFailed;
      result.reason = e.what();
    }
    reply(to_json(result));
    if (result.status == db::Status::Crashed) return 3;  // the device is unusable in this process
  }
  return 0;
}

// ---- the parent's side ---------------------------------------------------------------------------

WorkerProcess::WorkerProcess(std::string exe, gpu::BackendKind backend, int device, std::string db_path,
                             std::string arch)
    : exe_(exe), arch_(std::move(arch)),
      child_("worker", {std::move(exe), "worker", "--backend", gpu::to_string(backend), "--device", std::to_string(device),
                        "--db", std::move(db_path)}) {}

WorkerProcess::~WorkerProcess() = default;

void WorkerProcess::launch() {
  child_.start();
  ++starts_;
}

void WorkerProcess::await_hello() {
  // The worker opens the device and the database, then says hello.
  std::string line;
  ChildProcess::Read got = child_.read_line(line, Clock::now() + std::chrono::seconds(300));
  if (got != ChildProcess::Read::Line) {
    std::string why = got == ChildProcess::Read::Timeout ? "no hello within 300 s" : child_.stop(false);
    if (got == ChildProcess::Read::Timeout) child_.stop(true);
    throw Error("the worker process (" + exe_ + " worker) did not start: " + why);
  }
  json hello;
  try {
    hello = json::parse(line);
  } catch (const json::exception&) {
  }
  if (!hello.is_object() || hello.value("hello", "") != "tiletune-worker") {
    child_.stop(true);
    throw Error("the worker process (" + exe_ + ") answered '" + line + "' instead of a hello: is it tiletune?");
  }
  if (hello.value("arch", "") != arch_) {
    std::string arch = hello.value("arch", "");
    child_.stop(true);
    throw Error("the worker process sees arch " + arch + ", the sweep " + arch_);
  }
}

MeasureResult WorkerProcess::measure(const MeasureRequest& r, double timeout_s, double prepare_timeout_s) {
  MeasureResult m = measure_once(r, timeout_s, prepare_timeout_s);
  // A worker ended by SIGKILL that this side did not send (its time-outs return above) was killed
  // from outside: the OOM killer, an operator. That is not the candidate's doing: it is measured
  // once more in a fresh worker, and blamed only if that one is killed too.
  if (m.status == db::Status::Crashed && m.reason.find("SIGKILL") != std::string::npos) {
    std::fprintf(stderr, "tiletune: a worker was killed from outside (%s) while measuring %s; measuring it again in a "
                 "fresh worker\n", m.reason.c_str(), r.vendor ? "the vendor library" : r.solution.kernel_name().c_str());
    MeasureResult again = measure_once(r, timeout_s, prepare_timeout_s);
    if (again.status == db::Status::Crashed && again.reason.find("SIGKILL") != std::string::npos)
      again.reason += " (killed from outside twice)";
    return again;
  }
  return m;
}

MeasureResult WorkerProcess::measure_once(const MeasureRequest& r, double timeout_s, double prepare_timeout_s) {
  const std::string request = to_json(r).dump();
  if (!child_.running()) start();
  if (!child_.send(request)) {
    // The worker was gone before this request (it died idle): not this candidate's doing.
    child_.stop(false);
    start();
    if (!child_.send(request)) {
      MeasureResult m;
      m.status = db::Status::Crashed;
      m.reason = child_.stop(false) + " (before reading the request)";
      return m;
    }
  }
  // Making a problem's data (the fp64 reference) and loading the kernel come before the
  // candidate's own time; they are the tuner's work, bounded on their own.
  auto seconds = [](double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
  const auto timeout = seconds(timeout_s);
  Clock::time_point deadline = Clock::now() + seconds(prepare_timeout_s);
  bool ready = false;
  for (;;) {
    std::string line;
    ChildProcess::Read got = child_.read_line(line, deadline);
    if (got == ChildProcess::Read::Timeout) {
      MeasureResult m;
      m.status = ready ? db::Status::Timeout : db::Status::PrepareTimeout;
      char text[200];
      if (ready) std::snprintf(text, sizeof text, "no result within %g s; worker killed", timeout_s);
      else
        std::snprintf(text, sizeof text,
                      "the worker was not ready within %g s (making the problem's inputs and reference, loading the "
                      "kernel); worker killed",
                      prepare_timeout_s);
      m.reason = text;
      child_.stop(true);
      return m;
    }
    if (got == ChildProcess::Read::Eof) {
      MeasureResult m;
      m.status = db::Status::Crashed;
      m.reason = child_.stop(false);
      if (!ready) m.reason += " (before its first launch)";
      return m;
    }
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception&) {
      child_.stop(true);
      throw Error("the worker process wrote a line that is not JSON: " + line);
    }
    if (j.contains("phase")) {
      ready = true;
      deadline = Clock::now() + timeout;
      continue;
    }
    MeasureResult m = result_from_json(j);
    if (m.status == db::Status::Crashed) child_.stop(false);  // it exits: its device is unusable
    return m;
  }
}

}  // namespace tiletune::tuner
