// Launch arguments of the "gemm_tma" templates (kernel_templates/wgmma_gemm.cuh): the bytes of a
// TtGemmTmaParams (kernel_templates/gemm_tma_params.h), i.e. the GEMM parameters plus a TMA tensor
// map per operand encoded with the driver's cuTensorMapEncodeTiled.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <vector>

#include "kernel_templates/conv_params.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/conv_problem.h"
#include "solutions/expression.h"
#include "solutions/gemm_problem.h"
#include "solutions/problem.h"

namespace tiletune::gpu::cuda {

using TensorMapEncoder = decltype(&::cuTensorMapEncodeTiled);
using Im2colMapEncoder = decltype(&::cuTensorMapEncodeIm2col);

// Encodes with tensor_map_encoder() (cuda_backend.h). vars must hold BM, BN and BK, may hold
// CLUSTER and CLUSTERN (else 1), L2PROMO (else 3) and EPI (else 0); p.a / p.b (and p.c with EPI 1) are
// the device pointers the maps describe, so the result is valid for these buffers only.
// Throws tiletune::Error when no driver is loaded or the driver rejects a map (e.g. a leading
// dimension or batch stride that is not a multiple of 16 bytes, or a base not 16-byte aligned).
std::vector<std::uint8_t> make_tma_gemm_arguments(const TtGemmParams& p, const GemmProblem& problem,
                                                  const Variables& vars);

// The same with an explicit encoder, tile shape, the cluster's tile rows (CLUSTER: with 2 or 4, B's
// box is 1 / CLUSTER of a K-major tile's rows or of an MN-major box's K lines, each CTA of a tile
// column loading and multicasting its share), L2
// promotion of the maps (L2PROMO: 0 none, 1 64 B, 2 128 B, 3 256 B) and, for the TMA-store
// epilogue (EPI 1), a map over C of type c_type, and the cluster's tile columns (CLUSTERN: with 2 or
// 4, A's box is 1 / cluster_n of a K-major tile's rows or of an MN-major box's K lines).
std::vector<std::uint8_t> encode_tma_gemm_arguments(TensorMapEncoder encode, const TtGemmParams& p,
                                                    DataType a_type, bool trans_a, bool trans_b, int bm,
                                                    int bn, int bk, int cluster = 1, int l2promo = 3, int epi = 0,
                                                    DataType c_type = DataType::BF16, int cluster_n = 1);

// Launch arguments of the "conv_tma" templates (kernel_templates/wgmma_conv.cuh): the bytes of a
// TtConvTmaParams (kernel_templates/conv_tma_params.h), i.e. `p` plus an im2col tensor map over x
// (dy for dgrad) and a tiled one over the filters (dy for wgrad), per direction (layouts in conv_tma_params.h). NHWC / KRSC,
// 16-bit inputs, groups 1, the constraints of wgmma_conv.json; vars must hold BM and BN (PHASE: 0
// when absent). Valid for p's buffers only. Throws tiletune::Error when no driver is loaded, the problem is outside that
// set, a tensor the copies read is not 16-byte aligned, or the driver rejects a map.
std::vector<std::uint8_t> make_tma_conv_arguments(const TtConvParams& p, const ConvProblem& problem,
                                                  const Variables& vars);

// The same with explicit encoders, tile shape and PHASE (1: a strided dgrad's phases share one
// im2col map over dy on a phase's grid, wgmma_conv_index.h; tests pass fakes that record their arguments).
// EPI 1 adds map_out over the output (of out_type, 16-bit), for the warps' TMA stores. HALO 1 puts a
// tiled map in map_im2col's place: box {64 channels, output width + S - 1, the patch's rows, 1} over
// x (dy), the patch of one BM-pixel tile (wgmma_conv.cuh).
std::vector<std::uint8_t> encode_tma_conv_arguments(Im2colMapEncoder encode_im2col, TensorMapEncoder encode_tiled,
                                                    const TtConvParams& p, ConvDirection direction, DataType in_type,
                                                    int bm, int bn, int phase = 0, int epi = 0,
                                                    DataType out_type = DataType::BF16, int halo = 0);

// Launch arguments of the "conv_rows_tma" templates (kernel_templates/wgmma_tap_wgrad.cuh): `p`
// plus tiled maps over rows of x and dy (conv_tma_params.h), boxes by wgmma_tap_wgrad_index.h's
// packing (a 64-channel box past C or K reads zeros; x's walked with the convolution's strides).
// Weight gradients, NHWC, 16-bit inputs, stride 1 or 2; the packing is the solution's PACK (0
// where vars lack it). Throws tiletune::Error when no driver is loaded, the problem is outside
// that set, x or dy is not 16-byte aligned, or the driver rejects a map.
std::vector<std::uint8_t> make_tma_conv_rows_arguments(const TtConvParams& p, const ConvProblem& problem,
                                                       const Variables& vars);

// The same with an explicit encoder and packing (tests pass a fake that records its arguments).
std::vector<std::uint8_t> encode_tma_conv_rows_arguments(TensorMapEncoder encode, const TtConvParams& p,
                                                         const ConvProblem& problem, int pack = 0);

// Launch arguments of the "conv_as_gemm_tma" templates (a GEMM template's kernel on a convolution
// that is a plain GEMM, solutions/conv_gemm.h): the TtGemmTmaParams of that GEMM on p's tensors,
// as make_tma_gemm_arguments encodes them (vars as there). Throws tiletune::Error for a problem that
// is not a plain GEMM (conv_gemm_refusal), inputs other than bf16 / fp16, or what
// make_tma_gemm_arguments throws for (16-byte alignment of the tensors and leading dimensions).
// `problem` is a convolution: its GEMM is Problem::conv_gemm's.
std::vector<std::uint8_t> make_tma_conv_gemm_arguments(const TtConvParams& p, const Problem& problem,
                                                       const Variables& vars);

// The same with an explicit encoder (tests pass a fake that records its arguments).
std::vector<std::uint8_t> encode_tma_conv_gemm_arguments(TensorMapEncoder encode, const TtConvParams& p,
                                                         const Problem& problem, const Variables& vars);

}  // namespace tiletune::gpu::cuda
