// What the host CPU is, for `tiletune devices`: cores, threads, caches (Linux's sysfs) and the
// widest vector ISA it runs. The sysfs folder is a parameter so that tests can read a made-up one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tiletune::gpu::host {

struct CpuCache {
  int level = 0;
  std::string type;         // "Data", "Instruction", "Unified"
  std::int64_t bytes = 0;
  int shared_by = 0;        // logical CPUs sharing it (0: not said)
};

struct CpuTopology {
  int threads = 0;   // logical CPUs online
  int cores = 0;     // physical cores among them (0: not said)
  int packages = 0;  // sockets (0: not said)
  std::vector<CpuCache> caches;  // the first online CPU's, by level
};

struct SimdIsa {
  std::string name;             // the widest: "avx512f", "avx2", "avx", "sse2", "sve", "neon", "" (none known)
  int width_bits = 0;           // its vector width (0: unknown)
  std::vector<std::string> features;  // the vector features found, narrowest first
};

// Reads `sysfs_cpu` (/sys/devices/system/cpu); what is missing stays 0 / empty.
CpuTopology read_cpu_topology(const std::string& sysfs_cpu = "/sys/devices/system/cpu");

// The number of CPUs in a Linux CPU list ("0-3,8-11" -> 8); 0 for an empty or malformed one.
int count_cpu_list(const std::string& list);

// A sysfs cache size ("32K", "1024K", "8M", "512") in bytes; 0 for a malformed one.
std::int64_t parse_cache_size(const std::string& text);

// The vector ISA of the CPU this runs on.
SimdIsa host_simd();

}  // namespace tiletune::gpu::host
