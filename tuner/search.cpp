#include "tuner/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "common/error.h"
#include "tuner/config.h"

namespace tiletune::tuner {

const std::vector<std::string>& search_strategies() {
  static const std::vector<std::string> s = {"exhaustive", "random", "model", "halving"};
  return s;
}

void validate(const SearchOptions& o) {
  const auto& all = search_strategies();
  if (std::find(all.begin(), all.end(), o.strategy) == all.end())
    throw Error("unknown search strategy '" + o.strategy + "' (exhaustive, random, model, halving)");
  if (!(o.budget_seconds >= 0)) throw Error("search: budget_seconds must be >= 0");
  if (o.strategy == "random" && o.budget == 0 && o.budget_seconds == 0)
    throw Error("search: the random strategy needs a budget (candidates per problem) or budget_seconds");
}

ModelMachine model_machine(const gpu::DeviceInfo& dev, const GemmProblem& p) {
  ModelMachine m;
  const bool half = size_of(p.a_type) == 2;
  switch (dev.backend) {
    case gpu::BackendKind::Cuda:
    case gpu::BackendKind::Hip:
      // Roughly an H100/H200/MI300 class part: tensor cores for 16-bit (and tf32) inputs, the
      // FMA pipes for fp32; tile re-reads are served mostly by L2, hence ~10 TB/s.
      m.flops_per_s = half ? 900e12 : p.compute_tf32 ? 450e12 : 60e12;
      m.bytes_per_s = 10e12;
      m.max_threads_per_mp = dev.backend == gpu::BackendKind::Hip ? 2560 : 2048;
      m.shared_per_mp = std::max<std::int64_t>(dev.shared_bytes_optin, dev.shared_bytes_per_block) + 1024;
      break;
    case gpu::BackendKind::Host:
      m.flops_per_s = 50e9 * std::max(1, dev.multiprocessors);
      m.bytes_per_s = 100e9;
      m.max_threads_per_mp = 1;  // one tile per pool thread at a time
      m.shared_per_mp = std::numeric_limits<std::int64_t>::max();
      break;
  }
  return m;
}

ModelEstimate model_estimate(const KernelTemplate& t, const Solution& s, const GemmProblem& problem,
                             const gpu::DeviceInfo& dev) {
  ModelEstimate e;
  if (!t.has_model()) return e;
  std::optional<ModelShape> shape;
  try {
    shape = t.model_shape(t.variables(s, problem, dev));
  } catch (const Error&) {
    return e;  // e.g. a division by zero in the template's expressions: rank it last
  }
  if (!shape) return e;
  const GemmProblem p = problem.canonical();
  const ModelMachine mm = model_machine(dev, p);
  const double tm = double(shape->tile_m), tn = double(shape->tile_n), tk = double(shape->tile_k);
  const double gm = std::ceil(double(p.m) / tm), gn = std::ceil(double(p.n) / tn), gk = std::ceil(double(p.k) / tk);
  const double batch = double(std::max<std::int64_t>(1, p.batch));
  const double split = double(shape->split_k);
  const double flops = 2.0 * gm * tm * gn * tn * gk * tk * batch;
  const double bytes = gm * gn * batch * double(p.k) * (tm + tn) * double(size_of(p.a_type)) +
                       double(p.m) * double(p.n) * batch * double(size_of(p.c_type)) * (split > 1 ? 3.0 : 1.0);
  std::int64_t per_mp = 32;
  if (dev.backend == gpu::BackendKind::Host) per_mp = 1;
  else {
    per_mp = std::min<std::int64_t>(per_mp, mm.max_threads_per_mp / shape->threads);
    if (shape->shared_bytes > 0) per_mp = std::min<std::int64_t>(per_mp, mm.shared_per_mp / shape->shared_bytes);
  }
  per_mp = std::max<std::int64_t>(1, per_mp);
  const double tiles = gm * gn * batch * split;
  const double slots = double(std::max(1, dev.multiprocessors)) * double(per_mp);
  e.has_model = true;
  e.tiles = std::int64_t(tiles);
  e.blocks_per_mp = per_mp;
  e.slots = std::int64_t(slots);
  e.wave_factor = std::ceil(tiles / slots) / (tiles / slots);
  e.flop_seconds = flops / mm.flops_per_s;
  e.byte_seconds = bytes / mm.bytes_per_s;
  e.seconds = std::max(e.flop_seconds, e.byte_seconds) * e.wave_factor;
  return e;
}

std::vector<std::size_t> select_candidates(const SearchOptions& o, const std::vector<SearchCandidate>& cands,
                                           const GemmProblem& p, const gpu::DeviceInfo& dev) {
  std::vector<std::size_t> order(cands.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto cap = [&](std::vector<std::size_t>& v) {
    if (o.budget > 0 && v.size() > o.budget) v.resize(o.budget);
  };
  if (o.strategy == "exhaustive") {
    cap(order);
  } else if (o.strategy == "halving") {
    // every candidate gets the short round; the budget caps the fully timed ones
  } else if (o.strategy == "random") {
    // A partial Fisher-Yates shuffle from a generator seeded by the seed and the problem's key
    // (FNV, so stable across platforms): same seed + same space = same subset.
    std::mt19937_64 rng(o.seed ^ std::stoull(content_hash(p.canonical().key()), nullptr, 16));
    const std::size_t take = o.budget > 0 ? std::min(o.budget, order.size()) : order.size();
    for (std::size_t i = 0; i < take; ++i) {
      std::uniform_int_distribution<std::size_t> pick(i, order.size() - 1);
      std::swap(order[i], order[pick(rng)]);
    }
    order.resize(take);
  } else if (o.strategy == "model") {
    std::vector<double> score(cands.size());
    for (std::size_t i = 0; i < cands.size(); ++i) {
      ModelEstimate e = model_estimate(*cands[i].tmpl, *cands[i].solution, p, dev);
      score[i] = e.has_model ? e.seconds : std::numeric_limits<double>::infinity();
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return score[a] < score[b]; });
    cap(order);
  } else {
    throw Error("unknown search strategy '" + o.strategy + "'");
  }
  return order;
}

BenchmarkOptions short_benchmark(const BenchmarkOptions& full) {
  BenchmarkOptions b = full;
  b.warmup = std::min(full.warmup, 1);
  b.min_iterations = std::min(full.min_iterations, 2);
  b.max_iterations = std::max(b.min_iterations, std::min(full.max_iterations, full.max_iterations / 4 + 2));
  b.target_ms = full.target_ms / 8;
  return b;
}

std::vector<std::size_t> halving_contenders(const std::vector<double>& short_ms, std::size_t budget) {
  std::vector<HalvingRow> rows(short_ms.size());
  for (std::size_t i = 0; i < short_ms.size(); ++i) rows[i].short_ms = short_ms[i];
  return halving_round2(rows, budget);
}

namespace {
bool timed(double ms) { return std::isfinite(ms) && ms > 0; }

// Positions of rows passing `pick`, fastest first by `ms`.
template <class Pick, class Ms>
std::vector<std::size_t> fastest(const std::vector<HalvingRow>& rows, Pick pick, Ms ms) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (pick(rows[i])) out.push_back(i);
  std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) { return ms(rows[a]) < ms(rows[b]); });
  return out;
}
}  // namespace

