// How a problem is served. One statement of the rules, used by the runtime (at dispatch) and by
// `tiletune db explain` (without a device), so the two never disagree. The ladder, top first:
//   1. Tuned: the exact problem's winner (a user database's before the shipped one's); the winner
//      may be the vendor library, timed as a candidate of the sweep. A generated kernel that beat
//      the vendor by less than kKernelMargin there gives way to the vendor (kernel_serves).
//   2. Pool: among the winning kernels of tuned problems near enough, and the generic kernels `db
//      pack` shipped (near enough, or at any distance where no vendor computes the problem and the
//      model estimates them), with the same types,
//      layout and compute, whose constraints admit the problem, the one the analytical model
//      (solutions/model.h) expects fastest on it, calibrated by each kernel's measured time on its
//      own problem (rank_pool). Where a vendor computes the problem, only a kernel the database
//      shows beating the vendor by kKernelMargin on its own problem, and expected to beat it by as
//      much here (the vendor's time on the nearest problem it was timed on, scaled by the flops);
//   3. Vendor: the vendor library's own choice (cuBLAS, cuDNN, OpenBLAS);
//   4. Default: where no vendor computes the problem, the default of the first template by
//      "fallback_rank" whose constraints admit it.
#pragma once
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/backend.h"
#include "solutions/kernel_template.h"
#include "solutions/model.h"
#include "solutions/gemm_problem.h"

namespace tiletune {

// distance = |ln(m/m')| + |ln(n/n')| + |ln(k/k')| + |ln(batch/batch')|, for problems of the same
// types, layout and compute (infinite otherwise). At most kMaxNearestDistance (about a factor of
// two in each of m, n and k) counts as near: a kernel tuned for 8192^3 can lose badly to the
// default on a 64^3 problem.
inline constexpr double kMaxNearestDistance = 2.1;
// Convolutions: infinite unless direction, types, layout, filter size, stride, padding, dilation
// and groups agree; then |ln(n/n')| + |ln(c/c')| + |ln(k/k')| + |ln(hw/h'w')|.
double problem_distance(const Problem& a, const Problem& b);

// The rungs of the ladder, for stats and explanations.
enum class Rung { Tuned, Pool, Vendor, Default };
const char* to_string(Rung r);  // "tuned", "pool", "vendor", "default"

// How much faster than the vendor a generated kernel must have been measured, on its own problem,
// to be served where the vendor computes the problem too. Below it the difference is within what
// the tuner's timing and PyTorch's do_bench disagree by (H200, 2026-12-01: kernels 3-5% ahead of
// cuBLAS at tune time ran 0.92-0.98x of it under do_bench, in another process, on other data;
// benchmarks/results/vs_torch/2026-12-01_h200_gemm_tuner_timing_probe.md), and off its tuned shape a kernel
// ran 0.87-0.97x of its tuned speed.
inline constexpr double kKernelMargin = 1.10;

struct TunedEntry {
  Problem problem;  // canonical
  const KernelTemplate* tmpl = nullptr;  // nullptr: the vendor library won this problem
  Solution solution;
  // Vendor time over the winner's time on this problem; NaN where the vendor was not measured.
  double vendor_ratio = std::numeric_limits<double>::quiet_NaN();
  double median_ms = std::numeric_limits<double>::quiet_NaN();  // the winner's measured time
  // A generic kernel of the pool (db pack): not a winner of `problem` but measured there; where no
  // vendor computes a problem of its class it may serve at any distance, ranked by the model.
  bool generic = false;
};

// Whether a tuned problem's generated kernel is served rather than the vendor library: always where
// no vendor computes the problem or the database never measured the vendor on it (a database from
// before vendor timing serves its winners as it did), else only with kKernelMargin over it.
bool kernel_serves(const TunedEntry& e, bool vendor_available);

struct NearestChoice {
  std::size_t index = 0;  // into the entries
  double distance = 0;
  // The calibrated model's time for the entry's kernel on the new problem, and the vendor's
  // estimated time there (NaN: no model, no measurement, or no vendor).
  double estimate_ms = std::numeric_limits<double>::quiet_NaN();
  double vendor_estimate_ms = std::numeric_limits<double>::quiet_NaN();
};

// The pool rung's choice for a problem without an exact winner.
struct PoolRanking {
  std::optional<NearestChoice> best;     // the kernel to serve, if any qualifies
  std::optional<NearestChoice> nearest;  // the nearest tuned problem considered (its winner may be the vendor)
  std::string why_not;                   // without `best`: why no kernel qualifies
};
// `vendor_available`: the vendor library computes the problem (it sets the bar).
PoolRanking rank_pool(const std::vector<TunedEntry>& tuned, const Problem& canonical, const gpu::DeviceInfo& dev,
                      bool vendor_available = true);

// The templates offering a fallback for this backend and problem kind, in the order they are tried.
std::vector<const KernelTemplate*> fallback_templates(gpu::BackendKind backend, ProblemKind kind = ProblemKind::Gemm);

struct FallbackChoice {
  const KernelTemplate* tmpl = nullptr;  // nullptr: no template's default fits
  // Templates tried before it, with the constraint their default breaks.
  std::vector<std::pair<std::string, std::string>> rejected;
};
// `adjust` may change the variables before the check (the runtime lowers ALIGN_A/B/C to the
// alignment of the pointers it was given).
FallbackChoice choose_fallback(const std::vector<const KernelTemplate*>& ranked, const Problem& canonical,
                               const gpu::DeviceInfo& dev, const std::function<void(Variables&)>& adjust = {});

// Rungs 2-4 for a problem without a usable exact winner.
struct UntunedChoice {
  Rung rung = Rung::Default;
  std::optional<NearestChoice> nearest;  // Pool: the entry it runs; otherwise the nearest considered, if any
  FallbackChoice fallback;               // Default: the template; its `tmpl` is null when none fits
  std::string why;                       // one clause: why this rung
};
// `vendor_unsupported`: "" when the vendor library computes the problem, else why not.
UntunedChoice choose_untuned(const std::vector<TunedEntry>& tuned, const Problem& canonical, const gpu::DeviceInfo& dev,
                             const std::string& vendor_unsupported,
                             const std::vector<const KernelTemplate*>& fallbacks);

}  // namespace tiletune
