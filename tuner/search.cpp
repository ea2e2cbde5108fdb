#include "tuner/search.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "tuner/config.h"
#include "tuner/strategy.h"

namespace tiletune::tuner {

void validate(const SearchOptions& o) {
  const Strategy& s = find_strategy(o.strategy);
  if (!(o.budget_seconds >= 0)) throw Error("search: budget_seconds must be >= 0");
  s.validate(o);
}

void print_selection(std::FILE* log, const Problem& p, const std::vector<SearchCandidate>& cands,
                     const std::vector<std::size_t>& pick, const gpu::DeviceInfo& dev) {
  std::fprintf(log, "selected %zu of %zu candidates for %s (rank, the model's estimate in ms, kernel):\n", pick.size(),
               cands.size(), p.key().c_str());
  for (std::size_t r = 0; r < pick.size(); ++r) {
    const SearchCandidate& c = cands[pick[r]];
    const ModelEstimate m = model_estimate(*c.tmpl, *c.solution, p, dev);
    if (m.has_model)
      std::fprintf(log, "  %4zu  %-10.4g  %s\n", r + 1, m.seconds * 1e3, c.solution->kernel_name().c_str());
    else
      std::fprintf(log, "  %4zu  %-10s  %s\n", r + 1, "-", c.solution->kernel_name().c_str());
  }
}

BenchmarkOptions final_benchmark(const BenchmarkOptions& full, gpu::BackendKind backend) {
  BenchmarkOptions b = full;
  const double sustained = gpu::traits(backend).final_ms;
  const double ms = full.final_ms >= 0 ? full.final_ms : sustained > 0 ? sustained : full.target_ms;
  b.target_ms = std::max(full.target_ms, ms);
  // Enough runs to fill the time with short kernels too (an event per run: 20000 at most).
  b.max_iterations = std::max(full.max_iterations, std::min(20000, int(b.target_ms / 0.005)));
  return b;
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

std::vector<std::size_t> finalists(const std::vector<HalvingRow>& rows, bool halving) {
  std::vector<std::size_t> full = fastest(
      rows, [](const HalvingRow& r) { return timed(r.full_ms); }, [](const HalvingRow& r) { return r.full_ms; });
  if (full.size() < 2 || (halving && std::any_of(rows.begin(), rows.end(), [](const HalvingRow& r) { return r.promoted; })))
    return {};
  // The current top few, whatever was re-timed before: a candidate that a resumed sweep (or a
  // longer config) added ahead of earlier finalists gets its second timing too.
  std::vector<std::size_t> out;
  for (std::size_t n = 0; n < std::min(kFinalists, full.size()); ++n)
    if (!rows[full[n]].final) out.push_back(full[n]);
  return out;
}

std::vector<std::size_t> head_to_head_order(std::size_t n, std::size_t round) {
  std::vector<std::size_t> order(n);
  for (std::size_t j = 0; j < n; ++j) order[j] = (round % 2 ? round + n * (j + 1) - j : round + j) % n;
  return order;
}

}  // namespace tiletune::tuner
