// How a problem without an exact tuned winner is served. One statement of the rules, used by the
// runtime (at dispatch) and by `tiletune db explain` (without a device), so the two never disagree:
//   1. the winner of the nearest tuned problem with the same types, layout and compute, whose
//      kernel admits the problem, when it is near enough (nearest_tuned);
//   2. else the default of the first template by "fallback_rank" whose constraints admit it.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/backend.h"
#include "solutions/kernel_template.h"
#include "solutions/problem.h"

namespace tiletune {

// distance = |ln(m/m')| + |ln(n/n')| + |ln(k/k')| + |ln(batch/batch')|, for problems of the same
// types, layout and compute (infinite otherwise). At most kMaxNearestDistance (about a factor of
// two in each of m, n and k) counts as near: a kernel tuned for 8192^3 can lose badly to the
// default on a 64^3 problem.
inline constexpr double kMaxNearestDistance = 2.1;
// Convolutions: infinite unless direction, types, layout, filter size, stride, padding, dilation
// and groups agree; then |ln(n/n')| + |ln(c/c')| + |ln(k/k')| + |ln(hw/h'w')|.
double problem_distance(const Problem& a, const Problem& b);

struct TunedEntry {
  Problem problem;  // canonical
  const KernelTemplate* tmpl = nullptr;
  Solution solution;
};

struct NearestChoice {
  std::size_t index = 0;  // into the entries
  double distance = 0;
};
std::optional<NearestChoice> nearest_tuned(const std::vector<TunedEntry>& tuned, const Problem& canonical,
                                           const gpu::DeviceInfo& dev);

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

}  // namespace tiletune
