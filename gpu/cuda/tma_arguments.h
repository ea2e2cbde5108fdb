// Launch arguments of the "gemm_tma" templates (kernel_templates/wgmma_gemm.cuh): the bytes of a
// TtGemmTmaParams (kernel_templates/gemm_tma_params.h), i.e. the GEMM parameters plus a TMA tensor
// map per operand encoded with the driver's cuTensorMapEncodeTiled.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <vector>

#include "kernel_templates/gemm_params.h"
#include "solutions/expression.h"
#include "solutions/problem.h"

namespace tiletune::gpu::cuda {

using TensorMapEncoder = decltype(&::cuTensorMapEncodeTiled);

// Encodes with tensor_map_encoder() (cuda_backend.h). vars must hold BM, BN and BK, may hold
// CLUSTER (else 1) and L2PROMO (else 3); p.a / p.b are
// the device pointers the maps describe, so the result is valid for these buffers only.
// Throws tiletune::Error when no driver is loaded or the driver rejects a map (e.g. a leading
// dimension or batch stride that is not a multiple of 16 bytes, or a base not 16-byte aligned).
std::vector<std::uint8_t> make_tma_gemm_arguments(const TtGemmParams& p, const GemmProblem& problem,
                                                  const Variables& vars);

// The same with an explicit encoder, tile shape, cluster size (CLUSTER: with 2, B's K-major box
// is half the tile's rows, each CTA of the pair loading and multicasting its half) and L2
// promotion of both maps (L2PROMO: 0 none, 1 64 B, 2 128 B, 3 256 B).
std::vector<std::uint8_t> encode_tma_gemm_arguments(TensorMapEncoder encode, const TtGemmParams& p,
                                                    DataType a_type, bool trans_a, bool trans_b, int bm,
                                                    int bn, int bk, int cluster = 1, int l2promo = 3);

}  // namespace tiletune::gpu::cuda
