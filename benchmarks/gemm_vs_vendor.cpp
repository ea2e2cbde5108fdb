// Tuned winners against the vendor library, in one process, on the same buffers, in one run.
// For every winner in the database for this device's arch: the winner is dispatched through the
// runtime library (as a trainer would call it) and the vendor GEMM (cuBLAS) runs on the same
// operands; both are validated against the fp64 reference, then timed interleaved (warm-up,
// events, median, operands rotated past twice the L2). Writes a Markdown and a JSON table.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>

#include "common/error.h"
#include "db/database.h"
#include "gpu/backend.h"
#include "benchmarks/report.h"
#include "runtime/api_types.h"
#include "vendors/vendor_gemm.h"
#include "runtime/tiletune.hpp"
#include "tuner/timing.h"
#include "ops/gemm/inputs.h"

using namespace tiletune;

namespace {

std::string shape_text(const GemmProblem& p) {
  return p.input_types() + ">" + to_string(p.c_type) + " " + (p.trans_a ? "T" : "N") +
         (p.trans_b ? "T" : "N") + " " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) +
         (p.batch > 1 ? " b" + std::to_string(p.batch) : "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gemm_vs_vendor: time a tuned database's winners against the vendor GEMM"};
  std::string db_path;
  bench::CommonOptions o;
  bench::add_common_options(app, o);
  app.add_option("--db", db_path, "tuned solution database")->required();
  CLI11_PARSE(app, argc, argv);

