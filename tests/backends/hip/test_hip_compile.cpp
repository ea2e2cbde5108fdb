// HIP backend: hipRTC compiles of the SIMT GEMM template for the supported AMD targets, code
// object metadata (VGPRs / LDS), refusal of targets that would abort hipRTC, compile errors, and
// device enumeration (the device tests skip without an AMD GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "gpu/backend.h"
#include "gpu/hip/code_object_info.h"
#include "gpu/hip/hip_backend.h"
#include "kernel_templates/gemm_params.h"
#include "ops/output_check.h"
#include "tests/process_util.h"

#ifndef TILETUNE_KERNEL_DIR
#error "TILETUNE_KERNEL_DIR must name the kernel_templates directory"
#endif

namespace {

namespace hipb = tiletune::gpu::hip;
using tiletune::gpu::CompileRequest;
using tiletune::gpu::CompileResult;

const std::map<std::string, std::string>& kernel_headers() {
  static const std::map<std::string, std::string> headers = [] {
    std::map<std::string, std::string> h;
    for (const auto& entry : std::filesystem::directory_iterator(TILETUNE_KERNEL_DIR)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      h[entry.path().filename().string()] = text.str();
    }
    return h;
  }();
  return headers;
}

constexpr const char* kSimtSource = "#include \"prelude_hip.h\"\n#include \"simt_gemm.cuh\"\n";

struct Variant {
  const char* ta;
  const char* tc;
  int ta_bytes;
  bool transa, transb;
  int mt0, mt1, du, tt0, tt1, vw, pad, db;

  std::string name_expression() const {
    std::ostringstream s;
    s << "simt_gemm<" << ta << ", " << tc << ", " << (transa ? "true" : "false") << ", "
      << (transb ? "true" : "false") << ", " << mt0 << ", " << mt1 << ", " << du << ", " << tt0
      << ", " << tt1 << ", " << vw << ", " << pad << ", " << db << ">";
    return s.str();
  }
  int threads() const { return (mt0 / tt0) * (mt1 / tt1); }
  int lds_bytes() const { return (db + 1) * du * ((mt0 + pad) + (mt1 + pad)) * 4; }
  // Mirrors the template's static_asserts, so that a bad sample is reported as such.
  bool valid() const {
    return mt0 % tt0 == 0 && mt1 % tt1 == 0 && vw * ta_bytes <= 16 && (mt0 + pad) % 4 == 0 &&
           (mt1 + pad) % 4 == 0 && du % vw == 0 && mt0 % vw == 0 && mt1 % vw == 0 &&
           (db == 0 || db == 1) && lds_bytes() <= 65536;
  }
};

// fp32, fp16 and bf16 inputs; all four transposes; several tiles, vector widths, PAD and DB on
// and off; tiles where some threads stage no vector (64x64, DU=8, VW=4: 128 vectors, 256 threads).
const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {"float", "float", 4, false, false, 64, 64, 8, 4, 4, 4, 4, 1},
      {"float", "float", 4, true, false, 128, 64, 16, 8, 4, 4, 4, 1},
      {"float", "float", 4, false, true, 32, 32, 8, 4, 4, 1, 0, 0},
      {"float", "float", 4, true, true, 64, 128, 8, 4, 8, 2, 4, 1},
      {"tt_half", "tt_half", 2, false, false, 64, 64, 16, 4, 4, 4, 4, 1},
      {"tt_bf16", "float", 2, true, false, 128, 128, 16, 8, 8, 8, 4, 1},
      {"tt_half", "float", 2, true, true, 64, 64, 32, 4, 4, 8, 4, 0},
  };
  return v;
}

CompileRequest simt_request(const Variant& v, const std::string& arch) {
  CompileRequest r;
  r.source = kSimtSource;
  r.headers = kernel_headers();
  r.name_expression = v.name_expression();
  r.arch = arch;
  return r;
}

