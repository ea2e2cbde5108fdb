// rocBLAS bench logging: ROCBLAS_LAYER=2 (ROCBLAS_LOG_BENCH_PATH names the file, else stderr) writes
// each call as the rocblas-bench command line that repeats it (rocBLAS documentation, "Logging";
// rocblas-bench --help for the options), e.g.
//   ./rocblas-bench -f gemm_ex --transposeA N --transposeB T -m 1024 -n 512 -k 256 --alpha 1
//     --a_type bf16_r --lda 1024 --b_type bf16_r --ldb 512 --beta 0 --c_type bf16_r --ldc 1024
//     --d_type bf16_r --ldd 1024 --compute_type f32_r --algo 0 --solution_index 0 --flags 0
//   ./rocblas-bench -f gemm -r s --transposeA T ... (one precision for all: -r s/d/h/c/z or f32_r...)
//   ./rocblas-bench -f gemm_strided_batched_ex ... --stride_a 65536 ... --batch_count 8
// rocBLAS is column-major BLAS like tiletune: blas_gemm.h maps the fields one to one.
#include "tools/import/blas_gemm.h"
#include "tools/import/formats.h"

namespace tiletune::imports {
namespace {

// -r's single letters (rocblas-bench's precision shorthand) as type names.
std::string precision(const std::string& r) {
  if (r == "s") return "f32_r";
  if (r == "d") return "f64_r";
  if (r == "h") return "f16_r";
  if (r == "c") return "f32_c";
  if (r == "z") return "f64_c";
  return r;
}

std::vector<Problem> read_line(const std::string& line, const ImportOptions& options) {
  const BenchArgs args(line, "rocblas-bench");
  const std::string f = args.text({"-f", "--function"});
  if (f == "gemm_batched" || f == "gemm_batched_ex")
    throw Skip{SkipKind::Unsupported, f + ": batches as arrays of pointers (tiletune takes strided batches)"};
  const bool ex = f == "gemm_ex" || f == "gemm_strided_batched_ex";
  if (!ex && f != "gemm" && f != "gemm_strided_batched") {
    if (f.find("gemm") != std::string::npos) throw Skip{SkipKind::Unsupported, "rocBLAS function " + f};
    throw Skip{SkipKind::NotGemm, f.empty() ? "no -f function" : "rocBLAS function " + f};
  }
  BlasGemm g = bench_gemm(args);
  // rocblas-bench's default precision is f32_r; -r sets every type the _ex options leave unset
  // (the plain gemm computes in its own type).
  const std::string r = precision(args.text({"-r", "--precision"}, "f32_r"));
  for (std::string* t : {&g.a_type, &g.b_type, &g.c_type, &g.d_type, &g.compute})
    if (t->empty()) *t = r;
  return {to_problem(g, options)};
}

}  // namespace

void read_rocblas_log(const std::string& text, Sink& sink) {
  for_each_line(text, sink, [&](const std::string& line) { return read_line(line, sink.options()); });
}

}  // namespace tiletune::imports
