// Subcommands of the `tiletune` program; each registers its options on the CLI11 app and returns
// the function that runs it.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace tiletune::tools {

// The program's exit codes (docs/cli-json.md, "Exit codes"); a signal's is 128 + its number.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;       // bad input or failed work, named on stderr
inline constexpr int kExitInternal = 2;    // a defect of tiletune's own
inline constexpr int kExitIncomplete = 3;  // tune: a problem's preparation timed out; a rerun resumes it
inline constexpr int kExitUncovered = 4;   // tune: finished, but no generated candidate admits some problem
inline constexpr int kExitUsage = 64;      // the command line itself (unknown option, missing argument)

using Run = std::function<int()>;
Run add_tune(CLI::App& app);
Run add_db(CLI::App& app);
Run add_devices(CLI::App& app);
Run add_report(CLI::App& app);
Run add_import(CLI::App& app);  // tools/import/: workload logs -> tuning config
Run add_worker(CLI::App& app);  // hidden: the worker process of `tune --isolation process`
Run add_compile_server(CLI::App& app);  // hidden: a compile server of `tune` (GPU backends)

}  // namespace tiletune::tools
