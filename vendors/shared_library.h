// Vendor libraries (cuBLAS, cuBLASLt, cuDNN, rocBLAS, OpenBLAS) are loaded at run time, so that a
// build runs where they are absent and the ladder says so instead of failing to start.
#pragma once
#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace tiletune::gpu {

// The first of `names` that loads, else nullptr, with `why` (when given) holding each name's
// dlerror. Never unloaded: its functions are kept in statics.
inline void* open_library(const std::vector<std::string>& names, std::string* why = nullptr) {
  for (const auto& name : names) {
    if (void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = ::dlerror();
    if (why) *why += (why->empty() ? "" : "; ") + std::string(e ? e : name + ": cannot be loaded");
  }
  return nullptr;
}
inline void* open_library(std::initializer_list<const char*> names, std::string* why = nullptr) {
  return open_library(std::vector<std::string>(names.begin(), names.end()), why);
}

// Binds `fn` to `lib`'s symbol `name`; false when it has none.
template <class F>
bool bind_symbol(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  return fn != nullptr;
}

// The same, adding `name` to the comma-separated `missing` when it has none.
template <class F>
bool bind_symbol(void* lib, F& fn, const char* name, std::string& missing) {
  if (bind_symbol(lib, fn, name)) return true;
  missing += std::string(missing.empty() ? "" : ", ") + name;
  return false;
}

}  // namespace tiletune::gpu
