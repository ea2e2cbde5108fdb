// Tuned winners against the vendor library, in one process, on the same buffers, in one run.
// For every winner in the database for this device's arch: the winner is dispatched through the
// runtime library (as a trainer would call it) and the vendor GEMM (cuBLAS) runs on the same
// operands; both are validated against the fp64 reference, then timed interleaved (warm-up,
// events, median, operands rotated past twice the L2). Writes a Markdown and a JSON table.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "common/error.h"
#include "db/database.h"
#include "gpu/backend.h"
#include "gpu/vendor_gemm.h"
#include "runtime/tiletune.hpp"
#include "tuner/benchmark.h"
#include "tuner/problem_data.h"

using namespace tiletune;

namespace {

tiletune_datatype_t api_type(DataType t) {
  return t == DataType::F32 ? TILETUNE_R_32F : t == DataType::F16 ? TILETUNE_R_16F : TILETUNE_R_16BF;
}

std::string shape_text(const GemmProblem& p) {
  return std::string(to_string(p.a_type)) + ">" + to_string(p.c_type) + " " + (p.trans_a ? "T" : "N") +
         (p.trans_b ? "T" : "N") + " " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) +
         (p.batch > 1 ? " b" + std::to_string(p.batch) : "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gemm_vs_vendor: time a tuned database's winners against the vendor GEMM"};
  std::string db_path, backend = "auto", out_prefix, commit = "unknown", label;
  int device = 0, rounds = 3;
  tuner::BenchmarkOptions bench;
  bench.warmup = 3;
  bench.min_iterations = 10;
  bench.max_iterations = 100;
  bench.target_ms = 200;
  app.add_option("--db", db_path, "tuned solution database")->required();
  app.add_option("--backend", backend)->capture_default_str();
  app.add_option("--device", device)->capture_default_str();
  app.add_option("--out", out_prefix, "write <out>.md and <out>.json");
  app.add_option("--commit", commit, "commit the binaries were built from")->capture_default_str();
  app.add_option("--label", label, "free text for the table header");
  app.add_option("--rounds", rounds, "interleaved rounds of (winner, vendor) timings; the median round counts")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    auto dev = gpu::open_device(gpu::resolve_backend(backend), device);
    auto vendor = gpu::make_vendor_gemm(*dev);
    Handle rt(db_path, gpu::to_string(dev->info().backend), device);
    auto winners = db::Database::open(db_path, db::Mode::ReadOnly).winners(dev->info().arch);
    if (winners.empty()) throw Error("no winners for arch " + dev->info().arch + " in " + db_path);