TEST(HipArch, SupportedListIsTheThreeKnownTargets) {
  EXPECT_TRUE(hipb::arch_supported("gfx908"));
  EXPECT_TRUE(hipb::arch_supported("gfx90a"));
  EXPECT_TRUE(hipb::arch_supported("gfx1030"));
  EXPECT_FALSE(hipb::arch_supported("gfx942"));
  EXPECT_FALSE(hipb::arch_supported("gfx1100"));
  EXPECT_FALSE(hipb::arch_supported("gfx90a:xnack-"));
  EXPECT_FALSE(hipb::arch_supported(""));
  EXPECT_EQ(hipb::supported_arches_text(), "gfx908, gfx90a, gfx1030");
}

TEST(HipCompile, VersionNamesHiprtc) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  const std::string v = compiler->version();
  std::printf("hip compiler version: %s\n", v.c_str());
  EXPECT_EQ(v.rfind("hiprtc-", 0), 0u) << v;
  EXPECT_NE(v, "hiprtc-none") << "hipRTC was not loaded";
}

TEST(HipCompile, SimtVariantsForEveryArch) {
  ASSERT_TRUE(kernel_headers().count("simt_gemm.cuh")) << "no simt_gemm.cuh in " << TILETUNE_KERNEL_DIR;
  ASSERT_TRUE(kernel_headers().count("prelude_hip.h")) << "no prelude_hip.h in " << TILETUNE_KERNEL_DIR;
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  for (const auto& arch : hipb::supported_arches()) {
    for (const auto& v : variants()) {
      const std::string expr = v.name_expression();
      SCOPED_TRACE(arch + " " + expr);
      ASSERT_TRUE(v.valid()) << "sample variant violates the template's constraints";
      const auto t0 = std::chrono::steady_clock::now();
      CompileResult res = compiler->compile(simt_request(v, arch));
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ASSERT_TRUE(res.ok) << res.log;
      ASSERT_FALSE(res.code.bytes.empty());
      ASSERT_FALSE(res.code.symbol.empty());

      std::vector<hipb::AmdKernelInfo> kernels = hipb::read_amd_code_object(res.code.bytes);
      auto it = std::find_if(kernels.begin(), kernels.end(),
                             [&](const hipb::AmdKernelInfo& k) { return k.name == res.code.symbol; });
      ASSERT_NE(it, kernels.end()) << "kernel " << res.code.symbol << " not in the code object metadata";
      EXPECT_GT(it->vgpr_count, 0);
      EXPECT_GT(it->sgpr_count, 0);
      EXPECT_GT(it->lds_bytes, 0);
      EXPECT_LE(it->lds_bytes, 65536);
      EXPECT_GE(it->lds_bytes, v.lds_bytes());
      EXPECT_EQ(it->max_workgroup_size, v.threads()) << "__launch_bounds__ not in the metadata";
      EXPECT_TRUE(it->wavefront_size == 32 || it->wavefront_size == 64) << it->wavefront_size;
      std::printf("%-7s %-70s %5.2fs %6zuB vgpr=%3d agpr=%3d sgpr=%3d lds=%5d spill=%d/%d scratch=%d wave=%d\n",
                  arch.c_str(), expr.c_str(), secs, res.code.bytes.size(), it->vgpr_count, it->agpr_count,
                  it->sgpr_count, it->lds_bytes, it->vgpr_spill_count, it->sgpr_spill_count,
                  it->private_bytes, it->wavefront_size);
    }
  }
}

// The validator's device-side output check and C restore (check_output.cuh), as the tuner asks for them.
TEST(HipCompile, OutputCheckForEveryArchAndType) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  tiletune::gpu::DeviceInfo dev;
  dev.backend = tiletune::gpu::BackendKind::Hip;
  for (const auto& arch : hipb::supported_arches()) {
    dev.arch = arch;
    for (auto type : {tiletune::DataType::F32, tiletune::DataType::F16, tiletune::DataType::BF16}) {
      CompileResult r = compiler->compile(tiletune::ops::check_output_request(dev, type));
      EXPECT_TRUE(r.ok) << arch << " " << tiletune::to_string(type) << "\n" << r.log;
    }
    for (int word : {2, 4}) {
      CompileResult r = compiler->compile(tiletune::ops::copy_words_request(dev, word));
      EXPECT_TRUE(r.ok) << arch << " " << word << "\n" << r.log;
    }
  }
}

