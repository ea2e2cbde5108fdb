// What `tiletune report` shows, read out of a solution database into plain values: per arch, per
// problem, the winner, the vendor, every candidate's time and the order the candidates were
// measured in (a measurement's id: a re-timing replaces the row's values but keeps its id, so id
// order is the order in which each candidate was first measured).
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "db/database.h"
#include "tools/report/peaks.h"

namespace tiletune::report {

// One sweep's measuring of one problem: the best 'ok' time after each candidate that improved it.
struct Convergence {
  std::string sweep;                                   // the sweep (config) name
  std::vector<std::pair<std::size_t, double>> steps;   // (candidates measured so far, best ms)
  std::size_t measured = 0;                            // candidates measured, failures included
};

struct ProblemResult {
  std::int64_t problem_id = 0;
  std::string key;    // as stored (untrusted text)
  std::string label;  // "#id " + the problem's short description
  Problem problem;
  Arithmetic arithmetic = Arithmetic::F32;
  double flops = 0, bytes = 0;
  // The database's winner: what the runtime serves. It may be the vendor library itself.
  std::string winner_kernel;  // "" when the problem has none (every measurement failed)
  bool vendor_wins = false;
  // The fastest tuned kernel (the vendor aside): what the plots compare with the vendor, so that a
  // problem the vendor wins still shows how far the tuning came.
  std::string kernel;
  double kernel_ms = NAN;  // NaN: no kernel succeeded
  double vendor_ms = NAN;  // the vendor library's fastest 'ok' time; NaN: not measured
  std::vector<double> candidate_ms;  // every 'ok' candidate's median (vendor excluded), ascending
  std::size_t failed = 0;            // candidates that failed (compile, check, launch, crash, timeout)
  std::vector<Convergence> convergence;  // per sweep, by sweep name

  // Vendor time over the best kernel's; NaN unless both were measured.
  double speedup() const { return kernel_ms > 0 ? vendor_ms / kernel_ms : NAN; }
  bool has_speedup() const { return std::isfinite(speedup()) && speedup() > 0; }
};

struct ArchResult {
  std::string arch;
  std::vector<std::string> devices;      // names of the devices measured on, as stored
  std::optional<DevicePeaks> peaks;      // of the first device the peak table knows
  std::string peaks_device;              // ... that device's name
  std::vector<ProblemResult> problems;   // by problem key
  // The geometric mean of the vendor's time over the winner's, over problems with both; NaN: none.
  double geomean_speedup() const;
};

struct ReportData {
  std::string db_path;
  int schema_version = 0;
  std::map<std::string, std::string> searches;  // sweep name -> its search settings, where recorded
  std::vector<ArchResult> arches;               // sorted by arch
};

// Reads everything the report shows; `only_arches` empty: every arch. Throws Error for a database
// it cannot read (the reader's own errors name the file and row).
ReportData gather(db::Database& db, const std::vector<std::string>& only_arches = {});

}  // namespace tiletune::report
