// Offline evaluation of the search strategies (tuner/search.h) on a sweep database in which every
// candidate was measured (an exhaustive sweep): no GPU, no new measurements. For each (arch,
// problem) it simulates each strategy on the recorded times and reports how much of the space
// (candidates and estimated seconds) it needs to find a kernel within --tolerance of the
// exhaustive best.
//
//   cost of timing one candidate = median_ms x --iterations / 1000 + --overhead-s   (seconds)
//   (a failed candidate costs the overhead only)
//
//   random   candidates drawn without replacement until the first good one: the expectation
//            (n + 1) / (g + 1) for n candidates of which g are good; seconds averaged over --seeds draws.
//   model    candidates in the order of the analytical model (on the device recorded in the
//            database); the rank of the first good one = the top-k needed.
//   halving  every candidate timed briefly (--short-iterations, noise x --short-noise-factor), the
//            best third fully (noise), the best 3 of those again; the pick = the best of the final
//            timings. Reported: the share of --seeds runs whose pick is good, its cost (fixed).
//            Noise: each timing = recorded median x (1 + noise x N(0, 1)).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "db/database.h"
#include "solutions/kernel_template.h"
#include "tuner/search.h"

using namespace tiletune;

namespace {

struct Options {
  double tolerance = 0.02, noise = 0.02, short_noise_factor = 2, overhead_s = 0.3;
  int iterations = 22, short_iterations = 3, seeds = 2000;
  int show_model = 0;  // print the model's first N candidates of every problem
};

struct Cand {
  double ms = NAN;  // NaN: failed
  ModelEstimate model;
  std::string kernel;
};

struct Totals {
  double n = 0, exhaustive_s = 0, random_c = 0, random_s = 0, model_c = 0, model_s = 0, halving_c = 0, halving_s = 0,
         halving_ok = 0, problems = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("replay the search strategies on an exhaustive sweep database");
  std::vector<std::string> dbs;
  Options o;
  app.add_option("databases", dbs, "sweep databases (opened read-only, any schema version)")->required();
  app.add_option("--tolerance", o.tolerance, "good = median within this fraction of the best")->capture_default_str();
  app.add_option("--noise", o.noise, "relative noise (sd) of a full timing, halving")->capture_default_str();
  app.add_option("--short-noise-factor", o.short_noise_factor, "a short timing's noise = noise x this")->capture_default_str();
  app.add_option("--overhead-s", o.overhead_s, "seconds per candidate besides the timed runs (validation, launch, load)")
      ->capture_default_str();
  app.add_option("--iterations", o.iterations, "timed + warm-up runs of a full timing")->capture_default_str();
  app.add_option("--short-iterations", o.short_iterations, "runs of a short timing (halving)")->capture_default_str();
  app.add_option("--seeds", o.seeds, "random draws / noisy halving runs per problem")->capture_default_str();
  app.add_option("--show-model", o.show_model,
                 "list the model's first N candidates of every problem (estimate, measured, good or not)");
  CLI11_PARSE(app, argc, argv);

