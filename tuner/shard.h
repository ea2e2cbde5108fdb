// Splitting one config's work over N processes (nodes, Slurm array tasks, MPI ranks) so that each
// tunes its part into its own database and `db merge` combines them (docs/scale-out.md).
//
// The split is a pure function of the config, the backend and N: every shard computes it alone,
// with no coordinator, and gets the same answer. Its unit is a problem, or, for a problem that
// alone costs more than a shard's fair share under the exhaustive strategy, a part of the
// problem's candidates (candidate i of the problem, in enumeration order, is in part i % parts).
// The other strategies rank or round over all of a problem's candidates, so their problems stay
// whole.
//
// Units are weighed by predicted seconds, not counted: candidates x the time to measure one. That
// is a fixed overhead (loading the code object, the worker's protocol, the database row) plus the
// kernel's runs: one to validate, the warm-up, and the timed ones, which benchmark.target_ms
// bounds between min_iterations and max_iterations. A run takes FLOPs / a per-backend rate. On a
// small problem the overhead and the iteration cap rule (its candidates cost about the same
// whatever the size); on a large one min_iterations binds and the time grows with the FLOPs. The
// count of candidates is the templates' space before pruning, and the constants are per backend,
// not per device, so that nodes with different devices still agree on the split.
// Units go to shards longest-first, each to the least-loaded shard not holding another part of its
// problem (ties: the lower index), units of equal cost in config order: the heaviest shard exceeds
// the mean load by less than the heaviest unit, which the candidate split keeps at most the mean
// unless the problem has fewer candidates than that takes.
//
// A part measures its candidates once each, as the unsharded sweep does, and nothing more: the
// finals (the problem's fastest few timed again, tuner/search.h) and the vendor library's timing
// are the whole problem's, so they are done once, on the merged database, by `tune --finish-shards
// N` (parted_config below). The shards and that step then time what one process would: the same
// candidates, the same finalists, the vendor once per problem.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "tuner/config.h"
#include "tuner/sweep.h"

namespace tiletune::tuner {

struct ShardId {
  int index = 0;  // 0 .. count-1
  int count = 1;
  bool operator==(const ShardId&) const = default;
};

// "I/N" with 0 <= I < N; anything else is an Error naming the text.
ShardId parse_shard(const std::string& text);

// The shard a batch system or MPI launcher gave this process, from its environment (`lookup`
// returns nullptr for an unset variable): a Slurm array task (SLURM_ARRAY_TASK_ID relative to
// SLURM_ARRAY_TASK_MIN, in steps of SLURM_ARRAY_TASK_STEP, of SLURM_ARRAY_TASK_COUNT), else an
// MPI rank (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE, PMIX_RANK with OMPI_COMM_WORLD_SIZE or
// PMI_SIZE). Nothing found: nullopt. A variable set to what is not a number, or a rank outside its
// size: an Error naming it.
using EnvLookup = std::function<const char*(const char*)>;
std::optional<ShardId> shard_from_environment(const EnvLookup& lookup);

// One unit of work: problem `problem` of the config, candidates `part` of `parts` (parts == 1: all).
struct WorkUnit {
  std::size_t problem = 0;
  int part = 0, parts = 1;
  double cost = 0;
};

struct ShardPlan {
  std::vector<std::vector<WorkUnit>> shards;  // per shard, its units in config order
  std::vector<double> load;                   // per shard, the summed cost of its units
  double total = 0;
};

struct ProblemCost {
  double cost = 0;             // predicted seconds (see above)
  std::size_t candidates = 0;  // before pruning: a problem is parted in at most this many parts
};
// The constants of the prediction on one backend.
struct CostRates {
  double flops_per_s = 0;         // a kernel's speed, roughly
  double candidate_overhead_s = 0;  // per candidate measured, besides its runs
};
CostRates cost_rates(gpu::BackendKind backend);
// Predicted seconds to measure one candidate of a problem of `flops`.
double candidate_seconds(double flops, const BenchmarkOptions& b, const CostRates& r);
// Predicted cost of each problem of `config` on `backend`.
std::vector<ProblemCost> problem_costs(const TuningConfig& config, gpu::BackendKind backend);

// The split of `config` into `count` shards (see above). `costs`: one per problem.
ShardPlan plan_shards(const TuningConfig& config, const std::vector<ProblemCost>& costs, int count);

// The config of one shard (its problems only, in config order) and the filter that keeps, of a
// problem split into parts, the candidates of this shard's part and leaves its finals and vendor
// timing to parted_config's sweep. Returns the config; sets `options.filter`.
TuningConfig shard_config(const TuningConfig& config, const ShardPlan& plan, int index, SweepOptions& options);

// The problems `plan` parts, whole, in config order: a sweep of them on the merged shards' database
// finds every candidate measured and does only what the parts left, their finals and the vendor.
TuningConfig parted_config(const TuningConfig& config, const ShardPlan& plan);

// A shard of `sweep` (the config's name) split `count` ways records so in its database
// (db/shard_counts.h; `db merge` carries it), so that finishing the merged database can tell
// whether it is given the count its shards were split into: another count's parted problems are
// not the ones the shards left unfinished.
void record_shard_count(const std::string& db_path, const std::string& sweep, int count);
// An Error naming the database and what its shards recorded unless every shard of `sweep` merged
// into it was split `count` ways.
void check_shard_count(const std::string& db_path, const std::string& sweep, int count);

// A database path with {shard} (the shard's index), {count} (the number of shards) and {host}
// (this machine's short host name) replaced; any other {name}, or an unclosed brace, is an Error.
std::string expand_db_template(const std::string& path, const ShardId& shard, const std::string& host);
std::string short_host_name();  // up to the first '.'

}  // namespace tiletune::tuner
