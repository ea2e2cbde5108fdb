// One template's parameter space for one problem, checked against its constraints without
// building a Solution or a map of names per candidate. The template's expressions are bound once
// to slots of a flat array, and each derived value and constraint is evaluated as soon as the
// parameters it reads are fixed: a constraint that reads only the first parameters rejects the
// whole sub-space below them at once, with the same reason each of its candidates would get.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/backend.h"
#include "solutions/kernel_template.h"

namespace tiletune::tuner {

// Combinations are numbered in cartesian() order: the first parameter varies slowest.
struct WalkResult {
  struct Admitted {
    std::size_t combination;
    gpu::LaunchDims dims;
  };
  struct Pruned {
    std::size_t combination;
    std::size_t constraint;  // index into KernelTemplate::constraints()
  };
  std::vector<Admitted> admitted;
  std::vector<Pruned> pruned;              // only when asked for
  std::vector<std::size_t> pruned_counts;  // per constraint index
};

class SpaceWalk {
 public:
  // `repack` > 0: the candidates are the space's solutions with REPACK = `repack` added (the
  // enumerator's copies, see KernelTemplate::repack_offers).
  SpaceWalk(const KernelTemplate& t, const Problem& p, const gpu::DeviceInfo& dev, int repack);
  // Same results as variables() + violation() + launch_dims() per solution of cartesian(t), and
  // the same errors for expressions that throw, except that a derived value is not evaluated for
  // candidates a constraint on fewer parameters has already rejected.
  WalkResult run(bool keep_pruned) const;

 private:
  struct Bound {  // an expression, the slots its names read, and the level it can be evaluated at
    const Expression* expr;
    std::vector<int> slots;
    std::size_t level = 0;
    std::int64_t eval(const std::int64_t* values) const { return expr->eval(values, slots.data()); }
  };
  struct Derived {
    Bound value;
    int slot;
  };
  struct State;
  void descend(State& s, std::size_t level, std::size_t next, std::size_t combination) const;

  const KernelTemplate& t_;
  std::vector<std::vector<std::int64_t>> values_;  // each parameter's values
  std::vector<int> param_slot_;                     // each parameter's slot
  std::vector<std::int64_t> initial_;               // every slot's value before any parameter is set
  std::vector<std::vector<Derived>> derived_;       // per level, in the template's order
  std::vector<Bound> constraints_;
  std::vector<Bound> launch_;
  std::vector<std::size_t> below_;  // combinations under one choice of the first `level` parameters
  std::vector<std::unique_ptr<bool[]>> known_;  // per level: the slots whose values are set by then
  // A template that has REPACK as a parameter: the problem's names change with its value, so they
  // are rewritten (from fixed_[value]) at its level.
  int repack_param_ = -1;
  std::vector<std::pair<int, std::int64_t>> fixed_[3];  // per REPACK value: slot, value
};

}  // namespace tiletune::tuner
