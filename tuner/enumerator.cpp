#include "tuner/enumerator.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include "common/error.h"
#include "tuner/space_walk.h"

namespace tiletune::tuner {

// A space larger than this is a config's typo, not a sweep: refused before it is expanded.
constexpr double kMaxSpace = 1e7, kMaxCandidates = 5e8;

static double space_size(const KernelTemplate& t) {
  double n = 1;
  for (const auto& [name, values] : t.parameters()) n *= double(values.size());
  return n;
}

static void check_space(const KernelTemplate& t) {
  if (space_size(t) > kMaxSpace)
    throw Error("template " + t.name() + ": its parameter lists make " + std::to_string(std::int64_t(space_size(t))) +
                " combinations, more than " + std::to_string(std::int64_t(kMaxSpace)) +
                ": narrow them in the config's \"templates\"");
}

std::size_t combinations(const KernelTemplate& t) {
  check_space(t);
  return std::size_t(space_size(t));
}

std::vector<Solution> cartesian(const KernelTemplate& t) {
  check_space(t);
  std::vector<Solution> out{Solution{t.name(), {}}};
  for (const auto& [name, values] : t.parameters()) {
    std::vector<Solution> next;
    next.reserve(out.size() * values.size());
    for (const auto& partial : out)
      for (auto v : values) {
        Solution s = partial;
        s.params[name] = v;
        next.push_back(std::move(s));
      }
    out = std::move(next);
  }
  return out;
}

namespace {

// One template's candidates for one problem, in the enumeration's order.
struct Part {
  std::size_t total = 0, pruned_count = 0;
  std::vector<Candidate> candidates;
  std::vector<PrunedCandidate> pruned;
  std::map<std::string, std::size_t> pruned_by_reason;
};

struct Task {
  std::shared_ptr<const KernelTemplate> tmpl;  // shared copy: a candidate outlives the caller's list
  std::size_t problem;
};

// The solution numbered `combination` in cartesian() order, with REPACK = `copy` for a copy.
Solution solution_of(const KernelTemplate& t, std::size_t combination, int copy) {
  Solution s{t.name(), {}};
  const auto& params = t.parameters();
  for (std::size_t i = params.size(); i-- > 0;) {
    const auto& [name, values] = params[i];
    s.params[name] = values[combination % values.size()];
    combination /= values.size();
  }
  if (copy) s.params["REPACK"] = copy;
  return s;
}

// Visits the entries of the walks' lists (of the space, then of its REPACK copies in the order of
// `copies`) in the order enumeration considers them: each solution, then its copies.
template <class Entry, class Visit>
void merge_walks(const std::vector<const std::vector<Entry>*>& lists, const std::vector<int>& copies,
                 const Visit& visit) {
  std::vector<std::size_t> at(lists.size(), 0);
  for (;;) {
    std::size_t best = lists.size();
    for (std::size_t w = 0; w < lists.size(); ++w)
      if (at[w] < lists[w]->size() &&
          (best == lists.size() || (*lists[w])[at[w]].combination < (*lists[best])[at[best]].combination))
        best = w;
    if (best == lists.size()) return;
    visit((*lists[best])[at[best]++], best ? copies[best - 1] : 0);
  }
}

Part enumerate_part(const Task& task, const Problem& problem, const gpu::DeviceInfo& device, bool keep_pruned) {
  const KernelTemplate& t = *task.tmpl;
  const std::vector<int> copies = t.repack_offers(problem);
  std::vector<WalkResult> walks;
  walks.push_back(SpaceWalk(t, problem, device, 0).run(keep_pruned));
  for (int r : copies) walks.push_back(SpaceWalk(t, problem, device, r).run(keep_pruned));
  Part part;
  part.total = combinations(t) * walks.size();
  const auto& constraints = t.constraints();
  for (const WalkResult& w : walks)
    for (std::size_t c = 0; c < w.pruned_counts.size(); ++c) {
      if (!w.pruned_counts[c]) continue;
      const std::string& name = constraints[c].first;
      part.pruned_by_reason[name.substr(0, name.find(':'))] += w.pruned_counts[c];
      part.pruned_count += w.pruned_counts[c];
    }
  std::vector<const std::vector<WalkResult::Admitted>*> admitted;
  std::vector<const std::vector<WalkResult::Pruned>*> pruned;
  std::size_t count = 0;
  for (const WalkResult& w : walks) admitted.push_back(&w.admitted), pruned.push_back(&w.pruned), count += w.admitted.size();
  part.candidates.reserve(count);
  merge_walks(admitted, copies, [&](const WalkResult::Admitted& a, int copy) {
    part.candidates.push_back({task.problem, task.tmpl, solution_of(t, a.combination, copy), a.dims});
  });
  merge_walks(pruned, copies, [&](const WalkResult::Pruned& p, int copy) {
    const auto& [name, expr] = constraints[p.constraint];
    part.pruned.push_back({task.problem, solution_of(t, p.combination, copy), name + ": " + expr.text()});
  });
  return part;
}

}  // namespace

Enumeration enumerate_problems(const std::vector<KernelTemplate>& templates, const std::vector<Problem>& problems,
                               const gpu::DeviceInfo& device, const EnumerateOptions& options) {
  double total = 0;
  for (const auto& t : templates)
    if (t.supports(device.backend)) total += space_size(t) * double(problems.size());
  if (total > kMaxCandidates)
    throw Error("the config makes about " + std::to_string(std::int64_t(total)) + " candidates to check (" +
                std::to_string(problems.size()) + " problems), more than " + std::to_string(std::int64_t(kMaxCandidates)) +
                ": split it, or narrow its templates' parameter lists");
  // Templates in order, each with its problems in order: the order of the result.
  std::vector<Task> tasks;
  for (const auto& t : templates) {
    if (!t.supports(device.backend)) continue;
    check_space(t);
    auto shared = std::make_shared<const KernelTemplate>(t);
    for (std::size_t pi = 0; pi < problems.size(); ++pi)
      if (problems[pi].kind() == t.problem_kind()) tasks.push_back({shared, pi});
  }

  // Parts are independent: threads take the next task, and the parts are joined in task order.
  std::vector<Part> parts(tasks.size());
  std::vector<std::exception_ptr> errors(tasks.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < tasks.size();) try {
        parts[i] = enumerate_part(tasks[i], problems[tasks[i].problem], device, options.keep_pruned);
      } catch (...) {
        errors[i] = std::current_exception();
      }
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min<std::size_t>(options.threads ? options.threads : cores, tasks.size());
  std::vector<std::thread> pool;
  for (std::size_t i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  for (const auto& error : errors)
    if (error) std::rethrow_exception(error);

  Enumeration e;
  e.pruned_by_problem.resize(problems.size());
  std::size_t admitted = 0, pruned = 0;
  for (const Part& p : parts) admitted += p.candidates.size(), pruned += p.pruned.size();
  e.candidates.reserve(admitted);
  e.pruned.reserve(pruned);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    Part& p = parts[i];
    e.total += p.total;
    e.pruned_count += p.pruned_count;
    for (const auto& [reason, n] : p.pruned_by_reason) {
      e.pruned_by_reason[reason] += n;
      e.pruned_by_problem[tasks[i].problem][reason] += n;
    }
    std::move(p.candidates.begin(), p.candidates.end(), std::back_inserter(e.candidates));
    std::move(p.pruned.begin(), p.pruned.end(), std::back_inserter(e.pruned));
    p = Part{};  // its moved-from Solutions' memory back before the next part's
  }
  return e;
}

Enumeration enumerate(const std::vector<KernelTemplate>& templates, const std::vector<GemmProblem>& problems,
                      const gpu::DeviceInfo& device, const EnumerateOptions& options) {
  return enumerate_problems(templates, std::vector<Problem>(problems.begin(), problems.end()), device, options);
}

}  // namespace tiletune::tuner
