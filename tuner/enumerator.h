// Parameter space x problems -> candidates, pruned before anything is compiled by the template's
// named constraints against the problem and the device. Pruned candidates are counted by reason;
// each one is listed with its reason only when asked for (a real model's space prunes millions).
#pragma once
#include <concepts>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "solutions/kernel_template.h"
#include "solutions/gemm_problem.h"
#include "solutions/solution.h"

namespace tiletune::tuner {

struct Candidate {
  std::size_t problem_index = 0;
  std::shared_ptr<const KernelTemplate> tmpl;  // shared copy: a candidate outlives the caller's list
  Solution solution;
  gpu::LaunchDims dims;
};

struct PrunedCandidate {
  std::size_t problem_index = 0;
  Solution solution;
  std::string reason;  // "<constraint name>: <expression>"
};

struct Enumeration {
  std::size_t total = 0;  // before pruning
  std::size_t pruned_count = 0;
  std::vector<Candidate> candidates;
  std::vector<PrunedCandidate> pruned;  // empty unless EnumerateOptions::keep_pruned
  std::map<std::string, std::size_t> pruned_by_reason;  // constraint name -> count
  std::vector<std::map<std::string, std::size_t>> pruned_by_problem;  // the same per problem index
};

struct EnumerateOptions {
  bool keep_pruned = false;  // fill Enumeration::pruned
  // Problems are enumerated on this many threads (0: one per core); the result does not depend on it.
  unsigned threads = 0;
};

// Every combination of parameter values of one template.
std::vector<Solution> cartesian(const KernelTemplate& t);
// cartesian(t).size() without building them (throws as cartesian does for a space too large).
std::size_t combinations(const KernelTemplate& t);

// Templates that do not support the device's backend are skipped, and a template is paired only
// with problems of its kind (GEMM or convolution).
// (A template only so that a braced list of GemmProblems is not ambiguous with the overload below.)
Enumeration enumerate_problems(const std::vector<KernelTemplate>& templates, const std::vector<Problem>& problems,
                               const gpu::DeviceInfo& device, const EnumerateOptions& options = {});
template <class P>
  requires std::same_as<P, Problem>
Enumeration enumerate(const std::vector<KernelTemplate>& templates, const std::vector<P>& problems,
                      const gpu::DeviceInfo& device, const EnumerateOptions& options = {}) {
  return enumerate_problems(templates, problems, device, options);
}
// GEMMs only (callers that hold a list of GemmProblem, or write one as a braced list).
Enumeration enumerate(const std::vector<KernelTemplate>& templates, const std::vector<GemmProblem>& problems,
                      const gpu::DeviceInfo& device, const EnumerateOptions& options = {});

}  // namespace tiletune::tuner
