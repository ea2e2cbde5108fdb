#include "vendors/vendor_conv.h"

#include <cstdlib>

#include "common/env.h"
#include "common/error.h"
#include "vendors/libraries.h"

#ifdef TILETUNE_WITH_CUDA
#include "gpu/cuda/cuda_backend.h"
#endif
#ifdef TILETUNE_WITH_HIP
#include "gpu/hip/hip_backend.h"
#endif

namespace tiletune::gpu {

std::unique_ptr<VendorConv> make_vendor_conv(Device& dev, std::string* why_not) {
#ifdef TILETUNE_WITH_CUDA
  if (dev.info().backend == BackendKind::Cuda) {
    // The graph API's engines, as PyTorch runs them; TILETUNE_CUDNN_API=legacy keeps the legacy find.
    const std::string api = env_text("TILETUNE_CUDNN_API").value_or("graph");
    if (api != "graph" && api != "legacy") throw Error("TILETUNE_CUDNN_API='" + api.substr(0, 200) + "': takes graph or legacy");
    if (api == "graph")
      if (auto graph = cuda::make_cudnn_graph_conv(dev, nullptr)) return graph;
    return cuda::make_cudnn_conv(dev, why_not);
  }
#endif
#ifdef TILETUNE_WITH_HIP
  if (dev.info().backend == BackendKind::Hip) return hip::make_miopen_conv(dev, why_not);
#endif
  if (why_not) *why_not = std::string("no vendor convolution library for the ") + to_string(dev.info().backend) + " backend";
  return nullptr;
}

}  // namespace tiletune::gpu
