// Test-only host template whose time is its parameter (paced_gemm.json says why).
#ifndef TILETUNE_PACED_GEMM_H
#define TILETUNE_PACED_GEMM_H

#include <chrono>
#include <thread>

#include "host_gemm.h"

// Each tile is computed once (the result is a GEMM's), and the first tile's thread then sleeps
// for the launch's pace while the other threads compute the rest: a launch lasts the pace
// whatever the load on the machine, as long as the tiles take less.
template <typename TA, typename TC, bool TRANSA, bool TRANSB, int LARGE>
void paced_gemm(const void* arg, unsigned bx, unsigned by, unsigned bz) {
  const TtGemmParams& p = *static_cast<const TtGemmParams*>(arg);
  host_gemm<TA, TC, TRANSA, TRANSB, 32, 32, 16, 8, 4>(arg, bx, by, bz);
  const bool fits = (p.m >= 128) == (LARGE == 1);
  if (bx == 0 && by == 0 && bz == 0) std::this_thread::sleep_for(std::chrono::microseconds(fits ? 10000 : 40000));
}

#endif
