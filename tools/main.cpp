// tiletune: the command-line program. `tiletune --help` lists the subcommands.
#include <cstdio>
#include <exception>
#include <string>

#include "common/error.h"
#include "common/temp_dir.h"
#include "tools/commands.h"
#include "tools/json_output.h"

int main(int argc, char** argv) {
  CLI::App app{"tiletune: GEMM and convolution kernel autotuner (tune sweeps into a SQLite solution database, "
               "inspect, pack and merge databases)"};
  app.set_version_flag("--version", std::string("tiletune ") + TILETUNE_VERSION_STRING);
  app.require_subcommand(1);
  tiletune::tools::Run tune = tiletune::tools::add_tune(app);
  tiletune::tools::Run db = tiletune::tools::add_db(app);
  tiletune::tools::Run devices = tiletune::tools::add_devices(app);
  tiletune::tools::Run report = tiletune::tools::add_report(app);
  tiletune::tools::Run import_logs = tiletune::tools::add_import(app);
  tiletune::tools::Run worker = tiletune::tools::add_worker(app);
  tiletune::tools::Run compile_server = tiletune::tools::add_compile_server(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version: 0; a usage error (unknown option, missing argument): kExitUsage, not
    // CLI11's own 105-109.
    return app.exit(e) == 0 ? 0 : tiletune::tools::kExitUsage;
  }
  try {
    tiletune::remove_temp_dirs_on_stop_signals();
    if (app.got_subcommand("tune")) return tune();
    if (app.got_subcommand("db")) return db();
    if (app.got_subcommand("devices")) return devices();
    if (app.got_subcommand("report")) return report();
    if (app.got_subcommand("import")) return import_logs();
    if (app.got_subcommand("worker")) return worker();
    if (app.got_subcommand("compile-server")) return compile_server();
  } catch (const tiletune::Error& e) {
    return tiletune::tools::report_failure(app, "error", e.what(), tiletune::tools::kExitError);
  } catch (const std::exception& e) {
    return tiletune::tools::report_failure(app, "internal error", e.what(), tiletune::tools::kExitInternal);
  }
  return tiletune::tools::kExitOk;
}
