#include "gpu/host/cpu_topology.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

namespace tiletune::gpu::host {
namespace {

namespace fs = std::filesystem;

std::string read_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

// The CPU numbers of a Linux CPU list; empty for a malformed one.
std::vector<int> cpu_list(const std::string& list) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at < list.size()) {
    std::size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string range = list.substr(at, end - at);
    const std::size_t dash = range.find('-');
    try {
      std::size_t used = 0;
      const int lo = std::stoi(range.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? range.size() : dash)) return {};
      int hi = lo;
      if (dash != std::string::npos) {
        const std::string tail = range.substr(dash + 1);
        hi = std::stoi(tail, &used);
        if (used != tail.size()) return {};
      }
      if (lo < 0 || hi < lo || hi - lo > 1 << 20) return {};
      for (int c = lo; c <= hi; ++c) out.push_back(c);
    } catch (const std::exception&) {
      return {};
    }
    at = end + 1;
  }
  return out;
}

}  // namespace

int count_cpu_list(const std::string& list) { return int(cpu_list(list).size()); }

std::int64_t parse_cache_size(const std::string& text) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    return 0;
  }
  const std::string unit = text.substr(used);
  if (n < 0) return 0;
  if (unit.empty()) return n;
  if (unit == "K") return n << 10;
  if (unit == "M") return n << 20;
  if (unit == "G") return n << 30;
  return 0;
}

CpuTopology read_cpu_topology(const std::string& sysfs_cpu) {
  const fs::path root(sysfs_cpu);
  CpuTopology t;
  const std::vector<int> online = cpu_list(read_line(root / "online"));
  t.threads = int(online.size());
  // A core is the set of threads that share it; a package, its id.
  std::set<std::string> cores, packages;
  for (int c : online) {
    const fs::path topo = root / ("cpu" + std::to_string(c)) / "topology";
    const std::string siblings = read_line(topo / "thread_siblings_list");
    if (!siblings.empty()) cores.insert(siblings);
    const std::string package = read_line(topo / "physical_package_id");
    if (!package.empty()) packages.insert(package);
  }
  t.cores = int(cores.size());
  t.packages = int(packages.size());
  if (online.empty()) return t;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root / ("cpu" + std::to_string(online[0])) / "cache", ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    CpuCache c;
    try {
      c.level = std::stoi(read_line(entry.path() / "level"));
    } catch (const std::exception&) {
      continue;
    }
    c.type = read_line(entry.path() / "type");
    c.bytes = parse_cache_size(read_line(entry.path() / "size"));
    c.shared_by = count_cpu_list(read_line(entry.path() / "shared_cpu_list"));
    t.caches.push_back(c);
  }
  // Data before Instruction before Unified within a level, as lscpu lists them.
  std::sort(t.caches.begin(), t.caches.end(),
            [](const CpuCache& a, const CpuCache& b) { return std::tie(a.level, a.type) < std::tie(b.level, b.type); });
  return t;
}

SimdIsa host_simd() {
  SimdIsa s;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  struct Isa {
    const char* name;
    int bits;
    bool has;
  };
  // Narrowest first: the last one found of the widest width names the CPU (avx2 over avx). FMA
  // widens nothing: a feature, not a name.
  const Isa isas[] = {{"sse2", 128, bool(__builtin_cpu_supports("sse2"))},
                      {"sse4.2", 128, bool(__builtin_cpu_supports("sse4.2"))},
                      {"avx", 256, bool(__builtin_cpu_supports("avx"))},
                      {"avx2", 256, bool(__builtin_cpu_supports("avx2"))},
                      {"fma", 0, bool(__builtin_cpu_supports("fma"))},
                      {"avx512f", 512, bool(__builtin_cpu_supports("avx512f"))}};
  for (const Isa& isa : isas) {
    if (!isa.has) continue;
    s.features.push_back(isa.name);
    if (isa.bits >= s.width_bits && isa.bits > 0) s.name = isa.name, s.width_bits = isa.bits;
  }
#elif defined(__aarch64__)
  s.features.push_back("neon");
  s.name = "neon", s.width_bits = 128;
#if defined(__linux__) && defined(HWCAP_SVE) && defined(PR_SVE_GET_VL)
  if (::getauxval(AT_HWCAP) & HWCAP_SVE) {
    s.features.push_back("sve");
    s.name = "sve";
    const int vl = ::prctl(PR_SVE_GET_VL);
    s.width_bits = vl > 0 ? (vl & PR_SVE_VL_LEN_MASK) * 8 : 0;
  }
#endif
#endif
  return s;
}

}  // namespace tiletune::gpu::host
