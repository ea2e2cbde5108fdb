// What every search strategy shares: the options, the finals, halving's round plans. The
// strategies themselves (which candidates of a problem, in what order, laid out how) are
// tuner/strategy.h and tuner/strategies/*.cpp:
//
//   exhaustive  every candidate, in enumeration order (budget: the first N).
//   random      a uniformly random subset of `budget` candidates, from `seed` and the problem's key.
//   model       every candidate ranked by the analytical estimate of its time, the best `budget`.
//   halving     successive halving: a short timing for all, a full one for the best third.
//
// Whatever the strategy, the problem's fastest fully timed candidates (kFinalists) are then timed
// once more, one after another on one device, and the later timing is recorded: the winner is not
// the luck of one timing, and the finalists are compared on the same GPU (see sweep.cpp).
//
// `budget_seconds` (> 0) stops a problem's measuring once that much wall time has gone into it
// (checked before each candidate; at least one candidate of each problem is always measured).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "solutions/kernel_template.h"
#include "solutions/gemm_problem.h"
#include "solutions/solution.h"
#include "solutions/model.h"

namespace tiletune::tuner {

struct BenchmarkOptions;  // tuner/config.h (which includes this file)

struct SearchOptions {
  std::string strategy = "exhaustive";  // exhaustive | random | model | halving
  std::size_t budget = 0;               // candidates per problem (halving: fully timed ones); 0 = all
  double budget_seconds = 0;            // wall seconds of measuring per problem; 0 = no limit
  std::uint64_t seed = 0;               // random: which subset
};

// Error naming the bad field (unknown strategy, negative seconds, what the strategy itself needs).
void validate(const SearchOptions& o);
const std::vector<std::string>& search_strategies();  // the registry's names (tuner/strategy.cpp)

// ---- per-problem selection -----------------------------------------------------------------
struct SearchCandidate {
  const KernelTemplate* tmpl = nullptr;
  const Solution* solution = nullptr;
};

// The named strategy's selection (Strategy::select): indices into `cands`, in measuring order.
std::vector<std::size_t> select_candidates(const SearchOptions& o, const std::vector<SearchCandidate>& cands,
                                           const Problem& p, const gpu::DeviceInfo& dev);

// `tune --list-selected`: a line per candidate the strategy picked for `p` (`pick`: indices into `cands`), in
// measuring order, with the model's estimate where the template has a model: which kernels a budget times, and
// which a crowded ranking left out.
void print_selection(std::FILE* log, const Problem& p, const std::vector<SearchCandidate>& cands,
                     const std::vector<std::size_t>& pick, const gpu::DeviceInfo& dev);

// Finalists of every strategy: timed fully twice, at the end of the problem's measuring, the
// second time for at least final_ms (BenchmarkOptions).
inline constexpr std::size_t kFinalists = 3;
// Then the finalists of the kernels and of the vendor, timed together in this many rounds, each
// a third of final_ms (Sweep::head_to_head).
inline constexpr std::size_t kHeadToHeadRounds = 3;
// The order of n contenders in round `round` of a head-to-head: round r starts at contender r mod
// n, and every other round walks backwards from there, so that no two of the first n rounds start
// with the same contender, and the neighbours of one round meet in the other order in the next.
std::vector<std::size_t> head_to_head_order(std::size_t n, std::size_t round);
BenchmarkOptions final_benchmark(const BenchmarkOptions& full, gpu::BackendKind backend);
// Successive halving.
// The short first round: warmup 1, 2 iterations, target_ms / 8 (at most max_iterations / 4 + 2).
BenchmarkOptions short_benchmark(const BenchmarkOptions& full);
// The contenders after the short round: positions in `short_ms` (NaN = failed, never kept) of the
// best ceil(n_ok / 3), at most `budget` (0 = no cap), at least one when any succeeded; best first.
std::vector<std::size_t> halving_contenders(const std::vector<double>& short_ms, std::size_t budget);
// The `reason` of an 'ok' measurement that had only the short round (a loser of round one).
inline constexpr const char* kShortTimingReason = "halving: short timing only";
// The `reason` of an 'ok' measurement re-timed as a finalist: a resumed sweep can tell that the
// finals are done without timing anything again. kFinalTimingReasonV1: the same, as databases
// written before every strategy had finals (halving's round three) say it.
inline constexpr const char* kFinalTimingReason = "finalist: timed fully twice";
inline constexpr const char* kFinalTimingReasonV1 = "halving: timed fully twice";
// The `reason` of an 'ok' measurement fully timed after the rounds because its short timing had
// become the winner: promotions come last, so one says the rounds are done.
inline constexpr const char* kPromotedReason = "halving: fully timed as the winner";

// What is known of one candidate of a halving sweep: from its own rounds, or from the database
// when a stopped sweep is resumed (so every round can be planned from what is recorded).
struct HalvingRow {
  bool measured = false;  // it has a row (round one done, whatever its status)
  double short_ms = NAN;  // 'ok' with a short timing only
  double full_ms = NAN;   // 'ok' with a full timing
  bool final = false;     // re-timed as a finalist
  bool promoted = false;  // fully timed after the rounds (kPromotedReason)
};
// Round two: the short-timed candidates to time fully, best first, so that ceil(n_ok / 3) (at
// most `budget`, at least one) are fully timed, counting those already fully timed.
std::vector<std::size_t> halving_round2(const std::vector<HalvingRow>& rows, std::size_t budget);
// The finals: those of the kFinalists fastest fully timed candidates (when there are two or
// more) not yet re-timed, best first. `halving`: none once a promotion is recorded (halving
// promotes after its finals, so a promotion says its rounds are done); other strategies re-time
// a promoted candidate of an earlier halving sweep like any other.
std::vector<std::size_t> finalists(const std::vector<HalvingRow>& rows, bool halving);

}  // namespace tiletune::tuner
