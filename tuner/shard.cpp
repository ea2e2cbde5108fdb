#include "tuner/shard.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/error.h"
#include "db/shard_counts.h"
#include "tuner/enumerator.h"

namespace tiletune::tuner {

namespace {

std::optional<long long> to_integer(std::string_view text) {
  long long v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || text.empty()) return std::nullopt;
  return v;
}

// The integer value of environment variable `name`; nullopt when it is unset.
std::optional<long long> env_integer(const EnvLookup& lookup, const char* name) {
  const char* v = lookup(name);
  if (!v) return std::nullopt;
  auto n = to_integer(v);
  if (!n) throw Error(std::string("environment variable ") + name + "='" + v + "' is not an integer");
  return n;
}

ShardId checked(long long index, long long count, const std::string& source) {
  if (count < 1 || index < 0 || index >= count)
    throw Error(source + " gives shard " + std::to_string(index) + " of " + std::to_string(count) +
                ": not a shard 0 <= I < N");
  return {int(index), int(count)};
}

}  // namespace

ShardId parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const auto i = slash == std::string::npos ? std::nullopt : to_integer(std::string_view(text).substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : to_integer(std::string_view(text).substr(slash + 1));
  if (!i || !n || *n < 1 || *i < 0 || *i >= *n)
    throw Error("--shard '" + text + "': expected I/N with 0 <= I < N (e.g. 0/4), or auto");
  return {int(*i), int(*n)};
}

std::optional<ShardId> shard_from_environment(const EnvLookup& lookup) {
  if (auto id = env_integer(lookup, "SLURM_ARRAY_TASK_ID")) {
    const auto count = env_integer(lookup, "SLURM_ARRAY_TASK_COUNT");
    if (!count) throw Error("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not");
    // --array=5-8 numbers its tasks from 5, --array=0-15:4 in steps of 4: shards are positions.
    const long long min = env_integer(lookup, "SLURM_ARRAY_TASK_MIN").value_or(0);
    const long long step = env_integer(lookup, "SLURM_ARRAY_TASK_STEP").value_or(1);
    if (step < 1 || (*id - min) % step)
      throw Error("SLURM_ARRAY_TASK_ID " + std::to_string(*id) + " is not on the array's steps (min " +
                  std::to_string(min) + ", step " + std::to_string(step) + ")");
    return checked((*id - min) / step, *count, "the Slurm array (SLURM_ARRAY_TASK_ID/MIN/STEP/COUNT)");
  }
  struct Pair {
    const char *rank, *size;
  };
  for (const Pair& p : {Pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, Pair{"PMI_RANK", "PMI_SIZE"},
                        Pair{"PMIX_RANK", "OMPI_COMM_WORLD_SIZE"}, Pair{"PMIX_RANK", "PMI_SIZE"}}) {
    const auto rank = env_integer(lookup, p.rank);
    if (!rank) continue;
    const auto size = env_integer(lookup, p.size);
    if (!size) continue;
    return checked(*rank, *size, std::string("the MPI launcher (") + p.rank + ", " + p.size + ")");
  }
  if (lookup("PMIX_RANK")) throw Error("PMIX_RANK is set but no size of the job (OMPI_COMM_WORLD_SIZE, PMI_SIZE) is");
  return std::nullopt;
}

CostRates cost_rates(gpu::BackendKind backend) {
  // The host's: what the CI machine measured (docs/scale-out.md): host kernels at 15-25 GFLOP/s on
  // two shared cores, about 30 ms per candidate besides its runs (a worker loading a shared
  // object). A GPU's: an H100/H200-class part at a fraction of its peak, and a module load plus
  // launches; only their ratio to each other matters within one sweep.
  if (backend == gpu::BackendKind::Host) return {2e10, 0.03};
  return {1e14, 0.005};
}

double candidate_seconds(double flops, const BenchmarkOptions& b, const CostRates& r) {
  const double run = flops / r.flops_per_s;
  const double timed = std::clamp(b.target_ms / 1000 / std::max(run, 1e-12), double(b.min_iterations),
                                  double(std::max(b.min_iterations, b.max_iterations)));
  return r.candidate_overhead_s + run * (1 + b.warmup + timed);
}

std::vector<ProblemCost> problem_costs(const TuningConfig& config, gpu::BackendKind backend) {
  const CostRates rates = cost_rates(backend);
  std::vector<ProblemCost> costs;
  for (const Problem& p : config.problems) {
    std::size_t candidates = 0;
    for (const KernelTemplate& t : config.templates)
      if (t.supports(backend) && t.problem_kind() == p.kind()) candidates += combinations(t);
    // A problem no template serves still costs its vendor timing: count it as one candidate.
    const double each = candidate_seconds(p.flops(), config.benchmark, rates);
    costs.push_back({each * double(std::max<std::size_t>(1, candidates)), candidates});
  }
  return costs;
}

