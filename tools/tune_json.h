// `tiletune tune --json`: the sweep's summary as one document (docs/cli-json.md, "tune").
#pragma once
#include <CLI/CLI.hpp>

#include "tools/json_output.h"

#include "tuner/config.h"
#include "tuner/sweep.h"

namespace tiletune::tools {

Json tune_json(const CLI::App& cmd, int exit_code, const tuner::SweepSummary& s,
                         const tuner::TuningConfig& config, const tuner::SweepOptions& o);

}  // namespace tiletune::tools
