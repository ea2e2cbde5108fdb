#include <cmath>
#include <cstdio>
#include <memory>

#include "common/error.h"
#include "db/database.h"
#include "tools/commands.h"

namespace tiletune::tools {
namespace {

struct Args {
  std::string db, arch, problem;
};

int list_problems(db::Database& d) {
  std::printf("%6s %8s %8s %8s %6s %6s  %s\n", "id", "m", "n", "k", "batch", "meas", "key");
  for (const auto& p : d.problems())
    std::printf("%6lld %8lld %8lld %8lld %6lld %6lld  %s\n", (long long)p.id, (long long)p.m, (long long)p.n,
                (long long)p.k, (long long)p.batch, (long long)p.measurements, p.key.c_str());
  return 0;
}

int list_winners(db::Database& d, const std::string& arch) {
  std::printf("%-12s %10s %10s  %-60s %s\n", "arch", "ms", "TFLOP/s", "problem", "kernel");
  for (const auto& w : d.winners(arch))
    std::printf("%-12s %10.4f %10.3f  %-60s %s\n", w.arch.c_str(), w.median_ms, w.tflops, w.problem_key.c_str(),
                w.solution.kernel_name().c_str());
  return 0;
}

int show_problem(db::Database& d, const std::string& which) {
  std::optional<std::int64_t> id = d.find_problem(which);
  if (!id) {
    try {
      id = std::stoll(which);
    } catch (const std::exception&) {
      throw Error("no problem with key or id '" + which + "' in " + d.path());
    }
  }
  std::printf("problem %lld\n", (long long)*id);
  std::printf("%-12s %-14s %10s %10s %10s %10s %10s  %s\n", "arch", "status", "median ms", "min ms", "max ms",
              "TFLOP/s", "rel err", "kernel / reason");
  auto rows = d.measurements(*id);
  if (rows.empty()) throw Error("problem " + which + " has no measurements in " + d.path());
  for (const auto& m : rows) {
    std::printf("%-12s %-14s %10.4f %10.4f %10.4f %10.3f %10.2e  %s", m.arch.c_str(), m.status.c_str(), m.median_ms,
                m.min_ms, m.max_ms, m.tflops, m.rel_error, m.kernel_name.c_str());
    if (!m.reason.empty()) std::printf("  [%s]", m.reason.substr(0, 160).c_str());
    std::printf("\n");
  }
  return 0;
}

}  // namespace

Run add_db(CLI::App& app) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("db", "inspect a solution database (opened read-only)");
  cmd->require_subcommand(1);
  auto* problems = cmd->add_subcommand("problems", "list the problems with their measurement counts");
  auto* winners = cmd->add_subcommand("winners", "list the winner of every problem and arch");
  auto* show = cmd->add_subcommand("show", "every measurement of one problem, fastest first");
  auto* check = cmd->add_subcommand("check", "schema version and PRAGMA integrity_check");
  for (auto* sub : {problems, winners, show, check}) sub->add_option("db", a->db, "database file")->required();
  winners->add_option("--arch", a->arch, "only this arch (e.g. sm_90a)");
  show->add_option("problem", a->problem, "problem id or key (see `db problems`)")->required();
  return [a, problems, winners, show, check] {
    db::Database d = db::Database::open(a->db, db::Mode::ReadOnly);
    if (*problems) return list_problems(d);
    if (*winners) return list_winners(d, a->arch);
    if (*show) return show_problem(d, a->problem);
    if (*check) {
      std::string result = d.integrity_check();
      std::printf("%s: schema version %d, integrity %s\n", a->db.c_str(), d.schema_version(), result.c_str());
      return result == "ok" ? 0 : 1;
    }
    return 0;
  };
}

}  // namespace tiletune::tools
