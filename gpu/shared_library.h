// Vendor libraries (cuBLAS, cuBLASLt, rocBLAS, OpenBLAS) are loaded at run time, so that a build
// runs where they are absent and the ladder says so instead of failing to start.
#pragma once
#include <dlfcn.h>

#include <initializer_list>

namespace tiletune::gpu {

// The first of `names` that loads, else nullptr. Never unloaded: its functions are kept in statics.
inline void* open_library(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (void* h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

// Binds `fn` to `lib`'s symbol `name`; false when it has none.
template <class F>
bool bind_symbol(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  return fn != nullptr;
}

}  // namespace tiletune::gpu
