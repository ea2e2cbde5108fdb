// Subcommands of the `tiletune` program; each registers its options on the CLI11 app and returns
// the function that runs it.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace tiletune::tools {

using Run = std::function<int()>;
Run add_tune(CLI::App& app);
Run add_db(CLI::App& app);
Run add_devices(CLI::App& app);
Run add_worker(CLI::App& app);  // hidden: the worker process of `tune --isolation process`
Run add_compile_server(CLI::App& app);  // hidden: a compile server of `tune` (GPU backends)

}  // namespace tiletune::tools
