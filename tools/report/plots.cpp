#include "tools/report/plots.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "tools/report/svg.h"

namespace tiletune::report {
namespace {

constexpr double kWidth = 880;
constexpr double kRow = 16;           // pixels per problem in the plots with a row per problem
constexpr std::size_t kLabelChars = 44;
constexpr std::size_t kStripPoints = 150;

// At most n bytes of s, cut before a UTF-8 continuation byte, with "..." when cut.
std::string clip(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  std::size_t end = n;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end) + "...";
}

std::string ms(double v) { return short_number(v) + " ms"; }

Plot::Margins row_margins() { return {280, 24, 28, 44}; }

// Rows of a per-problem plot: row 0 at the top (a reversed axis: the y range runs bottom to top).
Scale row_scale(std::size_t rows) { return Scale::linear(double(rows), 0); }

std::vector<std::string> row_labels(const std::vector<const ProblemResult*>& rows) {
  std::vector<std::string> out;
  for (const auto* p : rows) out.push_back(clip(p->label, kLabelChars));
  return out;
}

// A log domain around values (all > 0), padded by `pad` each way.
Scale padded_log(double lo, double hi, double pad) { return Scale::log(lo / pad, hi * pad); }

}  // namespace

std::vector<double> thin_sorted(const std::vector<double>& sorted, std::size_t max_points) {
  if (sorted.size() <= max_points || max_points < 2) return sorted;
  std::vector<double> out;
  for (std::size_t i = 0; i < max_points; ++i)
    out.push_back(sorted[i * (sorted.size() - 1) / (max_points - 1)]);
  return out;
}

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return NAN;
  const double pos = q * double(sorted.size() - 1);
  const std::size_t i = std::size_t(std::floor(pos));
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (pos - double(i)) * (sorted[i + 1] - sorted[i]);
}

std::string speedup_plot(const ArchResult& a) {
  std::vector<const ProblemResult*> rows;
  double lo = 1, hi = 1;
  for (const auto& p : a.problems)
    if (p.has_speedup()) {
      rows.push_back(&p);
      lo = std::min(lo, p.speedup()), hi = std::max(hi, p.speedup());
    }
  if (rows.empty()) return "";
  // Room beyond the longest bars for their value labels.
  Plot plot(kWidth, 72 + kRow * double(rows.size()), row_margins(), padded_log(lo, hi, 1.4), row_scale(rows.size()),
            "Best kernel against the vendor, " + a.arch + " (vendor time / kernel time; right of 1: faster)");
  plot.axes("speedup over the vendor library (log scale)", "", false);
  plot.row_labels(row_labels(rows));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ProblemResult& p = *rows[i];
    const double s = p.speedup();
    const double y0 = plot.y(double(i) + 0.2), y1 = plot.y(double(i) + 0.8);
    plot.svg().rect(plot.x(1), y0, plot.x(s) - plot.x(1), y1 - y0, Style{s >= 1 ? color(2) : color(5)},
                    p.label + "\n" + p.key + "\nkernel " + p.kernel + ": " + ms(p.kernel_ms) + "\nvendor: " +
                        ms(p.vendor_ms) + "\nspeedup " + short_number(s) + "x");
    plot.svg().text(plot.x(s) + (s >= 1 ? 4 : -4), (y0 + y1) / 2 + 3.5, short_number(s) + "x",
                    s >= 1 ? Anchor::Start : Anchor::End, 9);
  }
  plot.svg().line(plot.x(1), plot.top(), plot.x(1), plot.bottom(), Style{"none", "#444444", 1.5});
  return plot.str();
}