TEST(HipCompile, DisassemblyShowsTheKernel) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  CompileResult res = compiler->compile(simt_request(variants()[0], "gfx90a"));
  ASSERT_TRUE(res.ok) << res.log;
  const std::string dis = hipb::disassemble_amd(res.code.bytes, "gfx90a");
  EXPECT_NE(dis.find(res.code.symbol), std::string::npos) << dis.substr(0, 2000);
  EXPECT_NE(dis.find("s_endpgm"), std::string::npos);
  EXPECT_NE(dis.find("v_fma"), std::string::npos) << "SIMT kernel should use VALU FMAs";
  EXPECT_EQ(dis.find("v_mfma"), std::string::npos) << "SIMT kernel must not use MFMA";
}

// With hipRTC chosen (TILETUNE_HIP_COMPILER=hiprtc): by default, gfx names hipRTC cannot take go
// to the offline compiler (test_hip_offline.cpp).
TEST(HipCompile, RefusesArchesThatWouldAbortHiprtc) {
  ::setenv("TILETUNE_HIP_COMPILER", "hiprtc", 1);
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  ::unsetenv("TILETUNE_HIP_COMPILER");
  for (const std::string arch : {"gfx942", "gfx1100", "gfx950", "sm_90", ""}) {
    CompileResult res = compiler->compile(simt_request(variants()[0], arch));
    EXPECT_FALSE(res.ok) << arch;
    EXPECT_TRUE(res.code.bytes.empty()) << arch;
    EXPECT_NE(res.log.find("'" + arch + "'"), std::string::npos) << res.log;
    EXPECT_NE(res.log.find(hipb::supported_arches_text()), std::string::npos) << res.log;
  }
}

TEST(HipCompile, BrokenSourceReportsTheCompilerError) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  CompileRequest r;
  r.source =
      "#include \"prelude_hip.h\"\n#include \"gemm_params.h\"\n"
      "__global__ void broken(TtGemmParams p) { p.m = undeclared_identifier_xyz; }\n";
  r.headers = kernel_headers();
  r.name_expression = "broken";
  r.arch = "gfx90a";
  CompileResult res = compiler->compile(r);
  EXPECT_FALSE(res.ok);
  EXPECT_TRUE(res.code.bytes.empty());
  EXPECT_NE(res.log.find("undeclared_identifier_xyz"), std::string::npos) << res.log;
  EXPECT_NE(res.log.find("error"), std::string::npos) << res.log;

  // A template instance that trips a static_assert is a compile failure too, not a crash.
  CompileRequest sa;
  sa.source =
      "#include \"prelude_hip.h\"\n#include \"gemm_params.h\"\n"
      "template <int N> __global__ void k(TtGemmParams p) {\n"
      "  static_assert(N > 0, \"tile_must_be_positive\");\n  p.m = N;\n}\n";
  sa.headers = kernel_headers();
  sa.name_expression = "k<0>";
  sa.arch = "gfx1030";
  CompileResult bad = compiler->compile(sa);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.log.find("tile_must_be_positive"), std::string::npos) << bad.log;
}

TEST(HipCompile, MissingHeaderIsAnError) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  CompileRequest r;
  r.source = "#include \"no_such_header_abc.h\"\n__global__ void k() {}\n";
  r.name_expression = "k";
  r.arch = "gfx908";
  CompileResult res = compiler->compile(r);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.log.find("no_such_header_abc.h"), std::string::npos) << res.log;
}

TEST(HipCompile, ConcurrentCompilesAreSafe) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  std::vector<CompileResult> results(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      results[i] = compiler->compile(simt_request(variants()[i % 2], i < 2 ? "gfx90a" : "gfx1030"));
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(results[i].ok) << results[i].log;
    EXPECT_FALSE(results[i].code.bytes.empty());
  }
  // Same request, same bytes.
  CompileResult again = compiler->compile(simt_request(variants()[0], "gfx90a"));
  ASSERT_TRUE(again.ok);
  EXPECT_EQ(again.code.bytes, results[0].code.bytes);
}

