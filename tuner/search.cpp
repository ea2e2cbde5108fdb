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

std::vector<std::size_t> select_candidates(const SearchOptions& o, const std::vector<SearchCandidate>& cands,
                                           const Problem& p, const gpu::DeviceInfo& dev) {
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
    std::vector<ModelEstimate> est(cands.size());
    for (std::size_t i = 0; i < cands.size(); ++i) est[i] = model_estimate(*cands[i].tmpl, *cands[i].solution, p, dev);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return model_before(est[a], est[b]); });
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
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < short_ms.size(); ++i)
    if (std::isfinite(short_ms[i]) && short_ms[i] > 0) ok.push_back(i);
  std::stable_sort(ok.begin(), ok.end(), [&](std::size_t a, std::size_t b) { return short_ms[a] < short_ms[b]; });
  std::size_t keep = (ok.size() + 2) / 3;
  if (budget > 0) keep = std::min(keep, budget);
  if (!ok.empty()) keep = std::max<std::size_t>(keep, 1);
  ok.resize(std::min(keep, ok.size()));
  return ok;
}

}  // namespace tiletune::tuner
