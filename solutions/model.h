// The analytical model behind the "model" search strategy (tuner/search.h) and the pool rung
// (solutions/selection.h): an estimate of one candidate's time on one problem from its template's
// "model" section (solutions/kernel_template.h, ModelShape) and a few per-device constants. It
// ranks the candidates of one problem; the absolute seconds are only roughly right, which the pool
// corrects by each kernel's measured time on its own problem.
//
// Per block tile (tile_m x tile_n, tile_k deep per main-loop step, steps = ceil(K / split_k / tile_k)):
//
//   occupancy  = blocks per multiprocessor that fit: min(max_threads / threads,
//                shared_per_mp / shared_bytes, registers_per_mp / (registers * threads), 32)
//   blocks     = the launched grid (the "launch" section); tiles = ceil(M/tile_m) * ceil(N/tile_n)
//                * batch * split_k. A grid smaller than the tile count is persistent: each block
//                loops over ceil(tiles / blocks) tiles (wgmma_gemm launches min(tiles, SMs)).
//   resident   = blocks sharing one multiprocessor: min(occupancy, ceil(blocks / SMs))
//   rounds     = ceil(blocks / (SMs * occupancy))     (wave quantisation)
//   one step of the `resident` blocks of one multiprocessor takes the slowest of
//     math     resident * 2 tile_m tile_n tile_k / (peak_per_mp * math_percent * min(1, resident
//              * threads / saturating_threads))
//     operands resident * operand_bytes / shared_bw_per_mp       (shared memory feeding the math)
//     loads    resident * (tile_m + tile_n) * tile_k * a_bytes / l2_bw_per_mp   (A and B panels:
//              every tile re-reads them, from L2 at best)
//     latency  load_latency / (stages - 1)                       (loads in flight hide latency)
//   tile       = steps * step + fill + epilogue     (fill: one load latency; epilogue: resident
//                * tile_m * tile_n * c_bytes / store_bw_per_mp; half of both when the template
//                overlaps a tile's epilogue with the next one's main loop; split_k > 1 adds the
//                fp32 partials written and read back through L2)
//   seconds    = rounds * ceil(tiles / blocks) * tile, plus for split_k > 1 the serial tail of the
//                reduction: (split_k - 1) * tile_m * tile_n * 4 bytes read by one block at l2_bw_per_mp
//
// On an AMD arch of the arch table, solutions/model_amd.h replaces the occupancy, the per-CU peak
// and the saturating threads, and the kernel takes at least its DRAM bytes over DRAM bandwidth.
//
// Candidates whose seconds agree to ~1e-9 (relative) are ordered by the template's "prefer" list.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "solutions/kernel_template.h"
#include "solutions/gemm_problem.h"
#include "solutions/solution.h"

namespace tiletune {

// Per-device constants. Devices report no clock or bandwidth, so the GPU values are those of an
// H100/H200-class part (the only GPUs measured); the host's are coarse.
struct ModelMachine {
  double flops_per_s = 0;          // whole device, for the problem's input type / compute mode
  double l2_bytes_per_s = 0;       // whole device, cache to multiprocessors
  double shared_bytes_per_s = 0;   // one multiprocessor
  double store_bytes_per_s = 0;    // one multiprocessor, registers to memory
  double load_latency_s = 0;
  int max_threads_per_mp = 2048;
  std::int64_t shared_per_mp = 0, registers_per_mp = 65536;
  // AMD (solutions/model_amd.h): the arch whose occupancy and matrix-core rates apply ("": the
  // generic terms above), and the DRAM bandwidth that bounds a whole kernel (0: no such floor).
  std::string amd_arch;
  double dram_bytes_per_s = 0;
};
ModelMachine model_machine(const gpu::DeviceInfo& dev, const GemmProblem& p);

struct ModelEstimate {
  bool has_model = false;  // false: the template has no "model" section (or evaluating it failed)
  double seconds = 0;      // the score: lower is better
  double step_seconds = 0, tile_seconds = 0;
  double math_seconds = 0, operand_seconds = 0, load_seconds = 0, latency_seconds = 0;  // one step
  double schedule_seconds = 0;  // the seconds before the DRAM floor (equal to seconds elsewhere)
  // AMD: the LDS and L2 time of all steps as if none overlapped. Among candidates of equal
  // seconds (all bound by the math), the one that leaves the memory side the most slack goes first.
  double traffic_seconds = 0;
  double dram_seconds = 0;  // the kernel's unique operand and result bytes over DRAM bandwidth (AMD)
  double wave_factor = 1;  // rounds * tiles per block / (tiles / slots): 1 = the machine kept full
  std::int64_t tiles = 0, blocks = 0, slots = 0, blocks_per_mp = 0, resident = 0, steps = 0;
  std::vector<std::int64_t> prefer;  // the template's tie-breakers for this candidate
};
// A convolution is estimated as the GEMM its kernel computes (KernelTemplate::kernel_gemm). `figures`: the compiled
// kernel's registers and LDS, where known (AMD: they replace the template's estimates).
struct CodeFigures;
ModelEstimate model_estimate(const KernelTemplate& t, const Solution& s, const Problem& p,
                             const gpu::DeviceInfo& dev, const CodeFigures* figures = nullptr);

// Model order: lower seconds first; equal seconds (to ~1e-9 relative) by schedule_seconds, then by
// `prefer`, larger first, then by traffic_seconds, lower first;
// a candidate without a model after every one with.
bool model_before(const ModelEstimate& a, const ModelEstimate& b);

}  // namespace tiletune
