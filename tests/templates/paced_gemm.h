// Test-only host template whose time is its parameter (paced_gemm.json says why).
#ifndef TILETUNE_PACED_GEMM_H
#define TILETUNE_PACED_GEMM_H

#include "host_gemm.h"

template <typename TA, typename TC, bool TRANSA, bool TRANSB, int LARGE>
void paced_gemm(const void* arg, unsigned bx, unsigned by, unsigned bz) {
  const TtGemmParams& p = *static_cast<const TtGemmParams*>(arg);
  const int reps = (p.m >= 128) == (LARGE == 1) ? 1 : 8;
  for (int r = 0; r < reps; ++r) host_gemm<TA, TC, TRANSA, TRANSB, 32, 32, 16, 8, 4>(arg, bx, by, bz);
}

#endif
