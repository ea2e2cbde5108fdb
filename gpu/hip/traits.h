// The HIP backend's traits (gpu/backend_traits.h).
#pragma once

#include "gpu/backend.h"
#include "gpu/hip/arch_table.h"

namespace tiletune::gpu::hip {

// Known arches from the arch table (gfx950's 160 KB of LDS prunes differently from gfx942's 64),
// others by generation.
inline void assume_from_arch(DeviceInfo& d, bool measured) {
  const int gen = arch_number(d.arch, "gfx");
  d.warp_size = gen >= 1000 ? 32 : 64;  // RDNA (gfx10xx, gfx11xx, gfx12xx) runs wave32 under HIP
  d.max_threads_per_block = 1024;
  d.shared_bytes_per_block = d.shared_bytes_optin = 65536;
  if (!measured) d.multiprocessors = 104;
  if (const AmdArch* a = amd_arch(d.arch)) {
    d.warp_size = a->wave_size;
    d.shared_bytes_per_block = d.shared_bytes_optin = a->lds_bytes_per_workgroup;
    d.mfma_k16 = a->mfma_k16();
    d.mfma_k_fp8 = a->mfma_k("e4m3");
    d.mfma_k_int8 = a->mfma_k("s8");
    if (!measured) d.multiprocessors = a->compute_units;
  }
}

inline const BackendTraits kTraits{BackendKind::Hip, "hip", "prelude_hip.h", false, 100, 1, 2560, "gfx", assume_from_arch};

}  // namespace tiletune::gpu::hip
