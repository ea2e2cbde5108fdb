// One kind of problem (GEMM, convolution) as the tuner and the runtime see it. Everything that
// depends on the kind is behind this interface: the by-value parameters of a call, the argument
// bytes of a template's kernel, the operand copies a solution makes first, which pointers a
// solution admits, and the inputs and reference its candidates are validated on. The measurer,
// the output check, the runtime's ladder and the tests launch kernels through ops/launch.h over
// it, written once. A new kind is a folder beside ops/gemm and ops/conv and a line in
// ops/operation.cpp.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "gpu/backend.h"
#include "kernel_templates/conv_params.h"
#include "kernel_templates/gemm_params.h"
#include "ops/output_check.h"
#include "solutions/problem.h"
#include "solutions/kernel_template.h"

namespace tiletune::ops {

// A call's parameters, of either kind: the struct its kernels take (or, for templates with TMA
// arguments, the struct the descriptors are built from), and its vendor.
struct CallParams {
  ProblemKind kind = ProblemKind::Gemm;
  union {
    TtGemmParams gemm;
    TtConvParams conv;
  };
  CallParams() : gemm{} {}
  CallParams(const TtGemmParams& p) : kind(ProblemKind::Gemm), gemm(p) {}  // implicit: as the kernels take them
  CallParams(const TtConvParams& p) : kind(ProblemKind::Conv), conv(p) {}
  const void* data() const { return kind == ProblemKind::Conv ? static_cast<const void*>(&conv) : &gemm; }
  std::size_t size() const { return kind == ProblemKind::Conv ? sizeof conv : sizeof gemm; }
  void set_workspace(void* w) { (kind == ProblemKind::Conv ? conv.workspace : gemm.workspace) = w; }
};

// A call's three device pointers: a GEMM's a, b, c; a convolution's x, w, y.
using Pointers = std::array<const void*, 3>;

// The inputs of one problem on one device and their fp64 reference, made once per problem and
// shared by all its candidates (ops/gemm/inputs.h, ops/conv/inputs.h say how each is made).
class Inputs {
 public:
  virtual ~Inputs() = default;
  virtual std::size_t sets() const = 0;  // copies of the operands that timing rotates through
  virtual CallParams call_params(std::size_t set) const = 0;
  // Poisons the output, runs `launch` on copy 0, waits, and compares with the reference.
  ValidationResult validate_call(const std::function<void(const CallParams&)>& launch) {
    reset_output();
    launch(call_params(0));
    device().synchronize();
    return check_output();
  }
  // The same, for a `launch` that takes the kind's own struct (TtGemmParams or TtConvParams); a
  // launch of the other kind's struct is an Error.
  template <class Launch>
  ValidationResult validate(Launch&& launch) {
    constexpr bool gemm = std::is_invocable_v<Launch&, const TtGemmParams&>;
    static_assert(gemm != std::is_invocable_v<Launch&, const TtConvParams&>,
                  "validate takes a launch of TtGemmParams or of TtConvParams (validate_call takes CallParams)");
    return validate_call([&](const CallParams& p) {
      if ((p.kind == ProblemKind::Gemm) != gemm) throw Error("validate: a launch of the other problem kind's parameters");
      if constexpr (gemm) launch(p.gemm);
      else launch(p.conv);
    });
  }
  virtual void reset_output() = 0;
  virtual ValidationResult check_output() = 0;

 protected:
  virtual gpu::Device& device() = 0;
};

class Operation {
 public:
  virtual ~Operation() = default;
  virtual ProblemKind kind() const = 0;
  // The argument bytes of `t`'s kernel for `params` where the template takes TMA descriptors built
  // from them (ops/cuda/tma_arguments.h; Error where this build has none). `kernel_problem` is the
  // problem the kernel runs (after its operand copies), `vars` the solution's variables.
  virtual std::vector<std::uint8_t> tma_arguments(const KernelTemplate& t, const CallParams& params,
                                                  const Problem& kernel_problem, const Variables& vars) const = 0;
  // The operand copies a solution with these variables makes before its kernel (ops/repack.h);
  // none for kinds that copy nothing.
  virtual std::optional<RepackPlan> repack_plan(const Variables& vars, const Problem& p) const = 0;
  // `vars` lowered to what these pointers allow where their alignment is below what the problem's
  // leading dimensions imply.
  virtual void fit_to_pointers(Variables& vars, const Problem& p, const Pointers& ptrs) const = 0;
  // Whether template `t`'s solution `s` may run `p` on these pointers.
  virtual bool admits(const KernelTemplate& t, const Solution& s, const Problem& p, const Pointers& ptrs,
                      const gpu::DeviceInfo& dev) const = 0;
  // What of the pointers decides which kernels take them, as text: "" when nothing does.
  virtual std::string pointer_class(const Problem& p, const Pointers& ptrs) const = 0;
  // The tuner's inputs for `p`: `rotate` = false keeps one copy (validation only); problems
  // above `device_reference_flops` get their reference from the device (GPUs only).
  virtual std::unique_ptr<Inputs> make_inputs(gpu::Device& dev, const Problem& p, bool rotate = true,
                                              std::uint64_t seed = 0, double device_reference_flops = 1e9) const = 0;
};

const Operation& operation(ProblemKind kind);

// The Error of a build without TMA descriptors (no CUDA) for a template that needs them.
[[noreturn]] void no_tma_arguments(const KernelTemplate& t);
inline const Operation& operation(const Problem& p) { return operation(p.kind()); }

// Relative-norm tolerance of a problem's output: rounding of the output type plus fp32
// accumulation error growing with the square root of the reduction length (a convolution's
// implicit-GEMM K).
double tolerance(const Problem& p);

}  // namespace tiletune::ops
