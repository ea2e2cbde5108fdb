#include "tuner/compile_pool.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

namespace tiletune::tuner {

CompilePool::CompilePool(std::vector<CompileJob> jobs, const gpu::Compiler& compiler, const std::string& db_path,
                         std::string arch, std::string compiler_version, unsigned threads, OnDone on_done)
    : jobs_(std::move(jobs)), done_(jobs_.size(), false), compiler_(compiler),
      db_(db::Database::open(db_path, db::Mode::ReadWrite)), arch_(std::move(arch)),
      compiler_version_(std::move(compiler_version)), on_done_(std::move(on_done)) {
  for (std::size_t i = 0; i < jobs_.size(); ++i) index_.emplace(jobs_[i].cache_key, i);
  threads = std::max(1u, std::min<unsigned>(threads, unsigned(jobs_.size())));
  if (jobs_.empty()) return;
  try {
    for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { run(); });
  } catch (...) {
    stop();
    throw;
  }
}

CompilePool::~CompilePool() { stop(); }

void CompilePool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void CompilePool::run() {
  // Below the measuring side: a compile must never steal the core that launches and times a
  // kernel (or, on the host backend, runs it). The compiler processes it starts inherit this.
  ::setpriority(PRIO_PROCESS, pid_t(::gettid()), 10);
  for (;;) {
    std::size_t i;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ || failure_ || next_ >= jobs_.size()) return;
      i = next_++;
    }
    try {
      const bool ok = build(jobs_[i]);
      if (on_done_) on_done_(jobs_[i], ok);
      std::lock_guard<std::mutex> lock(mu_);
      done_[i] = true;
      ++finished_;
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!failure_) failure_ = std::current_exception();
    }
    cv_.notify_all();
  }
}

bool CompilePool::compile_now(const CompileJob& job) {
  // One at a time: two slots' finals asking for the same code object compile it once.
  std::lock_guard<std::mutex> now(now_mu_);
  {
    std::lock_guard<std::mutex> lock(db_mu_);
    if (db_.find_code_object(job.cache_key)) return false;
  }
  return commit(job, compiler_.compile(job.request));
}

bool CompilePool::build(const CompileJob& job) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_seconds();
  gpu::CompileResult r = compiler_.compile(job.request);
  const double cpu = r.cpu_s >= 0 ? r.cpu_s : thread_cpu_seconds() - c0;
  const auto t1 = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (busy_s_ == 0 || t0 < first_start_) first_start_ = t0;
    if (t1 > last_end_) last_end_ = t1;
    busy_s_ += std::chrono::duration<double>(t1 - t0).count();
    cpu_s_ += cpu;
  }
  return commit(job, std::move(r));
}

bool CompilePool::commit(const CompileJob& job, gpu::CompileResult r) {
  db::CodeObjectRecord rec;
  rec.cache_key = job.cache_key;
  rec.solution_id = job.solution_id;
  rec.arch = arch_;
  rec.compiler_version = compiler_version_;
  rec.ok = r.ok;
  rec.log = r.log;
  rec.symbol = r.code.symbol;
  rec.bytes = std::move(r.code.bytes);
  rec.compiled_from = job.request.name_expression;
  {
    std::lock_guard<std::mutex> lock(db_mu_);
    db_.put_code_object(rec);
  }
  if (!r.ok) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_error_.empty()) first_error_ = job.kernel_name + ": " + (r.log.empty() ? "(the compiler said nothing)" : r.log);
  }
  return r.ok;
}

CompilePool::Stats CompilePool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats st;
  st.jobs = finished_;
  st.threads = unsigned(threads_.size());
  st.wall_s = busy_s_ > 0 ? std::chrono::duration<double>(last_end_ - first_start_).count() : 0;
  st.busy_s = busy_s_;
  st.first_error = first_error_;
  st.cpu_s = cpu_s_;
  return st;
}

double thread_cpu_seconds() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void CompilePool::wait(const std::string& cache_key) {
  auto it = index_.find(cache_key);
  if (it == index_.end()) return;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_[it->second] || failure_ || stopping_; });
  if (failure_) std::rethrow_exception(failure_);
}

bool CompilePool::ready(const std::string& cache_key) const {
  auto it = index_.find(cache_key);
  if (it == index_.end()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return done_[it->second] || failure_ || stopping_;
}

void CompilePool::wait_all() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return finished_ == jobs_.size() || failure_ || stopping_; });
  if (failure_) std::rethrow_exception(failure_);
}

}  // namespace tiletune::tuner
