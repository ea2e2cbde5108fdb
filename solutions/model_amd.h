// The AMD side of the analytical model (solutions/model.h): what differs on a CDNA GPU of the arch
// table (gpu/hip/arch_table.h, gpu/hip/arch_model.h), with the same step/tile/round structure.
//
//   peak       the matrix-core rate of the instruction the candidate issues (the model section's
//              instruction_m / instruction_k, looked up for the problem's input type): flops per
//              instruction / issue cycles x SIMDs x clock per CU. gfx950's doubled-K shapes run at
//              twice the rate of the CDNA3 shapes it keeps.
//   issue      each SIMD has its own matrix core: a CU reaches its peak only with a wave on every
//              SIMD, so fewer resident waves than SIMDs scale the math down.
//   occupancy  work-groups per CU: the waves of a work-group spread over the SIMDs; a SIMD holds
//              min(max waves, register file / registers per lane rounded up to the allocation
//              granule) of them; the CU's LDS bounds the work-groups too. Registers come from the
//              code object when a compile-only sweep stored its figures, else from the template.
//   memory     L2 to the CUs for the per-step operand panels (as on NVIDIA); the share of them
//              that misses L2 from the MALL (else HBM) at its own rate; and HBM as a floor on the
//              whole kernel: A, B and C each cross it at least once. The miss share: the
//              work-groups in flight on one L2 domain (XCD) read each A and B panel once between
//              them, and dispatch deals the grid's tiles round-robin over the domains.
// Nothing here has been checked against an AMD GPU; docs/amd.md compares its rankings with
// hipBLASLt's analytical model (origami).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "gpu/backend.h"
#include "solutions/gemm_problem.h"
#include "solutions/kernel_template.h"

namespace tiletune {

struct ModelMachine;

// Static figures of one compiled kernel (what `tune --compile-only` stores beside a code object).
struct CodeFigures {
  std::int64_t registers = 0;   // vector registers per lane (VGPRs and AGPRs); 0: unknown
  std::int64_t lds_bytes = -1;  // static LDS per work-group; -1: unknown
};
// Reads the figures' JSON ({"vgpr": .., "agpr": .., "lds_bytes": ..}). Throws Error naming the
// cause for text that is not such an object.
CodeFigures code_figures_from_json(const std::string& json);

// The machine of an AMD arch that has matrix cores in the arch table; nullopt for any other.
std::optional<ModelMachine> amd_model_machine(const gpu::DeviceInfo& dev, const GemmProblem& p);

// Work-groups of `threads` lanes, each lane holding `registers` vector registers (0: not
// limiting) and the work-group `lds_bytes` of LDS, that one CU of `arch` holds at once; at least 1.
std::int64_t amd_workgroups_per_cu(const std::string& arch, std::int64_t threads, std::int64_t registers,
                                   std::int64_t lds_bytes);

// Matrix-core flop/s of one CU issuing the m x m x k instruction for input type `a` on every
// SIMD; 0 when the arch has no such instruction.
double amd_instruction_flops_per_cu(const std::string& arch, DataType a, std::int64_t m, std::int64_t k);

// The share of the operand bytes of the `in_flight` work-groups (whole device) of a grid_m x
// grid_n grid of tile_m x tile_n tiles (M tiles numbered fastest) that misses L2, in [0, 1].
double amd_l2_miss_share(const std::string& arch, std::int64_t grid_m, std::int64_t grid_n, std::int64_t tile_m,
                         std::int64_t tile_n, std::int64_t in_flight);

// The AMD terms of one candidate: replaces the generic occupancy, per-CU peak and saturating
// threads of model_estimate for a machine made by amd_model_machine.
struct AmdTerms {
  std::int64_t workgroups_per_cu = 1;
  double peak_per_cu = 0;  // flop/s
  double saturating_threads = 0;
  double l2_miss = 0;            // share of the L2 loads that miss
  double miss_bytes_per_s = 0;   // one CU's share of what serves the misses; 0: no miss term
};
AmdTerms amd_terms(const ModelMachine& m, const ModelShape& shape, const GemmProblem& p, const CodeFigures* figures,
                   double cus);

}  // namespace tiletune
