// What every vendor-comparison table shares: its common options, the header lines that say when, from which commit and
// on which machine it was measured, the median that rows report, and writing <out>.md / .json.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "tuner/timing.h"
#include "tuner/config.h"

namespace tiletune::bench {

inline std::string utc_now() {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return date;
}

// The options every comparison program takes besides what it compares.
struct CommonOptions {
  std::string backend = "auto", out_prefix, commit = "unknown", label;
  int device = 0, rounds = 3;
  tuner::BenchmarkOptions timing;
};

inline void add_common_options(CLI::App& app, CommonOptions& o) {
  o.timing.warmup = 3;
  o.timing.min_iterations = 10;
  o.timing.max_iterations = 100;
  o.timing.target_ms = 200;
  app.add_option("--backend", o.backend)->capture_default_str();
  app.add_option("--device", o.device)->capture_default_str();
  app.add_option("--out", o.out_prefix, "write <out>.md and <out>.json");
  app.add_option("--commit", o.commit, "commit the binaries were built from")->capture_default_str();
  app.add_option("--label", o.label, "free text for the table header");
  app.add_option("--rounds", o.rounds, "interleaved rounds of (tiletune, vendor) timings; the median round counts")
      ->capture_default_str();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Interleaved rounds of timings of one side of a comparison: each round's median run and mean run
// (tuner::Timing); a row reports the median round of each.
struct RoundTimes {
  std::vector<double> medians, means;
  void add(const tuner::Timing& t) { medians.push_back(t.median_ms), means.push_back(t.mean_ms); }
  double median_ms() const { return median(medians); }
  double mean_ms() const { return median(means); }
};

// Per group of rows (a data type, a convolution direction): the geometric mean of the tiletune /
// vendor ratios (of the median rounds, and of the ratios of means) and the lowest median ratio,
// which is what an acceptance bar such as "geomean >= 0.9, no shape under 0.6" reads. The caller
// adds only rows where both sides validated (gemm_vs_vendor: and the tuned winner ran); a row
// without a vendor time is left out here.
class RatioSummary {
 public:
  void add(const std::string& group, const std::string& row, double ratio, double ratio_of_means) {
    if (!(ratio > 0) || !(ratio_of_means > 0)) return;
    Group& g = groups_[group];
    g.log_ratio += std::log(ratio), g.log_means += std::log(ratio_of_means), ++g.rows;
    if (g.rows == 1 || ratio < g.min) g.min = ratio, g.min_row = row;
  }
  std::string markdown(const std::string& vendor) const {
    std::string md = "\n| rows of | geometric mean of tiletune / " + vendor +
                     " | of the ratios of means | minimum | its problem | rows |\n|---|---|---|---|---|---|\n";
    char line[512];
    for (const auto& [name, g] : groups_) {
      std::snprintf(line, sizeof line, "| %s | %.3f | %.3f | %.3f | %s | %d |\n", name.c_str(), g.geomean(),
                    g.geomean_of_means(), g.min, g.min_row.c_str(), g.rows);
      md += line;
    }
    return md;
  }
  nlohmann::json json() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, g] : groups_)
      j[name] = {{"geomean", g.geomean()}, {"geomean_of_means", g.geomean_of_means()}, {"min", g.min},
                 {"min_problem", g.min_row}, {"rows", g.rows}};
    return j;
  }
  void print() const {
    for (const auto& [name, g] : groups_)
      std::printf("%s: geomean %.3f (ratio of means %.3f), min %.3f (%s) over %d rows\n", name.c_str(), g.geomean(),
                  g.geomean_of_means(), g.min, g.min_row.c_str(), g.rows);
  }

 private:
  struct Group {
    double log_ratio = 0, log_means = 0, min = 0;
    std::string min_row;
    int rows = 0;
    double geomean() const { return std::exp(log_ratio / rows); }
    double geomean_of_means() const { return std::exp(log_means / rows); }
  };
  std::map<std::string, Group> groups_;
};

// "- date: ...\n- commit: ...\n- machine: ...\n" for the Markdown header.
inline std::string provenance_lines(const std::string& date, const std::string& commit, const gpu::DeviceInfo& dev) {
  return "- date: " + date + "\n- commit: " + commit + "\n- machine: " + dev.name + " (" + dev.arch + ", " +
         std::to_string(dev.multiprocessors) + " SMs, " + dev.driver_version + ")\n";
}

// The JSON document's provenance fields, to which a table adds its rows.
inline nlohmann::json provenance_json(const std::string& date, const std::string& commit, const gpu::DeviceInfo& dev) {
  return {{"date", date}, {"commit", commit}, {"device", dev.name}, {"arch", dev.arch}, {"driver", dev.driver_version}};
}

inline void write_tables(const std::string& out_prefix, const std::string& md, const nlohmann::json& doc) {
  if (out_prefix.empty()) return;
  std::ofstream(out_prefix + ".md") << md;
  std::ofstream(out_prefix + ".json") << doc.dump(2) << "\n";
  std::printf("wrote %s.md and %s.json\n", out_prefix.c_str(), out_prefix.c_str());
}

}  // namespace tiletune::bench
