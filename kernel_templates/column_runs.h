// A column of C cut for 16-byte stores where C's leading dimension does not keep columns 16-byte
// aligned (an odd ldc: a vocabulary of 50257): the rows before the column's first 16-byte boundary
// (head) and after its last whole vector (tail) go as scalars, the rest as vectors of V elements.
// Shared by wgmma_gemm's EPI 2 epilogue and a host test (tests/solutions/test_column_runs.cpp).
#ifndef TILETUNE_COLUMN_RUNS_H
#define TILETUNE_COLUMN_RUNS_H

#if defined(TT_CUDA) || defined(TT_HIP)
#define TT_RUNS_FN __host__ __device__ inline
#else
#define TT_RUNS_FN inline
#endif

namespace tt_runs {

struct Runs {
  int head;     // rows 0 .. head - 1: scalars (fewer than V)
  int vectors;  // then this many vectors of V rows, the first at row `head`
  int tail0;    // rows tail0 .. rows - 1: scalars (fewer than V)
  int rows;
};

// A column of `rows` elements whose first element is element number `elem` of memory (its byte
// address over the element size), vectors of V elements on V-element boundaries.
TT_RUNS_FN Runs column_runs(unsigned long long elem, int rows, int V) {
  Runs r;
  r.rows = rows;
  r.head = (int)((V - (int)(elem % (unsigned long long)V)) % V);
  if (r.head > rows) r.head = rows;
  r.vectors = (rows - r.head) / V;
  r.tail0 = r.head + r.vectors * V;
  return r;
}

// Scalar e (0 <= e < 2V) of a column: head row e (e < V), or tail row tail0 + e - V; -1 for none.
TT_RUNS_FN int scalar_row(const Runs& r, int e, int V) {
  if (e < V) return e < r.head ? e : -1;
  const int row = r.tail0 + e - V;
  return row < r.rows ? row : -1;
}

}  // namespace tt_runs

#endif
