// The vendor's own GEMM (cuBLAS on CUDA, OpenBLAS on the host): a candidate of every sweep (timed on
// the tuner's buffers, it can win) and the runtime's rung for problems nobody tuned.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/gemm_problem.h"

namespace tiletune::gpu {

// One of the library's algorithms, as the parameters of a solution of the "vendor" template: {}
// is the library's own default (what its plain call runs); otherwise the fields of, say, a
// cuBLASLt algorithm configuration. A database stores it, so it names the algorithm by what the
// library publishes about it, not by its rank in a heuristic's list.
using VendorChoice = std::map<std::string, std::int64_t>;

class VendorGemm {
 public:
  virtual ~VendorGemm() = default;
  virtual std::string name() const = 0;
  // The library that runs the non-default choices, with its version ("cuBLASLt 130400").
  virtual std::string choice_source() const { return name(); }
  // "" when the library computes `p`, else why not.
  virtual std::string unsupported(const GemmProblem& p) const = 0;
  // The library's other algorithms for `p` at the alignment of these arguments' pointers (at most
  // `limit`; cuBLASLt: its heuristic's best first; rocBLAS: its solutions in its own order): a
  // sweep times each as a candidate.
  virtual std::vector<VendorChoice> alternatives(const GemmProblem&, const TtGemmParams&, int /*limit*/) {
    return {};
  }
  // Enqueues C = alpha op(A) op(B) + beta C on `stream` (nullptr: the default stream) with the
  // algorithm `choice`; one that cannot run these arguments runs the default instead. Throws
  // Error on failure. Safe to call from several threads at once.
  virtual void run(const GemmProblem& p, const TtGemmParams& args, Stream stream = nullptr,
                   const VendorChoice& choice = {}) = 0;
  // Strict (the tuner): a choice that cannot run these arguments throws instead of running the
  // default, so that a measurement recorded under an algorithm is that algorithm's.
  void set_strict(bool on) { strict_ = on; }

 protected:
  bool strict_ = false;
};

// nullptr when the device's vendor library is not built in or cannot be loaded; `why_not` (if
// given) then says why.
std::unique_ptr<VendorGemm> make_vendor_gemm(Device& dev, std::string* why_not = nullptr);

}  // namespace tiletune::gpu
