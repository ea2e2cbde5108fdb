#include "solutions/model_amd.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "gpu/hip/arch_model.h"
#include "gpu/hip/arch_table.h"
#include "solutions/model.h"

namespace tiletune {

namespace hip = gpu::hip;

CodeFigures code_figures_from_json(const std::string& json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw Error("code object figures are not JSON: " + std::string(e.what()));
  }
  if (!j.is_object() || !j.contains("vgpr") || !j["vgpr"].is_number_integer())
    throw Error("code object figures lack an integer \"vgpr\": " + json);
  CodeFigures f;
  // A wave holds its arch VGPRs and its AGPRs at once: on CDNA2+ both come out of one file, whose
  // use the metadata's vgpr count already states; on gfx908 they are two files of equal size, and
  // the fuller one limits the waves.
  const std::int64_t agpr = j.value("agpr", 0);
  f.registers = std::max<std::int64_t>(j["vgpr"].get<std::int64_t>(), agpr);
  if (j.contains("lds_bytes")) f.lds_bytes = j["lds_bytes"].get<std::int64_t>();
  return f;
}

// The arch table lists the fp8 MFMAs once, as e4m3's: e5m2 (bf8) and the mixed pairs take the
// same shapes at the same rate.
static std::string mfma_type(DataType t) { return is_fp8(t) ? to_string(DataType::E4M3) : to_string(t); }

std::optional<ModelMachine> amd_model_machine(const gpu::DeviceInfo& dev, const GemmProblem& p) {
  const hip::AmdArch* arch = hip::amd_arch(dev.arch);
  const hip::AmdModelFigures* fig = hip::amd_model_figures(dev.arch);
  if (!arch || !fig || arch->mfma.empty()) return std::nullopt;
  ModelMachine m;
  const double clock = arch->clock_mhz * 1e6;
  const double cus = std::max(1, dev.multiprocessors);
  m.flops_per_s = arch->peak_flops(mfma_type(p.a_type));
  // The table's L2 rate is the whole device's; a measured device with fewer CUs (a partition)
  // has its share.
  m.l2_bytes_per_s = fig->l2_bytes_per_clock * clock * std::min(1.0, cus / arch->compute_units);
  m.shared_bytes_per_s = fig->lds_bytes_per_clock * clock;
  m.store_bytes_per_s = fig->store_bytes_per_clock * clock;
  m.load_latency_s = fig->load_latency_s;
  m.max_threads_per_mp = fig->simds_per_cu * fig->max_waves_per_simd * arch->wave_size;
  m.shared_per_mp = arch->lds_bytes_per_cu;
  m.registers_per_mp = std::int64_t(fig->simds_per_cu) * arch->vgprs * arch->wave_size;
  m.amd_arch = arch->arch;
  m.dram_bytes_per_s = fig->hbm_bytes_per_s * std::min(1.0, cus / arch->compute_units);
  return m;
}

std::int64_t amd_workgroups_per_cu(const std::string& arch_name, std::int64_t threads, std::int64_t registers,
                                   std::int64_t lds_bytes) {
  const hip::AmdArch* arch = hip::amd_arch(arch_name);
  const hip::AmdModelFigures* fig = hip::amd_model_figures(arch_name);
  if (!arch || !fig) throw Error("no AMD model figures for arch '" + arch_name + "'");
  std::int64_t waves_per_simd = fig->max_waves_per_simd;
  if (registers > 0) {
    const std::int64_t granule = fig->vgpr_granule;
    const std::int64_t allocated = (registers + granule - 1) / granule * granule;
    waves_per_simd = std::min<std::int64_t>(waves_per_simd, arch->vgprs / allocated);
  }
  // The waves of the CU's work-groups share its SIMDs' wave slots (round-robin placement).
  const std::int64_t waves = (std::max<std::int64_t>(1, threads) + arch->wave_size - 1) / arch->wave_size;
  std::int64_t groups = fig->simds_per_cu * waves_per_simd / waves;
  if (lds_bytes > 0) groups = std::min<std::int64_t>(groups, arch->lds_bytes_per_cu / lds_bytes);
  return std::max<std::int64_t>(1, groups);
}

