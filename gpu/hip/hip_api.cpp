#include "gpu/hip/hip_api.h"

#include <dlfcn.h>
#include <link.h>

#include <string>
#include <vector>

#include "common/env.h"
#include "common/error.h"
#include "vendors/shared_library.h"

// Two steps, so that a function the headers rename with a macro (later HIPs version some, e.g.
// hipGetDeviceProperties) is looked up under the name the header declares.
#define TT_HIP_STR_(x) #x
#define TT_HIP_STR(x) TT_HIP_STR_(x)

namespace tiletune::gpu::hip {
namespace {

template <class Api>
struct Loaded {
  Api api;
  void* handle = nullptr;
  std::string why;  // empty: every function resolved
};

// The soname of the major version the declarations come from first (HIP keeps its ABI within
// one), then any, then where it was at build time (ROCm's /opt/rocm/lib is not on the loader's path).
std::vector<std::string> runtime_names() {
  if (auto named = env_text("TILETUNE_HIP_LIB")) return {*named};  // named: that one only
  const std::string soname = "libamdhip64.so." + std::to_string(HIP_VERSION_MAJOR);
  std::vector<std::string> names = {soname, "libamdhip64.so"};
#ifdef TILETUNE_HIP_DIR
  names.push_back(std::string(TILETUNE_HIP_DIR) + "/" + soname);
#endif
  return names;
}

// The file a handle came from, for messages.
std::string file_of(void* handle) {
  link_map* map = nullptr;
  return ::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name ? map->l_name : "the library loaded";
}

const Loaded<HipRuntime>& runtime_table() {
  static const Loaded<HipRuntime> t = [] {
    Loaded<HipRuntime> t;
    std::string tried;
    t.handle = open_library(runtime_names(), &tried);
    if (!t.handle) {
      t.why = "the HIP runtime cannot be loaded (" + tried + "); set TILETUNE_HIP_LIB or LD_LIBRARY_PATH";
      return t;
    }
    std::string missing;
#define TT_RESOLVE(name) bind_symbol(t.handle, t.api.name, TT_HIP_STR(name), missing);
    TT_HIP_RUNTIME_FUNCS(TT_RESOLVE)
#undef TT_RESOLVE
    bind_symbol(t.handle, t.api.hipMalloc, "hipMalloc", missing);
    if (!missing.empty()) t.why = "the HIP runtime " + file_of(t.handle) + " lacks " + missing;
    return t;
  }();
  return t;
}

const Loaded<Hiprtc>& hiprtc_table() {
  static const Loaded<Hiprtc> t = [] {
    Loaded<Hiprtc> t;
    const auto& rt = runtime_table();
    if (!rt.why.empty()) {
      t.why = "hipRTC: " + rt.why;
      return t;
    }
    // HIP 5 carries hipRTC inside libamdhip64; later releases ship it as a library of its own.
    t.handle = rt.handle;
    if (!::dlsym(t.handle, "hiprtcCreateProgram")) {
      std::string tried;
      t.handle = open_library({"libhiprtc.so." + std::to_string(HIP_VERSION_MAJOR), "libhiprtc.so"}, &tried);
      if (!t.handle) {
        t.why = "hipRTC cannot be loaded: the HIP runtime has none and " + tried;
        return t;
      }
    }
    std::string missing;
#define TT_RESOLVE(name) bind_symbol(t.handle, t.api.name, TT_HIP_STR(name), missing);
    TT_HIPRTC_FUNCS(TT_RESOLVE)
#undef TT_RESOLVE
    if (!missing.empty()) t.why = "hipRTC " + file_of(t.handle) + " lacks " + missing;
    return t;
  }();
  return t;
}

}  // namespace

const HipRuntime& runtime() {
  const auto& t = runtime_table();
  if (!t.why.empty()) throw Error(t.why);
  return t.api;
}

const Hiprtc& hiprtc() {
  const auto& t = hiprtc_table();
  if (!t.why.empty()) throw Error(t.why);
  return t.api;
}

const std::string& runtime_missing() { return runtime_table().why; }
const std::string& hiprtc_missing() { return hiprtc_table().why; }

}  // namespace tiletune::gpu::hip
