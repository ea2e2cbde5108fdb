// A tuning config: which problems, which templates with which parameter values, how to measure.
// Read from JSON; every unknown key, parameter or template is an error naming it, because a
// typo that silently widens or empties a sweep costs hours of GPU time.
#pragma once
#include <string>
#include <vector>

#include "solutions/kernel_template.h"
#include "solutions/gemm_problem.h"
#include "tuner/search.h"

namespace tiletune::tuner {

struct BenchmarkOptions {
  int warmup = 2;
  int min_iterations = 5;
  int max_iterations = 50;
  double target_ms = 100;  // time spent timing one candidate, at most max_iterations runs
  double timeout_s = 60;   // an isolated sweep kills a candidate's worker after this long (validation + timing)
  // ... and after this long before that, while it makes a problem's inputs and fp64 reference and
  // loads the kernel: the tuner's own work, so running over it blames no candidate (the problem is
  // skipped, nothing recorded for it).
  double prepare_timeout_s = 1800;
  // Time each run alone after overwriting a buffer of twice the last-level cache, as
  // triton.testing.do_bench does (the headline tables' method), instead of back to back.
  bool flush_l2 = false;
  // The finals (and the vendor's fastest algorithms) are timed for at least this long each, so
  // that they are compared under sustained load, as do_bench's 100 ms of runs see them: on the
  // H200 a 25 ms timing caught boost clocks that a longer one does not (cuBLASLt algorithms 4-8%
  // ahead at 25 ms were level or behind at 200 ms; benchmarks/results/vs_torch/2026-12-01_h200_vendor_algorithms.md).
  // Negative: 100 ms on a GPU, target_ms on the host.
  double final_ms = -1;
};

struct TuningConfig {
  std::string name = "sweep";
  std::vector<Problem> problems;  // GEMMs and convolutions, each key once (first mention kept)
  std::size_t duplicates_dropped = 0;  // problems named again (e.g. by both "problems" and "shapes")
  std::vector<KernelTemplate> templates;  // with the config's overrides applied
  BenchmarkOptions benchmark;
  SearchOptions search;  // which candidates to benchmark (tuner/search.h); default: all of them
};

// `base_dir` resolves relative paths inside the config (e.g. a shapes file).
TuningConfig parse_config(const std::string& json_text, const std::string& base_dir);
TuningConfig load_config(const std::string& path);

}  // namespace tiletune::tuner
