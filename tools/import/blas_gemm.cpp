#include "tools/import/blas_gemm.h"

#include <cstdlib>
#include <sstream>

namespace tiletune::imports {
namespace {

[[noreturn]] void unsupported(const std::string& why) { throw Skip{SkipKind::Unsupported, why}; }

// f8_r / bf8_r: OCP e4m3 / e5m2 (PyTorch's Float8_e4m3fn / Float8_e5m2), fp8 inputs only.
DataType blas_type(const std::string& name, const char* operand) {
  if (name == "f32_r") return DataType::F32;
  if (name == "f16_r") return DataType::F16;
  if (name == "bf16_r") return DataType::BF16;
  if (name == "f8_r") return DataType::E4M3;
  if (name == "bf8_r") return DataType::E5M2;
  if (name.empty()) throw Skip{SkipKind::Unparseable, std::string("no type for ") + operand};
  unsupported(std::string(operand) + " of type " + name +
              " (tiletune computes f32_r, f16_r and bf16_r, and fp8 f8_r / bf8_r inputs)");
}

bool transposed(const std::string& t, const char* which) {
  if (t == "N" || t == "n") return false;
  if (t == "T" || t == "t" || t == "C" || t == "c") return true;  // C: conjugate, of a real matrix its transpose
  throw Skip{SkipKind::Unparseable, std::string(which) + " must be N, T or C, got '" + t + "'"};
}

// tiletune accumulates in f32; tf32 when asked. A half-precision compute type (rocBLAS's hgemm,
// hipBLASLt's c_f16_r) is imported as f32 accumulation, which is what tiletune would serve it with.
bool tf32_compute(const BlasGemm& g, DataType a, const ImportOptions& o) {
  std::string c = g.compute.rfind("c_", 0) == 0 ? g.compute.substr(2) : g.compute;
  if (c.empty()) return o.tf32 && a == DataType::F32;
  if (c == "f32_r" || c == "f16_r" || c == "bf16_r") return false;
  if (c == "xf32_r") {
    if (a != DataType::F32) unsupported("compute type " + g.compute + " with " + g.a_type + " inputs");
    return true;
  }
  unsupported("compute type " + g.compute + " (tiletune accumulates in f32, or in tf32 from f32 inputs)");
}

std::int64_t batch_stride(const std::optional<std::int64_t>& s, std::int64_t batch, const char* name) {
  if (!s || batch == 1) return 0;  // packed, or irrelevant
  if (*s == 0) unsupported(std::string(name) + " 0: a broadcast operand (tiletune's batch stride 0 means packed)");
  return *s;
}

}  // namespace

GemmProblem to_problem(const BlasGemm& g, const ImportOptions& options) {
  GemmProblem p;
  p.a_type = blas_type(g.a_type, "A");
  const DataType b = blas_type(g.b_type, "B");
  if (b != p.a_type && !(is_fp8(b) && is_fp8(p.a_type)))
    unsupported("A of type " + g.a_type + " and B of type " + g.b_type);
  if (b != p.a_type) p.b_type = b;  // e4m3 x e5m2 and the reverse: the backward pass's fp8 products
  p.c_type = blas_type(g.c_type, "C");
  if (is_fp8(p.c_type)) unsupported("an fp8 output (" + g.c_type + "): tiletune's fp8 GEMMs write f32, f16 or bf16");
  if (!g.d_type.empty() && blas_type(g.d_type, "D") != p.c_type)
    unsupported("C of type " + g.c_type + " and D of type " + g.d_type + " (tiletune writes D in C's place)");
  p.compute_tf32 = tf32_compute(g, p.a_type, options);
  p.trans_a = transposed(g.trans_a, "transA");
  p.trans_b = transposed(g.trans_b, "transB");
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.batch = g.batch;
  p.beta_zero = g.beta == 0;
  p.lda = g.lda;
  p.ldb = g.ldb;
  // tiletune reads C (where beta != 0) and writes the result in the same place, so the output is
  // laid out as D is; a C laid out otherwise and read is a problem it does not take.
  p.ldc = g.ldd > 0 ? g.ldd : g.ldc;
  if (!p.beta_zero && g.ldd > 0 && g.ldc > 0 && g.ldc != g.ldd)
    unsupported("ldc " + std::to_string(g.ldc) + " and ldd " + std::to_string(g.ldd) + " with beta != 0");
  p.stride_a = batch_stride(g.stride_a, g.batch, "stride_a");
  p.stride_b = batch_stride(g.stride_b, g.batch, "stride_b");
  const auto& out_stride = g.stride_d && *g.stride_d != 0 ? g.stride_d : g.stride_c;
  p.stride_c = batch_stride(out_stride, g.batch, "stride_c");
  if (!p.beta_zero && g.batch > 1 && g.stride_c && g.stride_d && *g.stride_d != 0 && *g.stride_c != *g.stride_d)
    unsupported("stride_c and stride_d differ with beta != 0");
  return p;
}

namespace {

bool is_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

bool is_option(const std::string& s) { return s.size() > 1 && s[0] == '-' && !is_number(s); }

}  // namespace

BenchArgs::BenchArgs(const std::string& line, const std::string& program) {
  std::istringstream in(line);
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) tokens.push_back(t);
  std::size_t i = 0;
  auto names_program = [&](const std::string& t) {
    return t.size() >= program.size() && t.compare(t.size() - program.size(), program.size(), program) == 0 &&
           (t.size() == program.size() || t[t.size() - program.size() - 1] == '/');
  };
  while (i < tokens.size() && !names_program(tokens[i])) ++i;
  if (i == tokens.size()) throw Skip{SkipKind::Unparseable, "not a " + program + " command line"};
  for (++i; i < tokens.size(); ++i) {
    if (!is_option(tokens[i])) continue;  // a stray word (a shell redirection): no option's value
    const bool valued = i + 1 < tokens.size() && !is_option(tokens[i + 1]);
    values_[tokens[i]] = valued ? tokens[i + 1] : "";
    if (valued) ++i;
  }
}

