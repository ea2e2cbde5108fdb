// A GEMM problem and its canonical key. The key holds everything that changes which kernel is
// valid or fastest (DESIGN.md): types, transposes, sizes, batch, leading dimensions and batch
// strides, and whether beta is zero. Dropping a field here silently loses tuned results.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace tiletune {

// E4M3: fp8 (1 sign, 4 exponent, 3 mantissa bits, no infinities), GEMM inputs only. S8 / S32: the
// integer GEMM's inputs and its output (int8 x int8 -> int32, as cuBLASLt's and torch._int_mm).
// E5M2: OCP fp8 (1 sign, 5 exponent bits, bias 15, 2 mantissa bits, infinities and NaNs), GEMM
// inputs only. Values are appended, never renumbered.
enum class DataType { F32, F16, BF16, E4M3, S8, S32, E5M2 };

const char* to_string(DataType t);              // "f32", "f16", "bf16", "e4m3", "s8", "s32", "e5m2"
DataType dtype_from_string(const std::string&);  // also fp32/float, fp16/half, fp8/fp8_e4m3, fp8_e5m2, int8, int32
int size_of(DataType t);
const char* device_type_name(DataType t);        // type name in kernel templates: float, tt_half, tt_bf16, ...
bool is_integer(DataType t);                     // S8, S32: exact arithmetic, integer alpha and beta
bool is_fp8(DataType t);                         // E4M3, E5M2

// The pairs of input and output types a GEMM may have: f32, f16, bf16 in and out in any pair;
// fp8 in, f32 / f16 / bf16 out (fp32 accumulation; per-tensor scales folded into alpha); s8 in,
// s32 out (int32 accumulation, alpha and beta integers). A and B share one type, except that fp8
// A and B may differ (e4m3 x e5m2, e5m2 x e4m3: the mixed products of fp8 training's backward pass).
struct GemmProblem {
  DataType a_type = DataType::F32;
  // B's type where it differs from A's; unset means A's. Optional rather than a plain field so that
  // every problem built before B had a type of its own (and every one built by code that names
  // a_type only) keeps meaning "both inputs a_type"; canonical() unsets it where it equals a_type.
  std::optional<DataType> b_type;
  DataType c_type = DataType::F32;
  bool trans_a = false;
  bool trans_b = false;
  std::int64_t m = 1, n = 1, k = 1, batch = 1;
  std::int64_t lda = 0, ldb = 0, ldc = 0;  // 0 means packed
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // 0 means packed (batch > 1)
  bool beta_zero = true;
  bool compute_tf32 = false;  // f32 inputs on tf32 tensor cores (cuBLAS's COMPUTE_32F_FAST_TF32)

  // Fills packed leading dimensions and strides where 0, and zeroes strides when batch == 1,
  // so that two descriptions of the same problem share one key.
  GemmProblem canonical() const;
  // Throws Error naming the offending field (sizes < 1, ld smaller than packed, ...).
  void validate() const;
  // canonical, e.g. "gemm|f32>f32|NN|m4096|n4096|k4096|b1|lda4096|..."; inputs of two types read
  // "gemm|e4m3.e5m2>bf16|...", one type as before ("gemm|e4m3>bf16|...").
  std::string key() const;
  // The input types as keys and labels name them: "bf16", or "e4m3.e5m2" where B's differs from A's.
  std::string input_types() const;
  DataType type_b() const { return b_type.value_or(a_type); }
  bool mixed_inputs() const { return type_b() != a_type; }
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(batch); }

  std::int64_t rows_a() const { return trans_a ? k : m; }  // stored shape of A, column-major
  std::int64_t cols_a() const { return trans_a ? m : k; }
  std::int64_t rows_b() const { return trans_b ? n : k; }
  std::int64_t cols_b() const { return trans_b ? k : n; }
  // Element counts of one whole operand including all batches (what must be allocated).
  std::int64_t elements_a() const;
  std::int64_t elements_b() const;
  std::int64_t elements_c() const;
};

// What a template's TA names: the input type, or "tt_ab<A's, B's>" where A and B differ. A problem of
// one input type keeps the single name, and with it the name expression its stored code objects
// were compiled as.
std::string input_type_name(const GemmProblem& p);

void to_json(nlohmann::json& j, const GemmProblem& p);
void from_json(const nlohmann::json& j, GemmProblem& p);  // throws Error on bad fields

// Largest vector width (in elements, power of two, at most 16 bytes) that every batch's base of an
// operand is aligned to, given its leading dimension and batch stride in elements.
int alignment_elements(std::int64_t ld, std::int64_t stride, std::int64_t batch, int elem_bytes);

// Operand repacking (a solution parameter REPACK = 1, offered by templates with "repack": true): A and B whose leading
// dimension or batch stride is not a multiple of 16 bytes are first copied into scratch memory with
// the leading dimension rounded up to 16 bytes and the batches packed, so that kernels built on
// TMA or 16-byte loads take problems with odd leading dimensions or odd K; C is written in place.
struct RepackedOperand {
  bool copied = false;
  std::int64_t offset = 0;  // of its copy in the scratch, bytes (256-aligned)
};
struct RepackPlan {
  GemmProblem kernel_problem;  // canonical `p` with the copied operands' ld and strides: what the kernel sees
  RepackedOperand a, b;
  std::int64_t bytes = 0;  // scratch for both copies
};
RepackPlan repack_plan(const GemmProblem& p);

// The values of a solution's REPACK besides 0: operand copies (above), C's column phases (below).
constexpr int kRepackOperands = 1, kRepackColumnPhases = 2;

// Column phases (REPACK = 2, offered by templates with "column_phases": true): C whose leading
// dimension is not a multiple of 16 bytes still has columns j, j + P, j + 2P, ... P * ldc elements
// apart, a multiple of 16 bytes for P = 16 / gcd(ldc * c_bytes, 16). Each phase (the columns of one
// j mod P) is a GEMM whose C starts at the column's first 16-byte boundary and ends at its last, so
// a TMA store can write it: A from that row on (K-major A, so the row moves A by whole 16-byte
// lines), B's columns of the phase (K-major B). The rows before the first boundary and after the last
// (under 16 bytes each) are computed by the same kernel for every column into scratch, the first
// 16 bytes' rows and the last 16 to 31 bytes', and copied into place after the phases
// (ops/column_phases.h). TN GEMMs only, one batch, M of at least 64 and every operand 16-byte aligned.
struct ColumnPhases {
  int phases = 0;               // P; 0: the problem does not qualify
  GemmProblem kernel_problem;   // what the variables describe: the phase of most rows and columns
  std::int64_t head_rows = 0;   // rows of the first edge (16 bytes' worth), scratch ld the same
  std::int64_t tail_ld = 0;     // scratch ld of the last edge (32 bytes' worth)
  std::int64_t tail_offset = 0; // bytes into the scratch where the last edge's block starts
  std::int64_t bytes = 0;       // scratch for both edges
};
ColumnPhases column_phases(const GemmProblem& p);

}  // namespace tiletune
