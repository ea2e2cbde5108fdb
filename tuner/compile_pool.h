// The compile side of a sweep's pipeline: code objects are built on a pool of threads in the
// order the measuring side will ask for them, each committed to the database as soon as it is
// built, so that measuring starts with the first one instead of after the last one.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "db/database.h"
#include "gpu/backend.h"

namespace tiletune::tuner {

// CPU seconds of the calling thread so far.
double thread_cpu_seconds();

struct CompileJob {
  std::string cache_key;
  std::string kernel_name;  // for progress lines
  gpu::CompileRequest request;
  std::int64_t solution_id = 0;
};

class CompilePool {
 public:
  // Called after each job is committed, from a compile thread (`ok`: it compiled).
  using OnDone = std::function<void(const CompileJob&, bool ok)>;

  // `db_path` is opened on a connection of the pool's own: the compile threads never wait on the
  // measuring side's connection (SQLite's WAL lets the two write in turn). Threads start at once.
  CompilePool(std::vector<CompileJob> jobs, const gpu::Compiler& compiler, const std::string& db_path, std::string arch,
              std::string compiler_version, unsigned threads, OnDone on_done);
  // Stops the threads after their current compile (a sweep that ends early does not wait for the rest).
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Blocks until the job with `cache_key` is committed; returns at once for a key the pool does
  // not hold (cached before the sweep). Rethrows the first exception of any compile thread.
  void wait(const std::string& cache_key);
  // Blocks until every job is committed (or a thread failed: then rethrows).
  void wait_all();
  // Whether wait(cache_key) would return at once (committed, not the pool's, or the pool stopped).
  bool ready(const std::string& cache_key) const;
  // For a job that is not the pool's (a finalist measured by an earlier sweep): when its code
  // object is missing from the database (packed since), compiles and commits it on the calling
  // thread, one such job at a time; else does nothing. Exceptions go to the caller. Neither OnDone
  // nor the statistics see it (they describe the pool's stage). Returns whether it compiled one
  // that builds.
  bool compile_now(const CompileJob& job);

  // Where the compile side's time went, to see what bounds its rate: wall seconds from the first
  // compile's start to the last one's end; seconds inside compile calls, summed over threads
  // (busy / wall = compiles running at once on average); CPU seconds of the compiler (the
  // calling thread's, or a compile server's), summed.
  struct Stats {
    std::size_t jobs = 0;
    unsigned threads = 0;
    double wall_s = 0, busy_s = 0, cpu_s = 0;
    std::string first_error;  // the first failed compile: "kernel: the compiler's log"
  };
  Stats stats() const;

 private:
  void run();
  bool build(const CompileJob& job);  // compile, count the time, commit; whether it compiled
  bool commit(const CompileJob& job, gpu::CompileResult r);  // into the database; r.ok
  void stop();

  std::vector<CompileJob> jobs_;
  std::unordered_map<std::string, std::size_t> index_;  // cache key -> job
  std::vector<bool> done_;
  std::size_t next_ = 0, finished_ = 0;
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::chrono::steady_clock::time_point first_start_{}, last_end_{};
  double busy_s_ = 0, cpu_s_ = 0;
  std::string first_error_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  const gpu::Compiler& compiler_;
  db::Database db_;
  std::mutex db_mu_;
  std::mutex now_mu_;  // compile_now, one at a time
  std::string arch_, compiler_version_;
  OnDone on_done_;
  std::vector<std::thread> threads_;
};

}  // namespace tiletune::tuner