TEST(HipCodeObject, UnbundlesClangOffloadBundles) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  CompileResult res = compiler->compile(simt_request(variants()[2], "gfx908"));
  ASSERT_TRUE(res.ok) << res.log;
  const std::vector<std::uint8_t>& elf = res.code.bytes;
  ASSERT_GE(elf.size(), 4u);
  EXPECT_EQ(elf[0], 0x7f);  // hipRTC 5.2 hands back a bare ELF
  EXPECT_EQ(hipb::extract_amd_elf(elf), elf);

  // Wrap it as clang-offload-bundler does: an empty host entry, then the device entry.
  auto put64 = [](std::vector<std::uint8_t>& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  const std::string host_id = "host-x86_64-unknown-linux-gnu-";
  const std::string dev_id = "hipv4-amdgcn-amd-amdhsa--gfx908";
  std::vector<std::uint8_t> bundle;
  const std::string magic = "__CLANG_OFFLOAD_BUNDLE__";
  bundle.insert(bundle.end(), magic.begin(), magic.end());
  put64(bundle, 2);
  const std::size_t header = bundle.size() + 2 * 24 + host_id.size() + dev_id.size();
  const std::size_t dev_off = (header + 4095) / 4096 * 4096;
  put64(bundle, header);
  put64(bundle, 0);
  put64(bundle, host_id.size());
  bundle.insert(bundle.end(), host_id.begin(), host_id.end());
  put64(bundle, dev_off);
  put64(bundle, elf.size());
  put64(bundle, dev_id.size());
  bundle.insert(bundle.end(), dev_id.begin(), dev_id.end());
  bundle.resize(dev_off, 0);
  bundle.insert(bundle.end(), elf.begin(), elf.end());

  EXPECT_EQ(hipb::extract_amd_elf(bundle), elf);
  auto kernels = hipb::read_amd_code_object(bundle);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].name, res.code.symbol);

  EXPECT_THROW(hipb::extract_amd_elf(std::vector<std::uint8_t>(64, 0x11)), tiletune::Error);
  EXPECT_THROW(hipb::read_amd_code_object({}), tiletune::Error);
}

// ---------------------------------------------------------------------------------------------
// Devices: none here (no /dev/kfd); the tests below run only where an AMD GPU is present.

// Run by the test below in a fresh process, with TILETUNE_HIP_LIB naming no file: libamdhip64
// (and the hipRTC inside it) is then absent, and only HIP calls fail, naming what was tried.
TEST(HipCompile, DISABLED_WithoutHipChild) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  EXPECT_EQ(compiler->version().rfind("hiprtc-none", 0), 0u) << compiler->version();  // then the choice
  CompileResult res = compiler->compile(simt_request(variants()[0], "gfx90a"));
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.log.find("/nonexistent/libamdhip64.so.5"), std::string::npos) << res.log;
  EXPECT_NE(res.log.find("TILETUNE_HIP_LIB"), std::string::npos) << res.log;
  EXPECT_TRUE(hipb::list_devices().empty());
  try {
    hipb::open_device(0);
    ADD_FAILURE() << "a HIP device opened without the HIP runtime";
  } catch (const tiletune::Error& e) {
    // Without the driver node the runtime is not even looked for; with it, what was tried is named.
    const std::string what = e.what();
    EXPECT_TRUE(what.find("/dev/kfd") != std::string::npos ||
                what.find("/nonexistent/libamdhip64.so.5") != std::string::npos) << what;
  }
}
TEST(HipCompile, WithoutHipOnlyCompilingFailsAndSaysWhy) {
  // The HIP runtime is opened once per process (this one has it open): ask a fresh one.
  const std::string log = std::filesystem::temp_directory_path() / ("tiletune-without-hip-" + std::to_string(::getpid()) + ".log");
  const bool passed = tiletune::testing::run_own_test(
      "HipCompile.DISABLED_WithoutHipChild",
      {"TILETUNE_HIP_LIB=/nonexistent/libamdhip64.so.5", "TILETUNE_HIP_COMPILER=hiprtc"}, log);
  EXPECT_TRUE(passed) << "without the HIP runtime, a compile did not fail naming it:\n" << tiletune::testing::read_file(log);
  std::filesystem::remove(log);
}
TEST(HipDevice, ListDevicesIsQuietWithoutAGpu) {
  std::vector<tiletune::gpu::DeviceInfo> devices;
  ASSERT_NO_THROW(devices = hipb::list_devices());
  for (const auto& d : devices) {
    EXPECT_EQ(d.backend, tiletune::gpu::BackendKind::Hip);
    EXPECT_FALSE(d.arch.empty());
    EXPECT_EQ(d.arch.find(':'), std::string::npos);
    std::printf("HIP device %d: %s arch=%s CUs=%d maxthreads=%d lds=%d wave=%d driver=%s\n", d.index,
                d.name.c_str(), d.arch.c_str(), d.multiprocessors, d.max_threads_per_block,
                d.shared_bytes_per_block, d.warp_size, d.driver_version.c_str());
  }
  if (devices.empty()) {
    std::printf("no HIP devices (expected on a machine without an AMD GPU)\n");
    EXPECT_THROW(hipb::open_device(0), tiletune::Error);
  }
}

