// Helpers shared by the test suites.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "gpu/backend.h"
#include "solutions/conv_problem.h"
#include "solutions/gemm_problem.h"
#include "tuner/config.h"
#include "db/database.h"
#include "db/records.h"
#include "ops/output_check.h"
#include "tuner/search.h"
#include "tuner/sweep.h"

namespace tiletune::testing {

// cuobjdump, where one is found ("" otherwise: the SASS checks that need it are skipped).
inline std::string cuobjdump() {
  if (const char* env = std::getenv("TILETUNE_CUOBJDUMP")) return env;
  for (const char* path : {"/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/bin/cuobjdump",
                           "/usr/local/cuda/bin/cuobjdump"})
    if (std::ifstream(path).good()) return path;
  return "";
}

// The SASS of a cubin, by `tool` (cuobjdump -sass); `name` keeps concurrent callers' files apart.
inline std::string sass_of(const std::vector<std::uint8_t>& cubin, const std::string& tool, const std::string& name) {
  const std::string file = ::testing::TempDir() + name + ".cubin";
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(cubin.data()), std::streamsize(cubin.size()));
  std::string out;
  if (FILE* f = ::popen((tool + " -sass " + file + " 2>&1").c_str(), "r")) {
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    ::pclose(f);
  }
  std::remove(file.c_str());
  return out;
}

// Bytes of machine code of the kernel `code.symbol` in an ELF64 code object (a cubin's section
// ".text.<symbol>"), 0 where there is none. The compile tests bound it: a kernel whose rarely run
// paths were unrolled once grew to 350 KB, and instruction fetch took a quarter of its stalls.
inline std::size_t kernel_code_bytes(const gpu::CodeObject& code) {
  const std::vector<std::uint8_t>& b = code.bytes;
  auto u16 = [&](std::size_t at) { return at + 2 <= b.size() ? std::size_t(b[at] | b[at + 1] << 8) : 0; };
  auto u64 = [&](std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0 && at + 8 <= b.size(); --i) v = v << 8 | b[at + std::size_t(i)];
    return std::size_t(v);
  };
  if (b.size() < 64 || b[0] != 0x7f || b[1] != 'E' || b[2] != 'L' || b[3] != 'F' || b[4] != 2 || b[5] != 1) return 0;
  const std::size_t shoff = u64(0x28), shentsize = u16(0x3a), shnum = u16(0x3c), shstrndx = u16(0x3e);
  if (shentsize < 0x28 || shstrndx >= shnum || shoff + shnum * shentsize > b.size()) return 0;
  const std::size_t names = u64(shoff + shstrndx * shentsize + 0x18);
  const std::string want = ".text." + code.symbol;
  for (std::size_t i = 0; i < shnum; ++i) {
    const std::size_t h = shoff + i * shentsize;
    const std::size_t name = names + (std::size_t(u16(h)) | u16(h + 2) << 16);
    if (name + want.size() < b.size() && std::equal(want.begin(), want.end(), b.begin() + std::ptrdiff_t(name)) &&
        b[name + want.size()] == 0)
      return u64(h + 0x20);
  }
  return 0;
}

// The device output check's verdict against the host check's on the same output: same outcome and
// reason, the same relative error within 1e-12 relative (the sums are added in another order).
inline void expect_same_verdict(const ops::ValidationResult& device, const ops::ValidationResult& host,
                                const std::string& what) {
  EXPECT_EQ(device.ok, host.ok) << what;
  EXPECT_EQ(device.reason, host.reason) << what;
  if (std::isinf(host.rel_error)) EXPECT_EQ(device.rel_error, host.rel_error) << what;
  else EXPECT_LE(std::abs(device.rel_error - host.rel_error), 1e-12 * host.rel_error) << what << ": " << device.rel_error << " vs " << host.rel_error;
}

// Message of the tiletune::Error that `f` throws; fails the test if it throws nothing or another type.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-tiletune exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

// Freshly seeded for every run: tests must pass on any valid input.
// The first `bytes` of device buffer `buf` are all zero: a kernel's split-K workspace as the
// runtime's shared scratch needs it left (a failure names `what`).
inline void expect_left_zeroed(gpu::Device& dev, const void* buf, std::size_t bytes, const std::string& what) {
  std::vector<std::uint8_t> back(bytes);
  dev.copy_to_host(back.data(), buf, bytes);
  const auto dirty = std::find_if(back.begin(), back.end(), [](std::uint8_t b) { return b != 0; });
  EXPECT_TRUE(dirty == back.end()) << what << " left its workspace non-zero at byte " << (dirty - back.begin());
}