std::string roofline_plot(const ArchResult& a) {
  std::vector<const ProblemResult*> pts;
  std::set<Arithmetic> kinds;
  double ai_lo = INFINITY, ai_hi = 0, f_lo = INFINITY, f_hi = 0;
  for (const auto& p : a.problems) {
    const double ai = p.flops / p.bytes;
    if (!(std::isfinite(ai) && ai > 0) || !(p.kernel_ms > 0)) continue;
    pts.push_back(&p);
    kinds.insert(p.arithmetic);
    ai_lo = std::min(ai_lo, ai), ai_hi = std::max(ai_hi, ai);
    for (double t : {p.kernel_ms, p.vendor_ms})
      if (t > 0) {
        const double f = p.flops / (t * 1e-3);
        f_lo = std::min(f_lo, f), f_hi = std::max(f_hi, f);
      }
  }
  if (pts.empty()) return "";
  const DevicePeaks* peaks = a.peaks ? &*a.peaks : nullptr;
  if (peaks)
    for (Arithmetic k : kinds) {
      const double peak = peaks->flops(k);
      if (!(peak > 0)) continue;
      f_hi = std::max(f_hi, peak);
      if (peaks->bytes_per_s > 0) {
        ai_lo = std::min(ai_lo, peak / peaks->bytes_per_s), ai_hi = std::max(ai_hi, peak / peaks->bytes_per_s);
      }
    }
  const double unit = f_hi >= 1e12 ? 1e12 : 1e9;
  const std::string unit_name = unit == 1e12 ? "TFLOP/s" : "GFLOP/s";
  Scale xs = padded_log(ai_lo, ai_hi, 2);
  if (peaks && peaks->bytes_per_s > 0) f_lo = std::min(f_lo, peaks->bytes_per_s * xs.lo());
  Plot plot(kWidth, 460, Plot::Margins{64, 24, 28, 44}, xs, padded_log(f_lo / unit, f_hi / unit, 1.6),
            "Roofline, " + a.arch + ": best kernel and vendor per problem");
  plot.axes("arithmetic intensity (FLOP per byte of compulsory memory traffic, log)", unit_name + " (log)");
  std::vector<LegendEntry> legend;
  if (peaks)
    for (Arithmetic k : kinds) {
      const double peak = peaks->flops(k) / unit;
      if (!(peak > 0)) continue;
      const Style roof{"none", "#555555", 1.5, 1, k == Arithmetic::F16 ? "" : k == Arithmetic::TF32 ? "6 3" : "2 3"};
      const double bw = peaks->bytes_per_s / unit;
      const double ridge = bw > 0 ? peak / bw : xs.lo();
      if (bw > 0) plot.svg().line(plot.x(xs.lo()), plot.y(bw * xs.lo()), plot.x(ridge), plot.y(peak), roof);
      plot.svg().line(plot.x(std::max(ridge, xs.lo())), plot.y(peak), plot.right(), plot.y(peak), roof,
                      std::string(to_string(k)) + " peak " + short_number(peak) + " " + unit_name);
      plot.svg().text(plot.x(std::max(ridge, xs.lo())) + 4, plot.y(peak) - 4,
                      std::string(to_string(k)) + " peak " + short_number(peak), Anchor::Start, 10);
      legend.push_back({std::string(to_string(k)) + " roof", roof, false});
    }
  const Style kernel{color(0), color(0)}, vendor{"#ffffff", color(1), 1.5};
  for (const ProblemResult* p : pts) {
    const double x = plot.x(p->flops / p->bytes);
    const double fk = p->flops / (p->kernel_ms * 1e-3) / unit;
    if (p->vendor_ms > 0) {
      const double fv = p->flops / (p->vendor_ms * 1e-3) / unit;
      plot.svg().line(x, plot.y(fk), x, plot.y(fv), Style{"none", "#aaaaaa", 1});
      plot.svg().circle(x, plot.y(fv), 3.5, vendor,
                        p->label + "\nvendor " + short_number(fv) + " " + unit_name + " (" + ms(p->vendor_ms) + ")");
    }
    plot.svg().circle(x, plot.y(fk), 3.5, kernel,
                      p->label + "\n" + p->kernel + "\n" + short_number(fk) + " " + unit_name + " (" + ms(p->kernel_ms) + ")");
  }
  legend.push_back({"best kernel", kernel, true});
  legend.push_back({"vendor", vendor, true});
  plot.legend(legend, true);  // high intensity and a low rate: the corner a roofline leaves empty
  return plot.str();
}

