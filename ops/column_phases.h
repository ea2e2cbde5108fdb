// C's column phases at launch (REPACK 2; solutions/gemm_problem.h, column_phases): the launches
// one call of such a solution makes, worked out from the call's pointers, since where each column's
// first 16-byte boundary falls depends on C's address as well as on ldc.
#pragma once
#include <functional>

#include "gpu/backend.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/gemm_problem.h"

namespace tiletune::ops {

// Enqueues on `stream`, for the call `args` (workspace set; `scratch`: plan.bytes of it for the
// edges), the kernel once for the first rows of every column into the scratch, once for the last
// rows, once per phase on C itself, then the two edges copied into C; with beta != 0, C's edge rows
// are first copied into the scratch, which the edge launches then read. `run` launches the kernel on
// the parameters of one of those GEMMs (whose own sizes and leading dimensions it carries).
void run_column_phases(gpu::Device& dev, const GemmProblem& problem, const ColumnPhases& plan, const TtGemmParams& args,
                       void* scratch, gpu::Stream stream, const std::function<void(const TtGemmParams&)>& run);

}  // namespace tiletune::ops
