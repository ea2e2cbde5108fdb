// A template's kernel set up for one problem: its variables, launch dimensions, workspace and
// operand copies, worked out once; launch() then runs it on the parameters of any call of that
// problem. The tuner's measurer, the runtime's ladder and the tests launch through this one path.
#pragma once
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "ops/operation.h"

namespace tiletune::ops {

// The argument bytes of a kernel's last launch, for templates whose argument is built from the
// caller's pointers (TMA descriptors: two driver encodes per call): rebuilt only when the
// parameters differ byte for byte from the previous call's, so that a trainer calling the same
// GEMM on the same buffers step after step encodes once. One per kernel set up for a problem
// (whose template and variables are fixed, and with them everything the bytes depend on besides
// the parameters).
class ArgumentCache {
 public:
  template <class Encode, class Use>
  void use(const CallParams& p, Encode&& encode, Use&& launch) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto* key = static_cast<const std::uint8_t*>(p.data());
    if (key_.size() != p.size() || std::memcmp(key_.data(), key, p.size()) != 0) {
      bytes_ = encode();
      key_.assign(key, key + p.size());
    }
    launch(bytes_);
  }

 private:
  std::mutex mu_;
  std::vector<std::uint8_t> key_, bytes_;
};

class KernelLaunch {
 public:
  KernelLaunch() = default;
  // `p` canonical; `vars` the solution's variables for it (already fitted to the call's pointers
  // where that matters).
  KernelLaunch(const KernelTemplate& t, Variables vars, const Problem& p);
  const KernelTemplate* tmpl() const { return tmpl_; }
  const Variables& vars() const { return vars_; }
  const gpu::LaunchDims& dims() const { return dims_; }
  std::int64_t workspace_bytes() const { return workspace_bytes_; }
  bool copies_operands() const { return repack_.has_value(); }
  int column_phases() const { return phases_ ? phases_->phases : 0; }
  // Enqueues `kernel` on `stream` for `params` (the problem's, with the caller's pointers);
  // `workspace`: workspace_bytes() of zeroed scratch (null when none is needed). `cache`: reuse
  // the argument bytes of the previous call with the same parameters (null: built every call; a
  // solution run in column phases builds them every call).
  void launch(gpu::Device& dev, gpu::Kernel& kernel, CallParams params, void* workspace, gpu::Stream stream,
              ArgumentCache* cache = nullptr) const;

 private:
  const KernelTemplate* tmpl_ = nullptr;
  const Operation* op_ = nullptr;
  Variables vars_;
  gpu::LaunchDims dims_;
  std::int64_t workspace_bytes_ = 0;
  std::optional<RepackPlan> repack_;  // the operand copies made first
  std::optional<ColumnPhases> phases_;  // or C's column phases, a launch each (ops/column_phases.h)
  Problem kernel_problem_;            // what the kernel runs: the problem, with the copies' ld's
};

}  // namespace tiletune::ops
