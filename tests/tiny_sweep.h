// One tuned host GEMM in a fresh database (a real code object, its measurement and a winner): the
// seed of the tests that serve, corrupt, sign or fuzz a database.
#pragma once
#include <cstdio>
#include <string>

#include "common/error.h"
#include "gpu/backend.h"
#include "tuner/config.h"
#include "tuner/sweep.h"

namespace tiletune::testing {

// The vendor is not timed: the kernel is the winner (a test serving it sets TILETUNE_VENDOR=off so
// that the runtime does not prefer the vendor either).
inline GemmProblem tune_tiny_host_database(const std::string& db_path, const std::string& dir) {
  const tuner::TuningConfig cfg = tuner::parse_config(R"({"name": "tiny",
      "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 40, "n": 24, "k": 16}],
      "templates": {"host_gemm": {"parameters": {"MT0": [16], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [4]}}},
      "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 3, "target_ms": 2}})",
                                                      dir);
  tuner::SweepOptions o;
  o.backend = gpu::BackendKind::Host;
  o.db_path = db_path;
  o.compare_vendor = false;
  if (tuner::run_sweep(cfg, o, stderr).winners.size() != 1) throw Error("the tiny host sweep found no winner");
  return cfg.problems[0].gemm();
}

}  // namespace tiletune::testing
