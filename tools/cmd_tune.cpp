#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "gpu/backend.h"
#include "tools/commands.h"
#include "tools/json_output.h"
#include "tools/tune_json.h"
#include "tuner/compile_only.h"
#include "tuner/compile_process.h"
#include "tuner/config.h"
#include "common/error.h"
#include "tuner/device_list.h"
#include "db/database.h"
#include "tuner/search.h"
#include "tuner/shard.h"
#include "tuner/sweep.h"
#include "tuner/worker.h"
#include "vendors/vendor.h"
#ifdef TILETUNE_WITH_MPI
#include "db/ship.h"
#include "tuner/scale/mpi_queue.h"
#endif

namespace tiletune::tools {

namespace {

struct TuneArgs {
  std::string config, db = "tiletune.db", backend = "auto";
  std::string isolation = "process";
  int device = 0, jobs = 0, vendor_algorithms = 8, parent = 0;
  double timeout = 0, prepare_timeout = 0;
  std::string search, devices;
  std::string shard, local_db;  // tuner/shard.h, tune --mpi
  bool mpi = false;
  int mpi_shards = 0;
  int finish_shards = 0;  // tune --finish-shards N
  long long budget = -1;
  double budget_seconds = -1;
  long long seed = -1;
  bool no_vendor = false, list_pruned = false, list_selected = false, compile_servers = false, retry_failed = false;
  bool json = false;
  std::string arch;           // --compile-only: the arch to compile for
  bool compile_only = false;
};

void add_tune_options(CLI::App* cmd, const std::shared_ptr<TuneArgs>& a) {
  cmd->add_option("config", a->config, "tuning config (JSON); see configs/")->required();
  cmd->add_option("--db", a->db, "solution database to write (created if missing; a rerun resumes)")->capture_default_str();
  cmd->add_option("--backend", a->backend, "auto | cuda | hip | host")->capture_default_str();
  CLI::Option* device = cmd->add_option("--device", a->device, "device index")->capture_default_str();
  cmd->add_option("--devices", a->devices,
                  "measure on several devices at once, a worker process each, candidates going to whichever is "
                  "free: all, or indices such as 0,1 (host backend: logical workers on the CPU)")
      ->excludes(device);
  cmd->add_option("--jobs", a->jobs, "parallel compile jobs (0: one per core)")->capture_default_str();
  cmd->add_flag("--compile-servers", a->compile_servers,
                "GPU backends: compile in a server process per compile job instead of on threads of this process "
                "(NVRTC compiles one program at a time per process; a compiler crash then costs one code object)");
  cmd->add_option("--die-with-parent", a->parent,
                  "killed when process PID (which must be this one's parent) ends: online tuning starts sweeps so, "
                  "that none outlives the program it tunes for");
  cmd->add_flag("--no-vendor", a->no_vendor, "do not time the vendor library (cuBLAS, cuDNN, OpenBLAS) as a candidate");
  cmd->add_option("--vendor-algorithms", a->vendor_algorithms,
                  "besides the vendor's default, time up to this many of its other algorithms (cuBLASLt's heuristic's "
                  "first few, cuDNN's engine configurations) as candidates; 0: the default only")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--list-pruned", a->list_pruned, "print every pruned candidate with the constraint it breaks");
  cmd->add_flag("--list-selected", a->list_selected,
                "print each problem's candidates that the search strategy picked, in measuring order, with the model's "
                "estimate in ms (with --compile-only too: what a budget would time, without a device)");
  CLI::Option* compile_only = cmd->add_flag(
      "--compile-only", a->compile_only,
      "no device: compile the selected candidates for --arch into the database, with their static figures; measure nothing");
  cmd->add_option("--arch", a->arch, "with --compile-only: the arch to compile for (gfx942, sm_90a, ...)")->needs(compile_only);
  cmd->add_flag("--retry-failed", a->retry_failed,
                "try again the candidates of this config whose failure is recorded (failed compiles, invalid results, "
                "launch failures, crashes, time-outs), which a rerun otherwise skips: after mending the compiler or "
                "the environment");
  add_json_flag(cmd, a->json);
  cmd->add_option("--isolation", a->isolation,
                  "process: validate and time each candidate in a worker process, so that one that crashes or "
                  "hangs is recorded as failed and the sweep goes on; none: in this process")
      ->check(CLI::IsMember({"none", "process"}))
      ->capture_default_str();
  cmd->add_option("--timeout", a->timeout,
                  "seconds one candidate may take in the worker before it is killed and recorded as timed out "
                  "(default: the config's benchmark.timeout_s, else 60)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--prepare-timeout", a->prepare_timeout,
                  "seconds a worker may take to make a problem's inputs and reference and load a kernel; past it the "
                  "problem is skipped, no candidate blamed (default: the config's benchmark.prepare_timeout_s, else 1800)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--search", a->search,
                  "which candidates to benchmark (overrides the config's search.strategy): exhaustive | random "
                  "(--budget of them, drawn from the config's search.seed) | model (ranked by an analytical model, the "
                  "best --budget) | halving (short timing for all, full timing for the best third)")
      ->check(CLI::IsMember(tuner::search_strategies()));
  cmd->add_option("--budget", a->budget, "candidates per problem (halving: fully timed ones); 0 = all")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--budget-seconds", a->budget_seconds, "seconds of measuring per problem; 0 = no limit")
      ->check(CLI::NonNegativeNumber);
  CLI::Option* shard = cmd->add_option(
      "--shard", a->shard,
      "tune only part I/N of the config's work (problems, and parts of the candidates of large ones; a "
      "deterministic split balanced by predicted cost) into --db, whose {shard}, {count} and {host} are "
      "replaced; auto: the part a Slurm array task or MPI launcher gives this process (an error where none "
      "does). Without it the whole config is tuned, inside an allocation too (docs/scale-out.md)");
  CLI::Option* mpi = cmd->add_flag("--mpi",
                                   a->mpi,
                                   "under mpirun: ranks take shards from rank 0 as a work queue, tune each into "
                                   "--local-db, and rank 0 merges them all into --db (docs/scale-out.md)")
                         ->excludes(shard);
  cmd->add_option("--finish-shards", a->finish_shards,
                  "after `db merge` of the N shards of --shard I/N into --db: time the finals (and the vendor library) "
                  "of the problems the split parted over several shards, which no part can do alone; --mpi does it "
                  "itself (docs/scale-out.md)")
      ->check(CLI::PositiveNumber)
      ->excludes(shard)
      ->excludes(mpi);
  cmd->add_option("--mpi-shards", a->mpi_shards, "with --mpi: shards to split the work into (0: 4 per rank)")
      ->check(CLI::NonNegativeNumber)
      ->needs(mpi);
  cmd->add_option("--local-db", a->local_db,
                  "with --mpi: each rank's database on node-local storage, {shard} being the rank and {count} the "
                  "ranks (default: $TMPDIR/tiletune-{host}-{shard}.db); a rerun on the same nodes resumes them")
      ->needs(mpi);
  cmd->add_option("--seed", a->seed, "random: which subset (default: the config's search.seed, else 0)")
      ->check(CLI::NonNegativeNumber);
}

// The config as the command line amends it, and the sweep's options.
tuner::SweepOptions sweep_options(const TuneArgs& args, tuner::TuningConfig& config) {
  const TuneArgs* a = &args;
  if (!a->search.empty()) config.search.strategy = a->search;
  if (a->budget >= 0) config.search.budget = static_cast<std::size_t>(a->budget);
  if (a->budget_seconds >= 0) config.search.budget_seconds = a->budget_seconds;
  if (a->seed >= 0) config.search.seed = static_cast<std::uint64_t>(a->seed);
  tuner::validate(config.search);
  tuner::SweepOptions o;
  o.backend = gpu::resolve_backend(a->backend);
  o.device = a->device;
  if (!a->devices.empty()) o.devices = tuner::parse_device_list(a->devices, o.backend);
  o.db_path = a->db;
  o.compile_jobs = a->jobs;
  o.compare_vendor = !a->no_vendor;
  o.vendor_algorithms = a->vendor_algorithms;
  o.list_pruned = a->list_pruned;
  o.list_selected = a->list_selected;
  o.retry_failed = a->retry_failed;
  if (a->timeout > 0) config.benchmark.timeout_s = a->timeout;
  if (a->prepare_timeout > 0) config.benchmark.prepare_timeout_s = a->prepare_timeout;
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (a->isolation == "process") {
    o.isolation = tuner::Isolation::Process;
    o.worker_exe = self;
    if (ec) throw Error("cannot find this program's path for its worker processes (/proc/self/exe): " + ec.message() +
                        "; use --isolation none");
  }
  if (a->compile_servers) {
    if (ec) throw Error("cannot find this program's path for its compile servers (/proc/self/exe): " + ec.message());
    o.compile_exe = self;
  }
  return o;
}

// The exit code of a finished sweep, and on stderr why it is not 0: a sweep in which nothing
// compiled, or a problem none of whose candidates compiled, is a failure (a broken compiler or
// environment) with its first compiler message; an unprepared problem leaves the sweep incomplete;
// a problem no template admits is uncovered.
int tune_exit_code(const tuner::SweepSummary& s) {
  const bool nothing_compiled = s.compile_failed > 0 && s.compiled + s.compile_cached == 0 && s.benchmarked == 0;
  if (nothing_compiled || !s.uncompiled.empty()) {
    if (nothing_compiled)
      std::fprintf(stderr, "tiletune: error: no candidate compiled (%zu failed); the first compiler message:\n%s",
                   s.compile_failed, tuner::log_head(s.first_compile_error).c_str());
    if (!s.uncompiled.empty()) {
      std::fprintf(stderr, "tiletune: error: no candidate compiled for %zu problem(s)", s.uncompiled.size());
      if (nothing_compiled) std::fprintf(stderr, "\n");
      else std::fprintf(stderr, "; the first:\n%s", tuner::log_head(s.uncompiled.front()).c_str());
      std::fprintf(stderr, "tiletune: failures are recorded and a rerun under the same compiler skips them: mend the "
                           "compiler (TILETUNE_HOST_CXX on the host) or the environment and rerun with --retry-failed\n");
    }
    return kExitError;
  }
  if (!s.unprepared.empty()) return kExitIncomplete;  // a script must not take it for a finished sweep
  return s.no_candidate.empty() ? kExitOk : kExitUncovered;
}

// The shard this process tunes: --shard I/N, --shard auto (from the environment), or none.
std::optional<tuner::ShardId> requested_shard(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (text != "auto") return tuner::parse_shard(text);
  auto s = tuner::shard_from_environment([](const char* name) -> const char* { return std::getenv(name); });
  if (!s)
    throw Error("--shard auto: this process is neither a Slurm array task (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) "
                "nor an MPI rank (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE): give --shard I/N");
  return s;
}

tuner::ShardPlan plan_of(const tuner::TuningConfig& config, int count, const tuner::SweepOptions& o) {
  return tuner::plan_shards(config, tuner::problem_costs(config, o.backend), count);
}

// Shard `id`'s part of `config` (and the candidate filter in `o`), said on stderr.
tuner::TuningConfig shard_of(const tuner::TuningConfig& config, tuner::ShardId id, tuner::SweepOptions& o) {
  const tuner::ShardPlan plan = plan_of(config, id.count, o);
  tuner::TuningConfig part = tuner::shard_config(config, plan, id.index, o);
  std::size_t parted = 0;
  for (const tuner::WorkUnit& u : plan.shards[id.index]) parted += u.parts > 1;
  std::fprintf(stderr, "shard %d/%d: %zu of %zu problems (%zu of them a part of their candidates), %.1f%% of the predicted cost\n",
               id.index, id.count, part.problems.size(), config.problems.size(), parted,
               plan.total > 0 ? 100.0 * plan.load[id.index] / plan.total : 0.0);
  return part;
}

// What the merged database of `count` shards lacks: the problems parted over shards, whole, whose
// finals and vendor timing a sweep of them on that database does (every candidate is measured).
tuner::TuningConfig parted_of(const tuner::TuningConfig& config, int count, const tuner::SweepOptions& o) {
  tuner::TuningConfig parted = tuner::parted_config(config, plan_of(config, count, o));
  std::fprintf(stderr, "finishing %d shards in %s: %zu of %zu problems were parted; their finals and vendor timing here\n",
               count, o.db_path.c_str(), parted.problems.size(), config.problems.size());
  return parted;
}

// A finishing sweep that measured candidates for the first time found the merge incomplete.
void warn_unmerged(const tuner::SweepSummary& s) {
  const std::size_t first = s.benchmarked + s.invalid + s.launch_failed + s.crashed + s.timed_out;
  if (first)
    std::fprintf(stderr, "tiletune: warning: %zu candidates of the parted problems were not in the database and were "
                         "measured here: was every shard merged?\n", first);
}

#ifdef TILETUNE_WITH_MPI
// tune --mpi: every rank tunes the shards rank 0 hands it into its local database; rank 0 merges
// them all into --db at the end.
int tune_mpi(const TuneArgs& a, const tuner::TuningConfig& config, const tuner::SweepOptions& o) {
  // Each shard's summary goes to the log of its rank; one document for the whole job is not made.
  if (a.json) throw Error("--json is not available with --mpi: run `tiletune db winners --json` on the merged database");
  const std::string host = tuner::short_host_name();
  std::string local = a.local_db;
  if (local.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    local = std::string(tmp && *tmp ? tmp : "/tmp") + "/tiletune-{host}-{shard}.db";
  }
  auto local_db = [&](const tuner::scale::MpiRank& me) {
    return tuner::expand_db_template(local, {me.rank, me.size}, host);
  };
  // Every rank knows the count (and so the split) without asking rank 0.
  auto shards = [&](int size) { return a.mpi_shards > 0 ? a.mpi_shards : 4 * size; };
  auto work = [&](int index, const tuner::scale::MpiRank& me) {
    tuner::SweepOptions mine = o;
    const int count = shards(me.size);
    const tuner::TuningConfig part = shard_of(config, {index, count}, mine);
    mine.db_path = local_db(me);
    tuner::record_shard_count(mine.db_path, config.name, count);
    if (part.problems.empty()) {
      db::Database::open(mine.db_path, db::Mode::ReadWrite);
      std::printf("rank %d, shard %d/%d: no work\n", me.rank, index, count);
      std::fflush(stdout);
      return kExitOk;
    }
    const tuner::SweepSummary s = tuner::run_sweep(part, mine);
    std::printf("rank %d, shard %d/%d: %zu winners into %s\n", me.rank, index, count, s.winners.size(),
                mine.db_path.c_str());
    std::fflush(stdout);
    return tune_exit_code(s);
  };
  const std::string gather = std::filesystem::path(a.db).string() + ".ranks";
  const tuner::scale::MpiQueueResult r = tuner::scale::run_mpi_queue(shards, work, local_db, gather);
  if (r.rank != 0) return r.exit_code;
  for (const db::MergeResult& m : db::merge(a.db, r.databases))
    std::printf("merged %s: %zu measurements (%zu added, %zu better, %zu kept)\n", m.source.c_str(), m.measurements,
                m.added, m.replaced, m.kept);
  std::filesystem::remove_all(gather);
  int code = r.exit_code;
  tuner::SweepOptions merged = o;
  merged.db_path = a.db;
  if (const tuner::TuningConfig parted = parted_of(config, shards(r.size), merged); !parted.problems.empty()) {
    const tuner::SweepSummary s = tuner::run_sweep(parted, merged);
    warn_unmerged(s);
    std::printf("finished %zu parted problems: %zu finals timed\n", parted.problems.size(), s.remeasured);
    if (code == kExitOk) code = tune_exit_code(s);
  }
  std::printf("wrote %s: %d shards on %d ranks\n", a.db.c_str(), shards(r.size), r.size);
  return code;
}
#else
int tune_mpi(const TuneArgs&, const tuner::TuningConfig&, const tuner::SweepOptions&) {
  throw Error("--mpi: this tiletune was built without MPI (install libopenmpi-dev and configure with -DTILETUNE_MPI=ON)");
}
#endif

}  // namespace

Run add_tune(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand("tune", "run a tuning sweep: config -> solution database");
  add_tune_options(cmd, a);
  return [a, cmd] {
    tuner::TuningConfig config = tuner::load_config(a->config);
    if (a->parent > 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // it removes its temporary directories, then dies
      if (::getppid() != a->parent)  // it ended before the line above: nothing to tune for
        throw Error("--die-with-parent " + std::to_string(a->parent) + ": the parent process is gone (or is not it)");
    }
    tuner::SweepOptions o = sweep_options(*a, config);
    if (a->compile_only) {
      if (a->json) throw Error("--json is not available with --compile-only");
      if (!a->shard.empty() || a->mpi || a->finish_shards)
        throw Error("--compile-only compiles the whole config: no --shard, --mpi or --finish-shards");
      const tuner::CompileOnlySummary s = tuner::run_compile_only(config, o, a->arch);
      tuner::print_summary(s, stdout);
      std::printf("wrote %s\n", a->db.c_str());
      return s.compiled + s.cached == 0 && s.failed > 0 ? kExitError : kExitOk;
    }
    gpu::vendor_disabled();  // a TILETUNE_VENDOR it does not take stops the tune here, not in a worker
    if (a->mpi) return tune_mpi(*a, config, o);
    // With --json the text goes to stderr beside the progress: stdout holds the document alone.
    std::FILE* text = a->json ? stderr : stdout;
    const std::optional<tuner::ShardId> shard = requested_shard(a->shard);
    o.db_path = tuner::expand_db_template(a->db, shard.value_or(tuner::ShardId{}), tuner::short_host_name());
    if (shard) {
      config = shard_of(config, *shard, o);
      tuner::record_shard_count(o.db_path, config.name, shard->count);
      if (config.problems.empty()) {  // more shards than units: an empty database, so that every shard merges
        db::Database::open(o.db_path, db::Mode::ReadWrite);
        std::fprintf(text, "shard %d/%d has no work\nwrote %s\n", shard->index, shard->count, o.db_path.c_str());
        if (a->json) print_json(tune_json(*cmd, kExitOk, tuner::SweepSummary{}, config, o));
        return kExitOk;
      }
    }
    if (a->finish_shards > 0) {
      tuner::check_shard_count(o.db_path, config.name, a->finish_shards);
      config = parted_of(config, a->finish_shards, o);
      if (config.problems.empty()) {
        std::fprintf(text, "no problem was parted over the %d shards: nothing to finish\n", a->finish_shards);
        if (a->json) print_json(tune_json(*cmd, kExitOk, tuner::SweepSummary{}, config, o));
        return kExitOk;
      }
    }
    tuner::SweepSummary s = tuner::run_sweep(config, o);
    if (a->finish_shards > 0) warn_unmerged(s);
    tuner::print_summary(s, text);
    std::fprintf(text, "\nwrote %s\n", o.db_path.c_str());
    std::fflush(text);
    const int code = tune_exit_code(s);
    if (a->json) print_json(tune_json(*cmd, code, s, config, o));
    return code;
  };
}

// A compile server of a sweep (tuner/compile_process.h has the protocol); not for people.
Run add_compile_server(CLI::App& app) {
  auto backend = std::make_shared<std::string>("cuda");
  CLI::App* cmd = app.add_subcommand("compile-server", "compile requests sent as JSON lines on stdin (used by tune)");
  cmd->group("");  // hidden from --help
  cmd->add_option("--backend", *backend, "cuda | hip | host")->capture_default_str();
  return [backend] { return tuner::run_compile_server(gpu::backend_from_string(*backend)); };
}

// The worker process of an isolated sweep (tuner/worker.h has the protocol); not for people.
Run add_worker(CLI::App& app) {
  struct Args {
    std::string db, backend = "host";
    int device = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("worker", "measure candidates sent as JSON lines on stdin (used by tune)");
  cmd->group("");  // hidden from --help
  cmd->add_option("--db", a->db, "solution database (read-only: code objects)")->required();
  cmd->add_option("--backend", a->backend, "cuda | hip | host")->capture_default_str();
  cmd->add_option("--device", a->device, "device index")->capture_default_str();
  return [a] { return tuner::run_worker(gpu::backend_from_string(a->backend), a->device, a->db); };
}

}  // namespace tiletune::tools