    char date[32];
    std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    nlohmann::json rows = nlohmann::json::array();
    std::string md = "# tiletune winners vs " + std::string(vendor ? vendor->name() : "no vendor") + "\n\n" +
                     "- date: " + date + "\n- commit: " + commit + "\n- machine: " + dev->info().name + " (" +
                     dev->info().arch + ", " + std::to_string(dev->info().multiprocessors) + " SMs, " +
                     dev->info().driver_version + ")\n- database: " + db_path + (label.empty() ? "" : "\n- " + label) +
                     "\n- method: same process, same buffers, operands rotated past 2x L2, CUDA events, median of "
                     "runs; " + std::to_string(rounds) + " interleaved rounds, median round reported\n\n" +
                     "| problem | tiletune TFLOP/s | " + (vendor ? vendor->name() : "vendor") +
                     " TFLOP/s | ratio | tiletune rel err | vendor rel err | kernel |\n|---|---|---|---|---|---|---|\n";
    std::printf("%-36s %12s %12s %7s  %s\n", "problem", "tiletune", vendor ? vendor->name().c_str() : "vendor", "ratio", "kernel");
    for (const auto& w : winners) {
      if (w.problem.is_conv()) continue;  // GEMMs only; convolutions get their own comparison
      const GemmProblem p = w.problem.gemm().canonical();
      tuner::ProblemData data(*dev, p);
      auto ours = [&](const TtGemmParams& a) {
        rt.gemm_strided_batched_ex(p.trans_a ? TILETUNE_OP_T : TILETUNE_OP_N, p.trans_b ? TILETUNE_OP_T : TILETUNE_OP_N,
                                   p.m, p.n, p.k, a.alpha, a.a, api_type(p.a_type), p.lda, p.stride_a, a.b, p.ldb,
                                   p.stride_b, a.beta, a.c, api_type(p.c_type), p.ldc, p.stride_c, p.batch,
                                   p.compute_tf32 ? TILETUNE_COMPUTE_32F_FAST_TF32 : TILETUNE_COMPUTE_32F);
      };
      auto theirs = [&](const TtGemmParams& a) { vendor->run(p, a); };
      const std::uint64_t fallbacks_before = rt.stats().fallbacks;
      tuner::ValidationResult v_ours = data.validate(ours), v_theirs;
      // A row only counts if the runtime ran the tuned winner, not its fallback.
      const bool ran_winner = rt.stats().fallbacks == fallbacks_before;
      if (vendor) v_theirs = data.validate(theirs);
      std::vector<double> t_ours, t_theirs;
      for (int r = 0; r < rounds; ++r) {
        t_ours.push_back(tuner::time_runs(*dev, data, bench, ours).median_ms);
        if (vendor) t_theirs.push_back(tuner::time_runs(*dev, data, bench, theirs).median_ms);
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[v.size() / 2];
      };
      double ours_tf = p.flops() / (median(t_ours) * 1e-3) / 1e12;
      double theirs_tf = vendor ? p.flops() / (median(t_theirs) * 1e-3) / 1e12 : 0;
      double ratio = theirs_tf > 0 ? ours_tf / theirs_tf : 0;
      std::string kernel = w.solution.kernel_name();
      std::printf("%-36s %12.2f %12.2f %7.3f  %s%s%s\n", shape_text(p).c_str(), ours_tf, theirs_tf, ratio, kernel.c_str(),
                  v_ours.ok ? "" : "  INVALID", ran_winner ? "" : "  FALLBACK (not the winner)");
      if (!ran_winner) kernel += " (FALLBACK ran instead)";
      char line[512];
      std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %.3f | %.1e | %.1e | `%s` |\n", shape_text(p).c_str(), ours_tf,
                    theirs_tf, ratio, v_ours.rel_error, v_theirs.rel_error, kernel.c_str());
      md += line;
      rows.push_back({{"problem", p}, {"key", p.key()}, {"kernel", kernel}, {"tiletune_tflops", ours_tf},
                      {"vendor_tflops", theirs_tf}, {"ratio", ratio}, {"tiletune_ms", median(t_ours)},
                      {"vendor_ms", median(t_theirs)}, {"tiletune_valid", v_ours.ok}, {"ran_winner", ran_winner},
                      {"tiletune_rel_error", v_ours.rel_error}, {"vendor_rel_error", v_theirs.rel_error}});
      if (!v_ours.ok) std::fprintf(stderr, "winner %s is INVALID on %s: %s\n", kernel.c_str(), p.key().c_str(), v_ours.reason.c_str());
    }
    auto stats = rt.stats();
    std::printf("runtime: %llu calls, %llu tuned, %llu fallbacks, %llu jit compiles\n", (unsigned long long)stats.calls,
                (unsigned long long)stats.tuned, (unsigned long long)stats.fallbacks, (unsigned long long)stats.jit_compiles);
    if (!out_prefix.empty()) {
      std::ofstream(out_prefix + ".md") << md;
      nlohmann::json doc = {{"date", date}, {"commit", commit}, {"device", dev->info().name}, {"arch", dev->info().arch},
                            {"driver", dev->info().driver_version}, {"vendor", vendor ? vendor->name() : ""},
                            {"label", label}, {"rows", rows}};
      std::ofstream(out_prefix + ".json") << doc.dump(2) << "\n";
      std::printf("wrote %s.md and %s.json\n", out_prefix.c_str(), out_prefix.c_str());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "gemm_vs_vendor: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
