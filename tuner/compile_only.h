// A sweep for a GPU that is not here (`tune --compile-only --arch gfx942`): the config's selected
// candidates compiled for the arch, as the device of that arch is assumed to be (the backend's
// traits: LDS, wave size, CUs), into the database's code objects, with each object's static
// figures (registers, LDS, spills, matrix instructions) beside it. Nothing is validated or timed:
// a later sweep on the GPU, into the same database under the same compiler, reuses the objects.
#pragma once
#include <cstdio>
#include <string>

#include "tuner/config.h"
#include "tuner/sweep.h"

namespace tiletune::tuner {

struct CompileOnlySummary {
  std::string arch, device_name, compiler_version;
  std::size_t total = 0, pruned = 0, candidates = 0, selected = 0;
  std::size_t compiled = 0, cached = 0, failed = 0, with_figures = 0;
  std::string first_error;  // the first failed compile: "kernel: the compiler's log"
};

// The database meta key under which a code object's static figures (JSON) are stored.
std::string figures_meta_key(const std::string& cache_key);

// Throws Error for an arch that is not the backend's (sm_90a with --backend hip) or is empty.
CompileOnlySummary run_compile_only(const TuningConfig& config, const SweepOptions& options, const std::string& arch,
                                    std::FILE* log = stderr);

void print_summary(const CompileOnlySummary& s, std::FILE* out);

}  // namespace tiletune::tuner
