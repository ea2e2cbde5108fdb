// Tuned convolutions against cuDNN, in one process, on the same buffers, in one run (issue 6's
// table). For every convolution winner in the database for this device's arch (or every
// convolution of a tuning config, dispatched by whatever the runtime picks for it: its winner,
// the nearest one or the fallback), the runtime's kernel and cuDNN's fastest algorithm (chosen by
// cuDNN's own find on these buffers) both run; both are checked against the fp64 reference and
// against each other, then timed interleaved (warm-up, events, median, operands rotated past
// twice the L2). Writes a Markdown and a JSON table with geometric means and minima per direction.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <map>

#include "benchmarks/report.h"
#include "runtime/api_types.h"
#include "common/error.h"
#include "db/database.h"
#include "gpu/backend.h"
#include "vendors/vendor_conv.h"
#include "runtime/tiletune.hpp"
#include "solutions/problem.h"
#include "tuner/timing.h"
#include "tuner/config.h"
#include "ops/conv/inputs.h"
#include "ops/elements.h"

using namespace tiletune;

namespace {

// ||a - b|| / ||b|| over two outputs of type t.
double relative_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b, DataType t) {
  double err = 0, ref = 0;
  const std::int64_t n = std::int64_t(a.size()) / size_of(t);
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = ops::load_element(a.data(), i, t), y = ops::load_element(b.data(), i, t);
    err += (x - y) * (x - y);
    ref += y * y;
  }
  return std::sqrt(err / std::max(ref, 1e-300));
}

