// The host backend's traits (gpu/backend_traits.h).
#pragma once
#include "gpu/backend.h"

namespace tiletune::gpu::host {

inline void assume_from_arch(DeviceInfo& d, bool) {
  d.max_threads_per_block = 1;
  d.shared_bytes_per_block = 0;
  d.warp_size = 1;
}

inline const BackendTraits kTraits{BackendKind::Host, "host", "", true, 0, 0, 1, "", assume_from_arch};

}  // namespace tiletune::gpu::host
