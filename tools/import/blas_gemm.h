// What rocBLAS, hipBLASLt and TunableOp record of a GEMM, and its tiletune problem.
//
// The convention: all three log the BLAS call itself, column-major, D = alpha op(A) op(B) + beta C
// with op(A) m x k, op(B) k x n, C and D m x n, transA / transB and leading dimensions of the
// stored (untransposed) matrices. tiletune's GemmProblem is the same convention
// (solutions/gemm_problem.h, runtime/tiletune.h), so a logged call maps field for field: transA T
// is "transA": "T", m is m, lda is lda. PyTorch's row-major tensors were already swapped into it by
// PyTorch before the BLAS was called (out = a @ b is out^T = b^T a^T: the BLAS A is `b`, m is
// out's column count), so nothing here swaps again. Only the PyTorch trace reader, which sees
// tensors rather than BLAS calls, does that swap (torch_trace.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "solutions/gemm_problem.h"
#include "tools/import/workload.h"

namespace tiletune::imports {

struct BlasGemm {
  std::string trans_a = "N", trans_b = "N";  // N, T, or C (the conjugate: for real types, T)
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;  // 0: not logged (packed)
  // Batch strides in elements; not logged: packed. A logged 0 with batch > 1 is a broadcast operand.
  std::optional<std::int64_t> stride_a, stride_b, stride_c, stride_d;
  double beta = 0;
  // BLAS type names as rocBLAS and hipBLASLt write them: f32_r, f16_r, bf16_r, f64_r, f8_r, i8_r...
  std::string a_type, b_type, c_type, d_type;
  // f32_r, xf32_r (tf32), f16_r... with or without hipBLASLt's "c_" prefix; empty: not recorded
  // (then ImportOptions::tf32 decides for f32).
  std::string compute;
};

// The tiletune problem, or Skip (Unsupported) for what tiletune does not compute: types other than
// f32/f16/bf16, A and B or C and D of different types, broadcast batches (stride 0), D laid out
// apart from C where C is read.
GemmProblem to_problem(const BlasGemm& g, const ImportOptions& options);

// A bench command line (rocblas-bench, hipblaslt-bench) as its options: "--lda 64" and "-m 4" are
// name and value, "--bias_vector" a flag (empty value). Reading starts after the token naming
// `program`; Skip (Unparseable) when the line holds no such token.
class BenchArgs {
 public:
  BenchArgs(const std::string& line, const std::string& program);
  bool has(std::initializer_list<const char*> names) const;
  // The value of the first of `names` present; `fallback` when none is.
  std::string text(std::initializer_list<const char*> names, const std::string& fallback = "") const;
  std::optional<std::int64_t> maybe_integer(std::initializer_list<const char*> names) const;
  std::int64_t integer(std::initializer_list<const char*> names, std::int64_t fallback) const;
  std::int64_t required_integer(std::initializer_list<const char*> names) const;
  double number(std::initializer_list<const char*> names, double fallback) const;

 private:
  std::map<std::string, std::string> values_;
};

// The GEMM fields rocblas-bench and hipblaslt-bench share (sizes, leading dimensions, strides,
// batch, beta, transposes under either's name, the types as logged; the caller fills in what its
// library implies where a type is not logged).
BlasGemm bench_gemm(const BenchArgs& args);

}  // namespace tiletune::imports