// Which rule of the runtime served the call, from its counters before and after.
std::string dispatch_rule(const tiletune_stats_t& before, const tiletune_stats_t& after) {
  if (after.tuned > before.tuned) return "tuned";
  if (after.nearest > before.nearest) return "nearest";
  if (after.fallbacks > before.fallbacks) return "fallback";
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"conv_vs_cudnn: time tuned convolutions through the runtime against cuDNN's fastest algorithm"};
  std::string db_path, config_path;
  bool create_db = false;
  bench::CommonOptions o;
  bench::add_common_options(app, o);
  app.add_option("--db", db_path, "solution database the runtime opens")->required();
  app.add_flag("--create-db", create_db, "create an empty --db if missing (with --config: fallback kernels only)");
  app.add_option("--config", config_path, "time the convolutions of this tuning config instead of the db's winners");
  CLI11_PARSE(app, argc, argv);

  try {
    auto dev = gpu::open_device(gpu::resolve_backend(o.backend), o.device);
    if (create_db) db::Database::open(db_path, db::Mode::ReadWrite);
    std::string vendor_missing;
    auto vendor = gpu::make_vendor_conv(*dev, &vendor_missing);
    if (!vendor) std::fprintf(stderr, "conv_vs_cudnn: timing tiletune alone: %s\n", vendor_missing.c_str());
    const std::string vendor_name = vendor ? vendor->name() : "cuDNN";
    Handle rt(db_path, gpu::to_string(dev->info().backend), o.device);

    std::vector<ConvProblem> problems;
    if (!config_path.empty()) {
      for (const Problem& p : tuner::load_config(config_path).problems)
        if (p.is_conv()) problems.push_back(p.conv());
      if (problems.empty()) throw Error(config_path + " names no convolution");
    } else {
      for (const auto& w : db::Database::open(db_path, db::Mode::ReadOnly).winners(dev->info().arch))
        if (w.problem.is_conv()) problems.push_back(w.problem.conv());
      if (problems.empty()) throw Error("no convolution winners for arch " + dev->info().arch + " in " + db_path);
    }

    const std::string date = bench::utc_now();
    nlohmann::json rows = nlohmann::json::array();
    std::string md = "# tiletune convolutions vs " + vendor_name + "\n\n" + bench::provenance_lines(date, o.commit, dev->info()) +
                     "- database: " + db_path + (config_path.empty() ? "" : "\n- problems: " + config_path) +
                     (o.label.empty() ? "" : "\n- " + o.label) + (vendor ? "" : "\n- no cuDNN: " + vendor_missing) +
                     "\n- method: same process, same buffers, operands rotated past 2x L2, CUDA events, median of runs; " +
                     std::to_string(o.rounds) + " interleaved rounds, median round reported; cuDNN's algorithm from its "
                     "own find (cudnnFind*AlgorithmEx, 1 GiB workspace) on these buffers; ratio of means: the same from "
                     "each round's mean, finer than a run's timing where a run lasts a few timer ticks\n\n"
                     "| problem | TFLOP/s tiletune | TFLOP/s " + vendor_name + " | ratio | ratio of means | rule | rel err tiletune | rel err " +
                     vendor_name + " | tiletune vs " + vendor_name + " | cuDNN algorithm |\n|---|---|---|---|---|---|---|---|---|---|\n";
    std::printf("%-72s %9s %9s %7s %-8s\n", "problem", "tiletune", "cuDNN", "ratio", "rule");
    bench::RatioSummary summary;  // per direction
    int failures = 0;
    for (const ConvProblem& p : problems) {
      const std::string what = Problem(p).describe();
      try {
        ops::ConvInputs data(*dev, p);
        const tiletune_conv_desc_t d = api_desc(p);
        auto ours = [&](const TtConvParams& a) {
          switch (p.direction) {
            case ConvDirection::Forward: rt.conv_forward(d, a.x, a.wt, a.y); break;
            case ConvDirection::BackwardData: rt.conv_backward_data(d, a.y, a.wt, a.x); break;
            case ConvDirection::BackwardFilter: rt.conv_backward_filter(d, a.x, a.y, a.wt); break;
          }
        };
        auto theirs = [&](const TtConvParams& a) { vendor->run(p, a); };
        const tiletune_stats_t before = rt.stats();
        const ops::ValidationResult v_ours = data.validate(ours);
        const std::string rule = dispatch_rule(before, rt.stats());
        const std::vector<std::uint8_t> out_ours = data.read_output();
        ops::ValidationResult v_theirs;
        v_theirs.rel_error = NAN;  // not run
        double agreement = NAN;
        if (vendor && vendor->unsupported(p).empty()) {
          v_theirs = data.validate(theirs);
          agreement = relative_difference(out_ours, data.read_output(), p.out_type);
        }
        const bool timed_vendor = vendor && vendor->unsupported(p).empty();
        bench::RoundTimes t_ours, t_theirs;
        for (int r = 0; r < o.rounds; ++r) {
          t_ours.add(tuner::time_runs(*dev, data.sets(), o.timing, [&](std::size_t s) { ours(data.params(s)); }));
          if (timed_vendor)
            t_theirs.add(tuner::time_runs(*dev, data.sets(), o.timing, [&](std::size_t s) { theirs(data.params(s)); }));
        }
        const double ours_tf = p.flops() / (t_ours.median_ms() * 1e-3) / 1e12;
        const double theirs_tf = timed_vendor ? p.flops() / (t_theirs.median_ms() * 1e-3) / 1e12 : 0;
        const double ratio = theirs_tf > 0 ? ours_tf / theirs_tf : 0;
        const double ratio_means = timed_vendor ? t_theirs.mean_ms() / t_ours.mean_ms() : 0.0;
        const std::string algo = timed_vendor ? vendor->algorithm(p) : vendor ? vendor->unsupported(p) : "";
        if (v_ours.ok && v_theirs.ok) summary.add(to_string(p.direction), what, ratio, ratio_means);
        std::printf("%-72s %9.2f %9.2f %7.3f %-8s%s\n", what.c_str(), ours_tf, theirs_tf, ratio, rule.c_str(),
                    v_ours.ok ? "" : "  INVALID");
        if (!v_ours.ok) std::fprintf(stderr, "tiletune is INVALID on %s: %s\n", p.key().c_str(), v_ours.reason.c_str());
        if (timed_vendor && !v_theirs.ok)
          std::fprintf(stderr, "%s disagrees with the reference on %s: %s\n", vendor_name.c_str(), p.key().c_str(),
                       v_theirs.reason.c_str());
        char line[768];
        std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %.3f | %.3f | %s | %.1e%s | %.1e | %.1e | %s |\n",
                      what.c_str(), ours_tf, theirs_tf, ratio, ratio_means, rule.c_str(), v_ours.rel_error, v_ours.ok ? "" : " INVALID",
                      v_theirs.rel_error, agreement, algo.c_str());
        md += line;
        rows.push_back({{"problem", Problem(p)}, {"key", p.key()}, {"rule", rule}, {"tiletune_tflops", ours_tf},
                        {"vendor_tflops", theirs_tf}, {"ratio", ratio}, {"tiletune_ms", t_ours.median_ms()},
                        {"vendor_ms", t_theirs.median_ms()}, {"tiletune_mean_ms", t_ours.mean_ms()},
                        {"vendor_mean_ms", t_theirs.mean_ms()},
                        {"ratio_of_means", ratio_means}, {"tiletune_valid", v_ours.ok},
                        {"tiletune_rel_error", v_ours.rel_error}, {"vendor_rel_error", v_theirs.rel_error},
                        {"tiletune_vs_vendor", std::isnan(agreement) ? nlohmann::json() : nlohmann::json(agreement)},
                        {"vendor_algorithm", algo}});
      } catch (const Error& e) {
        ++failures;
        std::fprintf(stderr, "conv_vs_cudnn: %s: %s\n", p.key().c_str(), e.what());
        md += "| " + what + " | failed: " + e.what() + " | | | | | | | | |\n";
        rows.push_back({{"problem", Problem(p)}, {"key", p.key()}, {"error", e.what()}});
      }
    }
    if (vendor) {
      md += summary.markdown(vendor_name);
      summary.print();
    }
    const auto stats = rt.stats();
    std::printf("runtime: %llu calls, %llu tuned, %llu nearest, %llu fallbacks, %llu jit compiles\n",
                (unsigned long long)stats.calls, (unsigned long long)stats.tuned, (unsigned long long)stats.nearest,
                (unsigned long long)stats.fallbacks, (unsigned long long)stats.jit_compiles);
    nlohmann::json doc = bench::provenance_json(date, o.commit, dev->info());
    doc["vendor"] = vendor ? vendor->name() : "";
    if (!vendor) doc["vendor_missing"] = vendor_missing;
    doc["label"] = o.label;
    doc["summary"] = summary.json();
    doc["rows"] = rows;
    bench::write_tables(o.out_prefix, md, doc);
    return failures ? 1 : 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "conv_vs_cudnn: error: %s\n", e.what());
    return 1;
  }
}