std::vector<std::size_t> halving_round2(const std::vector<HalvingRow>& rows, std::size_t budget) {
  std::size_t ok = 0, full = 0;
  for (const HalvingRow& r : rows) {
    ok += timed(r.short_ms) || timed(r.full_ms);
    full += timed(r.full_ms);
  }
  std::size_t keep = (ok + 2) / 3;
  if (budget > 0) keep = std::min(keep, budget);
  if (ok > 0) keep = std::max<std::size_t>(keep, 1);
  std::vector<std::size_t> out = fastest(
      rows, [](const HalvingRow& r) { return timed(r.short_ms); }, [](const HalvingRow& r) { return r.short_ms; });
  out.resize(std::min(out.size(), keep > full ? keep - full : 0));
  return out;
}

std::vector<std::size_t> halving_round3(const std::vector<HalvingRow>& rows) {
  std::vector<std::size_t> full = fastest(
      rows, [](const HalvingRow& r) { return timed(r.full_ms); }, [](const HalvingRow& r) { return r.full_ms; });
  if (full.size() < 2 || std::any_of(rows.begin(), rows.end(), [](const HalvingRow& r) { return r.promoted; })) return {};
  std::size_t want = std::min(kHalvingFinal, full.size()), done = 0;
  for (std::size_t i : full) done += rows[i].final;
  std::vector<std::size_t> out;
  for (std::size_t i : full)
    if (!rows[i].final && done + out.size() < want) out.push_back(i);
  return out;
}

}  // namespace tiletune::tuner
