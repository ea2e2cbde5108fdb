// What the analytical model (solutions/model_amd.h) needs of an AMD arch beyond gpu/hip/arch_table.h:
// how a CU shares its SIMDs, registers and LDS among waves, and the bandwidths of the memory
// levels. Header-only, like the arch table.
//
// Sources: AMD's CDNA2/CDNA3/CDNA4 white papers and ISA guides (L2 channels x bytes per clock,
// LDS bytes per clock, wave slots, VGPR allocation granule) and data sheets (HBM). The load
// latency is an assumed figure (between an L2 hit's and HBM's under load), and gfx950's doubled
// LDS read rate is the CDNA4 white paper's claim. None of these figures has been measured on AMD
// hardware.
#pragma once
#include <string>

namespace tiletune::gpu::hip {

struct AmdModelFigures {
  const char* arch;
  int simds_per_cu;
  int max_waves_per_simd;
  int vgpr_granule;               // registers per lane are allocated in blocks of this many
  double lds_bytes_per_clock;     // one CU, reads
  double l2_bytes_per_clock;      // whole device (all XCDs), L2 to the CUs
  double store_bytes_per_clock;   // one CU, registers to memory
  double hbm_bytes_per_s;         // whole device
  int l2_domains;                 // L2s that split the CUs (XCDs); work-groups go round-robin over them
  double miss_bytes_per_s;        // whole device, what an L2 miss is served at (MALL, else HBM)
  double load_latency_s;          // a global load under load, most of them L2 or MALL hits
};

inline const AmdModelFigures* amd_model_figures(const std::string& arch) {
  // MALL (Infinity Cache) peak: 17.2 TB/s on MI300X, assumed the same on MI355X; gfx90a and
  // gfx908 have none, so their misses go to HBM.
  // L2: gfx90a 32 channels x 128 B per GCD; gfx942/gfx950 16 channels x 128 B per XCD x 8 XCDs.
  static const AmdModelFigures figures[] = {
      {"gfx908", 4, 10, 8, 128, 16 * 64, 64, 1.2288e12, 1, 1.2288e12, 0.5e-6},
      {"gfx90a", 4, 8, 8, 128, 32 * 128, 64, 1.6384e12, 1, 1.6384e12, 0.5e-6},
      {"gfx942", 4, 8, 8, 128, 8 * 16 * 128, 64, 5.3e12, 8, 17.2e12, 0.5e-6},
      {"gfx950", 4, 8, 8, 256, 8 * 16 * 128, 64, 8.0e12, 8, 17.2e12, 0.5e-6},
  };
  const std::string base = arch.substr(0, arch.find(':'));
  for (const auto& f : figures)
    if (base == f.arch) return &f;
  return nullptr;
}

}  // namespace tiletune::gpu::hip
