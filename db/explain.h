// `tiletune db explain`: which kernel the runtime would run for one problem on one arch, and why.
//
// The rules themselves live in solutions/selection.h, shared with the runtime.
#pragma once
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/compiled.h"
#include "db/database.h"
#include "gpu/backend.h"
#include "solutions/kernel_template.h"
#include "solutions/selection.h"
#include "solutions/problem.h"

namespace tiletune::db {

// A problem from the JSON of a tuning config's problem: a GEMM (dtype or a_type/c_type, compute,
// transA, transB, m, n, k, batch, lda, ldb, ldc, stride_*, beta_zero) or, with "kind": "conv", a
// convolution (solutions/conv_problem.h); validated and canonical.
// Throws Error saying what is wrong (not JSON, not an object, an unknown field, a bad value).
Problem parse_problem_json(const std::string& text);

// The device properties the kernel constraints read, for an arch known only by name (and by the
// devices table row when there is one): "sm_XY" -> CUDA with compute capability XY, "gfxNNN" ->
// HIP (wave64 on gfx9, wave32 after), anything else -> the host backend.
gpu::DeviceInfo device_for_arch(const std::string& arch, const std::optional<DeviceRecord>& measured_on);

// Why the runtime would skip this winner when loading the database (unknown template, broken
// constraint on this device), or nullopt when it is used.
std::optional<std::string> winner_unusable(const WinnerRecord& w, const gpu::DeviceInfo& dev);

struct Explanation {
  Problem problem;  // canonical
  std::string key;
  std::string arch;
  gpu::DeviceInfo device;  // as assumed for the constraints
  enum class Choice { Tuned, Nearest, Vendor, Fallback, NoKernel } choice = Choice::NoKernel;
  std::optional<WinnerRecord> neighbour;         // the nearest tuned problem's winner (Nearest)
  double distance = 0;                           // its distance (solutions/selection.h)
  bool generic = false;                          // the neighbour is a generic kernel of the pool
  std::optional<WinnerRecord> winner;            // the exact match, if any
  std::optional<MeasurementRow> measurement;     // its winning measurement
  std::optional<ProvenanceRecord> provenance;
  std::optional<CodeObjectRecord> code_object;   // its stored code object (bytes included)
  std::string untuned_reason;                    // why no tuned kernel (Fallback / NoKernel)
  std::string rule;                              // why this rung, for the untuned rungs
  // Tuned: vendor time over the winner's on this problem (NaN: not measured); under kKernelMargin
  // the runtime has the vendor serve a kernel winner (kernel_serves).
  double vendor_ratio = std::numeric_limits<double>::quiet_NaN();
  Solution fallback;                             // the default solution run (Fallback)
  std::vector<std::pair<std::string, std::string>> rejected;  // fallback templates passed over
  std::vector<std::string> tuned_neighbours;     // keys of tuned problems with the same types and layout
  // Whether the database holds any measurement of this arch (false: compile-only, nothing has run).
  bool measured = true;
  // The compile-only candidates of this problem and arch (schema 8), in the model's order:
  // compiled, never run or timed; the runtime serves none of them.
  std::vector<RankedCompiled> compiled;
};

// `given` when the database has measurements or compile-only candidates of it, else the database's
// only arch; Error naming the arches otherwise (unknown arch, or several and none given).
std::string resolve_arch(Database& db, const std::string& given);

// Throws Error for an arch the database has no measurements of (naming those it has).
Explanation explain(Database& db, const Problem& problem, const std::string& arch);
std::string format(const Explanation& e);
// The same as data, for `db explain --json` (docs/cli-json.md).
nlohmann::ordered_json to_json(const Explanation& e);

}  // namespace tiletune::db
