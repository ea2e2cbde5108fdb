// wgmma_gemm's EPI 2 column cut (kernel_templates/column_runs.h) on the host: every row of a column
// stored once, by a scalar or by a vector that starts on a V-element boundary, for every alignment
// of the column and every length up to past two tiles.
#include <gtest/gtest.h>

#include <vector>

#include "kernel_templates/column_runs.h"

namespace {

TEST(ColumnRuns, EveryRowOnceAndEveryVectorAligned) {
  for (int V : {2, 4, 8})
    for (unsigned long long base : {0ull, 1ull, 2ull, 3ull, 5ull, 7ull, 50257ull * 3, 1000003ull})
      for (int rows = 0; rows <= 260; ++rows) {
        const tt_runs::Runs r = tt_runs::column_runs(base, rows, V);
        std::vector<int> seen(rows, 0);
        for (int q = 0; q < r.vectors; ++q) {
          const int row = r.head + q * V;
          ASSERT_EQ((base + row) % V, 0u) << "V " << V << " base " << base << " rows " << rows;
          for (int e = 0; e < V; ++e) ++seen.at(row + e);
        }
        for (int e = 0; e < 2 * V; ++e)
          if (const int row = tt_runs::scalar_row(r, e, V); row >= 0) ++seen.at(row);
        for (int i = 0; i < rows; ++i) ASSERT_EQ(seen[i], 1) << "V " << V << " base " << base << " rows " << rows << " row " << i;
        EXPECT_LT(r.head, V);
        EXPECT_LT(r.rows - r.tail0, V);
      }
}

// An aligned column of whole vectors has no scalars; a 64-row column of bf16 starting one element
// past a boundary: 7 head rows, 7 vectors, 1 tail row.
TEST(ColumnRuns, AlignedColumnsAreVectorsOnly) {
  const tt_runs::Runs a = tt_runs::column_runs(16, 64, 8);
  EXPECT_EQ(a.head, 0);
  EXPECT_EQ(a.vectors, 8);
  EXPECT_EQ(a.tail0, 64);
  const tt_runs::Runs b = tt_runs::column_runs(17, 64, 8);
  EXPECT_EQ(b.head, 7);
  EXPECT_EQ(b.vectors, 7);
  EXPECT_EQ(b.rows - b.tail0, 1);
}

}  // namespace
