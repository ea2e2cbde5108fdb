// One interface for a vendor library of any problem kind (cuBLAS/cuBLASLt, cuDNN, rocBLAS, MIOpen,
// OpenBLAS):
// VendorGemm and VendorConv are this template over each kind's problem and call arguments. The
// library is a template like the generated ones: its parameters are its own algorithm choices, which
// a sweep enumerates (alternatives), times and records, and the runtime calls by choice.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpu/backend.h"

namespace tiletune::gpu {

// One of the library's algorithms, as the parameters of a solution of the "vendor" template: {}
// is the library's own default (what its plain call runs); otherwise the fields of, say, a
// cuBLASLt algorithm configuration or a cuDNN engine configuration. A database stores it, so it
// names the algorithm by what the library publishes about it, not by its rank in a heuristic's list.
using VendorChoice = std::map<std::string, std::int64_t>;

template <class ProblemT, class ArgsT>
class VendorLibrary {
 public:
  virtual ~VendorLibrary() = default;
  virtual std::string name() const = 0;  // "cuBLAS", "cuDNN 9.19.0"
  // The library that runs the non-default choices, with its version ("cuBLASLt 130400").
  virtual std::string choice_source() const { return name(); }
  // "" when the library computes `p`, else why not.
  virtual std::string unsupported(const ProblemT& p) const = 0;
  // The library's other algorithms for `p` at the alignment of these arguments' pointers (at most
  // `limit`, in the library's own order of preference): a sweep times each as a candidate.
  virtual std::vector<VendorChoice> alternatives(const ProblemT&, const ArgsT&, int /*limit*/) { return {}; }
  // Enqueues `p` on `stream` (nullptr: the default stream) with the algorithm `choice`. A choice
  // that cannot run these arguments runs the default instead, or throws when strict. Throws Error
  // on failure. Safe to call from several threads at once.
  virtual void run(const ProblemT& p, const ArgsT& args, Stream stream = nullptr, const VendorChoice& choice = {}) = 0;
  // What the default call runs for `p`, where the library chooses by its own search at the first
  // call (cuDNN's benchmark mode); "" otherwise or before that call.
  virtual std::string algorithm(const ProblemT&) const { return ""; }
  // Strict (the tuner): a choice that cannot run these arguments throws instead of running the
  // default, so that a measurement recorded under an algorithm is that algorithm's.
  void set_strict(bool on) { strict_ = on; }

 protected:
  bool strict_ = false;
};

}  // namespace tiletune::gpu
