// The CUDA backend's traits (gpu/backend_traits.h).
#pragma once
#include <algorithm>

#include "gpu/backend.h"

namespace tiletune::gpu::cuda {

inline void assume_from_arch(DeviceInfo& d, bool measured) {
  const int cc = arch_number(d.arch, "sm_");
  d.compute_capability = std::max(cc, 0);
  d.max_threads_per_block = 1024;
  d.warp_size = 32;
  d.shared_bytes_per_block = 48 * 1024;
  // Opt-in shared memory per block by compute capability (CUDA programming guide, table 21).
  d.shared_bytes_optin = cc >= 90 && cc < 100 ? 232448
                         : cc == 100 || cc == 103 ? 232448
                         : cc == 80 || cc == 87   ? 166912
                         : cc == 86 || cc == 89 || cc >= 120 ? 101376
                         : cc == 75 ? 65536
                         : cc == 70 || cc == 72 ? 98304
                                    : 48 * 1024;
  if (!measured) d.multiprocessors = 132;
}

inline const BackendTraits kTraits{BackendKind::Cuda, "cuda", "prelude_cuda.h", false, 100, 2, 2048, "sm_", assume_from_arch};

}  // namespace tiletune::gpu::cuda
