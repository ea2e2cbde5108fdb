// The host CPU as `tiletune devices` describes it: cores, threads and caches read from a sysfs
// tree (here a made-up one), and the vector ISA of the CPU the test runs on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gpu/host/cpu_topology.h"

namespace fs = std::filesystem;
using namespace tiletune::gpu::host;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

class CpuTopologyTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tiletune-sysfs-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    // 4 threads on 2 cores (2 threads each) in one package; CPU 4 is offline and left out.
    write(root_ / "online", "0-3");
    for (int c = 0; c < 5; ++c) {
      const fs::path topo = root_ / ("cpu" + std::to_string(c)) / "topology";
      write(topo / "thread_siblings_list", c < 2 ? "0-1" : c < 4 ? "2-3" : "4");
      write(topo / "physical_package_id", c < 4 ? "0" : "1");
    }
    const fs::path cache = root_ / "cpu0" / "cache";
    auto level = [&](const char* index, const char* lvl, const char* type, const char* size, const char* shared) {
      write(cache / index / "level", lvl);
      write(cache / index / "type", type);
      write(cache / index / "size", size);
      write(cache / index / "shared_cpu_list", shared);
    };
    level("index3", "3", "Unified", "32768K", "0-3");
    level("index0", "1", "Data", "48K", "0-1");
    level("index1", "1", "Instruction", "32K", "0-1");
    level("index2", "2", "Unified", "2M", "0-1");
    write(cache / "uevent", "");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(CpuTopologyTree, CountsThreadsCoresAndPackagesOfTheOnlineCpus) {
  const CpuTopology t = read_cpu_topology(root_.string());
  EXPECT_EQ(t.threads, 4);
  EXPECT_EQ(t.cores, 2);
  EXPECT_EQ(t.packages, 1);
}

TEST_F(CpuTopologyTree, ListsTheCachesByLevel) {
  const CpuTopology t = read_cpu_topology(root_.string());
  ASSERT_EQ(t.caches.size(), 4u);
  EXPECT_EQ(t.caches[0].level, 1);
  EXPECT_EQ(t.caches[0].type, "Data");
  EXPECT_EQ(t.caches[0].bytes, 48 * 1024);
  EXPECT_EQ(t.caches[0].shared_by, 2);
  EXPECT_EQ(t.caches[1].type, "Instruction");
  EXPECT_EQ(t.caches[2].bytes, 2 << 20);
  EXPECT_EQ(t.caches[3].level, 3);
  EXPECT_EQ(t.caches[3].bytes, 32 << 20);
  EXPECT_EQ(t.caches[3].shared_by, 4);
}

TEST(CpuTopology, AMissingTreeSaysNothingRatherThanFailing) {
  const CpuTopology t = read_cpu_topology("/nonexistent/sysfs");
  EXPECT_EQ(t.threads, 0);
  EXPECT_EQ(t.cores, 0);
  EXPECT_TRUE(t.caches.empty());
}

TEST(CpuTopology, CpuLists) {
  EXPECT_EQ(count_cpu_list("0-3,8-11"), 8);
  EXPECT_EQ(count_cpu_list("5"), 1);
  EXPECT_EQ(count_cpu_list("0,2,4-5"), 4);
  EXPECT_EQ(count_cpu_list(""), 0);
  EXPECT_EQ(count_cpu_list("3-1"), 0);
  EXPECT_EQ(count_cpu_list("a-b"), 0);
  EXPECT_EQ(count_cpu_list("1x"), 0);
}

TEST(CpuTopology, CacheSizes) {
  EXPECT_EQ(parse_cache_size("32K"), 32 * 1024);
  EXPECT_EQ(parse_cache_size("8M"), 8 << 20);
  EXPECT_EQ(parse_cache_size("512"), 512);
  EXPECT_EQ(parse_cache_size("12Q"), 0);
  EXPECT_EQ(parse_cache_size(""), 0);
}

TEST(CpuTopology, TheWidestVectorIsaOfThisCpu) {
  const SimdIsa s = host_simd();
#if defined(__x86_64__) || defined(__aarch64__)
  ASSERT_FALSE(s.features.empty());  // x86-64 has SSE2, AArch64 NEON, always
  EXPECT_GE(s.width_bits, 128);
  EXPECT_NE(std::find(s.features.begin(), s.features.end(), s.name), s.features.end());
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) EXPECT_EQ(s.name, "avx512f");
  else if (__builtin_cpu_supports("avx2")) EXPECT_EQ(s.name, "avx2");
#endif
#endif
}

}  // namespace
