#include "ops/column_phases.h"

#include <cstdint>

#include "common/error.h"

namespace tiletune::ops {

void run_column_phases(gpu::Device& dev, const GemmProblem& problem, const ColumnPhases& plan, const TtGemmParams& args,
                       void* scratch, gpu::Stream stream, const std::function<void(const TtGemmParams&)>& run) {
  if (!scratch) throw Error("column phases: no scratch for the edge rows");
  const std::int64_t cb = size_of(problem.c_type), ab = size_of(problem.a_type), bb = size_of(problem.type_b());
  const std::int64_t per16 = 16 / cb, m = args.m, n = args.n, ldc = args.ldc;
  const auto c_addr = reinterpret_cast<std::uintptr_t>(args.c);
  if (c_addr % std::uintptr_t(cb) != 0) throw Error("column phases: C is not aligned to its element");
  const std::int64_t c_off = std::int64_t(c_addr % 16) / cb;  // C's first element, past a 16-byte boundary
  char* c = static_cast<char*>(args.c);
  const char* a = static_cast<const char*>(args.a);
  const char* b = static_cast<const char*>(args.b);
  char* head = static_cast<char*>(scratch);
  char* tail = head + plan.tail_offset;
  const std::int64_t tail_row = m / per16 * per16 - per16;  // the last edge: rows [tail_row, m)
  const auto pitch_c = std::size_t(ldc * cb), pitch_head = std::size_t(plan.head_rows * cb),
             pitch_tail = std::size_t(plan.tail_ld * cb);
  const auto head_width = std::size_t(plan.head_rows * cb), tail_width = std::size_t((m - tail_row) * cb);
  // beta != 0: the edges read C as it was, before any launch writes it.
  if (args.beta != 0.0f) {
    dev.copy_2d(head, pitch_head, c, pitch_c, head_width, std::size_t(n), stream);
    dev.copy_2d(tail, pitch_tail, c + tail_row * cb, pitch_c, tail_width, std::size_t(n), stream);
  }
  TtGemmParams edge = args;
  edge.m = int(plan.head_rows), edge.c = head, edge.ldc = plan.head_rows;
  run(edge);
  edge.m = int(m - tail_row), edge.c = tail, edge.ldc = plan.tail_ld, edge.a = a + tail_row * args.lda * ab;
  run(edge);
  for (int p = 0; p < plan.phases && p < n; ++p) {
    // Column p starts `first` elements past a 16-byte boundary; its phase's rows start at the next.
    const std::int64_t first = (c_off + p * ldc) % per16, skip = (per16 - first) % per16;
    TtGemmParams phase = args;
    phase.m = int((m - skip) / per16 * per16);
    phase.n = int((n - p + plan.phases - 1) / plan.phases);
    phase.a = a + skip * args.lda * ab;
    phase.b = b + p * args.ldb * bb;
    phase.ldb = args.ldb * plan.phases;
    phase.c = c + (p * ldc + skip) * cb;
    phase.ldc = ldc * plan.phases;
    run(phase);
  }
  // The edges over whatever the phases wrote there (the same values where they overlap).
  dev.copy_2d(c, pitch_c, head, pitch_head, head_width, std::size_t(n), stream);
  dev.copy_2d(c + tail_row * cb, pitch_c, tail, pitch_tail, tail_width, std::size_t(n), stream);
}

}  // namespace tiletune::ops