std::string convergence_plot(const ArchResult& a, const std::map<std::string, std::string>& searches) {
  std::vector<std::string> sweeps;  // colour order
  std::size_t most = 1;
  double worst = 1;
  for (const auto& p : a.problems)
    for (const auto& c : p.convergence) {
      if (c.steps.empty()) continue;
      if (std::find(sweeps.begin(), sweeps.end(), c.sweep) == sweeps.end()) sweeps.push_back(c.sweep);
      most = std::max(most, c.measured);
      worst = std::max(worst, c.steps.front().second / p.kernel_ms);
    }
  if (sweeps.empty()) return "";
  std::sort(sweeps.begin(), sweeps.end());
  Plot plot(kWidth, 420, Plot::Margins{64, 24, 28, 44}, padded_log(1, double(most), 1.05), padded_log(1, worst, 1.1),
            "Search convergence, " + a.arch + ": best time found so far, per problem and sweep");
  plot.axes("candidates measured (log)", "best so far / best kernel (log)");
  for (const auto& p : a.problems)
    for (const auto& c : p.convergence) {
      if (c.steps.empty()) continue;
      const std::size_t si = std::size_t(std::find(sweeps.begin(), sweeps.end(), c.sweep) - sweeps.begin());
      std::vector<std::pair<double, double>> line;
      for (std::size_t i = 0; i < c.steps.size(); ++i) {
        const double r = c.steps[i].second / p.kernel_ms;
        const double next = i + 1 < c.steps.size() ? double(c.steps[i + 1].first) : double(c.measured);
        line.emplace_back(plot.x(double(c.steps[i].first)), plot.y(r));
        line.emplace_back(plot.x(next), plot.y(r));
      }
      plot.svg().polyline(line, Style{"none", color(si), 1.5, 0.75},
                          p.label + "\nsweep " + c.sweep + ": its best after candidate " +
                              std::to_string(c.steps.back().first) + " of " + std::to_string(c.measured));
      plot.svg().circle(line.back().first, line.back().second, 2.5, Style{color(si)});
    }
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    auto it = searches.find(sweeps[i]);
    const std::string name = sweeps[i].empty() ? "(unnamed sweep)" : sweeps[i];
    legend.push_back({clip(name, 40) + (it == searches.end() ? "" : " (" + clip(it->second, 40) + ")"),
                      Style{"none", color(i), 2}, false});
  }
  plot.legend(legend);
  return plot.str();
}

std::string spread_plot(const ArchResult& a) {
  std::vector<const ProblemResult*> rows;
  double lo = 1, hi = 1;
  for (const auto& p : a.problems) {
    if (p.candidate_ms.empty()) continue;
    rows.push_back(&p);
    hi = std::max(hi, p.candidate_ms.back() / p.kernel_ms);
    if (p.vendor_ms > 0) lo = std::min(lo, p.vendor_ms / p.kernel_ms), hi = std::max(hi, p.vendor_ms / p.kernel_ms);
  }
  if (rows.empty()) return "";
  Plot plot(kWidth, 72 + kRow * double(rows.size()), row_margins(), padded_log(lo, hi, 1.1), row_scale(rows.size()),
            "Spread of the candidates, " + a.arch + ": each 'ok' candidate's time / the best kernel's");
  plot.axes("time / best kernel's time (log)", "", false);
  plot.row_labels(row_labels(rows));
  const Style box{"#dde8f3", color(0), 1}, range{"none", color(0), 1}, dot{color(0), "none", 1, 0.45};
  const Style vendor{"none", color(5), 2};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ProblemResult& p = *rows[i];
    std::vector<double> r;
    for (double t : p.candidate_ms) r.push_back(t / p.kernel_ms);
    const double y0 = plot.y(double(i) + 0.15), y1 = plot.y(double(i) + 0.85), yc = (y0 + y1) / 2;
    const double q1 = quantile(r, 0.25), med = quantile(r, 0.5), q3 = quantile(r, 0.75);
    plot.svg().line(plot.x(r.front()), yc, plot.x(r.back()), yc, range);
    plot.svg().rect(plot.x(q1), y0, plot.x(q3) - plot.x(q1), y1 - y0, box,
                    p.label + "\n" + std::to_string(r.size()) + " ok candidates, " + std::to_string(p.failed) +
                        " failed\nquartiles " + short_number(q1) + " / " + short_number(med) + " / " +
                        short_number(q3) + " x best; slowest " + short_number(r.back()) + " x");
    plot.svg().line(plot.x(med), y0, plot.x(med), y1, Style{"none", color(0), 2});
    const std::vector<double> shown = thin_sorted(r, kStripPoints);
    for (std::size_t k = 0; k < shown.size(); ++k) {
      const double jitter = (double((k * 7919) % 11) / 10.0 - 0.5) * (y1 - y0) * 0.7;  // spread, repeatable
      plot.svg().circle(plot.x(shown[k]), yc + jitter, 1.8, dot);
    }
    if (p.vendor_ms > 0) {
      const double v = p.vendor_ms / p.kernel_ms;
      plot.svg().line(plot.x(v), y0 - 1, plot.x(v), y1 + 1, vendor, "vendor: " + short_number(v) + " x best kernel");
    }
  }
  return plot.str();  // no legend over the rows: the page's caption names the marks
}

}  // namespace tiletune::report