inline std::mt19937_64& rng() {
  static std::mt19937_64 r(std::random_device{}());
  return r;
}
inline std::int64_t rand_in(std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng());
}

inline GemmProblem gemm(DataType in, DataType out, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                        std::int64_t batch = 1, bool beta_zero = true) {
  GemmProblem p;
  p.a_type = in;
  p.c_type = out;
  p.trans_a = ta;
  p.trans_b = tb;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.beta_zero = beta_zero;
  return p.canonical();
}

// A small convolution with random groups, sizes, stride, dilation and padding.
inline ConvProblem random_conv_problem(ConvLayout layout) {
  ConvProblem p;
  p.layout = layout;
  p.groups = rand_in(1, 3);
  p.n = rand_in(1, 3), p.c = p.groups * rand_in(1, 4), p.k = p.groups * rand_in(1, 4);
  p.r = rand_in(1, 3), p.s = rand_in(1, 3);
  p.stride_h = rand_in(1, 3), p.stride_w = rand_in(1, 3);
  p.dil_h = rand_in(1, 2), p.dil_w = rand_in(1, 2);
  p.pad_h = rand_in(0, 2), p.pad_w = rand_in(0, 2);
  p.h = rand_in(p.dil_h * (p.r - 1) + 1, 9), p.w = rand_in(p.dil_w * (p.s - 1) + 1, 9);
  p.validate();
  return p;
}

// Device descriptions for pure (device-free) enumeration tests.
inline gpu::DeviceInfo fake_device(gpu::BackendKind backend) {
  gpu::DeviceInfo d;
  d.backend = backend;
  switch (backend) {
    case gpu::BackendKind::Cuda:
      d.name = "fake H200";
      d.arch = "sm_90a";
      d.multiprocessors = 132;
      d.shared_bytes_optin = 232448;
      d.compute_capability = 90;
      break;
    case gpu::BackendKind::Hip:
      d.name = "fake MI250X";
      d.arch = "gfx90a";
      d.multiprocessors = 110;
      d.shared_bytes_per_block = d.shared_bytes_optin = 65536;
      d.warp_size = 64;
      break;
    case gpu::BackendKind::Host:
      d.name = "fake CPU";
      d.arch = "x86_64";
      d.multiprocessors = 2;
      d.max_threads_per_block = 1;
      d.shared_bytes_per_block = d.shared_bytes_optin = 0;
      d.warp_size = 1;
      break;
  }
  return d;
}

// The finals' invariant for one problem's measurements (any key): its fastest fully timed
// candidates (kFinalists of them) were all timed twice, the later timing recorded (in the finals,
// or in rounds against the other side's finalists); unless halving
// promoted a short-timed winner after them (promotions come last: see tuner::finalists).
template <class Rows>
void expect_finals(const Rows& ms, const std::string& key) {
  std::vector<const db::MeasurementRow*> full;
  for (const auto& entry : ms) {
    const db::MeasurementRow& m = entry.second;
    if (m.reason == tuner::kPromotedReason) return;
    if (m.status == db::Status::Ok && m.reason != tuner::kShortTimingReason) full.push_back(&m);
  }
  std::sort(full.begin(), full.end(), [](auto* a, auto* b) { return a->median_ms < b->median_ms; });
  for (std::size_t n = 0; n < std::min(tuner::kFinalists, full.size()); ++n)
    EXPECT_TRUE(full[n]->reason == tuner::kFinalTimingReason || full[n]->reason == db::kHeadToHeadReason)
        << key << ": #" << n + 1 << " " << full[n]->kernel_name << ": " << full[n]->reason;
}

// A sweep of `config_json` on the first CUDA device into `db`, for the GPU tests that then
// dispatch its winner through the runtime: something measured, nothing invalid, one winner.
// `vendor` false: the vendor library is not a candidate, for tests of a generated kernel's path.
inline tuner::SweepSummary cuda_sweep_one_winner(const std::string& config_json, const std::string& dir,
                                                 const std::string& db, bool vendor = true) {
  auto config = tuner::parse_config(config_json, dir);
  tuner::SweepOptions o;
  o.backend = gpu::BackendKind::Cuda;
  o.db_path = db;
  o.compare_vendor = vendor;
  tuner::SweepSummary s = tuner::run_sweep(config, o, stderr);
  EXPECT_GT(s.benchmarked, 0u);
  EXPECT_EQ(s.invalid, 0u);
  EXPECT_EQ(s.winners.size(), 1u);
  return s;
}

}  // namespace tiletune::testing
