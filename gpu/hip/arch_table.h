// What an AMD arch is, without a device: the figures a sweep for that arch prunes with (LDS a
// work-group may use, wave size), that `db explain` assumes for a database tuned elsewhere, and
// that an analytical model needs (CUs, clock, MFMA shapes and rates). Header-only: the backend
// traits use it in builds without HIP.
//
// Sources: AMD's CDNA2/CDNA3/CDNA4 ISA guides and instinct data sheets. The MFMA cycle counts are
// the data sheets' dense peak rates divided back through CUs x 4 SIMDs x clock, not measurements;
// no figure here has been checked on AMD hardware.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

namespace tiletune::gpu::hip {

struct MfmaShape {
  // Input type, spelt as tiletune's DataType names (to_string): "f16", "bf16", "f32", "e4m3" (fp8),
  // "s8" (int8, i32 accumulators).
  const char* type;
  int m, n, k;
  int cycles;        // issue-to-issue cycles of one instruction on one SIMD
  const char* instruction;
  long long flops() const { return 2LL * m * n * k; }
};

struct AmdArch {
  const char* arch;
  const char* product;
  int compute_units;
  int lds_bytes_per_cu;
  int lds_bytes_per_workgroup;  // what one work-group may allocate (all of the CU's on CDNA)
  int wave_size;
  // Vector registers per lane of one wave. CDNA2 and later have one unified file of 512: the
  // arch VGPRs (at most 256) and the AGPRs (accumulators) are both carved from it. gfx908 has
  // 256 VGPRs plus a separate 256 AGPRs.
  int vgprs;
  int agprs;
  bool unified_registers;
  int clock_mhz;                 // peak engine clock
  std::vector<MfmaShape> mfma;   // empty: no matrix cores (RDNA)
  // The fp8 MFMAs read e4m3 as FNUZ (bias 8, no negative zero, 0x80 the only NaN) rather than the
  // OCP e4m3 tiletune's fp8 is: gfx942 only (gfx950 reads OCP). Templates convert on load.
  bool fp8_fnuz = false;

