#include "tools/report/data.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tools/report/svg.h"

namespace tiletune::report {
namespace {

// "halving, budget 20 candidates, 30 s per problem, seed 7" from a sweep's recorded settings; the
// text as stored (escaped later, like any) when it is not the JSON the tuner writes.
std::string describe_search(const std::string& stored) {
  try {
    const nlohmann::json j = nlohmann::json::parse(stored);
    std::string s = j.at("strategy").get<std::string>();
    if (const auto budget = j.value("budget", std::uint64_t(0))) s += ", budget " + std::to_string(budget) + " candidates";
    if (const double secs = j.value("budget_seconds", 0.0); secs > 0) s += ", " + short_number(secs) + " s per problem";
    if (s.rfind("random", 0) == 0) s += ", seed " + std::to_string(j.value("seed", std::uint64_t(0)));
    return s;
  } catch (const std::exception&) {
    return stored;
  }
}

// Per (arch, problem): what its measurements say, in id order.
struct Tally {
  ProblemResult r;
  std::map<std::string, Convergence> by_sweep;
};

void add_measurement(Tally& t, const db::MeasurementRow& m, bool vendor) {
  const bool ok = m.status == db::Status::Ok && std::isfinite(m.median_ms) && m.median_ms > 0;
  if (vendor) {
    if (ok && !(m.median_ms >= t.r.vendor_ms)) t.r.vendor_ms = m.median_ms;  // NaN compares false
    return;
  }
  Convergence& c = t.by_sweep[m.sweep];
  c.sweep = m.sweep;
  ++c.measured;
  if (!ok) {
    ++t.r.failed;
    return;
  }
  t.r.candidate_ms.push_back(m.median_ms);
  if (c.steps.empty() || m.median_ms < c.steps.back().second) c.steps.emplace_back(c.measured, m.median_ms);
  if (!(m.median_ms >= t.r.kernel_ms)) {
    t.r.kernel_ms = m.median_ms;
    t.r.kernel = m.kernel_name;
  }
}

}  // namespace

double ArchResult::geomean_speedup() const {
  double sum = 0;
  int n = 0;
  for (const auto& p : problems)
    if (p.has_speedup()) sum += std::log(p.speedup()), ++n;
  return n ? std::exp(sum / n) : NAN;
}

ReportData gather(db::Database& db, const std::vector<std::string>& only_arches) {
  ReportData out;
  out.db_path = db.path();
  out.schema_version = db.schema_version();

  std::map<std::int64_t, db::ProblemSpecRow> problems;
  for (auto& p : db.problem_specs()) problems.emplace(p.id, std::move(p));
  std::map<std::int64_t, bool> is_vendor;
  for (const auto& s : db.solutions()) is_vendor[s.id] = s.solution.template_name == kVendorTemplate;

  std::map<std::pair<std::string, std::int64_t>, Tally> tallies;
  std::set<std::string> sweeps;
  for (const auto& m : db.all_measurements()) {
    if (!only_arches.empty() && std::find(only_arches.begin(), only_arches.end(), m.arch) == only_arches.end()) continue;
    add_measurement(tallies[{m.arch, m.problem_id}], m, is_vendor[m.solution_id]);
    sweeps.insert(m.sweep);
  }
  for (const auto& arch : only_arches)
    if (std::none_of(tallies.begin(), tallies.end(), [&](const auto& t) { return t.first.first == arch; }))
      throw Error(db.path() + ": no measurements of arch '" + arch + "'");
  for (const auto& s : sweeps)
    if (auto v = db.meta(std::string(db::kSearchMetaPrefix) + s)) out.searches[s] = describe_search(*v);

  for (const auto& w : db.winners("")) {
    auto it = tallies.find({w.arch, w.problem_id});
    if (it == tallies.end()) continue;
    it->second.r.winner_kernel = w.solution.kernel_name();
    it->second.r.vendor_wins = w.solution.template_name == kVendorTemplate;
  }

  std::map<std::string, ArchResult> arches;
  for (auto& [at, t] : tallies) {
    const auto& [arch, problem_id] = at;
    ArchResult& a = arches[arch];
    a.arch = arch;
    ProblemResult& r = t.r;
    const auto p = problems.find(problem_id);
    if (p == problems.end()) throw Error(db.path() + ": a measurement names problem " + std::to_string(problem_id) +
                                         ", which the problems table lacks");
    r.problem_id = problem_id;
    r.key = p->second.key;
    r.problem = p->second.problem;
    r.label = "#" + std::to_string(problem_id) + " " + r.problem.describe();
    r.arithmetic = arithmetic_of(r.problem);
    r.flops = r.problem.flops();
    r.bytes = compulsory_bytes(r.problem);
    std::sort(r.candidate_ms.begin(), r.candidate_ms.end());
    for (auto& [name, c] : t.by_sweep) r.convergence.push_back(std::move(c));
    a.problems.push_back(std::move(r));
  }
  for (const auto& d : db.devices()) {
    auto it = arches.find(d.arch);
    if (it == arches.end()) continue;
    ArchResult& a = it->second;
    if (std::find(a.devices.begin(), a.devices.end(), d.name) == a.devices.end()) a.devices.push_back(d.name);
    if (!a.peaks)
      if ((a.peaks = peaks_of(d))) a.peaks_device = d.name;
  }
  for (auto& [arch, a] : arches) {
    std::sort(a.problems.begin(), a.problems.end(),
              [](const ProblemResult& x, const ProblemResult& y) { return std::tie(x.key, x.problem_id) < std::tie(y.key, y.problem_id); });
    out.arches.push_back(std::move(a));
  }
  return out;
}

}  // namespace tiletune::report