TEST(HipDevice, SimtGemmMatchesHostReference) {
  const auto devices = hipb::list_devices();
  if (devices.empty()) GTEST_SKIP() << "no AMD GPU";
  auto dev = hipb::open_device(0);
  const std::string arch = dev->info().arch;
  if (!hipb::arch_supported(arch)) GTEST_SKIP() << "device arch " << arch << " is not compilable here";

  const Variant& v = variants()[0];  // fp32, NN, 64x64
  CompileResult res = dev->compiler().compile(simt_request(v, arch));
  ASSERT_TRUE(res.ok) << res.log;
  auto kernel = dev->load(res.code);

  const int M = 100, N = 70, K = 37;  // ragged on purpose
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(M) * K), b(static_cast<size_t>(K) * N), c(static_cast<size_t>(M) * N);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  for (auto& x : c) x = dist(rng);
  const float alpha = 1.5f, beta = -0.5f;

  tiletune::gpu::DeviceBuffer da(*dev, a.size() * 4), db(*dev, b.size() * 4), dc(*dev, c.size() * 4);
  dev->copy_to_device(da.get(), a.data(), a.size() * 4);
  dev->copy_to_device(db.get(), b.data(), b.size() * 4);
  dev->copy_to_device(dc.get(), c.data(), c.size() * 4);

  TtGemmParams p{};
  p.a = da.get();
  p.b = db.get();
  p.c = dc.get();
  p.lda = M;
  p.ldb = K;
  p.ldc = M;
  p.stride_a = p.stride_b = p.stride_c = 0;
  p.m = M;
  p.n = N;
  p.k = K;
  p.batch = 1;
  p.alpha = alpha;
  p.beta = beta;

  tiletune::gpu::LaunchDims dims;
  dims.grid[0] = (M + v.mt0 - 1) / v.mt0;
  dims.grid[1] = (N + v.mt1 - 1) / v.mt1;
  dims.block[0] = static_cast<unsigned>(v.threads());
  auto start = dev->create_event(), stop = dev->create_event();
  dev->record(start);
  dev->launch(*kernel, dims, &p, sizeof p);
  dev->record(stop);
  const float ms = dev->elapsed_ms(start, stop);
  dev->destroy_event(start);
  dev->destroy_event(stop);
  dev->synchronize();
  EXPECT_GE(ms, 0.0f);

  std::vector<float> out(c.size());
  dev->copy_to_host(out.data(), dc.get(), out.size() * 4);
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < M; ++i) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += double(a[i + k * M]) * b[k + j * K];
      ref = alpha * ref + beta * c[i + j * M];
      ASSERT_NEAR(out[i + j * M], ref, 1e-4 * (1 + std::fabs(ref))) << "C(" << i << "," << j << ")";
    }

  // fill_bytes
  dev->fill_bytes(dc.get(), 0, out.size() * 4);
  dev->copy_to_host(out.data(), dc.get(), out.size() * 4);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float x) { return x == 0.0f; }));
}

}  // namespace
