#include "gpu/backend.h"

#include "common/error.h"
#include "gpu/host/host_backend.h"
#ifdef TILETUNE_WITH_CUDA
#include "gpu/cuda/cuda_backend.h"
#endif
#ifdef TILETUNE_WITH_HIP
#include "gpu/hip/hip_backend.h"
#endif

namespace tiletune::gpu {

bool backend_built(BackendKind kind) {
  switch (kind) {
    case BackendKind::Host: return true;
#ifdef TILETUNE_WITH_CUDA
    case BackendKind::Cuda: return true;
#endif
#ifdef TILETUNE_WITH_HIP
    case BackendKind::Hip: return true;
#endif
    default: return false;
  }
}

BackendKind resolve_backend(const std::string& name) {
  if (name != "auto") {
    BackendKind kind = backend_from_string(name);
    if (!backend_built(kind)) throw Error("backend " + name + " is not built into this binary");
    return kind;
  }
  for (const BackendTraits* t : all_backend_traits())  // highest rank first
    if (backend_built(t->kind) && (t->auto_rank == 0 || !list_devices(t->kind).empty())) return t->kind;
  return BackendKind::Host;
}

[[noreturn]] static void not_built(BackendKind kind) {
  throw Error(std::string("backend ") + to_string(kind) +
              " was not built into this binary (configure with its toolkit installed)");
}

std::unique_ptr<Compiler> make_compiler(BackendKind kind) {
  switch (kind) {
    case BackendKind::Host: return host::make_compiler();
#ifdef TILETUNE_WITH_CUDA
    case BackendKind::Cuda: return cuda::make_compiler();
#endif
#ifdef TILETUNE_WITH_HIP
    case BackendKind::Hip: return hip::make_compiler();
#endif
    default: not_built(kind);
  }
}

std::vector<DeviceInfo> list_devices(BackendKind kind) {
  switch (kind) {
    case BackendKind::Host: return host::list_devices();
#ifdef TILETUNE_WITH_CUDA
    case BackendKind::Cuda: return cuda::list_devices();
#endif
#ifdef TILETUNE_WITH_HIP
    case BackendKind::Hip: return hip::list_devices();
#endif
    default: return {};
  }
}

std::unique_ptr<Device> open_device(BackendKind kind, int index) {
  switch (kind) {
    case BackendKind::Host: return host::open_device(index);
#ifdef TILETUNE_WITH_CUDA
    case BackendKind::Cuda: return cuda::open_device(index);
#endif
#ifdef TILETUNE_WITH_HIP
    case BackendKind::Hip: return hip::open_device(index);
#endif
    default: not_built(kind);
  }
}

}  // namespace tiletune::gpu