double amd_instruction_flops_per_cu(const std::string& arch_name, DataType a, std::int64_t m, std::int64_t k) {
  const hip::AmdArch* arch = hip::amd_arch(arch_name);
  const hip::AmdModelFigures* fig = hip::amd_model_figures(arch_name);
  if (!arch || !fig) return 0;
  const hip::MfmaShape* shape = arch->shape(mfma_type(a), int(m), int(k));
  if (!shape) return 0;
  return double(shape->flops()) / shape->cycles * fig->simds_per_cu * arch->clock_mhz * 1e6;
}

double amd_l2_miss_share(const std::string& arch_name, std::int64_t grid_m, std::int64_t grid_n, std::int64_t tile_m,
                         std::int64_t tile_n, std::int64_t in_flight) {
  const hip::AmdModelFigures* fig = hip::amd_model_figures(arch_name);
  if (!fig) throw Error("no AMD model figures for arch '" + arch_name + "'");
  const std::int64_t domains = fig->l2_domains;
  grid_m = std::max<std::int64_t>(1, grid_m), grid_n = std::max<std::int64_t>(1, grid_n);
  const std::int64_t span = std::clamp<std::int64_t>(in_flight, 1, grid_m * grid_n);  // consecutive tiles
  const std::int64_t per_domain = std::max<std::int64_t>(1, span / domains);
  const std::int64_t rows = std::min(per_domain, (span + grid_m - 1) / grid_m);  // distinct N tiles (B panels)
  // Distinct M tiles (A panels): a domain sees every domains-th column of each row when the row
  // length is a multiple of the domains, and the columns shift from row to row otherwise.
  const std::int64_t columns = std::min(
      per_domain, grid_m % domains == 0 || rows == 1 ? std::max<std::int64_t>(1, std::min(grid_m, span) / domains)
                                                     : grid_m);
  const double unique = double(columns) * tile_m + double(rows) * tile_n;
  const double total = double(per_domain) * double(tile_m + tile_n);
  return std::clamp(unique / total, 0.0, 1.0);
}

AmdTerms amd_terms(const ModelMachine& m, const ModelShape& sh, const GemmProblem& p, const CodeFigures* figures,
                   double cus) {
  const hip::AmdArch* arch = hip::amd_arch(m.amd_arch);
  const hip::AmdModelFigures* fig = hip::amd_model_figures(m.amd_arch);
  if (!arch || !fig) throw Error("no AMD model figures for arch '" + m.amd_arch + "'");
  AmdTerms t;
  std::int64_t registers = sh.registers, lds = sh.shared_bytes;
  if (figures && figures->registers > 0) registers = figures->registers;
  if (figures && figures->lds_bytes >= 0) lds = std::max(lds, figures->lds_bytes);
  t.workgroups_per_cu = amd_workgroups_per_cu(m.amd_arch, sh.threads, registers, lds);
  // Without a named instruction (or one the arch lacks) the fastest one for the type.
  t.peak_per_cu = sh.instruction_m > 0
                      ? amd_instruction_flops_per_cu(m.amd_arch, p.a_type, sh.instruction_m, sh.instruction_k)
                      : 0;
  if (t.peak_per_cu <= 0) t.peak_per_cu = m.flops_per_s / arch->compute_units;
  const std::int64_t grid_m = (p.m + sh.tile_m - 1) / sh.tile_m, grid_n = (p.n + sh.tile_n - 1) / sh.tile_n;
  const std::int64_t in_flight = std::int64_t(cus) * t.workgroups_per_cu;
  t.l2_miss = amd_l2_miss_share(m.amd_arch, grid_m, grid_n, sh.tile_m, sh.tile_n, in_flight);
  t.miss_bytes_per_s = fig->miss_bytes_per_s * std::min(1.0, cus / arch->compute_units) / cus;
  t.saturating_threads = sh.saturating_threads > 0 ? double(sh.saturating_threads)
                                                   : double(fig->simds_per_cu) * arch->wave_size;
  return t;
}

}  // namespace tiletune
