// PyTorch TunableOp files (PyTorch's aten/src/ATen/cuda/tunable/README.md; the signatures are
// TunableGemm.h's and GemmCommon.h's Signature()):
//   tunableop_results<device>.csv (PYTORCH_TUNABLEOP_FILENAME): "Validator,<key>,<value>" header
//     lines, then "<op>,<params>,<solution>,<ms>" per tuned GEMM;
//   tunableop_untuned<device>.csv (PYTORCH_TUNABLEOP_RECORD_UNTUNED=1): "<op>,<params>" per GEMM
//     (with PYTORCH_TUNABLEOP_BLAS_LOG=1 a third field, the call as hipblaslt-bench YAML).
// <op>: GemmTunableOp_<T>_<AB>, GemmAndBiasTunableOp_<T>_<AB>, GemmStridedBatchedTunableOp_<T>_<AB>,
//   ScaledGemmTunableOp_<TA>_<TB>_<TC>_<AB>, T float, Half, BFloat16, double...; AB the layouts.
// <params>: "<ab>_<m>_<n>_<k>" (before PyTorch 2.6), "<ab>_<m>_<n>_<k>_ld_<lda>_<ldb>_<ldc>",
//   batched "<ab>_<m>_<n>_<k>_B_<batch>[_ld_<lda>_<ldb>_<ldc>]", scaled "<ab>_<m>_<n>_<k>_ld_<lda>_<ldb>_<ldc>
//   [_rw_<row-wise scales 0/1>_bias_<None or the bias type>]" (GemmCommon.h's ScaledGemmParams).
// These are the arguments of PyTorch's at::cuda::blas::gemm / bgemm, column-major BLAS after
// PyTorch's own row-major swap (nn.Linear's x @ W^T is "TN": m = out_features, A = W), so they map
// to tiletune one to one (blas_gemm.h). Each row is one distinct GEMM, not a count of calls: it
// imports as one call (the files of several ranks or runs add up).
//
// What the signatures leave out, assumed: batch strides packed; beta 0, except a GemmAndBias op,
// whose bias PyTorch's addmm hands tiletune as C (tiletune.torch: beta != 0); for float, the
// compute type by --tf32 (PyTorch's allow_tf32 is not recorded). A ScaledGemm (torch._scaled_mm)
// imports as the fp8 GEMM of its types with per-tensor scales (folded into alpha by the caller);
// row-wise scales, a bias, ROCm's FNUZ fp8 and an fp8 output are skipped as unsupported.
#include <cctype>

#include "tools/import/blas_gemm.h"
#include "tools/import/formats.h"

namespace tiletune::imports {
namespace {

[[noreturn]] void unparseable(const std::string& why) { throw Skip{SkipKind::Unparseable, why}; }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t end; (end = s.find(sep, start)) != std::string::npos; start = end + 1) out.push_back(s.substr(start, end - start));
  out.push_back(s.substr(start));
  return out;
}

// TunableOp's type names (TypeName<T>) as BLAS type names; "" for the ones tiletune does not compute.
std::string blas_type(const std::string& t) {
  if (t == "float") return "f32_r";
  if (t == "Half") return "f16_r";
  if (t == "BFloat16") return "bf16_r";
  if (t == "Float8_e4m3fn") return "f8_r";
  if (t == "Float8_e5m2") return "bf8_r";
  return "";
}

// A ScaledGemm op's "<TA>_<TB>_<TC>" (the names hold underscores themselves: Float8_e4m3fn), split
// at the type names TunableOp writes.
std::vector<std::string> scaled_types(const std::string& s) {
  static const char* const names[] = {"Float8_e4m3fnuz", "Float8_e5m2fnuz", "Float8_e4m3fn", "Float8_e5m2",
                                      "BFloat16", "Half", "float", "double"};
  std::vector<std::string> out;
  for (std::size_t at = 0; at < s.size();) {
    std::string found;
    for (const char* n : names) {
      const std::string name(n);
      if (s.compare(at, name.size(), name) == 0 && (at + name.size() == s.size() || s[at + name.size()] == '_')) {
        found = name;
        break;
      }
    }
    if (found.empty()) unparseable("type names '" + s + "' of a ScaledGemm op");
    out.push_back(found);
    at += found.size() + 1;
  }
  if (out.size() != 3) unparseable("a ScaledGemm op names three types (A, B, output), got '" + s + "'");
  return out;
}