  try {
    auto dev = gpu::open_device(gpu::resolve_backend(o.backend), o.device);
    auto vendor = gpu::make_vendor_gemm(*dev);
    Handle rt(db_path, gpu::to_string(dev->info().backend), o.device);
    auto winners = db::Database::open(db_path, db::Mode::ReadOnly).winners(dev->info().arch);
    if (winners.empty()) throw Error("no winners for arch " + dev->info().arch + " in " + db_path);

    const std::string date = bench::utc_now();
    nlohmann::json rows = nlohmann::json::array();
    std::string md = "# tiletune winners vs " + std::string(vendor ? vendor->name() : "no vendor") + "\n\n" +
                     bench::provenance_lines(date, o.commit, dev->info()) + "- database: " + db_path + (o.label.empty() ? "" : "\n- " + o.label) +
                     "\n- method: same process, same buffers, operands rotated past 2x L2, CUDA events, median of "
                     "runs; " + std::to_string(o.rounds) + " interleaved rounds, median round reported; ratio of means: "
                     "the same from each round's mean (first event to last over its runs), finer than a run's "
                     "timing where a run lasts a few timer ticks\n\n" +
                     "| problem | tiletune TFLOP/s | " + (vendor ? vendor->name() : "vendor") +
                     " TFLOP/s | ratio | ratio of means | tiletune rel err | vendor rel err | kernel |\n"
                     "|---|---|---|---|---|---|---|---|\n";
    std::printf("%-36s %12s %12s %7s %7s  %s\n", "problem", "tiletune", vendor ? vendor->name().c_str() : "vendor", "ratio",
                "means", "kernel");
    bench::RatioSummary summary;
    for (const auto& w : winners) {
      if (w.problem.is_conv()) continue;  // GEMMs only; convolutions get their own comparison
      const GemmProblem p = w.problem.gemm().canonical();
      ops::GemmInputs data(*dev, p);
      auto ours = [&](const TtGemmParams& a) {
        rt.gemm_strided_batched_mixed(p.trans_a ? TILETUNE_OP_T : TILETUNE_OP_N, p.trans_b ? TILETUNE_OP_T : TILETUNE_OP_N,
                                      p.m, p.n, p.k, a.alpha, a.a, api_type(p.a_type), p.lda, p.stride_a, a.b,
                                      api_type(p.type_b()), p.ldb, p.stride_b, a.beta, a.c, api_type(p.c_type), p.ldc,
                                      p.stride_c, p.batch,
                                      p.compute_tf32 ? TILETUNE_COMPUTE_32F_FAST_TF32 : TILETUNE_COMPUTE_32F);
      };
      auto theirs = [&](const TtGemmParams& a) { vendor->run(p, a); };
      const std::uint64_t fallbacks_before = rt.stats().fallbacks;
      ops::ValidationResult v_ours = data.validate(ours), v_theirs;
      // A row only counts if the runtime ran the tuned winner, not its fallback.
      const bool ran_winner = rt.stats().fallbacks == fallbacks_before;
      if (vendor) v_theirs = data.validate(theirs);
      bench::RoundTimes t_ours, t_theirs;
      for (int r = 0; r < o.rounds; ++r) {
        t_ours.add(tuner::time_runs(*dev, data, o.timing, ours));
        if (vendor) t_theirs.add(tuner::time_runs(*dev, data, o.timing, theirs));
      }
      double ours_tf = p.flops() / (t_ours.median_ms() * 1e-3) / 1e12;
      double theirs_tf = vendor ? p.flops() / (t_theirs.median_ms() * 1e-3) / 1e12 : 0;
      double ratio = theirs_tf > 0 ? ours_tf / theirs_tf : 0;
      const double ratio_means = vendor ? t_theirs.mean_ms() / t_ours.mean_ms() : 0;
      std::string kernel = w.solution.kernel_name();
      std::printf("%-36s %12.2f %12.2f %7.3f %7.3f  %s%s%s\n", shape_text(p).c_str(), ours_tf, theirs_tf, ratio, ratio_means,
                  kernel.c_str(),
                  v_ours.ok ? "" : "  INVALID", ran_winner ? "" : "  FALLBACK (not the winner)");
      if (!ran_winner) kernel += " (FALLBACK ran instead)";
      char line[512];
      std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %.3f | %.3f | %.1e | %.1e | `%s` |\n", shape_text(p).c_str(),
                    ours_tf, theirs_tf, ratio, ratio_means, v_ours.rel_error, v_theirs.rel_error, kernel.c_str());
      md += line;
      rows.push_back({{"problem", p}, {"key", p.key()}, {"kernel", kernel}, {"tiletune_tflops", ours_tf},
                      {"vendor_tflops", theirs_tf}, {"ratio", ratio}, {"tiletune_ms", t_ours.median_ms()},
                      {"vendor_ms", t_theirs.median_ms()}, {"tiletune_mean_ms", t_ours.mean_ms()},
                      {"vendor_mean_ms", t_theirs.mean_ms()}, {"ratio_of_means", ratio_means},
                      {"tiletune_valid", v_ours.ok}, {"ran_winner", ran_winner},
                      {"tiletune_rel_error", v_ours.rel_error}, {"vendor_rel_error", v_theirs.rel_error}});
      if (v_ours.ok && v_theirs.ok && ran_winner)
        summary.add(p.input_types() + (p.compute_tf32 ? " (tf32)" : ""), shape_text(p), ratio,
                    ratio_means);
      if (!v_ours.ok) std::fprintf(stderr, "winner %s is INVALID on %s: %s\n", kernel.c_str(), p.key().c_str(), v_ours.reason.c_str());
    }
    if (vendor) {
      md += summary.markdown(vendor->name());
      summary.print();
    }
    auto stats = rt.stats();
    std::printf("runtime: %llu calls, %llu tuned, %llu fallbacks, %llu jit compiles\n", (unsigned long long)stats.calls,
                (unsigned long long)stats.tuned, (unsigned long long)stats.fallbacks, (unsigned long long)stats.jit_compiles);
    nlohmann::json doc = bench::provenance_json(date, o.commit, dev->info());
    doc["vendor"] = vendor ? vendor->name() : "";
    doc["label"] = o.label;
    doc["summary"] = summary.json();
    doc["rows"] = rows;
    bench::write_tables(o.out_prefix, md, doc);
  } catch (const Error& e) {
    std::fprintf(stderr, "gemm_vs_vendor: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
