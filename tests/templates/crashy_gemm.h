// Test-only host template that misbehaves on purpose, to test the sweep's crash isolation
// (tests/test_isolation.cpp). It is found through TILETUNE_TEMPLATE_PATH, never embedded.
//   MODE 0: a correct GEMM (host_gemm's code, 32 x 32 tiles)
//   MODE 1: writes through a null pointer (SIGSEGV)
//   MODE 2: spins forever (a hang: the sweep's time-out must kill it)
//   MODE 3: a wrong result (the correct one plus 1)
//   MODE 4: correct only where A's and B's leading dimensions and batch strides are multiples of 16
//           bytes, as a TMA kernel needs; NaN otherwise (operand repacking's test, test_isolation.cpp)
//   MODE 5: the first run anywhere SIGKILLs its own process, as the OOM killer would from outside
//           (it leaves the file named by TILETUNE_TEST_MARKER); later runs are correct
#ifndef TILETUNE_CRASHY_GEMM_H
#define TILETUNE_CRASHY_GEMM_H

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "host_gemm.h"

template <typename TA, typename TC, bool TRANSA, bool TRANSB, int MODE>
void crashy_gemm(const void* arg, unsigned bx, unsigned by, unsigned bz) {
  if (MODE == 1) {
    // Both volatile: the compiler can neither prove the pointer null (and trap or drop the store)
    // nor drop the store as dead.
    volatile int* volatile nowhere = nullptr;
    *nowhere = 1;
  }
  if (MODE == 2) {
    volatile bool spin = true;
    while (spin) {
    }
  }
  if (MODE == 5) {
    const char* marker = std::getenv("TILETUNE_TEST_MARKER");
    std::FILE* seen = marker ? std::fopen(marker, "r") : nullptr;
    if (seen) std::fclose(seen);
    else if (marker) {
      if (std::FILE* f = std::fopen(marker, "w")) std::fclose(f);
      std::raise(SIGKILL);
    }
  }
  if (MODE == 4) {
    const TtGemmParams& p = *static_cast<const TtGemmParams*>(arg);
    const long long v = 16 / (long long)sizeof(TA);
    if (p.lda % v || p.ldb % v || (p.batch > 1 && (p.stride_a % v || p.stride_b % v))) {
      TC* C = static_cast<TC*>(p.c) + (long long)bz * p.stride_c;
      for (int j = int(by) * 32; j < p.n && j < int(by + 1) * 32; ++j)
        for (int i = int(bx) * 32; i < p.m && i < int(bx + 1) * 32; ++i)
          C[i + (long long)j * p.ldc] = tt_host_from_float<TC>(__builtin_nanf(""));
      return;
    }
  }
  host_gemm<TA, TC, TRANSA, TRANSB, 32, 32, 16, 8, 4>(arg, bx, by, bz);
  if (MODE == 3) {
    const TtGemmParams& p = *static_cast<const TtGemmParams*>(arg);
    TC* C = static_cast<TC*>(p.c) + (long long)bz * p.stride_c;
    for (int j = int(by) * 32; j < p.n && j < int(by + 1) * 32; ++j)
      for (int i = int(bx) * 32; i < p.m && i < int(bx + 1) * 32; ++i) {
        TC& out = C[i + (long long)j * p.ldc];
        out = tt_host_from_float<TC>(tt_host_to_float(out) + 1.f);
      }
  }
}

#endif
