// hipBLASLt bench logging: HIPBLASLT_LOG_MASK=32 (HIPBLASLT_LOG_FILE names the file, else stdout)
// writes each matmul as the hipblaslt-bench command line that repeats it (hipBLASLt documentation,
// "Logging and debugging"; hipblaslt-bench --help for the options), possibly after a log prefix:
//   hipblaslt-bench --api_method c -m 4096 -n 1024 -k 512 --lda 512 --ldb 512 --ldc 4096 --ldd 4096
//     --stride_a 0 --stride_b 0 --stride_c 0 --stride_d 0 --alpha 1.000000 --beta 0.000000
//     --transA T --transB N --batch_count 1 --scaleA 0 --scaleB 0 --a_type bf16_r --b_type bf16_r
//     --c_type bf16_r --d_type bf16_r --scale_type f32_r --bias_type f32_r --compute_type c_f32_r
// Epilogues (--bias_vector, --activation_type) are dropped: tiletune tunes the GEMM itself.
// hipBLASLt's matmul is column-major BLAS like tiletune: blas_gemm.h maps the fields one to one.
#include "tools/import/blas_gemm.h"
#include "tools/import/formats.h"

namespace tiletune::imports {

void read_hipblaslt_log(const std::string& text, Sink& sink) {
  for_each_line(text, sink, [&](const std::string& line) {
    const BenchArgs args(line, "hipblaslt-bench");
    BlasGemm g = bench_gemm(args);
    // hipblaslt-bench's defaults where a type is not logged: f32_r throughout (compute c_f32_r).
    for (std::string* t : {&g.a_type, &g.b_type, &g.c_type, &g.d_type})
      if (t->empty()) *t = "f32_r";
    if (g.compute.empty()) g.compute = "c_f32_r";
    // A scale mode (--scaleA 1: a scalar, 2: a vector, ...) multiplies an operand before the
    // product: a GEMM tiletune does not compute, whatever its types.
    for (const char* scale : {"--scaleA", "--scaleB"})
      if (args.integer({scale}, 0) != 0) throw Skip{SkipKind::Unsupported, std::string(scale) + " " + args.text({scale})};
    return std::vector<Problem>{to_problem(g, sink.options())};
  });
}

}  // namespace tiletune::imports
