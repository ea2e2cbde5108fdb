#include "gpu/backend.h"

#include "common/error.h"
#include "gpu/compile_cache.h"
#include "gpu/host/host_backend.h"
#ifdef TILETUNE_WITH_CUDA
#include "gpu/cuda/cuda_backend.h"
#endif
#ifdef TILETUNE_WITH_HIP
#include "gpu/hip/hip_backend.h"
#endif

namespace tiletune::gpu {
namespace {

// The backends built into this binary: one line each (their traits are in gpu/backend_traits.cpp).
struct Built {
  BackendKind kind;
  std::unique_ptr<Compiler> (*make_compiler)();
  std::vector<DeviceInfo> (*list_devices)();
  std::unique_ptr<Device> (*open_device)(int index);
};

const std::vector<Built>& built() {
  static const std::vector<Built> all = {
      {BackendKind::Host, host::make_compiler, host::list_devices, host::open_device},
#ifdef TILETUNE_WITH_CUDA
      {BackendKind::Cuda, cuda::make_compiler, cuda::list_devices, cuda::open_device},
#endif
#ifdef TILETUNE_WITH_HIP
      {BackendKind::Hip, hip::make_compiler, hip::list_devices, hip::open_device},
#endif
  };
  return all;
}

const Built* find_built(BackendKind kind) {
  for (const Built& b : built())
    if (b.kind == kind) return &b;
  return nullptr;
}

const Built& require_built(BackendKind kind) {
  if (const Built* b = find_built(kind)) return *b;
  throw Error(std::string("backend ") + to_string(kind) +
              " was not built into this binary (configure with its toolkit installed)");
}

}  // namespace

bool backend_built(BackendKind kind) { return find_built(kind) != nullptr; }

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

std::unique_ptr<Compiler> make_compiler(BackendKind kind) {
  return with_compile_cache(require_built(kind).make_compiler());
}

std::vector<DeviceInfo> list_devices(BackendKind kind) {
  const Built* b = find_built(kind);
  return b ? b->list_devices() : std::vector<DeviceInfo>{};
}

std::unique_ptr<Device> open_device(BackendKind kind, int index) { return require_built(kind).open_device(index); }

std::string code_object_figures(BackendKind kind, const CodeObject& code, const std::string& arch) {
#ifdef TILETUNE_WITH_HIP
  if (kind == BackendKind::Hip) return hip::code_object_figures(code, arch);
#endif
  (void)kind, (void)code, (void)arch;
  return "";
}

}  // namespace tiletune::gpu
