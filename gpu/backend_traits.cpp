// The backends tiletune knows, in the core library (templates name the backends they support, and
// configs, databases and the analytical model ask for their traits); one line each.
#include "gpu/backend_traits.h"

#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "gpu/backend.h"
#include "gpu/cuda/traits.h"
#include "gpu/hip/traits.h"
#include "gpu/host/traits.h"

namespace tiletune::gpu {

const std::vector<const BackendTraits*>& all_backend_traits() {
  static const std::vector<const BackendTraits*> all = [] {
    std::vector<const BackendTraits*> v = {&cuda::kTraits, &hip::kTraits, &host::kTraits};
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->auto_rank > b->auto_rank; });
    return v;
  }();
  return all;
}

const BackendTraits& traits(BackendKind kind) {
  for (const BackendTraits* t : all_backend_traits())
    if (t->kind == kind) return *t;
  throw Error("backend " + std::to_string(int(kind)) + " has no traits");
}

const BackendTraits& traits_named(const std::string& name) {
  std::string known;
  for (const BackendTraits* t : all_backend_traits()) {
    if (name == t->name) return *t;
    known += (known.empty() ? "" : ", ") + std::string(t->name);
  }
  throw Error("unknown backend '" + name + "' (expected " + known + ")");
}

const BackendTraits& traits_for_arch(const std::string& arch) {
  const BackendTraits* fallback = nullptr;
  for (const BackendTraits* t : all_backend_traits()) {
    if (!*t->arch_prefix) fallback = t;
    else if (arch.rfind(t->arch_prefix, 0) == 0) return *t;
  }
  if (!fallback) throw Error("no backend takes the arch '" + arch + "'");
  return *fallback;
}

const char* to_string(BackendKind kind) { return traits(kind).name; }
BackendKind backend_from_string(const std::string& name) { return traits_named(name).kind; }

int arch_number(const std::string& arch, const char* prefix) {
  const std::string p = prefix;
  if (arch.rfind(p, 0) != 0) return -1;
  std::size_t end = p.size();
  while (end < arch.size() && std::isdigit(static_cast<unsigned char>(arch[end]))) ++end;
  if (end == p.size() || end - p.size() > 6) return -1;
  return std::stoi(arch.substr(p.size(), end - p.size()));
}

}  // namespace tiletune::gpu
