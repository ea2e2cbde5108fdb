#include "tools/report/page.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "tools/report/plots.h"
#include "tools/report/svg.h"

namespace tiletune::report {
namespace {

// No `<` or `&` in here: the page must stay well-formed XML.
constexpr const char* kStyle = R"css(
body { font-family: sans-serif; margin: 1.5em auto; max-width: 980px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 0.9em; word-break: break-all; }
figure { margin: 1em 0; } figcaption { font-size: 0.85em; color: #444; max-width: 880px; }
svg { max-width: 100%; height: auto; display: block; }
.note { color: #8a4b00; }
)css";

std::string h(const std::string& s) { return escape(s); }
std::string num(double v) { return short_number(v); }
std::string td(const std::string& escaped, bool number = false) {
  return (number ? "<td class=\"n\">" : "<td>") + escaped + "</td>";
}

std::string figure(const std::string& svg, const std::string& caption, const std::string& none) {
  if (svg.empty()) return "<p class=\"note\">" + h(none) + "</p>\n";
  return "<figure>\n" + svg + "<figcaption>" + h(caption) + "</figcaption>\n</figure>\n";
}

std::string summary_table(const ReportData& d) {
  std::string s =
      "<table>\n<tr><th>arch</th><th>devices</th><th>problems</th><th>with a winner</th><th>vendor wins</th>"
      "<th>vendor measured</th><th>geomean vendor / best kernel</th><th>lowest</th><th>highest</th></tr>\n";
  for (const auto& a : d.arches) {
    std::size_t winners = 0, vendor_wins = 0, with_vendor = 0;
    double lo = NAN, hi = NAN;
    for (const auto& p : a.problems) {
      winners += !p.winner_kernel.empty();
      vendor_wins += p.vendor_wins;
      if (!p.has_speedup()) continue;
      ++with_vendor;
      if (!(p.speedup() >= lo)) lo = p.speedup();
      if (!(p.speedup() <= hi)) hi = p.speedup();
    }
    std::string devices;
    for (const auto& n : a.devices) devices += (devices.empty() ? "" : "; ") + n;
    s += "<tr>" + td(h(a.arch)) + td(h(devices)) + td(std::to_string(a.problems.size()), true) +
         td(std::to_string(winners), true) + td(std::to_string(vendor_wins), true) + td(std::to_string(with_vendor), true) +
         td(num(a.geomean_speedup()), true) + td(num(lo), true) + td(num(hi), true) + "</tr>\n";
  }
  return s + "</table>\n";
}

std::string problem_table(const ArchResult& a) {
  std::string s =
      "<table>\n<tr><th>problem</th><th>winner (served)</th><th>best kernel ms</th><th>TFLOP/s</th>"
      "<th>vendor ms</th><th>vendor / kernel</th><th>ok</th><th>failed</th></tr>\n";
  for (const auto& p : a.problems) {
    const double tflops = p.kernel_ms > 0 ? p.flops / (p.kernel_ms * 1e-3) / 1e12 : NAN;
    const std::string winner = p.winner_kernel.empty() ? "none" : p.winner_kernel;
    s += "<tr>" + td(h(p.label) + "<br/><code>" + h(p.key) + "</code>") + td("<code>" + h(winner) + "</code>") +
         td(num(p.kernel_ms), true) + td(num(tflops), true) + td(num(p.vendor_ms), true) + td(num(p.speedup()), true) +
         td(std::to_string(p.candidate_ms.size()), true) + td(std::to_string(p.failed), true) + "</tr>\n";
  }
  return s + "</table>\n";
}

// Per sweep of one arch: how much it measured and how close it came.
std::string convergence_table(const ArchResult& a, const std::map<std::string, std::string>& searches) {
  struct Row {
    std::size_t problems = 0, measured = 0;
    std::vector<double> to_best;  // candidates until its own best, per problem
    double log_gap = 0;           // sum of log(its best / the best kernel)
  };
  std::map<std::string, Row> rows;
  for (const auto& p : a.problems)
    for (const auto& c : p.convergence) {
      if (c.steps.empty()) continue;
      Row& r = rows[c.sweep];
      ++r.problems;
      r.measured += c.measured;
      r.to_best.push_back(double(c.steps.back().first));
      r.log_gap += std::log(c.steps.back().second / p.kernel_ms);
    }
  if (rows.empty()) return "";
  std::string s =
      "<table>\n<tr><th>sweep</th><th>search</th><th>problems</th><th>candidates measured</th>"
      "<th>median candidates until its best</th><th>geomean of its best / best kernel</th></tr>\n";
  for (auto& [name, r] : rows) {
    std::sort(r.to_best.begin(), r.to_best.end());
    auto it = searches.find(name);
    s += "<tr>" + td(h(name.empty() ? "(unnamed)" : name)) + td(h(it == searches.end() ? "not recorded" : it->second)) +
         td(std::to_string(r.problems), true) + td(std::to_string(r.measured), true) +
         td(num(quantile(r.to_best, 0.5)), true) + td(num(std::exp(r.log_gap / double(r.problems))), true) + "</tr>\n";
  }
  return s + "</table>\n";
}

std::string arch_section(const ArchResult& a, const ReportData& d) {
  std::string s = "<h2 id=\"arch-" + h(a.arch) + "\">" + h(a.arch) + "</h2>\n";
  std::string devices;
  for (const auto& n : a.devices) devices += (devices.empty() ? "" : "; ") + n;
  s += "<p>Devices: " + h(devices.empty() ? "none recorded" : devices) + ".<br/>Roofline peaks: ";
  if (a.peaks)
    s += h(a.peaks->source + ", device " + a.peaks_device) + ".";
  else
    s += "<span class=\"note\">unknown for this device (the database records no peaks and tiletune's table has no "
         "entry for it): the roofline shows the measured points without roofs.</span>";
  s += "</p>\n";
  s += figure(speedup_plot(a),
              "Per problem, the vendor library's best time over the best tuned kernel's (log scale). Right of the line "
              "at 1 (green) the kernel is faster; left (red) the vendor is, and the runtime serves the vendor there. "
              "Hover a bar for the problem key, the kernel and both times.",
              "No problem of this arch has both a kernel and a vendor measurement: nothing to compare.");
  s += figure(roofline_plot(a),
              "Each problem at its arithmetic intensity (FLOP over the bytes its operands and result must move at "
              "least once): filled, the best kernel; hollow, the vendor; a grey line joins the two. The roofs are the "
              "device's peak rate for the problem's arithmetic and, where its memory bandwidth is known, the "
              "bandwidth slope; distance below the roof is headroom.",
              "No kernel of this arch succeeded: nothing to place on a roofline.");
  s += figure(convergence_plot(a, d.searches),
              "One line per problem and sweep: the best time that sweep had found, over the best kernel of any "
              "sweep, after each candidate it measured (in the order first measured; failed candidates count). A "
              "line reaching 1 found the best kernel; how far right it drops says how many candidates that took.",
              "No sweep recorded a successful candidate on this arch.");
  s += convergence_table(a, d.searches);
  s += figure(spread_plot(a),
              "Per problem, every successful candidate's time over the best kernel's (log scale): the box spans the "
              "middle half, the thick bar is the median, the thin line the whole range, dots are the candidates (at "
              "most 150 per problem, evenly spaced in rank) and the red tick is the vendor.",
              "No candidate of this arch succeeded.");
  s += problem_table(a);
  return s;
}

}  // namespace

std::string render_html(const ReportData& d) {
  std::string s = "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
                  "<meta charset=\"utf-8\"/>\n<title>tiletune report: " +
                  h(d.db_path) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  s += "<h1>tiletune report</h1>\n<p>Database <code>" + h(d.db_path) + "</code>, schema version " +
       std::to_string(d.schema_version) + ".</p>\n";
  if (d.arches.empty()) return s + "<p class=\"note\">The database holds no measurements.</p>\n</body>\n</html>\n";
  s += "<p>Speedups are the vendor library's time over the best tuned kernel's, per problem; their geometric mean "
       "is over the problems where both were measured.</p>\n";
  s += summary_table(d);
  for (const auto& a : d.arches) s += arch_section(a, d);
  return s + "</body>\n</html>\n";
}

void write_report(const std::string& db_path, const std::string& out_path, const std::vector<std::string>& arches) {
  db::Database db = db::Database::open(db_path, db::Mode::ReadOnlyAnyVersion);
  const std::string html = render_html(gather(db, arches));
  const std::string tmp = out_path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write the report " + out_path + ": " + std::strerror(errno));
    out << html;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error("cannot write the report " + out_path + ": " + std::strerror(errno));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error("cannot write the report " + out_path + ": " + ec.message());
  }
}

}  // namespace tiletune::report
