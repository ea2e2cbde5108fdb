// The HIP backend's traits (gpu/backend_traits.h).
#pragma once

#include "gpu/backend.h"

namespace tiletune::gpu::hip {

inline void assume_from_arch(DeviceInfo& d, bool measured) {
  const int gen = arch_number(d.arch, "gfx");
  d.warp_size = gen >= 1000 ? 32 : 64;  // RDNA (gfx10xx, gfx11xx, gfx12xx) runs wave32 under HIP
  d.max_threads_per_block = 1024;
  d.shared_bytes_per_block = d.shared_bytes_optin = 65536;
  if (!measured) d.multiprocessors = 104;
}

inline const BackendTraits kTraits{BackendKind::Hip, "hip", "prelude_hip.h", false, 100, 1, 2560, "gfx", assume_from_arch};

}  // namespace tiletune::gpu::hip