  try {
    for (const auto& path : dbs) {
      db::Database d = db::Database::open(path, db::Mode::ReadOnlyAnyVersion);
      std::map<std::int64_t, db::DeviceRow> devices;
      for (const auto& dv : d.devices()) devices[dv.id] = dv;
      std::map<std::int64_t, Problem> problems;
      std::map<std::int64_t, std::string> keys;
      for (const auto& p : d.problem_specs()) problems[p.id] = p.problem, keys[p.id] = p.key;
      std::map<std::int64_t, Solution> solutions;
      for (const auto& s : d.solutions()) solutions[s.id] = s.solution;
      std::map<std::pair<std::string, std::int64_t>, std::vector<Cand>> groups;
      for (const auto& m : d.all_measurements()) {
        gpu::DeviceInfo dev;
        dev.backend = gpu::BackendKind::Cuda;
        dev.arch = m.arch;
        dev.name = "NVIDIA H200";
        dev.multiprocessors = 132;
        dev.shared_bytes_optin = 232448;
        dev.compute_capability = 90;
        if (devices.count(m.device_id) && devices[m.device_id].multiprocessors > 0)
          dev.multiprocessors = int(devices[m.device_id].multiprocessors);
        Cand c;
        if (m.status == db::Status::Ok && m.median_ms > 0) c.ms = m.median_ms;
        const Solution& s = solutions.at(m.solution_id);
        c.kernel = s.kernel_name();
        try {
          c.model = model_estimate(find_template(s.template_name), s, problems.at(m.problem_id), dev);
        } catch (const Error&) {  // a template this build does not have: ranked last
        }
        groups[{m.arch, m.problem_id}].push_back(c);
      }
      std::printf("\n== %s\n", path.c_str());
      std::printf("%-58s %5s %4s | %7s %6s %6s | %5s %6s %6s | %5s %6s %6s %6s\n", "problem", "space", "good", "rnd E[n]",
                  "%cand", "%sec", "model", "%cand", "%sec", "halv", "%cand", "%sec", "%hit");
      Totals t;
      std::map<std::string, Totals> by_types;  // "bf16>bf16|acc_f32": a database may hold several
      const auto print_totals = [](const char* label, const Totals& t) {
        std::printf("%-58s %5.0f %4s | %7.1f %5.1f%% %5.1f%% | %5.0f %5.1f%% %5.1f%% | %5.0f %5.1f%% %5.1f%% %5.1f%%\n", label,
                    t.n, "", t.random_c, 100 * t.random_c / t.n, 100 * t.random_s / t.exhaustive_s, t.model_c,
                    100 * t.model_c / t.n, 100 * t.model_s / t.exhaustive_s, t.halving_c, 100 * t.halving_c / t.n,
                    100 * t.halving_s / t.exhaustive_s, 100 * t.halving_ok / t.problems);
      };
      for (auto& [ak, cands] : groups) {
        const auto cost = [&](const Cand& c, int iters) { return (std::isnan(c.ms) ? 0 : c.ms * iters / 1000) + o.overhead_s; };
        double best = INFINITY, all_s = 0;
        for (const auto& c : cands) {
          if (!std::isnan(c.ms)) best = std::min(best, c.ms);
          all_s += cost(c, o.iterations);
        }
        if (!std::isfinite(best)) continue;
        const auto good = [&](const Cand& c) { return !std::isnan(c.ms) && c.ms <= best * (1 + o.tolerance); };
        const std::size_t n = cands.size();
        std::size_t g = 0;
        for (const auto& c : cands) g += good(c);
        // random: expectation in candidates; seconds by simulation.
        const double rand_c = double(n + 1) / double(g + 1);
        std::mt19937_64 rng(12345);
        double rand_s = 0;
        std::vector<std::size_t> idx(n);
        for (int s = 0; s < o.seeds; ++s) {
          for (std::size_t i = 0; i < n; ++i) idx[i] = i;
          for (std::size_t i = 0; i < n; ++i) {
            std::swap(idx[i], idx[std::uniform_int_distribution<std::size_t>(i, n - 1)(rng)]);
            rand_s += cost(cands[idx[i]], o.iterations);
            if (good(cands[idx[i]])) break;
          }
        }
        rand_s /= o.seeds;
        // model: the rank of the first good candidate.
        std::vector<std::size_t> order(n);
        for (std::size_t i = 0; i < n; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](auto a, auto b) { return model_before(cands[a].model, cands[b].model); });
        double model_c = 0, model_s = 0;
        for (std::size_t i : order) {
          ++model_c;
          model_s += cost(cands[i], o.iterations);
          if (good(cands[i])) break;
        }
        // halving
        std::normal_distribution<double> z(0, 1);
        double hits = 0, halv_s = 0, halv_c = 0;
        for (int s = 0; s < o.seeds; ++s) {
          std::vector<double> short_ms(n);
          double cost_s = 0;
          for (std::size_t i = 0; i < n; ++i) {
            short_ms[i] = std::isnan(cands[i].ms) ? NAN : cands[i].ms * (1 + o.noise * o.short_noise_factor * z(rng));
            cost_s += cost(cands[i], o.short_iterations);
          }
          std::vector<std::size_t> keep = tuner::halving_contenders(short_ms, 0);
          std::vector<std::pair<double, std::size_t>> full;
          for (std::size_t i : keep) {
            full.emplace_back(cands[i].ms * (1 + o.noise * z(rng)), i);
            cost_s += cost(cands[i], o.iterations);
          }
          std::sort(full.begin(), full.end());
          for (std::size_t k = 0; k < full.size() && k < tuner::kFinalists && full.size() > 1; ++k) {
            full[k].first = cands[full[k].second].ms * (1 + o.noise * z(rng));
            cost_s += cost(cands[full[k].second], o.iterations);
          }
          std::sort(full.begin(), full.begin() + std::min(full.size(), tuner::kFinalists));
          if (!full.empty() && good(cands[full[0].second])) ++hits;
          halv_s += cost_s;
          if (s == 0) halv_c = double(keep.size());
        }
        halv_s /= o.seeds;
        std::string key = keys[ak.second];
        if (key.size() > 58) key = key.substr(0, 55) + "...";
        std::printf("%-58s %5zu %4zu | %7.1f %5.1f%% %5.1f%% | %5.0f %5.1f%% %5.1f%% | %5.0f %5.1f%% %5.1f%% %5.1f%%\n",
                    key.c_str(), n, g, rand_c, 100 * rand_c / n, 100 * rand_s / all_s, model_c, 100 * model_c / n,
                    100 * model_s / all_s, halv_c, 100 * halv_c / n, 100 * halv_s / all_s, 100 * hits / o.seeds);
        for (int r = 0; r < o.show_model && r < int(n); ++r) {  // under the problem's row
          const Cand& c = cands[order[r]];
          std::printf("    model #%-3d est %8.1f us  measured %9.4f ms %-4s %s\n", r + 1, c.model.seconds * 1e6, c.ms,
                      good(c) ? "good" : "", c.kernel.c_str());
        }
        const std::string& full = keys[ak.second];
        const std::size_t a = full.find('|') + 1, b = full.find('|', full.find('|', a) + 1);
        for (Totals* x : {&t, &by_types[full.substr(a, b - a)]}) {
          x->n += n, x->exhaustive_s += all_s, x->random_c += rand_c, x->random_s += rand_s, x->model_c += model_c;
          x->model_s += model_s, x->halving_c += halv_c, x->halving_s += halv_s, x->halving_ok += hits / o.seeds;
          ++x->problems;
        }
      }
      if (by_types.size() > 1)
        for (const auto& [types, x] : by_types) print_totals(("total " + types).c_str(), x);
      print_totals("TOTAL (sums over problems)", t);
      std::printf("exhaustive: %.0f candidates, %.0f s estimated\n", t.n, t.exhaustive_s);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "search_replay: %s\n", e.what());
    return 1;
  }
  return 0;
}
