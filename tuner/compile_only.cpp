#include "tuner/compile_only.h"

#include <atomic>
#include <thread>
#include <unordered_set>

#include "common/error.h"
#include "db/database.h"
#include "tuner/compile_pool.h"
#include "tuner/enumerator.h"
#include "tuner/strategy.h"

namespace tiletune::tuner {

std::string figures_meta_key(const std::string& cache_key) { return db::kFiguresMetaPrefix + cache_key; }

CompileOnlySummary run_compile_only(const TuningConfig& config, const SweepOptions& o, const std::string& arch,
                                    std::FILE* log) {
  if (arch.empty()) throw Error("--compile-only needs --arch: the arch to compile for (e.g. gfx942)");
  const gpu::BackendTraits& traits = gpu::traits(o.backend);
  if (gpu::traits_for_arch(arch).kind != o.backend)
    throw Error("--arch " + arch + " is not an arch of the " + traits.name + " backend (its names begin '" +
                traits.arch_prefix + "')");
  gpu::DeviceInfo dev;
  dev.backend = o.backend;
  dev.arch = arch;
  traits.assume_from_arch(dev, false);
  dev.name = "(compile-only: assumed from the arch)";

  CompileOnlySummary s;
  s.arch = arch;
  s.device_name = dev.name;
  const std::unique_ptr<gpu::Compiler> compiler = gpu::make_compiler(o.backend);
  s.compiler_version = compiler->version();
  std::fprintf(log, "tiletune: %s, no device: compiling for %s (%d CUs, %d bytes of LDS assumed), compiler %s\n",
               traits.name, arch.c_str(), dev.multiprocessors, dev.shared_bytes_per_block, s.compiler_version.c_str());

  db::Database db = db::Database::open(o.db_path, db::Mode::ReadWrite);
  db.upsert_device({traits.name, arch, dev.name, dev.multiprocessors, "compile-only"});
  const Enumeration e = enumerate(config.templates, config.problems, dev);
  s.total = e.total;
  s.pruned = e.pruned_count;
  s.candidates = e.candidates.size();
  std::vector<std::vector<const Candidate*>> by_problem(config.problems.size());
  for (const auto& c : e.candidates) by_problem[c.problem_index].push_back(&c);
  const Strategy& strategy = find_strategy(config.search.strategy);
  std::vector<CompileJob> jobs;
  std::unordered_set<std::string> keys;
  struct Selected {
    std::int64_t problem_id, solution_id;
    std::string key;
  };
  std::vector<Selected> selected;  // every (problem, candidate) the strategy picked
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi) {
    const std::int64_t pid = db.upsert_problem(config.problems[pi]);
    std::vector<SearchCandidate> sc;
    for (const Candidate* c : by_problem[pi]) sc.push_back({c->tmpl.get(), &c->solution});
    const std::vector<std::size_t> pick = strategy.select(config.search, sc, config.problems[pi], dev);
    if (o.list_selected) print_selection(log, config.problems[pi], sc, pick, dev);
    for (std::size_t i : pick) {
      const Candidate& c = *by_problem[pi][i];
      ++s.selected;
      const std::int64_t sid = db.upsert_solution(c.solution, c.tmpl->source_hash());
      gpu::CompileRequest req = c.tmpl->instantiation(c.solution, config.problems[pi], dev);
      const std::string key = compile_cache_key(c.tmpl->source_hash(), req, s.compiler_version);
      selected.push_back({pid, sid, key});
      if (!keys.insert(key).second) continue;
      if (auto code = db.find_code_object(key); code && code->ok) {
        ++s.cached;
        continue;
      }
      c.tmpl->add_headers(req);
      jobs.push_back({key, c.solution.kernel_name(), std::move(req), sid});
    }
  }
  std::atomic<std::size_t> done{0};
  const std::size_t todo = jobs.size();
  const unsigned threads = o.compile_jobs > 0 ? unsigned(o.compile_jobs) : std::max(1u, std::thread::hardware_concurrency());
  {
    CompilePool pool(std::move(jobs), *compiler, o.db_path, arch, s.compiler_version, threads,
                     [&](const CompileJob& job, bool ok) {
                       std::fprintf(log, "[%zu/%zu] %s %s\n", ++done, todo, ok ? "compiled" : "FAILED  ",
                                    job.kernel_name.c_str());
                     });
    pool.wait_all();
    s.first_error = pool.stats().first_error;
  }
  // Figures of every object of this arch and compiler, also those compiled by earlier runs.
  std::vector<db::CodeObjectRecord> objects;
  db.for_each_code_object([&](const db::CodeObjectRecord& r) {
    if (r.arch == arch && r.compiler_version == s.compiler_version && keys.count(r.cache_key)) objects.push_back(r);
  });
  for (const auto& r : objects) {
    if (!r.ok) {
      ++s.failed;
      continue;
    }
    const std::string figures = gpu::code_object_figures(o.backend, {r.bytes, r.symbol}, arch);
    if (!figures.empty()) {
      db.set_meta(figures_meta_key(r.cache_key), figures);
      ++s.with_figures;
    }
  }
  s.compiled = objects.size() - s.failed - s.cached;
  // Which problem each object was compiled for: `db pack` and `db explain` read them as compiled,
  // unmeasured candidates (schema 8), never as winners.
  db.transaction("compile-only candidates", [&] {
    for (const auto& sel : selected)
      if (auto code = db.find_code_object(sel.key); code && code->ok)
        db.add_compiled(arch, sel.problem_id, sel.solution_id, code->id);
  });
  return s;
}

void print_summary(const CompileOnlySummary& s, std::FILE* out) {
  std::fprintf(out,
               "\ncompile-only summary for %s: %zu enumerated, %zu pruned, %zu selected; %zu compiled, %zu cached, "
               "%zu failed; static figures of %zu code objects recorded. Nothing was measured.\n",
               s.arch.c_str(), s.total, s.pruned, s.selected, s.compiled, s.cached, s.failed, s.with_figures);
  if (!s.first_error.empty()) std::fprintf(out, "first compile failure: %s\n", log_head(s.first_error).c_str());
}

}  // namespace tiletune::tuner
