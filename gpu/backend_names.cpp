// Backend names, in the core library: templates name the backends they support in their JSON.
#include "common/error.h"
#include "gpu/backend.h"

namespace tiletune::gpu {

const char* to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::Host: return "host";
    case BackendKind::Cuda: return "cuda";
    case BackendKind::Hip: return "hip";
  }
  return "?";
}

BackendKind backend_from_string(const std::string& name) {
  if (name == "host") return BackendKind::Host;
  if (name == "cuda") return BackendKind::Cuda;
  if (name == "hip") return BackendKind::Hip;
  throw Error("unknown backend '" + name + "' (expected host, cuda or hip)");
}

}  // namespace tiletune::gpu