std::vector<Problem> read_row(const std::string& line, const ImportOptions& options) {
  const std::vector<std::string> fields = split(line, ',');
  if (fields.size() < 2) unparseable("not a TunableOp row (op,params,...)");
  const std::string& op = fields[0];
  const std::size_t at = op.find("TunableOp_");
  if (at == std::string::npos) unparseable("'" + op + "' is not a TunableOp name");
  const std::string kind = op.substr(0, at), rest = op.substr(at + 10);
  if (kind != "Gemm" && kind != "GemmAndBias" && kind != "GemmStridedBatched" && kind != "ScaledGemm")
    throw Skip{SkipKind::NotGemm, "TunableOp " + kind};
  const std::size_t last = rest.rfind('_');
  if (last == std::string::npos || rest.size() - last != 3) unparseable("no layout at the end of '" + op + "'");
  const std::string type = rest.substr(0, last), layout = rest.substr(last + 1);

  const std::vector<std::string> p = split(fields[1], '_');
  if (p.size() < 4 || p[0].size() != 2) unparseable("params '" + fields[1] + "' are not <ab>_<m>_<n>_<k>...");
  BlasGemm g;
  g.trans_a = std::string(1, p[0][0]);
  g.trans_b = std::string(1, p[0][1]);
  for (std::size_t i = 0; i < 2; ++i)
    if (std::toupper(static_cast<unsigned char>(p[0][i])) != layout[i])
      unparseable("params layout '" + p[0] + "' does not match the op's " + layout);
  g.m = parse_int(p[1], "m");
  g.n = parse_int(p[2], "n");
  g.k = parse_int(p[3], "k");
  std::size_t i = 4;
  if (kind == "GemmStridedBatched") {
    if (p.size() < 6 || p[i] != "B") unparseable("batched params '" + fields[1] + "' have no _B_<batch>");
    g.batch = parse_int(p[i + 1], "batch");
    i += 2;
  }
  const bool scaled = kind == "ScaledGemm";
  if (i < p.size()) {
    if (p[i] != "ld" || p.size() < i + 4 || (!scaled && p.size() != i + 4))
      unparseable("params '" + fields[1] + "': expected _ld_<lda>_<ldb>_<ldc> after the sizes");
    g.lda = parse_int(p[i + 1], "lda");
    g.ldb = parse_int(p[i + 2], "ldb");
    g.ldc = parse_int(p[i + 3], "ldc");
    i += 4;
  }
  if (scaled) {
    // _rw_<0|1>_bias_<None|type>: row-wise scales and a bias vector, which tiletune's fp8 GEMM lacks.
    for (; i < p.size(); i += 2) {
      if (i + 1 >= p.size()) unparseable("params '" + fields[1] + "': '" + p[i] + "' without a value");
      if (p[i] == "rw" && p[i + 1] != "0")
        throw Skip{SkipKind::Unsupported, "row-wise scales (tiletune's fp8 GEMMs take per-tensor scales)"};
      if (p[i] == "bias" && p[i + 1] != "None") throw Skip{SkipKind::Unsupported, "a bias vector of a scaled GEMM"};
      if (p[i] != "rw" && p[i] != "bias") unparseable("params '" + fields[1] + "': unknown field '" + p[i] + "'");
    }
    const std::vector<std::string> types = scaled_types(type);
    for (const std::string& t : types)
      if (t.find("fnuz") != std::string::npos)
        throw Skip{SkipKind::Unsupported, "FNUZ fp8 (" + t + "): tiletune's fp8 inputs are OCP e4m3 / e5m2"};
    for (int o = 0; o < 3; ++o)
      if (blas_type(types[o]).empty()) throw Skip{SkipKind::Unsupported, "type " + types[o] + " of a scaled GEMM"};
    g.a_type = blas_type(types[0]);
    g.b_type = blas_type(types[1]);
    g.c_type = blas_type(types[2]);
    return {to_problem(g, options)};
  }
  const std::string t = blas_type(type);
  if (t.empty() || t == "f8_r" || t == "bf8_r")
    throw Skip{SkipKind::Unsupported, "type " + type + " (tiletune computes float, Half and BFloat16)"};
  g.a_type = g.b_type = g.c_type = t;
  g.beta = kind == "GemmAndBias" ? 1 : 0;
  return {to_problem(g, options)};
}

}  // namespace

void read_tunableop_csv(const std::string& text, Sink& sink) {
  for_each_line(text, sink, [&](const std::string& line) {
    if (line.rfind("Validator,", 0) == 0) return std::vector<Problem>{};  // versions, not GEMMs
    return read_row(line, sink.options());
  });
}

}  // namespace tiletune::imports
