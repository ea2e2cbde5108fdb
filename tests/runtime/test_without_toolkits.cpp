// The runtime library on a machine with no GPU toolkit (issue 19): it needs no GPU library to load,
// and a copy of it, opened with dlopen in a process where the HIP runtime and NVRTC are named as
// files that do not exist, serves a host GEMM through the C API and loads no GPU library doing
// so, while a HIP handle fails saying why. This program links none of tiletune's GPU code, so
// whatever GPU library turns up in it came through the runtime library.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "runtime/tiletune.h"
#include "tests/process_util.h"

#ifndef TILETUNE_RUNTIME_LIB
#error "TILETUNE_RUNTIME_LIB must name the built runtime library"
#endif

namespace fs = std::filesystem;

namespace {

// Every GPU toolkit library the runtime could reach for, by the start of its file name.
const std::vector<std::string> kGpuLibraries = {"libamdhip64", "libhiprtc", "libnvrtc", "libcuda", "libcudart"};

bool is_gpu_library(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  for (const auto& prefix : kGpuLibraries)
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::string> loaded_gpu_libraries() {
  std::vector<std::string> found;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && is_gpu_library(info->dlpi_name))
          static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
        return 0;
      },
      &found);
  return found;
}

template <class F>
F symbol(void* lib, const char* name) {
  auto f = reinterpret_cast<F>(::dlsym(lib, name));
  if (!f) ADD_FAILURE() << "the runtime library lacks " << name;
  return f;
}

TEST(WithoutToolkits, RuntimeLibraryNeedsNoGpuLibrary) {
  tiletune::TempDir dir("tiletune-needed-");
  const std::string log = (dir.path() / "readelf.txt").string();
  ASSERT_EQ(tiletune::testing::wait_for(tiletune::testing::spawn({"readelf", "-d", TILETUNE_RUNTIME_LIB}, log)), 0)
      << tiletune::testing::read_file(log);
  const std::string text = tiletune::testing::read_file(log);
  ASSERT_NE(text.find("(NEEDED)"), std::string::npos) << text;  // readelf's output is what is parsed here
  std::vector<std::string> needed;
  for (std::size_t at = text.find("(NEEDED)"); at != std::string::npos; at = text.find("(NEEDED)", at + 1)) {
    const std::size_t open = text.find('[', at), close = text.find(']', open);
    needed.push_back(text.substr(open + 1, close - open - 1));
  }
  for (const auto& lib : needed) EXPECT_FALSE(is_gpu_library(lib)) << TILETUNE_RUNTIME_LIB << " needs " << lib;
}

// Run by the test below in a fresh process, with the copy's path in TILETUNE_TEST_RUNTIME_COPY.
TEST(WithoutToolkits, DISABLED_HostGemmChild) {
  ASSERT_TRUE(loaded_gpu_libraries().empty());
  const char* path = std::getenv("TILETUNE_TEST_RUNTIME_COPY");
  ASSERT_NE(path, nullptr);
  void* lib = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << ::dlerror();
  auto create = symbol<decltype(&tiletune_create_ex)>(lib, "tiletune_create_ex");
  auto gemm = symbol<decltype(&tiletune_gemm)>(lib, "tiletune_gemm");
  auto destroy = symbol<decltype(&tiletune_destroy)>(lib, "tiletune_destroy");
  auto last_error = symbol<decltype(&tiletune_last_error)>(lib, "tiletune_last_error");
  ASSERT_TRUE(create && gemm && destroy && last_error);

  // No database: the vendor library or the default kernel serves.
  const std::string user_db = (fs::path(path).parent_path() / "user.db").string();
  tiletune_handle_t h = nullptr;
  ASSERT_EQ(create(&h, nullptr, user_db.c_str(), "host", 0), TILETUNE_SUCCESS) << last_error();
  constexpr int M = 24, N = 16, K = 8;
  std::vector<float> a(M * K), b(K * N), c(M * N, NAN);
  for (int i = 0; i < M * K; ++i) a[i] = float(i % 7) - 3.0f;
  for (int i = 0; i < K * N; ++i) b[i] = float(i % 5) - 2.0f;
  ASSERT_EQ(gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, M, N, K, 1.0f, a.data(), TILETUNE_R_32F, M, b.data(), K, 0.0f,
                 c.data(), TILETUNE_R_32F, M, nullptr),
            TILETUNE_SUCCESS)
      << last_error();
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < M; ++i) {
      float ref = 0;
      for (int p = 0; p < K; ++p) ref += a[i + p * M] * b[p + j * K];
      ASSERT_EQ(c[i + j * M], ref) << "C(" << i << ", " << j << ")";  // small integers: exact
    }
  EXPECT_EQ(destroy(h), TILETUNE_SUCCESS);

  // A HIP handle fails with a reason: not built, no driver, or the runtime named and not found.
  tiletune_handle_t hip = nullptr;
  EXPECT_NE(create(&hip, nullptr, user_db.c_str(), "hip", 0), TILETUNE_SUCCESS);
  const std::string why = last_error();
  EXPECT_TRUE(why.find("not built") != std::string::npos || why.find("/dev/kfd") != std::string::npos ||
              why.find("/nonexistent/libamdhip64.so") != std::string::npos)
      << why;

  EXPECT_EQ(loaded_gpu_libraries(), std::vector<std::string>{});
}

TEST(WithoutToolkits, HostGemmThroughTheCApiLoadsNoGpuLibrary) {
  ASSERT_TRUE(loaded_gpu_libraries().empty()) << "this test program links a GPU library itself";
  // A copy away from the build tree, found only by the path given, with the loader's own search
  // path narrowed to its directory.
  tiletune::TempDir dir("tiletune-without-toolkits-");
  const fs::path copy = dir.path() / "libtiletune_runtime.so.0";
  fs::copy_file(TILETUNE_RUNTIME_LIB, copy);
  const std::string log = (dir.path() / "child.log").string();
  const bool passed = tiletune::testing::run_own_test(
      "WithoutToolkits.DISABLED_HostGemmChild",
      {"TILETUNE_TEST_RUNTIME_COPY=" + copy.string(), "LD_LIBRARY_PATH=" + dir.path().string(),
       "TILETUNE_HIP_LIB=/nonexistent/libamdhip64.so.5", "TILETUNE_NVRTC_LIB=/nonexistent/libnvrtc.so.13"},
      log);
  EXPECT_TRUE(passed) << tiletune::testing::read_file(log);
}

}  // namespace
