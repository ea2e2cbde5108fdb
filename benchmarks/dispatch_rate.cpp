// Calls per second of small GEMMs dispatched through the runtime library, against the vendor GEMM
// (cublasGemmEx) for the same problem, in one process on the same buffers. What a trainer pays per
// call when the kernel itself is tiny: lookup, argument packing and the launch, back to back on
// one stream, wall clock over many calls ending with one synchronize. Rounds are interleaved
// (ours, vendor, ours, ...) and the median round is reported.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "common/error.h"
#include "gpu/backend.h"
#include "vendors/vendor_gemm.h"
#include "runtime/api_types.h"
#include "runtime/tiletune.hpp"
#include "ops/gemm/inputs.h"

using namespace tiletune;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Calls per second of `calls` back-to-back enqueues of `call`, synchronized once at the end.
template <class F>
double rate(gpu::Device& dev, int calls, F&& call) {
  dev.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) call();
  dev.synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return calls / s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dispatch_rate: calls per second of small GEMMs through the runtime vs the vendor GEMM"};
  std::string db_path, backend = "auto", out_prefix, commit = "unknown";
  std::vector<std::string> problems_json = {
      R"({"dtype":"bf16","transA":"T","transB":"N","m":256,"n":256,"k":256})",
      R"({"dtype":"bf16","transA":"N","transB":"N","m":256,"n":256,"k":256})",
      R"({"dtype":"f32","transA":"N","transB":"N","m":256,"n":256,"k":256})"};
  int device = 0, calls = 20000, rounds = 5;
  app.add_option("--db", db_path, "tuned solution database")->required();
  app.add_option("--backend", backend)->capture_default_str();
  app.add_option("--device", device)->capture_default_str();
  app.add_option("--problem", problems_json, "problem as JSON (as in a tuning config); repeatable");
  app.add_option("--calls", calls, "calls per round")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds; the median counts")->capture_default_str();
  app.add_option("--out", out_prefix, "write <out>.md and <out>.json");
  app.add_option("--commit", commit, "commit the binaries were built from")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    auto dev = gpu::open_device(gpu::resolve_backend(backend), device);
    auto vendor = gpu::make_vendor_gemm(*dev);
    Handle rt(db_path, gpu::to_string(dev->info().backend), device);
    char date[32];
    std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    const std::string vname = vendor ? vendor->name() : "vendor";
    std::string md = "# Small-GEMM dispatch rate: tiletune runtime vs " + vname + "\n\n- date: " + date +
                     "\n- commit: " + commit + "\n- machine: " + dev->info().name + " (" + dev->info().arch + ", " +
                     dev->info().driver_version + ")\n- database: " + db_path + "\n- method: " +
                     std::to_string(calls) + " back-to-back calls on one stream, wall clock to one final synchronize; " +
                     std::to_string(rounds) + " interleaved rounds, median reported; same buffers\n\n" +
                     "| problem | tiletune calls/s | " + vname + " calls/s | ratio | tiletune path | kernel |\n" +
                     "|---|---|---|---|---|---|\n";
    nlohmann::json rows = nlohmann::json::array();
    std::printf("%-44s %14s %14s %7s  %s\n", "problem", "tiletune/s", (vname + "/s").c_str(), "ratio", "path");
    for (const auto& text : problems_json) {
      const GemmProblem p = nlohmann::json::parse(text).get<GemmProblem>().canonical();
      p.validate();
      ops::GemmInputs data(*dev, p, /*rotate=*/false);
      const TtGemmParams a = data.params(0);
      auto ours = [&]() {
        rt.gemm_strided_batched_mixed(p.trans_a ? TILETUNE_OP_T : TILETUNE_OP_N, p.trans_b ? TILETUNE_OP_T : TILETUNE_OP_N,
                                      p.m, p.n, p.k, a.alpha, a.a, api_type(p.a_type), p.lda, p.stride_a, a.b,
                                      api_type(p.type_b()), p.ldb, p.stride_b, a.beta, a.c, api_type(p.c_type), p.ldc,
                                      p.stride_c, p.batch,
                                      p.compute_tf32 ? TILETUNE_COMPUTE_32F_FAST_TF32 : TILETUNE_COMPUTE_32F);
      };
      auto theirs = [&]() { vendor->run(p, a); };
      // Which path the runtime takes for this problem (exact winner, nearest tuned, fallback).
      const auto before = rt.stats();
      const ops::ValidationResult v = data.validate([&](const TtGemmParams&) { ours(); });
      const auto after = rt.stats();
      const char* path = after.tuned > before.tuned     ? "tuned"
                         : after.nearest > before.nearest ? "nearest"
                                                          : "fallback";
      if (!v.ok) throw Error("runtime result is wrong on " + p.key() + ": " + v.reason);
      if (vendor && !data.validate([&](const TtGemmParams&) { theirs(); }).ok)
        throw Error("vendor result is wrong on " + p.key());
      rate(*dev, std::max(calls / 10, 100), ours);  // warm-up: code objects loaded, clocks up
      if (vendor) rate(*dev, std::max(calls / 10, 100), theirs);
      std::vector<double> r_ours, r_theirs;
      for (int r = 0; r < rounds; ++r) {
        r_ours.push_back(rate(*dev, calls, ours));
        if (vendor) r_theirs.push_back(rate(*dev, calls, theirs));
      }
      const double o = median(r_ours), t = median(r_theirs), ratio = t > 0 ? o / t : 0;
      char name[96];
      std::snprintf(name, sizeof name, "%s>%s %c%c %lldx%lldx%lld", p.input_types().c_str(), to_string(p.c_type),
                    p.trans_a ? 'T' : 'N', p.trans_b ? 'T' : 'N', (long long)p.m, (long long)p.n, (long long)p.k);
      char why[512] = "(tiletune_explain takes one input type)";
      if (!p.mixed_inputs())
        check(tiletune_explain(rt.get(), p.trans_a ? TILETUNE_OP_T : TILETUNE_OP_N, p.trans_b ? TILETUNE_OP_T : TILETUNE_OP_N,
                               p.m, p.n, p.k, api_type(p.a_type), p.lda, p.ldb, api_type(p.c_type), p.ldc, p.batch,
                               p.beta_zero ? 1 : 0, p.compute_tf32 ? TILETUNE_COMPUTE_32F_FAST_TF32 : TILETUNE_COMPUTE_32F,
                               why, sizeof why));
      const std::string kernel = why;
      std::printf("%-44s %14.0f %14.0f %7.3f  %s\n", name, o, t, ratio, path);
      char line[512];
      std::snprintf(line, sizeof line, "| %s | %.0f | %.0f | %.3f | %s | `%s` |\n", name, o, t, ratio, path, kernel.c_str());
      md += line;
      rows.push_back({{"problem", p}, {"key", p.key()}, {"tiletune_calls_per_s", o}, {"vendor_calls_per_s", t},
                      {"ratio", ratio}, {"path", path}, {"kernel", kernel}, {"tiletune_rel_error", v.rel_error}});
    }
    if (!out_prefix.empty()) {
      std::ofstream(out_prefix + ".md") << md;
      nlohmann::json doc = {{"date", date}, {"commit", commit}, {"device", dev->info().name},
                            {"arch", dev->info().arch}, {"vendor", vname}, {"calls", calls}, {"rows", rows}};
      std::ofstream(out_prefix + ".json") << doc.dump(2) << "\n";
      std::printf("wrote %s.md and %s.json\n", out_prefix.c_str(), out_prefix.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dispatch_rate: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
