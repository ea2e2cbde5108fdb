#include "ops/repack.h"

#include "common/error.h"

namespace tiletune::ops {

namespace {

// One operand: `rows` x `cols` column-major per batch, ld and batch stride in elements, copied to
// ld2 with the batches packed. One 2-D copy when the batches follow each other at the stride a
// packed matrix would have (then they are one matrix of cols * batch columns), else one a batch.
void copy_operand(gpu::Device& dev, void* dst, std::int64_t ld2, const void* src, std::int64_t ld, std::int64_t stride,
                  std::int64_t rows, std::int64_t cols, std::int64_t batch, int bytes, gpu::Stream stream) {
  const auto b = std::size_t(bytes);
  if (batch == 1 || stride == ld * cols) {
    dev.copy_2d(dst, std::size_t(ld2) * b, src, std::size_t(ld) * b, std::size_t(rows) * b, std::size_t(cols * batch),
                stream);
    return;
  }
  for (std::int64_t i = 0; i < batch; ++i)
    dev.copy_2d(static_cast<char*>(dst) + std::size_t(i * ld2 * cols) * b, std::size_t(ld2) * b,
                static_cast<const char*>(src) + std::size_t(i * stride) * b, std::size_t(ld) * b, std::size_t(rows) * b,
                std::size_t(cols), stream);
}

}  // namespace

TtGemmParams repack_operands(gpu::Device& dev, const KernelTemplate& t, const Variables& vars, const RepackPlan& plan,
                             TtGemmParams args, gpu::Stream stream) {
  if (!repacks(vars)) return args;
  if (!args.workspace) throw Error("repacking " + t.name() + ": no workspace");
  const GemmProblem& p = plan.kernel_problem;  // sizes, types and batch as the caller's; ld's as copied
  char* region = static_cast<char*>(args.workspace) + t.repack_offset(vars);
  const int bytes = size_of(p.a_type);
  const GemmProblem& k = plan.kernel_problem;
  if (plan.a.copied) {
    copy_operand(dev, region + plan.a.offset, k.lda, args.a, args.lda, args.stride_a, p.rows_a(), p.cols_a(), p.batch,
                 bytes, stream);
    args.a = region + plan.a.offset, args.lda = k.lda, args.stride_a = k.stride_a;
  }
  if (plan.b.copied) {
    copy_operand(dev, region + plan.b.offset, k.ldb, args.b, args.ldb, args.stride_b, p.rows_b(), p.cols_b(), p.batch,
                 bytes, stream);
    args.b = region + plan.b.offset, args.ldb = k.ldb, args.stride_b = k.stride_b;
  }
  return args;
}

}  // namespace tiletune::ops
