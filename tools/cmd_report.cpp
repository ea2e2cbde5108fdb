#include <cstdio>
#include <memory>

#include "tools/commands.h"
#include "tools/report/page.h"

namespace tiletune::tools {

Run add_report(CLI::App& app) {
  struct Args {
    std::string db, html;
    std::vector<std::string> arches;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "report", "write an HTML page of a solution database: speedups over the vendor, a roofline, search "
                "convergence and the spread of the candidates (docs/report.md)");
  cmd->add_option("db", a->db, "database file")->required();
  cmd->add_option("--html", a->html, "the page to write (one self-contained file)")->required();
  cmd->add_option("--arch", a->arches, "only this arch (repeatable; default: all)");
  return [a] {
    report::write_report(a->db, a->html, a->arches);
    std::printf("wrote %s\n", a->html.c_str());
    return kExitOk;
  };
}

}  // namespace tiletune::tools
