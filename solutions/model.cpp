#include "solutions/model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "solutions/model_amd.h"

namespace tiletune {

ModelMachine model_machine(const gpu::DeviceInfo& dev, const GemmProblem& p) {
  ModelMachine m;
  const int in_bytes = size_of(p.a_type);
  const gpu::BackendTraits& backend = gpu::traits(dev.backend);
  if (backend.host_memory) {
    // One "multiprocessor" per pool thread running one tile at a time; caches are private, so
    // shared-memory and latency terms do not apply.
    m.flops_per_s = 50e9 * std::max(1, dev.multiprocessors);
    m.l2_bytes_per_s = 100e9;
    m.shared_bytes_per_s = std::numeric_limits<double>::infinity();
    m.store_bytes_per_s = 20e9;
    m.load_latency_s = 0;
    m.max_threads_per_mp = backend.threads_per_mp;
    m.shared_per_mp = std::numeric_limits<std::int64_t>::max();
    m.registers_per_mp = std::numeric_limits<std::int64_t>::max();
    return m;
  }
  if (dev.backend == gpu::BackendKind::Hip)
    if (std::optional<ModelMachine> amd = amd_model_machine(dev, p)) return *amd;
  // H200 datasheet figures (dense tensor-core fp8/int8 1979 TFLOP/s (TOPS), bf16/fp16 989, tf32
  // 494, fp32 FMA 67);
  // ~10 TB/s from L2 to the SMs; 128 bytes per clock of shared memory per SM at ~1.98 GHz;
  // a quarter of that for stores from registers; ~1 us for a global load under load.
  const double clock = 1.98e9;
  m.flops_per_s = in_bytes == 1 ? 1979e12 : in_bytes == 2 ? 989e12 : p.compute_tf32 ? 494e12 : 67e12;
  m.l2_bytes_per_s = 10e12;
  m.shared_bytes_per_s = 128 * clock;
  m.store_bytes_per_s = 32 * clock;
  m.load_latency_s = 1e-6;
  m.max_threads_per_mp = backend.threads_per_mp;
  m.shared_per_mp = std::max<std::int64_t>(dev.shared_bytes_optin, dev.shared_bytes_per_block) + 1024;
  m.registers_per_mp = 65536;
  return m;
}

ModelEstimate model_estimate(const KernelTemplate& t, const Solution& s, const Problem& problem,
                             const gpu::DeviceInfo& dev, const CodeFigures* figures) {
  ModelEstimate e;
  if (!t.has_model()) return e;
  std::optional<ModelShape> shape;
  double blocks = 0, phases = 1;
  try {
    const Variables vars = t.variables(s, problem, dev);
    const auto ph = vars.find("COLUMN_PHASES");
    if (ph != vars.end() && ph->second > 1) phases = double(ph->second);
    shape = t.model_shape(vars);
    const gpu::LaunchDims d = t.launch_dims(vars);
    blocks = double(d.grid[0]) * double(d.grid[1]) * double(d.grid[2]);
  } catch (const Error&) {
    return e;  // e.g. a division by zero in the template's expressions: rank it last
  }
  if (!shape) return e;
  const ModelShape& sh = *shape;
  // C's column phases (REPACK 2): the kernel runs once a phase, on the phase's problem; the edge
  // rows it also computes are left out.
  const GemmProblem p = phases > 1 ? column_phases(problem.gemm()).kernel_problem : t.kernel_gemm(problem.canonical());
  const ModelMachine mm = model_machine(dev, p);
  const double sms = double(std::max(1, dev.multiprocessors));
  const double tm = double(sh.tile_m), tn = double(sh.tile_n), tk = double(sh.tile_k);
  const double split = double(sh.split_k), batch = double(std::max<std::int64_t>(1, p.batch));
  const double tiles = std::ceil(double(p.m) / tm) * std::ceil(double(p.n) / tn) * batch * split;
  if (!(blocks >= 1)) blocks = tiles;

  std::int64_t per_mp = std::min<std::int64_t>(32, mm.max_threads_per_mp / sh.threads);
  if (sh.shared_bytes > 0) per_mp = std::min<std::int64_t>(per_mp, mm.shared_per_mp / sh.shared_bytes);
  if (sh.registers > 0) per_mp = std::min<std::int64_t>(per_mp, mm.registers_per_mp / (sh.registers * sh.threads));
  per_mp = std::max<std::int64_t>(1, per_mp);
  double peak_mp = mm.flops_per_s / sms * double(sh.math_percent) / 100.0;
  double saturating = double(sh.saturating_threads);
  AmdTerms amd;
  if (!mm.amd_arch.empty()) {
    amd = amd_terms(mm, sh, p, figures, sms);
    per_mp = amd.workgroups_per_cu;
    peak_mp = amd.peak_per_cu * double(sh.math_percent) / 100.0;
    saturating = amd.saturating_threads;
  }
  const double tiles_per_block = std::ceil(tiles / blocks);
  const double resident = std::min(double(per_mp), std::ceil(blocks / sms));
  const double rounds = std::ceil(blocks / (sms * double(per_mp)));

  const double a_bytes = double(size_of(p.a_type)), c_bytes = double(size_of(p.c_type));
  const double issue = saturating > 0 ? std::min(1.0, resident * double(sh.threads) / saturating) : 1.0;
  const double l2_mp = mm.l2_bytes_per_s / sms;
  e.math_seconds = resident * 2.0 * tm * tn * tk / (peak_mp * issue);
  e.operand_seconds = resident * double(sh.operand_bytes) / mm.shared_bytes_per_s;
  const double loaded = sh.load_bytes > 0 ? double(sh.load_bytes) : (tm + tn) * tk * a_bytes;
  e.load_seconds = resident * loaded / l2_mp;
  if (amd.miss_bytes_per_s > 0)
    e.load_seconds = std::max(e.load_seconds, amd.l2_miss * resident * loaded / amd.miss_bytes_per_s);
  e.latency_seconds = mm.load_latency_s / double(std::max<std::int64_t>(1, sh.stages - 1));
  e.step_seconds = std::max({e.math_seconds, e.operand_seconds, e.load_seconds, e.latency_seconds});

  const double steps = std::ceil(std::ceil(double(p.k) / split) / tk);
  double edges = mm.load_latency_s + resident * tm * tn * c_bytes / mm.store_bytes_per_s;
  if (sh.epilogue_overlap) edges /= 2;
  if (sh.split_k > 1) edges += resident * tm * tn * 4.0 * 2.0 / l2_mp;
  e.tile_seconds = steps * e.step_seconds + edges;
  e.seconds = rounds * tiles_per_block * e.tile_seconds;
  // Stream-K: the full waves as above, then every block's even share of the streamed tiles' K
  // steps, in pieces of at most two tiles, and the partials of a tile shared by `parts` blocks
  // read back by its last one.
  const double sk = double(sh.stream_k_tiles);
  if (sk > 0 && split <= 1) {
    const double waves = std::floor((tiles - sk) / blocks);
    const double sk_steps = std::ceil(sk * steps / blocks);
    const double pieces = std::min(sk, std::ceil(sk_steps / steps) + 1);
    const double parts = std::min(blocks, std::ceil(blocks / sk) + 1);
    e.seconds = waves * e.tile_seconds + sk_steps * e.step_seconds +
                pieces * (edges + resident * tm * tn * 4.0 * 2.0 / l2_mp) + (parts - 1) * tm * tn * 4.0 / l2_mp;
  }
  // The split-K reduction's tail: the last split of a tile to finish reads the other split_k - 1
  // partial tiles alone (`edges` counts one read per split), after the other blocks are done, at
  // one multiprocessor's share of L2 bandwidth. Without it deep splits of small tiles look free and
  // outrank the fast shallow ones (wgrad).
  if (sh.split_k > 1) e.seconds += (split - 1) * tm * tn * 4.0 / l2_mp;

  e.has_model = true;
  e.tiles = std::int64_t(tiles);
  e.blocks = std::int64_t(blocks);
  e.blocks_per_mp = per_mp;
  e.resident = std::int64_t(resident);
  e.steps = std::int64_t(steps);
  const double slots = blocks < tiles ? std::min(sms * double(per_mp), blocks) : sms * double(per_mp);
  e.slots = std::int64_t(slots);
  e.wave_factor = rounds * tiles_per_block / (tiles / slots);
  e.prefer = sh.prefer;

  e.schedule_seconds = e.seconds;
  if (!mm.amd_arch.empty()) e.traffic_seconds = rounds * tiles_per_block * steps * (e.operand_seconds + e.load_seconds);
  if (mm.dram_bytes_per_s > 0) {
    const double bytes = (double(p.m) * double(p.k) + double(p.k) * double(p.n)) * a_bytes * batch +
                         double(p.m) * double(p.n) * c_bytes * batch;
    e.dram_seconds = bytes / mm.dram_bytes_per_s;
    e.seconds = std::max(e.seconds, e.dram_seconds);
  }
  e.seconds *= phases, e.schedule_seconds *= phases, e.dram_seconds *= phases, e.traffic_seconds *= phases;
  return e;
}

bool model_before(const ModelEstimate& a, const ModelEstimate& b) {
  if (a.has_model != b.has_model) return a.has_model;
  if (!a.has_model) return false;
  // Seconds quantised to ~1e-9 relative, so that "equal" is transitive (a strict weak order)
  // while rounding noise in equal estimates cannot decide between candidates.
  const auto q = [](double s) { return s > 0 ? std::nearbyint(std::log2(s) * 1e9) : -1e300; };
  if (q(a.seconds) != q(b.seconds)) return q(a.seconds) < q(b.seconds);
  // Under the DRAM floor the candidate that would be faster without it still goes first.
  if (q(a.schedule_seconds) != q(b.schedule_seconds)) return q(a.schedule_seconds) < q(b.schedule_seconds);
  if (a.prefer != b.prefer) return a.prefer > b.prefer;  // lexicographic; a template's lists all have the same length
  return a.traffic_seconds < b.traffic_seconds;
}

}  // namespace tiletune
