#include "tuner/benchmark.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tiletune::tuner {

Timing time_runs(gpu::Device& dev, ProblemData& data, const BenchmarkOptions& options,
                 const std::function<void(const TtGemmParams&)>& launch) {
  return time_runs(dev, data.sets(), options, [&](std::size_t set) { launch(data.params(set)); });
}

static Timing summarize(std::vector<double>& ms, double mean_ms) {
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  Timing t;
  t.iterations = int(n);
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  t.mean_ms = mean_ms;
  return t;
}

Timing time_runs(gpu::Device& dev, std::size_t sets, const BenchmarkOptions& options,
                 const std::function<void(std::size_t)>& run) {
  std::size_t set = 0;
  auto next = [&] { return set++ % sets; };
  auto launch = [&](std::size_t s) { run(s); };

  struct Events {
    gpu::Device& dev;
    std::vector<gpu::Event> list;
    ~Events() {
      for (auto e : list) dev.destroy_event(e);
    }
  } events{dev, {}};
  auto make = [&] { return events.list.emplace_back(dev.create_event()); };

  // The first warm-up run also estimates how many runs fit in the time budget; the others what
  // one run costs the host to enqueue.
  gpu::Event w0 = make(), w1 = make();
  dev.record(w0);
  launch(next());
  dev.record(w1);
  double first_ms = dev.elapsed_ms(w0, w1);
  const auto h0 = std::chrono::steady_clock::now();
  for (int i = 1; i < options.warmup; ++i) launch(next());
  const double host_ms = options.warmup > 1 ? std::chrono::duration<double, std::milli>(
                                                  std::chrono::steady_clock::now() - h0).count() / (options.warmup - 1)
                                            : 0.03;
  dev.synchronize();

  int runs = options.max_iterations;
  if (first_ms > 0) runs = int(std::clamp(options.target_ms / first_ms, double(options.min_iterations),
                                          double(options.max_iterations)));
  if (options.flush_l2 && dev.info().cache_bytes > 0) {
    // do_bench's way: each run alone, behind an overwrite of twice the cache, as many as fit in
    // target_ms with their overwrites.
    gpu::DeviceBuffer flush(dev, std::size_t(2 * dev.info().cache_bytes));
    gpu::Event f0 = make(), f1 = make();
    dev.record(f0);
    dev.fill_bytes(flush.get(), 0, flush.size());
    dev.record(f1);
    const double flush_ms = dev.elapsed_ms(f0, f1);
    if (first_ms + flush_ms > 0)
      runs = int(std::clamp(options.target_ms / (first_ms + flush_ms), double(options.min_iterations),
                            double(options.max_iterations)));
    std::vector<gpu::Event> begin, end;
    for (int i = 0; i < runs; ++i) begin.push_back(make()), end.push_back(make());
    for (int i = 0; i < runs; ++i) {
      dev.fill_bytes(flush.get(), std::uint8_t(i), flush.size());
      dev.record(begin[i]);
      launch(next());
      dev.record(end[i]);
    }
    std::vector<double> ms;
    double sum = 0;
    for (int i = 0; i < runs; ++i) sum += ms.emplace_back(dev.elapsed_ms(begin[i], end[i]));
    return summarize(ms, sum / runs);
  }
  // A hold lasts at most kMaxHoldMs: no more held runs than the host can enqueue in that time
  // (long finals of short, host-bound calls would otherwise time the host's launch rate).
  constexpr double kMaxHoldMs = 100;
  if (first_ms < kHoldBelowMs) {
    const double per_run_estimate = std::max(0.005, 3 * host_ms + 0.005);
    runs = std::max(std::min(runs, int(0.8 * kMaxHoldMs / per_run_estimate)), std::min(runs, options.min_iterations));
  }
  std::vector<gpu::Event> marks;
  for (int i = 0; i <= runs; ++i) marks.push_back(make());
  // Short kernels: the stream waits behind a spin kernel while the host enqueues every run, so
  // that the runs follow each other without launch gaps (a vendor call can cost the host more than
  // its kernel takes: cublasGemmEx ~12 us a call on the H200 host, a 1000^3 kernel ~9 us). The
  // spin lasts three times the host's measured cost per run (plus an event record); if it still
  // ran out before the last run was enqueued (a busy host), the runs are timed again with a longer one.
  double per_run_ms = std::max(0.005, 3 * host_ms + 0.005);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool held = first_ms < kHoldBelowMs && dev.hold(std::min(kMaxHoldMs, 0.2 + per_run_ms * runs));
    dev.record(marks[0]);
    for (int i = 0; i < runs; ++i) {
      launch(next());
      dev.record(marks[i + 1]);
    }
    if (!held || !dev.done(marks[0])) break;
    per_run_ms *= 4;
  }
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) ms.push_back(dev.elapsed_ms(marks[i], marks[i + 1]));
  return summarize(ms, dev.elapsed_ms(marks[0], marks[runs]) / runs);
}

}  // namespace tiletune::tuner
