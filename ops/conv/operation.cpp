// Convolution as an Operation (ops/operation.h).
#include <cstdint>
#include <string>

#include "ops/conv/inputs.h"
#include "ops/operation.h"
#ifdef TILETUNE_WITH_TMA
#include "ops/cuda/tma_arguments.h"
#endif

namespace tiletune::ops {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
bool all_aligned16(const Pointers& ptrs) { return aligned16(ptrs[0]) && aligned16(ptrs[1]) && aligned16(ptrs[2]); }

class ConvOperation final : public Operation {
 public:
  ProblemKind kind() const override { return ProblemKind::Conv; }

  std::vector<std::uint8_t> tma_arguments([[maybe_unused]] const KernelTemplate& t, [[maybe_unused]] const CallParams& params,
                                          [[maybe_unused]] const Problem& kernel_problem,
                                          [[maybe_unused]] const Variables& vars) const override {
#ifdef TILETUNE_WITH_TMA
    if (t.arguments() == KernelTemplate::Arguments::ConvAsGemmWithTma)
      return gpu::cuda::make_tma_conv_gemm_arguments(params.conv, kernel_problem, vars);
    if (t.arguments() == KernelTemplate::Arguments::ConvRowsWithTma)
      return gpu::cuda::make_tma_conv_rows_arguments(params.conv, kernel_problem.conv(), vars);
    return gpu::cuda::make_tma_conv_arguments(params.conv, kernel_problem.conv(), vars);
#else
    no_tma_arguments(t);
#endif
  }

  // Convolution kernels gather their operands themselves: nothing is copied first, and element
  // alignment is all a kernel without TMA needs.
  std::optional<RepackPlan> repack_plan(const Variables&, const Problem&) const override { return std::nullopt; }
  void fit_to_pointers(Variables&, const Problem&, const Pointers&) const override {}

  // TMA templates read two of x, w, y through descriptors on 16-byte bases: fwd x and w, dgrad y
  // and w, wgrad x and y.
  static bool tma_bases_aligned(const Problem& p, const Pointers& ptrs) {
    switch (p.conv().direction) {
      case ConvDirection::BackwardData: return aligned16(ptrs[2]) && aligned16(ptrs[1]);
      case ConvDirection::BackwardFilter: return aligned16(ptrs[0]) && aligned16(ptrs[2]);
      case ConvDirection::Forward: break;
    }
    return aligned16(ptrs[0]) && aligned16(ptrs[1]);
  }
  // A kernel that also stores its output by TMA (EPI 1 of a GEMM template's kernel on the
  // convolution, conv_as_gemm_tma, or of wgmma_conv) or in 16-byte vectors from each warp (wgmma_conv's
  // EPI 2) needs all three on 16 bytes.
  bool admits(const KernelTemplate& t, const Solution& s, const Problem& p, const Pointers& ptrs,
              const gpu::DeviceInfo&) const override {
    switch (t.arguments()) {
      case KernelTemplate::Arguments::Params: return true;
      case KernelTemplate::Arguments::ParamsWithTma: {
        const auto epi = s.params.find("EPI");
        return epi != s.params.end() && epi->second != 0 ? all_aligned16(ptrs) : tma_bases_aligned(p, ptrs);
      }
      case KernelTemplate::Arguments::ConvRowsWithTma: return tma_bases_aligned(p, ptrs);
      case KernelTemplate::Arguments::ConvAsGemmWithTma: break;
    }
    return all_aligned16(ptrs);
  }
  std::string pointer_class(const Problem& p, const Pointers& ptrs) const override {
    if (!tma_bases_aligned(p, ptrs)) return "|unaligned";
    return all_aligned16(ptrs) ? "" : "|output_unaligned";
  }

  std::unique_ptr<Inputs> make_inputs(gpu::Device& dev, const Problem& p, bool rotate, std::uint64_t seed,
                                      double device_reference_flops) const override {
    return std::make_unique<ConvInputs>(dev, p.conv(), rotate, seed, device_reference_flops);
  }
};

}  // namespace

const Operation& conv_operation() {
  static const ConvOperation op;
  return op;
}

}  // namespace tiletune::ops
