// `tiletune devices`: the backends built in and the devices they find, a CPU in CPU terms (cores,
// threads, caches, vector ISA) and a GPU in GPU terms (multiprocessors, shared memory per block).
#include <cstdio>
#include <memory>
#include <string>

#include "gpu/backend.h"
#include "gpu/host/cpu_topology.h"
#include "tools/commands.h"
#include "tools/json_output.h"

namespace tiletune::tools {
namespace {

std::string bytes_text(std::int64_t n) {
  char buf[32];
  if (n >= (std::int64_t(1) << 20) && n % (std::int64_t(1) << 20) == 0)
    std::snprintf(buf, sizeof buf, "%lld MiB", (long long)(n >> 20));
  else std::snprintf(buf, sizeof buf, "%lld KiB", (long long)(n >> 10));
  return buf;
}

std::string cache_name(const gpu::host::CpuCache& c) {
  const std::string suffix = c.type == "Data" ? "d" : c.type == "Instruction" ? "i" : "";
  return "L" + std::to_string(c.level) + suffix;
}

std::string cpu_text(const gpu::DeviceInfo& d, const gpu::host::CpuTopology& t, const gpu::host::SimdIsa& simd) {
  std::string s = "CPU: ";
  if (t.cores > 0) s += std::to_string(t.cores) + " cores, ";
  s += std::to_string(t.threads > 0 ? t.threads : d.multiprocessors) + " threads";
  if (t.packages > 1) s += " in " + std::to_string(t.packages) + " packages";
  if (t.threads != d.multiprocessors) s += " (kernels run on " + std::to_string(d.multiprocessors) + ")";
  for (const auto& c : t.caches) {
    s += ", " + cache_name(c) + " " + bytes_text(c.bytes);
    if (c.shared_by > 1) s += " (shared by " + std::to_string(c.shared_by) + ")";
  }
  if (!simd.name.empty()) s += ", SIMD " + simd.name + " " + std::to_string(simd.width_bits) + "-bit";
  return s;
}

std::string gpu_text(const gpu::DeviceInfo& d) {
  std::string s = std::to_string(d.multiprocessors) + " multiprocessors, " + bytes_text(d.shared_bytes_per_block) +
                  " shared memory per block";
  if (d.shared_bytes_optin > d.shared_bytes_per_block) s += " (" + bytes_text(d.shared_bytes_optin) + " opted in)";
  s += ", warp " + std::to_string(d.warp_size);
  if (d.cache_bytes > 0) s += ", L2 " + bytes_text(d.cache_bytes);
  return s + ", driver " + d.driver_version;
}

Json cpu_json(const gpu::DeviceInfo& d, const gpu::host::CpuTopology& t, const gpu::host::SimdIsa& simd) {
  Json caches = Json::array();
  for (const auto& c : t.caches)
    caches.push_back({{"level", c.level}, {"type", c.type}, {"bytes", c.bytes}, {"shared_by", c.shared_by}});
  return {{"cores", t.cores > 0 ? Json(t.cores) : Json(nullptr)},
          {"threads", t.threads > 0 ? t.threads : d.multiprocessors},
          {"packages", t.packages > 0 ? Json(t.packages) : Json(nullptr)},
          {"kernel_threads", d.multiprocessors},
          {"caches", caches},
          {"simd", {{"isa", simd.name.empty() ? Json(nullptr) : Json(simd.name)},
                    {"width_bits", simd.width_bits > 0 ? Json(simd.width_bits) : Json(nullptr)},
                    {"features", simd.features}}}};
}

Json gpu_json(const gpu::DeviceInfo& d) {
  return {{"multiprocessors", d.multiprocessors},
          {"max_threads_per_block", d.max_threads_per_block},
          {"shared_bytes_per_block", d.shared_bytes_per_block},
          {"shared_bytes_optin", d.shared_bytes_optin},
          {"warp_size", d.warp_size},
          {"compute_capability", d.compute_capability > 0 ? Json(d.compute_capability) : Json(nullptr)},
          {"l2_bytes", d.cache_bytes > 0 ? Json(d.cache_bytes) : Json(nullptr)}};
}

}  // namespace

Run add_devices(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("devices", "list the backends built in and the devices they find");
  add_json_flag(cmd, *json);
  return [json, cmd] {
    Json backends = Json::array();
    for (const gpu::BackendTraits* t : gpu::all_backend_traits()) {
      const gpu::BackendKind kind = t->kind;
      const char* name = gpu::to_string(kind);
      Json entry{{"backend", name}, {"built", gpu::backend_built(kind)}, {"devices", Json::array()}};
      if (!gpu::backend_built(kind)) {
        if (!*json) std::printf("%-5s not built\n", name);
        backends.push_back(entry);
        continue;
      }
      const auto devs = gpu::list_devices(kind);
      if (devs.empty() && !*json) std::printf("%-5s no devices\n", name);
      for (const auto& d : devs) {
        Json dj{{"index", d.index},
                          {"name", d.name},
                          {"arch", d.arch},
                          {"kind", t->host_memory ? "cpu" : "gpu"},
                          {"driver_version", d.driver_version}};
        std::string details;
        if (t->host_memory) {  // the host backend's "multiprocessors" are threads of the one CPU
          const gpu::host::CpuTopology topo = gpu::host::read_cpu_topology();
          const gpu::host::SimdIsa simd = gpu::host::host_simd();
          dj["cpu"] = cpu_json(d, topo, simd);
          details = cpu_text(d, topo, simd);
        } else {
          dj["gpu"] = gpu_json(d);
          details = gpu_text(d);
        }
        entry["devices"].push_back(dj);
        if (!*json) std::printf("%-5s %d: %s  arch %s  %s\n", name, d.index, d.name.c_str(), d.arch.c_str(), details.c_str());
      }
      backends.push_back(entry);
    }
    const char* picked = gpu::to_string(gpu::resolve_backend("auto"));
    if (*json) {
      Json doc = json_document(*cmd, kExitOk);
      doc["backends"] = backends;
      doc["auto"] = picked;
      print_json(doc);
    } else {
      std::printf("auto picks: %s\n", picked);
    }
    return kExitOk;
  };
}

}  // namespace tiletune::tools