  // Dense matrix-core peak in flop/s for `type`, from the fastest shape; 0 when there is none.
  double peak_flops(const std::string& type) const {
    double best = 0;
    for (const auto& s : mfma)
      if (type == s.type) best = std::max(best, double(s.flops()) / s.cycles * 4 * compute_units * clock_mhz * 1e6);
    return best;
  }
  const MfmaShape* shape(const std::string& type, int m, int k) const {
    for (const auto& s : mfma)
      if (type == s.type && s.m == m && s.k == k) return &s;
    return nullptr;
  }
  // The largest K of the 32x32 shapes for `type`, 0 if the arch has none: what a template issues
  // (its 16x16 shape has twice that K, the same values per lane: K / 2).
  int mfma_k(const std::string& type) const {
    int k = 0;
    for (const auto& s : mfma)
      if (s.m == 32 && type == s.type) k = std::max(k, s.k);
    return k;
  }
  // For 16-bit inputs (f16 and bf16 both): 16 on gfx950, 8 on gfx90a/gfx942, 4 on gfx908 (its
  // bf16 is 32x32x4), 0 without MFMA. DeviceInfo::mfma_k16.
  int mfma_k16() const { return std::min(mfma_k("f16"), mfma_k("bf16")); }
};

inline std::vector<AmdArch> make_amd_arches() {
  using Shapes = std::vector<MfmaShape>;
  auto join = [](Shapes a, const Shapes& b) { return a.insert(a.end(), b.begin(), b.end()), a; };
  // CDNA3's 16-bit and fp32 shapes (underscored names), which gfx950 keeps.
  const Shapes cdna3_16bit_f32 = {
      {"f16", 32, 32, 8, 32, "v_mfma_f32_32x32x8_f16"}, {"f16", 16, 16, 16, 16, "v_mfma_f32_16x16x16_f16"},
      {"bf16", 32, 32, 8, 32, "v_mfma_f32_32x32x8_bf16"}, {"bf16", 16, 16, 16, 16, "v_mfma_f32_16x16x16_bf16"},
      {"f32", 32, 32, 2, 64, "v_mfma_f32_32x32x2_f32"}, {"f32", 16, 16, 4, 32, "v_mfma_f32_16x16x4_f32"}};
  return {
      {"gfx908", "MI100", 120, 65536, 65536, 64, 256, 256, false, 1502,
       {{"f16", 32, 32, 8, 64, "v_mfma_f32_32x32x8f16"}, {"f16", 16, 16, 16, 32, "v_mfma_f32_16x16x16f16"},
        {"bf16", 32, 32, 4, 64, "v_mfma_f32_32x32x4bf16"}, {"bf16", 16, 16, 8, 32, "v_mfma_f32_16x16x8bf16"},
        {"f32", 32, 32, 2, 64, "v_mfma_f32_32x32x2f32"}, {"f32", 16, 16, 4, 32, "v_mfma_f32_16x16x4f32"},
        {"s8", 32, 32, 8, 64, "v_mfma_i32_32x32x8i8"}, {"s8", 16, 16, 16, 32, "v_mfma_i32_16x16x16i8"}}},
      {"gfx90a", "MI250X (one GCD)", 110, 65536, 65536, 64, 512, 512, true, 1700,
       {{"f16", 32, 32, 8, 64, "v_mfma_f32_32x32x8f16"}, {"f16", 16, 16, 16, 32, "v_mfma_f32_16x16x16f16"},
        {"bf16", 32, 32, 8, 64, "v_mfma_f32_32x32x8bf16_1k"}, {"bf16", 16, 16, 16, 32, "v_mfma_f32_16x16x16bf16_1k"},
        {"f32", 32, 32, 2, 64, "v_mfma_f32_32x32x2f32"}, {"f32", 16, 16, 4, 32, "v_mfma_f32_16x16x4f32"},
        {"s8", 32, 32, 8, 64, "v_mfma_i32_32x32x8i8"}, {"s8", 16, 16, 16, 32, "v_mfma_i32_16x16x16i8"}}},
      {"gfx942", "MI300X", 304, 65536, 65536, 64, 512, 512, true, 2100,
       join(cdna3_16bit_f32,
            {{"e4m3", 32, 32, 16, 32, "v_mfma_f32_32x32x16_fp8_fp8"}, {"e4m3", 16, 16, 32, 16, "v_mfma_f32_16x16x32_fp8_fp8"},
             {"s8", 32, 32, 16, 32, "v_mfma_i32_32x32x16_i8"}, {"s8", 16, 16, 32, 16, "v_mfma_i32_16x16x32_i8"}}),
       true},
      // The CDNA3 shapes run on gfx950 at their gfx942 rate (an assumption); the doubled-K
      // shapes are new in gfx950 and carry its doubled 16-bit peak.
      {"gfx950", "MI355X", 256, 163840, 163840, 64, 512, 512, true, 2400,
       join(cdna3_16bit_f32,
            {{"f16", 32, 32, 16, 32, "v_mfma_f32_32x32x16_f16"}, {"f16", 16, 16, 32, 16, "v_mfma_f32_16x16x32_f16"},
             {"bf16", 32, 32, 16, 32, "v_mfma_f32_32x32x16_bf16"}, {"bf16", 16, 16, 32, 16, "v_mfma_f32_16x16x32_bf16"},
             {"e4m3", 32, 32, 64, 64, "v_mfma_f32_32x32x64_f8f6f4"}, {"e4m3", 16, 16, 128, 32, "v_mfma_f32_16x16x128_f8f6f4"},
             {"s8", 32, 32, 32, 32, "v_mfma_i32_32x32x32_i8"}, {"s8", 16, 16, 64, 16, "v_mfma_i32_16x16x64_i8"}})},
      {"gfx1030", "RX 6900 XT", 80, 65536, 65536, 32, 256, 0, false, 2250, {}},
  };
}

inline const std::vector<AmdArch>& amd_arches() {
  static const std::vector<AmdArch> arches = make_amd_arches();
  return arches;
}

// The known arches; a name with feature suffixes ("gfx90a:xnack-") is looked up without them.
inline const AmdArch* amd_arch(const std::string& arch) {
  const std::string base = arch.substr(0, arch.find(':'));
  for (const auto& a : amd_arches())
    if (base == a.arch) return &a;
  return nullptr;
}

}  // namespace tiletune::gpu::hip
