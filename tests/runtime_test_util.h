// Runs a GEMM through the C API on the host backend, on fresh random data checked against fp64:
// shared by the tests that drive the runtime (host memory is the runtime's memory there).
#pragma once
#include "common/error.h"
#include "gpu/backend.h"
#include "runtime/api_types.h"
#include "runtime/tiletune.hpp"
#include "ops/gemm/inputs.h"

namespace tiletune::testing_util {

inline tiletune_datatype_t c_api_type(DataType t) { return api_type(t); }

inline ops::ValidationResult dispatch_host(tiletune_handle_t h, const GemmProblem& problem) {
  auto dev = gpu::open_device(gpu::BackendKind::Host, 0);
  ops::GemmInputs data(*dev, problem, /*rotate=*/false);
  const GemmProblem& p = data.problem();
  return data.validate([&](const TtGemmParams& a) {
    const tiletune_operation_t op_a = p.trans_a ? TILETUNE_OP_T : TILETUNE_OP_N, op_b = p.trans_b ? TILETUNE_OP_T : TILETUNE_OP_N;
    const tiletune_compute_t compute = p.compute_tf32 ? TILETUNE_COMPUTE_32F_FAST_TF32 : TILETUNE_COMPUTE_32F;
    // Inputs of two types through the entry point that names B's; the others as callers before it.
    const tiletune_status_t s =
        p.mixed_inputs()
            ? tiletune_gemm_strided_batched_mixed(h, op_a, op_b, p.m, p.n, p.k, a.alpha, a.a, c_api_type(p.a_type), p.lda,
                                                  p.stride_a, a.b, c_api_type(p.type_b()), p.ldb, p.stride_b, a.beta,
                                                  a.c, c_api_type(p.c_type), p.ldc, p.stride_c, p.batch, compute, nullptr)
            : tiletune_gemm_strided_batched_ex(h, op_a, op_b, p.m, p.n, p.k, a.alpha, a.a, c_api_type(p.a_type), p.lda,
                                               p.stride_a, a.b, p.ldb, p.stride_b, a.beta, a.c, c_api_type(p.c_type),
                                               p.ldc, p.stride_c, p.batch, compute, nullptr);
    if (s != TILETUNE_SUCCESS) throw Error(tiletune_last_error());
  });
}

}  // namespace tiletune::testing_util
