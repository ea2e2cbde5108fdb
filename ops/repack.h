// Operand repacking at launch (solutions/gemm_problem.h, repack_plan): a kernel whose solution sets
// REPACK 1 is handed copies of A and/or B, made on its stream just before it, in the repack region
// at the end of its workspace.
#pragma once
#include "gpu/backend.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/kernel_template.h"
#include "solutions/gemm_problem.h"

namespace tiletune::ops {

// Whether the solution these variables belong to copies any operand.
inline bool repacks(const Variables& vars) {
  auto r = vars.find("REPACKED");
  return r != vars.end() && r->second > 0;
}

// `args` (for the problem `plan` was made for, workspace set) with the operands the plan copies
// copied into the workspace and pointed at there. Enqueued on `stream`.
TtGemmParams repack_operands(gpu::Device& dev, const KernelTemplate& t, const Variables& vars, const RepackPlan& plan,
                             TtGemmParams args, gpu::Stream stream);

}  // namespace tiletune::ops
