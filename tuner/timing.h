// Times one kernel: warm-up, then one event pair per run, rotating through the operand copies so
// that no run finds its inputs in cache; min / median / max over the runs, and the mean: the first
// event to the last over the runs, which is finer than one run's timing where a run lasts a few
// timer ticks (the H200's event times step by 32 ns, 0.3% of a 1000^3 bf16 GEMM's 11.3 us: the
// medians of the 2026-11-30 tables all lie on a 16 ns grid). Runs of kernels shorter
// than kHoldBelowMs are enqueued behind Device::hold, so that host launch costs do not show up as
// gaps between them.
#pragma once
#include <functional>

#include "gpu/backend.h"
#include "tuner/config.h"
#include "ops/gemm/inputs.h"

namespace tiletune::tuner {

constexpr double kHoldBelowMs = 0.2;

struct Timing {
  double min_ms = 0, median_ms = 0, max_ms = 0, mean_ms = 0;
  int iterations = 0;
};

// `launch(params)` enqueues one run with the given kernel arguments.
Timing time_runs(gpu::Device& dev, ops::GemmInputs& data, const BenchmarkOptions& options,
                 const std::function<void(const TtGemmParams&)>& launch);
// Any problem kind: `launch(set)` enqueues one run on copy `set` (of `sets`) of the operands.
Timing time_runs(gpu::Device& dev, std::size_t sets, const BenchmarkOptions& options,
                 const std::function<void(std::size_t)>& launch);

}  // namespace tiletune::tuner
