// 16-byte runs of a wgmma accumulator tile's 16-bit outputs, for epilogues that store whole runs of a row
// (wgmma_rows1x1.cuh, wgmma_narrow_fwd.cuh). An m64nN accumulator gives lane 4 g + t of a warp the columns
// 8 j + 2 t, + 1 of rows g and g + 8 (fragment j: registers 4 j .. 4 j + 3); the four lanes of a row trade their
// pairs so that each holds 8 consecutive columns.
#ifndef TILETUNE_WGMMA_OCTETS_H
#define TILETUNE_WGMMA_OCTETS_H

#include "tt_types.h"

namespace tt_octets {

// w[i] for a run-time i, without local memory.
TT_DEVICE unsigned pick(const unsigned (&w)[4], int i) { return i == 0 ? w[0] : i == 1 ? w[1] : i == 2 ? w[2] : w[3]; }

// Fragments j0 .. j0 + 3 of row g + 8 h (acc: the thread's accumulators) as TC: lane t returns fragment j0 + t's
// columns 8 (j0 + t) .. + 7, one 16-byte vector. In round r a lane sends its fragment (t + r) % 4 and takes word
// (t - r) % 4 of the vector from lane (t - r) % 4. Every lane of the warp must call it.
template <class TC>
TT_DEVICE uint4 row_octet(const float* acc, int j0, int h, int lane) {
  const int g = lane >> 2, t = lane & 3;
  unsigned w[4], got[4] = {0u, 0u, 0u, 0u};
  TT_UNROLL
  for (int jj = 0; jj < 4; ++jj) {
    const float* f = acc + 4 * (j0 + jj) + 2 * h;
    w[jj] = (unsigned)tt_from_float<TC>(f[0]).bits | ((unsigned)tt_from_float<TC>(f[1]).bits << 16);
  }
  TT_UNROLL
  for (int r = 0; r < 4; ++r) {
    const int from = (t - r) & 3;
    const unsigned v = __shfl_sync(0xffffffffu, pick(w, (t + r) & 3), (g << 2) | from);
    TT_UNROLL
    for (int q = 0; q < 4; ++q) got[q] = from == q ? v : got[q];
  }
  return make_uint4(got[0], got[1], got[2], got[3]);
}

}  // namespace tt_octets

#endif  // TILETUNE_WGMMA_OCTETS_H