bool BenchArgs::has(std::initializer_list<const char*> names) const {
  for (const char* n : names)
    if (values_.count(n)) return true;
  return false;
}

std::string BenchArgs::text(std::initializer_list<const char*> names, const std::string& fallback) const {
  for (const char* n : names)
    if (auto it = values_.find(n); it != values_.end()) return it->second;
  return fallback;
}

std::optional<std::int64_t> BenchArgs::maybe_integer(std::initializer_list<const char*> names) const {
  for (const char* n : names)
    if (auto it = values_.find(n); it != values_.end()) return parse_int(it->second, n);
  return std::nullopt;
}

std::int64_t BenchArgs::integer(std::initializer_list<const char*> names, std::int64_t fallback) const {
  return maybe_integer(names).value_or(fallback);
}

std::int64_t BenchArgs::required_integer(std::initializer_list<const char*> names) const {
  if (!has(names)) throw Skip{SkipKind::Unparseable, std::string("no ") + *names.begin()};
  return integer(names, 0);
}

double BenchArgs::number(std::initializer_list<const char*> names, double fallback) const {
  for (const char* n : names)
    if (auto it = values_.find(n); it != values_.end()) return parse_number(it->second, n);
  return fallback;
}

BlasGemm bench_gemm(const BenchArgs& a) {
  BlasGemm g;
  g.trans_a = a.text({"--transposeA", "--transA"}, "N");
  g.trans_b = a.text({"--transposeB", "--transB"}, "N");
  g.m = a.required_integer({"-m", "--sizem"});
  g.n = a.required_integer({"-n", "--sizen"});
  g.k = a.required_integer({"-k", "--sizek"});
  g.batch = a.integer({"--batch_count", "--batch"}, 1);
  g.lda = a.integer({"--lda"}, 0);
  g.ldb = a.integer({"--ldb"}, 0);
  g.ldc = a.integer({"--ldc"}, 0);
  g.ldd = a.integer({"--ldd"}, 0);
  g.stride_a = a.maybe_integer({"--stride_a"});
  g.stride_b = a.maybe_integer({"--stride_b"});
  g.stride_c = a.maybe_integer({"--stride_c"});
  g.stride_d = a.maybe_integer({"--stride_d"});
  g.beta = a.number({"--beta"}, 0);  // both benches' default
  g.a_type = a.text({"--a_type"});
  g.b_type = a.text({"--b_type"});
  g.c_type = a.text({"--c_type"});
  g.d_type = a.text({"--d_type"});
  g.compute = a.text({"--compute_type"});
  return g;
}

}  // namespace tiletune::imports
