// GEMM as an Operation (ops/operation.h).
#include <algorithm>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "ops/gemm/inputs.h"
#include "ops/operation.h"
#include "ops/repack.h"
#ifdef TILETUNE_WITH_TMA
#include "ops/cuda/tma_arguments.h"
#endif

namespace tiletune::ops {
namespace {

// The vector width in elements (1, 2, 4, 8 up to 16 bytes) that the pointer's alignment allows.
int pointer_alignment(const void* ptr, int elem_bytes) {
  auto addr = reinterpret_cast<std::uintptr_t>(ptr);
  int v = 1;
  while (v * elem_bytes < 16 && addr % (std::uintptr_t(v) * 2 * elem_bytes) == 0) v *= 2;
  return v;
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

class GemmOperation final : public Operation {
 public:
  ProblemKind kind() const override { return ProblemKind::Gemm; }

  std::vector<std::uint8_t> tma_arguments([[maybe_unused]] const KernelTemplate& t, [[maybe_unused]] const CallParams& params,
                                          [[maybe_unused]] const Problem& kernel_problem,
                                          [[maybe_unused]] const Variables& vars) const override {
#ifdef TILETUNE_WITH_TMA
    return gpu::cuda::make_tma_gemm_arguments(params.gemm, kernel_problem.gemm(), vars);
#else
    no_tma_arguments(t);
#endif
  }

  std::optional<RepackPlan> repack_plan(const Variables& vars, const Problem& p) const override {
    if (!repacks(vars)) return std::nullopt;
    return tiletune::repack_plan(p.gemm());
  }

  void fit_to_pointers(Variables& vars, const Problem& problem, const Pointers& ptrs) const override {
    const GemmProblem& p = problem.gemm();
    const int ab = size_of(p.a_type), cb = size_of(p.c_type);
    // An operand the solution copies is read from the workspace, whatever its pointer.
    const RepackPlan plan = repacks(vars) ? tiletune::repack_plan(p) : RepackPlan{};
    if (!plan.a.copied) vars["ALIGN_A"] = std::min<std::int64_t>(vars["ALIGN_A"], pointer_alignment(ptrs[0], ab));
    if (!plan.b.copied) vars["ALIGN_B"] = std::min<std::int64_t>(vars["ALIGN_B"], pointer_alignment(ptrs[1], ab));
    // C's column phases start each phase at a 16-byte boundary of C, wherever C starts.
    const auto r = vars.find("REPACK");
    if (r == vars.end() || r->second != kRepackColumnPhases)
      vars["ALIGN_C"] = std::min<std::int64_t>(vars["ALIGN_C"], pointer_alignment(ptrs[2], cb));
  }

  bool admits(const KernelTemplate& t, const Solution& s, const Problem& p, const Pointers& ptrs,
              const gpu::DeviceInfo& dev) const override {
    // Pointers aligned to 16 bytes satisfy any vector width the tuner allowed for these ld's.
    if (aligned16(ptrs[0]) && aligned16(ptrs[1]) && aligned16(ptrs[2])) return true;
    Variables vars = t.variables(s, p, dev);
    fit_to_pointers(vars, p, ptrs);
    return !t.violation(vars);
  }

  std::string pointer_class(const Problem& problem, const Pointers& ptrs) const override {
    const GemmProblem& p = problem.gemm();
    const int ab = size_of(p.a_type), cb = size_of(p.c_type);
    return "|ptr" + std::to_string(pointer_alignment(ptrs[0], ab)) + "," + std::to_string(pointer_alignment(ptrs[1], ab)) +
           "," + std::to_string(pointer_alignment(ptrs[2], cb));
  }

  std::unique_ptr<Inputs> make_inputs(gpu::Device& dev, const Problem& p, bool rotate, std::uint64_t seed,
                                      double device_reference_flops) const override {
    return std::make_unique<GemmInputs>(dev, p.gemm(), rotate, seed, device_reference_flops);
  }
};

}  // namespace

const Operation& gemm_operation() {
  static const GemmOperation op;
  return op;
}

}  // namespace tiletune::ops
