#include "tuner/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tiletune::tuner {

Timing time_runs(gpu::Device& dev, ops::GemmInputs& data, const BenchmarkOptions& options,
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

namespace {

// Events made for one timing, destroyed with it.
struct Events {
  gpu::Device& dev;
  std::vector<gpu::Event> list;
  ~Events() {
    for (auto e : list) dev.destroy_event(e);
  }
  gpu::Event make() { return list.emplace_back(dev.create_event()); }
};

int runs_in(double target_ms, double one_ms, const BenchmarkOptions& o) {
  return int(std::clamp(target_ms / one_ms, double(o.min_iterations), double(o.max_iterations)));
}

// do_bench's way: each run alone, behind an overwrite of twice the cache, as many as fit in
// target_ms with their overwrites.
Timing time_flushed(gpu::Device& dev, Events& events, int runs, double first_ms, const BenchmarkOptions& options,
                    const std::function<void()>& launch) {
  gpu::DeviceBuffer flush(dev, std::size_t(2 * dev.info().cache_bytes));
  gpu::Event f0 = events.make(), f1 = events.make();
  dev.record(f0);
  dev.fill_bytes(flush.get(), 0, flush.size());
  dev.record(f1);
  const double flush_ms = dev.elapsed_ms(f0, f1);
  if (first_ms + flush_ms > 0) runs = runs_in(options.target_ms, first_ms + flush_ms, options);
  std::vector<gpu::Event> begin, end;
  for (int i = 0; i < runs; ++i) begin.push_back(events.make()), end.push_back(events.make());
  for (int i = 0; i < runs; ++i) {
    dev.fill_bytes(flush.get(), std::uint8_t(i), flush.size());
    dev.record(begin[i]);
    launch();
    dev.record(end[i]);
  }
  std::vector<double> ms;
  double sum = 0;
  for (int i = 0; i < runs; ++i) sum += ms.emplace_back(dev.elapsed_ms(begin[i], end[i]));
  return summarize(ms, sum / runs);
}

// Back to back. Short kernels: the stream waits behind a spin kernel while the host enqueues every
// run, so that the runs follow each other without launch gaps (a vendor call can cost the host
// more than its kernel takes: cublasGemmEx ~12 us a call on the H200 host, a 1000^3 kernel ~9 us).
// The spin lasts three times the host's measured cost per run (plus an event record); if it still
// ran out before the last run was enqueued (a busy host), the runs are timed again with a longer
// one. A hold lasts at most kMaxHoldMs: no more held runs than the host can enqueue in that time
// (long finals of short, host-bound calls would otherwise time the host's launch rate).
Timing time_back_to_back(gpu::Device& dev, Events& events, int runs, double first_ms, double host_ms,
                         const BenchmarkOptions& options, const std::function<void()>& launch) {
  constexpr double kMaxHoldMs = 100;
  double per_run_ms = std::max(0.005, 3 * host_ms + 0.005);
  if (first_ms < kHoldBelowMs)
    runs = std::max(std::min(runs, int(0.8 * kMaxHoldMs / per_run_ms)), std::min(runs, options.min_iterations));
  std::vector<gpu::Event> marks;
  for (int i = 0; i <= runs; ++i) marks.push_back(events.make());
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool held = first_ms < kHoldBelowMs && dev.hold(std::min(kMaxHoldMs, 0.2 + per_run_ms * runs));
    dev.record(marks[0]);
    for (int i = 0; i < runs; ++i) {
      launch();
      dev.record(marks[i + 1]);
    }
    if (!held || !dev.done(marks[0])) break;
    per_run_ms *= 4;
  }
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) ms.push_back(dev.elapsed_ms(marks[i], marks[i + 1]));
  return summarize(ms, dev.elapsed_ms(marks[0], marks[runs]) / runs);
}

}  // namespace

Timing time_runs(gpu::Device& dev, std::size_t sets, const BenchmarkOptions& options,
                 const std::function<void(std::size_t)>& run) {
  std::size_t set = 0;
  const std::function<void()> launch = [&] { run(set++ % sets); };
  Events events{dev, {}};
  // The first warm-up run also estimates how many runs fit in the time budget; the others what
  // one run costs the host to enqueue.
  gpu::Event w0 = events.make(), w1 = events.make();
  dev.record(w0);
  launch();
  dev.record(w1);
  const double first_ms = dev.elapsed_ms(w0, w1);
  const auto h0 = std::chrono::steady_clock::now();
  for (int i = 1; i < options.warmup; ++i) launch();
  const double host_ms = options.warmup > 1 ? std::chrono::duration<double, std::milli>(
                                                  std::chrono::steady_clock::now() - h0).count() / (options.warmup - 1)
                                            : 0.03;
  dev.synchronize();
  const int runs = first_ms > 0 ? runs_in(options.target_ms, first_ms, options) : options.max_iterations;
  if (options.flush_l2 && dev.info().cache_bytes > 0) return time_flushed(dev, events, runs, first_ms, options, launch);
  return time_back_to_back(dev, events, runs, first_ms, host_ms, options, launch);
}

}  // namespace tiletune::tuner
