#include "tuner/space_walk.h"

#include <algorithm>
#include <map>
#include <string>

#include "common/error.h"

namespace tiletune::tuner {

// Every name is bound to a slot the way variables() fills its map: defaults, then the solution's
// parameters, then the problem's and the device's names, then the derived values in order. Each
// assignment gets a slot of its own, so a derived value that reuses a name leaves what the earlier
// expressions read untouched, whatever the order the walk evaluates them in.
SpaceWalk::SpaceWalk(const KernelTemplate& t, const Problem& p, const gpu::DeviceInfo& dev, int repack_copy) : t_(t) {
  std::map<std::string, int> slot_of;
  std::vector<std::size_t> slot_level;  // the level at which a slot's value is known
  auto add_slot = [&](std::int64_t value, std::size_t level) {
    initial_.push_back(value);
    slot_level.push_back(level);
    return int(initial_.size()) - 1;
  };
  auto bind = [&](const Expression& e) {
    Bound b{&e, {}, 0};
    for (const auto& name : e.names()) {
      auto it = slot_of.find(name);
      b.slots.push_back(it == slot_of.end() ? -1 : it->second);  // unknown: throws if evaluated
      if (it != slot_of.end()) b.level = std::max(b.level, slot_level[it->second]);
    }
    return b;
  };

  for (const auto& [name, value] : t.defaults()) slot_of[name] = add_slot(value, 0);
  const auto& params = t.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [name, values] = params[i];
    values_.push_back(values);
    param_slot_.push_back(slot_of[name] = add_slot(values.front(), i + 1));
    if (name == "REPACK" && !repack_copy) repack_param_ = int(i);
  }
  if (repack_copy) slot_of["REPACK"] = add_slot(repack_copy, 0);

  // The problem's names depend on REPACK only: fixed for the whole walk unless it is a parameter.
  const auto d = t.defaults().find("REPACK");
  const int repack = repack_copy ? repack_copy : d != t.defaults().end() ? int(d->second) : 0;
  if (repack < 0 || repack > kRepackColumnPhases)
    throw Error("template " + t.name() + ": REPACK " + std::to_string(repack) + " (0, 1 or 2)");
  // As a parameter (0 or 1; column phases are offered by the template's "column_phases" only, for
  // the problems they fit), each value gets its names, which the walk rewrites at its level.
  std::vector<int> values = {repack};
  if (repack_param_ >= 0)
    for (std::int64_t v : values_[std::size_t(repack_param_)]) {
      if (v != 0 && v != kRepackOperands)
        throw Error("template " + t.name() + ": REPACK " + std::to_string(v) +
                    " as a parameter (0, or 1 to copy A and B; \"column_phases\": true offers 2)");
      if (v != repack) values.push_back(int(v));
    }
  Variables fixed[3];
  for (int r : values) t.add_fixed_variables(p, r, dev, fixed[r]);
  const std::size_t fixed_level = repack_param_ >= 0 ? std::size_t(repack_param_) + 1 : 0;
  for (const auto& [name, value] : fixed[repack]) {
    const int slot = slot_of[name] = add_slot(value, fixed_level);
    if (repack_param_ >= 0)
      for (int r : values) {
        auto it = fixed[r].find(name);
        if (it == fixed[r].end()) throw Error("template " + t.name() + ": the problem's names differ with REPACK");
        fixed_[r].emplace_back(slot, it->second);
      }
  }

  derived_.resize(params.size() + 1);
  for (const auto& [name, expr] : t.derived()) {
    Bound b = bind(expr);
    const int slot = add_slot(0, b.level);
    derived_[b.level].push_back({std::move(b), slot});
    slot_of[name] = slot;
  }
  for (const auto& [name, expr] : t.constraints()) constraints_.push_back(bind(expr));
  for (const Expression* e : t.launch_expressions()) launch_.push_back(bind(*e));
  for (std::size_t level = 0; level <= params.size(); ++level) {
    known_.emplace_back(new bool[slot_level.size()]);
    for (std::size_t i = 0; i < slot_level.size(); ++i) known_[level][i] = slot_level[i] <= level;
  }

  below_.assign(params.size() + 1, 1);
  for (std::size_t level = params.size(); level-- > 0;) below_[level] = below_[level + 1] * values_[level].size();
}

struct SpaceWalk::State {
  std::vector<std::int64_t> values;
  bool keep_pruned;
  WalkResult result;
};

WalkResult SpaceWalk::run(bool keep_pruned) const {
  State s{initial_, keep_pruned, {}};
  s.result.pruned_counts.assign(constraints_.size(), 0);
  descend(s, 0, 0, 0);
  return std::move(s.result);
}

// Parameters [0, level) are set; `combination` numbers that choice of them; constraints before
// `next` hold for every candidate below it.
void SpaceWalk::descend(State& s, std::size_t level, std::size_t next, std::size_t combination) const {
  std::int64_t* values = s.values.data();
  for (const Derived& d : derived_[level]) values[d.slot] = d.value.eval(values);
  // Constraints are checked in the template's order, so that the first one broken is blamed:
  // one whose value needs a later parameter stops the checks until the walk has set it. Its
  // value is often known earlier (a short-circuit: "LOADER != 2 || ..." once LOADER is set).
  for (; next < constraints_.size(); ++next) {
    const Bound& c = constraints_[next];
    const std::optional<std::int64_t> holds =
        c.level <= level ? c.eval(values) : c.expr->eval_known(values, c.slots.data(), known_[level].get());
    if (!holds) break;
    if (*holds) continue;
    s.result.pruned_counts[next] += below_[level];
    if (s.keep_pruned)
      for (std::size_t c = combination * below_[level]; c < (combination + 1) * below_[level]; ++c)
        s.result.pruned.push_back({c, next});
    return;
  }
  if (level == values_.size()) {
    std::array<std::int64_t, KernelTemplate::kLaunchExpressions> dims;
    for (std::size_t i = 0; i < dims.size(); ++i) dims[i] = launch_[i].eval(values);
    s.result.admitted.push_back({combination, t_.launch_dims(dims)});
    return;
  }
  const std::vector<std::int64_t>& choices = values_[level];
  for (std::size_t k = 0; k < choices.size(); ++k) {
    values[param_slot_[level]] = choices[k];
    if (int(level) == repack_param_)
      for (const auto& [slot, value] : fixed_[choices[k]]) values[slot] = value;
    descend(s, level + 1, next, combination * choices.size() + k);
  }
}

}  // namespace tiletune::tuner