ShardPlan plan_shards(const TuningConfig& config, const std::vector<ProblemCost>& costs, int count) {
  if (count < 1) throw Error("cannot split a sweep into " + std::to_string(count) + " shards");
  if (costs.size() != config.problems.size()) throw Error("plan_shards: one cost per problem expected");
  ShardPlan plan;
  plan.shards.resize(count);
  plan.load.assign(count, 0);
  for (const ProblemCost& c : costs) plan.total += c.cost;
  const double mean = plan.total / count;
  // Only the exhaustive strategy measures each candidate on its own, so that its candidates can be
  // parted; a budget in seconds is the problem's, which parts would each spend again.
  const bool partable = config.search.strategy == "exhaustive" && config.search.budget == 0 &&
                        config.search.budget_seconds <= 0;
  std::vector<WorkUnit> units;
  for (std::size_t pi = 0; pi < costs.size(); ++pi) {
    const double cost = costs[pi].cost;
    int parts = 1;
    if (partable && count > 1 && cost > mean)
      parts = int(std::min<double>({double(count), double(std::max<std::size_t>(1, costs[pi].candidates)),
                                    std::ceil(cost / mean)}));
    for (int part = 0; part < parts; ++part) units.push_back({pi, part, parts, cost / parts});
  }
  std::stable_sort(units.begin(), units.end(), [](const WorkUnit& a, const WorkUnit& b) { return a.cost > b.cost; });
  // Two parts of one problem in one shard would be that problem twice in its config: a part goes
  // to the least-loaded shard without one (there is one: a problem has at most `count` parts).
  auto holds = [&](int s, std::size_t problem) {
    return std::any_of(plan.shards[s].begin(), plan.shards[s].end(), [&](const WorkUnit& h) { return h.problem == problem; });
  };
  for (const WorkUnit& u : units) {
    int best = -1;
    for (int s = 0; s < count; ++s)
      if ((best < 0 || plan.load[s] < plan.load[best]) && (u.parts == 1 || !holds(s, u.problem))) best = s;
    plan.shards[best].push_back(u);
    plan.load[best] += u.cost;
  }
  for (auto& shard : plan.shards)
    std::sort(shard.begin(), shard.end(),
              [](const WorkUnit& a, const WorkUnit& b) { return std::tie(a.problem, a.part) < std::tie(b.problem, b.part); });
  return plan;
}

TuningConfig shard_config(const TuningConfig& config, const ShardPlan& plan, int index, SweepOptions& options) {
  if (index < 0 || index >= int(plan.shards.size()))
    throw Error("shard " + std::to_string(index) + " of a plan of " + std::to_string(plan.shards.size()));
  TuningConfig out = config;
  out.problems.clear();
  struct Part {
    int part, parts;
  };
  std::vector<Part> parts;  // per problem of `out`
  for (const WorkUnit& u : plan.shards[index]) {
    out.problems.push_back(config.problems[u.problem]);
    parts.push_back({u.part, u.parts});
  }
  const bool any_parted = std::any_of(parts.begin(), parts.end(), [](const Part& p) { return p.parts > 1; });
  options.filter = {};
  if (any_parted) {
    options.filter.candidate = [parts](std::size_t pi, std::size_t ordinal) {
      return int(ordinal % std::size_t(parts[pi].parts)) == parts[pi].part;
    };
    options.filter.finish = [parts](std::size_t pi) { return parts[pi].parts == 1; };
  }
  return out;
}

TuningConfig parted_config(const TuningConfig& config, const ShardPlan& plan) {
  std::vector<bool> parted(config.problems.size(), false);
  for (const auto& shard : plan.shards)
    for (const WorkUnit& u : shard)
      if (u.parts > 1) parted.at(u.problem) = true;
  TuningConfig out = config;
  out.problems.clear();
  for (std::size_t pi = 0; pi < config.problems.size(); ++pi)
    if (parted[pi]) out.problems.push_back(config.problems[pi]);
  return out;
}

std::string short_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) throw Error("cannot read this machine's host name for {host}");
  std::string host = name;
  return host.substr(0, host.find('.'));
}

std::string expand_db_template(const std::string& path, const ShardId& shard, const std::string& host) {
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '{') {
      out += path[i];
      continue;
    }
    const auto close = path.find('}', i);
    if (close == std::string::npos) throw Error("--db '" + path + "': a '{' without its '}'");
    const std::string name = path.substr(i + 1, close - i - 1);
    if (name == "shard") out += std::to_string(shard.index);
    else if (name == "count") out += std::to_string(shard.count);
    else if (name == "host") out += host;
    else throw Error("--db '" + path + "': unknown field {" + name + "} (known: {shard}, {count}, {host})");
    i = close;
  }
  return out;
}

void record_shard_count(const std::string& db_path, const std::string& sweep, int count) {
  db::Database db = db::Database::open(db_path, db::Mode::ReadWrite);
  db.transaction("record the shard count", [&] { db::add_shard_counts(db, sweep, {count}); });
}

void check_shard_count(const std::string& db_path, const std::string& sweep, int count) {
  db::Database db = db::Database::open(db_path, db::Mode::ReadOnlyAnyVersion);
  const std::vector<int> counts = db::shard_counts(db, sweep);
  const std::string given = "--finish-shards " + std::to_string(count) + ": ";
  if (counts.empty())
    throw Error(given + db_path + " holds no shard count of sweep '" + sweep + "': merge into it the shards of " +
                "`tune --shard I/N` of this config (a tiletune older than the record writes none)");
  if (counts.size() > 1) {
    std::string split;
    for (int c : counts) split += (split.empty() ? "" : ", ") + std::to_string(c);
    throw Error(given + "the shards of sweep '" + sweep + "' merged into " + db_path + " were split " + split +
                " ways: shards of different splits cannot be finished together; merge those of one split into "
                "another database");
  }
  if (counts[0] != count)
    throw Error(given + "the shards of sweep '" + sweep + "' merged into " + db_path + " were split " +
                std::to_string(counts[0]) + " ways (--shard I/" + std::to_string(counts[0]) + "): finish them with " +
                "--finish-shards " + std::to_string(counts[0]));
}

}  // namespace tiletune::tuner
