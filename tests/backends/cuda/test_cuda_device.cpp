// The CUDA device layer and the whole path on a GPU: the stream hold, the device reference and
// output check against the host ones, a sweep served by the runtime. Skipped without a GPU.
#include <gtest/gtest.h>


#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "ops/arguments.h"
#include "ops/launch.h"
#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "ops/cuda/tma_arguments.h"
#include "runtime/tiletune.hpp"
#include "tuner/compile_process.h"
#include "tuner/config.h"
#include "ops/elements.h"
#include "tuner/enumerator.h"
#include "ops/output_check.h"
#include "ops/gemm/inputs.h"
#include "tuner/sweep.h"
#include "vendors/vendor_gemm.h"
#include "tests/cuda_test_util.h"
#include "tests/test_util.h"

using namespace tiletune;
namespace fs = std::filesystem;
using namespace tiletune::testing;

namespace {

// `p` with B of type `b` (fp8 A and B of two types).
GemmProblem with_b(GemmProblem p, DataType b) {
  p.b_type = b;
  return p;
}

// Device::hold keeps the stream busy for the time asked, and what is enqueued behind it runs
// after it: the timing loop relies on both to time short kernels without launch gaps.
TEST_F(CudaDevice, HoldKeepsTheStreamBusyForTheTimeAsked) {
  gpu::Event a = dev_->create_event(), b = dev_->create_event(), c = dev_->create_event();
  ASSERT_TRUE(dev_->hold(0.01));  // the first call loads (JIT-compiles) the spin kernel: not part of the timing
  dev_->synchronize();
  dev_->record(a);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(dev_->hold(5.0));
  const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  dev_->record(b);
  EXPECT_FALSE(dev_->done(b));  // behind a 5 ms spin: the host did not wait for it
  EXPECT_LT(host_ms, 2.0);
  ASSERT_TRUE(dev_->hold(0.5));
  dev_->record(c);
  const float held = dev_->elapsed_ms(a, b), short_hold = dev_->elapsed_ms(b, c);
  dev_->destroy_event(a), dev_->destroy_event(b), dev_->destroy_event(c);
  EXPECT_GE(held, 4.9f);
  EXPECT_LT(held, 50.0f);
  EXPECT_GE(short_hold, 0.45f);
  EXPECT_LT(short_hold, held);
}

TEST_F(CudaDevice, DeviceReferenceMatchesTheHostReference) {
  for (auto p : {gemm(DataType::BF16, DataType::F32, true, false, 300, 170, 520, 2, false),
                 gemm(DataType::F32, DataType::F32, false, true, 129, 64, 1000),
                 gemm(DataType::E4M3, DataType::BF16, true, false, 200, 72, 640),
                 gemm(DataType::S8, DataType::S32, false, true, 130, 50, 700, 2, false),
                 with_b(gemm(DataType::E4M3, DataType::BF16, true, false, 200, 72, 640), DataType::E5M2),
                 with_b(gemm(DataType::E5M2, DataType::F32, false, true, 129, 64, 300, 2, false), DataType::E4M3)}) {
    ops::GemmInputs host(*dev_, p, false, 42, /*device_reference_flops=*/1e300);
    ops::GemmInputs device(*dev_, p, false, 42, /*device_reference_flops=*/0);
    ASSERT_EQ(host.reference().size(), device.reference().size());
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < host.reference().size(); ++i) {
      err += std::pow(host.reference()[i] - device.reference()[i], 2);
      ref += std::pow(host.reference()[i], 2);
    }
    EXPECT_LT(std::sqrt(err / ref), 1e-12) << p.key();
  }
}

// C of `data`'s problem made from its reference, rounded to the C type, padding and gaps poisoned.
std::vector<std::uint8_t> output_from_reference(const ops::GemmInputs& data) {
  const GemmProblem& p = data.problem();
  std::vector<std::uint8_t> out(std::size_t(p.elements_c()) * size_of(p.c_type), 0xFF);
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t i = 0; i < p.m; ++i)
        ops::store_element(out.data(), b * p.stride_c + j * p.ldc + i, p.c_type,
                             float(data.reference()[std::size_t((b * p.n + j) * p.m + i)]));
  return out;
}

// The output check on the device (what validation runs on a GPU) against the same check over a
// host copy of C, on outputs made from the reference: correct, perturbed, with NaN / inf, with
// padding or a gap between batches written; and the device reset of C (poison, or C0 for beta != 0).
TEST_F(CudaDevice, DeviceOutputCheckMatchesTheHostCheck) {
  GemmProblem gapped = gemm(DataType::F32, DataType::F32, false, false, 100, 37, 64, 3, false);
  gapped.ldc = 104, gapped.stride_c = 104 * 37 + 50;
  GemmProblem padded = gemm(DataType::F16, DataType::F16, true, false, 129, 64, 1000);
  padded.ldc = 131;
  const std::vector<GemmProblem> problems = {gapped, padded, gemm(DataType::BF16, DataType::BF16, true, false, 300, 170, 520, 2, false),
                                             gemm(DataType::F32, DataType::F32, false, true, 1500, 1300, 64)};
  std::uint64_t seed = 1;
  for (const GemmProblem& p : problems) {
    // Both references, so that both the uploaded host reference and the device one are covered.
    for (double device_reference_flops : {1e300, 0.0}) {
      ops::GemmInputs data(*dev_, p, false, seed++, device_reference_flops);
      const GemmProblem& q = data.problem();
      const std::string key = q.key();
      void* c = data.params(0).c;
      const std::size_t bytes = std::size_t(q.elements_c()) * size_of(q.c_type);
      std::vector<std::uint8_t> initial(bytes), now(bytes);
      dev_->copy_to_host(initial.data(), c, bytes);
      auto check = [&](const std::vector<std::uint8_t>& out, const std::string& what) {
        dev_->copy_to_device(c, out.data(), out.size());
        ops::ValidationResult d = data.check_output(), h = data.check_output_on_host();
        expect_same_verdict(d, h, key + " " + what);
        return d;
      };
      auto at = [&](std::int64_t i, std::int64_t j, std::int64_t b) { return b * q.stride_c + j * q.ldc + i; };
      const std::vector<std::uint8_t> good = output_from_reference(data);
      EXPECT_TRUE(check(good, "correct").ok) << key;

      std::vector<std::uint8_t> out = good;
      for (std::int64_t b = 0; b < q.batch; ++b)
        for (std::int64_t j = 0; j < q.n; ++j)
          for (std::int64_t i = 0; i < q.m; ++i) {
            const std::int64_t idx = at(i, j, b);
            ops::store_element(out.data(), idx, q.c_type,
                                 float(ops::load_element(good.data(), idx, q.c_type) * ((i + j) % 3 ? 1.05 : 0.9)));
          }
      tiletune::ops::ValidationResult v = check(out, "perturbed");
      EXPECT_FALSE(v.ok) << key;
      EXPECT_GT(v.rel_error, 0.005) << key;

      out = good;
      ops::store_element(out.data(), at(q.m / 2, q.n - 1, q.batch - 1), q.c_type, NAN);
      ops::store_element(out.data(), at(q.m - 1, q.n / 3, 0), q.c_type, NAN);  // the lower one is reported
      v = check(out, "NaN");
      EXPECT_FALSE(v.ok);
      EXPECT_NE(v.reason.find("C(" + std::to_string(q.m - 1) + "," + std::to_string(q.n / 3) + ", batch 0) is "),
                std::string::npos) << v.reason;
      out = good;
      ops::store_element(out.data(), at(0, q.n - 1, q.batch - 1), q.c_type, -INFINITY);
      EXPECT_NE(check(out, "inf").reason.find("is -inf"), std::string::npos) << key;
      if (q.ldc > q.m) {
        out = good;
        ops::store_element(out.data(), at(q.m, q.n / 2, 0), q.c_type, 0.5f);  // padding before a later NaN
        ops::store_element(out.data(), at(1, q.n - 1, 0), q.c_type, NAN);
        EXPECT_NE(check(out, "padding").reason.find("wrote outside C: row " + std::to_string(q.m)), std::string::npos) << key;
        ops::store_element(out.data(), at(2, 0, 0), q.c_type, NAN);  // a NaN before the padding
        EXPECT_NE(check(out, "NaN before padding").reason.find("C(2,0, batch 0) is "), std::string::npos) << key;
      }
      if (q.batch > 1 && q.stride_c > q.ldc * q.n) {
        out = good;
        ops::store_element(out.data(), q.stride_c + q.ldc * q.n + 3, q.c_type, 1.f);
        v = check(out, "gap");
        EXPECT_FALSE(v.ok);
        EXPECT_EQ(v.rel_error, 0);
        EXPECT_EQ(v.reason, "wrote between batches of C at element " + std::to_string(q.stride_c + q.ldc * q.n + 3));
      }

      data.reset_output();
      dev_->synchronize();
      dev_->copy_to_host(now.data(), c, bytes);
      if (q.beta_zero) EXPECT_EQ(now, std::vector<std::uint8_t>(bytes, 0xFF)) << key;
      else EXPECT_EQ(now, initial) << key << ": reset_output restores C0 on the device";
    }
  }
}

TEST_F(CudaDevice, SweepThenRuntimeDispatchOnTheGpu) {
  fs::path dir = fs::temp_directory_path() / ("tiletune-cuda-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string db = (dir / "cuda.db").string();
  const std::string json = R"({
    "problems": [{"dtype": "f32", "transA": "T", "transB": "N", "m": 777, "n": 512, "k": 300}],
    "templates": {"simt_gemm": {"parameters": {"MT0": [64, 128], "MT1": [64, 128], "DU": [8], "PAD": [4], "DB": [1]}}},
    "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 10, "target_ms": 5}
  })";
  auto config = tuner::parse_config(json, dir.string());
  auto s = cuda_sweep_one_winner(json, dir.string(), db);
  ASSERT_EQ(s.winners.size(), 1u);
  EXPECT_GT(s.winners[0].vendor_tflops, 0) << "cuBLAS must have been timed alongside";

  Handle h(db, "cuda");
  ops::GemmInputs data(*dev_, config.problems[0].gemm(), false);
  const GemmProblem& p = data.problem();
  auto v = data.validate([&](const TtGemmParams& a) {
    h.gemm(TILETUNE_OP_T, TILETUNE_OP_N, p.m, p.n, p.k, a.alpha, a.a, TILETUNE_R_32F, p.lda, a.b, p.ldb, a.beta, a.c,
           TILETUNE_R_32F, p.ldc);
    h.synchronize();
  });
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(h.stats().tuned, 1u);
  EXPECT_EQ(h.stats().jit_compiles, 0u);
  fs::remove_all(dir);
}

// The runtime runs a TMA-store winner (its map over C encoded for the caller's C), and a C
// pointer off 16 bytes, which the TMA store cannot take, goes to another kernel instead of
// failing: the same numbers either way.
TEST_F(CudaDevice, RuntimeRunsTheTmaStoreWinnerAndRoutesAMisalignedCElsewhere) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  fs::path dir = fs::temp_directory_path() / ("tiletune-cuda-tma-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "tma.db").string();
  const std::string json = R"({
    "problems": [{"dtype": "bf16", "transA": "N", "transB": "N", "m": 1000, "n": 1000, "k": 1000}],
    "templates": {"wgmma_gemm": {"parameters": {"BM": [64], "BN": [128], "STAGES": [6], "CONSUMERS": [2],
      "PINGPONG": [0], "COOPN": [1], "CLUSTER": [2], "GROUP": [8], "RASTER": [0], "SPLITK": [1], "EPI": [1]}}},
    "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 10, "target_ms": 5}
  })";
  const auto config = tuner::parse_config(json, dir.string());
  // Without the vendor as a candidate: cuBLASLt's algorithms won this 1000^3 problem in some runs
  // (H200, 2026-12-02), and the test is of the TMA-store kernel's path.
  const auto s = cuda_sweep_one_winner(json, dir.string(), db, false);
  ASSERT_EQ(s.winners.size(), 1u);
  EXPECT_NE(s.winners[0].kernel_name.find("EPI-1"), std::string::npos) << s.winners[0].kernel_name;

  Handle h(db, "cuda");
  // The reference on the host (1e12: not on the device), so that each call's C is compared element
  // by element: the norm-wise check of validate() can hide a few wrong elements among 10^6.
  ops::GemmInputs data(*dev_, config.problems[0].gemm(), false, 0, 1e12);
  const GemmProblem& p = data.problem();
  const std::size_t c_elems = std::size_t(p.ldc * p.n);
  std::vector<std::uint16_t> tuned_out(c_elems), other_out(c_elems);
  auto v = data.validate([&](const TtGemmParams& a) {
    h.gemm(TILETUNE_OP_N, TILETUNE_OP_N, p.m, p.n, p.k, a.alpha, a.a, TILETUNE_R_16BF, p.lda, a.b, p.ldb, a.beta, a.c,
           TILETUNE_R_16BF, p.ldc);
    h.synchronize();
    dev_->copy_to_host(tuned_out.data(), a.c, c_elems * 2);
    // The same product into C one element (2 bytes) past a 16-byte boundary.
    gpu::DeviceBuffer shifted(*dev_, (c_elems + 1) * 2);
    auto* c1 = static_cast<std::uint8_t*>(shifted.get()) + 2;
    h.gemm(TILETUNE_OP_N, TILETUNE_OP_N, p.m, p.n, p.k, a.alpha, a.a, TILETUNE_R_16BF, p.lda, a.b, p.ldb, 0.0f, c1,
           TILETUNE_R_16BF, p.ldc);
    h.synchronize();
    dev_->copy_to_host(other_out.data(), c1, c_elems * 2);
  });
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(h.stats().calls, 2u);
  EXPECT_EQ(h.stats().tuned, 1u);  // the misaligned call did not run the TMA-store winner
  auto bf16 = [](std::uint16_t b) { std::uint32_t u = std::uint32_t(b) << 16; float f; std::memcpy(&f, &u, 4); return f; };
  ASSERT_EQ(data.reference().size(), std::size_t(p.m * p.n));
  // Each call against the fp64 reference: the TMA-store winner element by element (bf16 rounding
  // is 2^-9 relative); the misaligned call, served by cuBLAS here, norm-wise by the tolerance every
  // candidate is validated with: element by element it was off by up to 0.069 (H200, 2026-12-02;
  // cuBLAS may reduce split-K partials in bf16, as PyTorch's default allows), which the norm admits.
  double norm_err[2] = {0, 0}, norm_ref = 0, worst = 0;
  std::int64_t worst_at = 0;
  for (std::int64_t j = 0; j < p.n; ++j)
    for (std::int64_t i = 0; i < p.m; ++i) {
      const double ref = data.reference()[std::size_t(j * p.m + i)];
      const double x = bf16(tuned_out[std::size_t(j * p.ldc + i)]), y = bf16(other_out[std::size_t(j * p.ldc + i)]);
      norm_ref += ref * ref;
      norm_err[0] += (x - ref) * (x - ref);
      norm_err[1] += (y - ref) * (y - ref);
      const double e = std::fabs(x - ref) / (1.0 + std::fabs(ref));
      if (e > worst) worst = e, worst_at = j * p.m + i;
    }
  EXPECT_LT(worst, 1e-2) << "the TMA-store winner: worst element (" << worst_at % p.m << ", " << worst_at / p.m << ")";
  const double tolerance = ops::tolerance(Problem(p));
  EXPECT_LE(std::sqrt(norm_err[0] / norm_ref), tolerance) << "the TMA-store winner";
  EXPECT_LE(std::sqrt(norm_err[1] / norm_ref), tolerance) << "the misaligned call";
  fs::remove_all(dir);
}

// ------------------------------------------------------------------------------------------------
// fp8 (e4m3 -> bf16 / fp32) and int8 (s8 -> s32) on wgmma_gemm (sm_90a; TN only) and cuBLASLt.

// A wgmma_gemm variant with these parameters (over the default solution) on `p`: validated on
// fresh random data against the fp64 reference, C poisoned before the launch (or, with beta != 0,
// random), on its full grid and on a grid of two CTAs (clusters), where every CTA walks several
// tiles. Empty when it passed, else what failed.
std::string validate_wgmma(gpu::Device& dev, const GemmProblem& p, const std::map<std::string, std::int64_t>& params) {
  const KernelTemplate& t = find_template("wgmma_gemm");
  Solution s = t.default_solution();
  for (const auto& [k, x] : params) s.params[k] = x;
  const Variables vars = t.variables(s, p, dev.info());
  if (const auto broken = t.violation(vars)) return s.kernel_name() + " refused on " + p.key() + ": " + *broken;
  auto r = dev.compiler().compile(t.compile_request(s, p, dev.info()));
  if (!r.ok) return s.kernel_name() + " does not compile:\n" + r.log;
  auto kernel = dev.load(r.code);
  gpu::DeviceBuffer ws;
  if (const auto bytes = std::size_t(t.workspace_bytes(vars))) {
    ws = gpu::DeviceBuffer(dev, bytes);
    dev.fill_bytes(ws.get(), 0, bytes);
  }
  ops::GemmInputs data(dev, p, false);
  std::string failed;
  for (bool small_grid : {false, true}) {
    gpu::LaunchDims dims = t.launch_dims(vars);
    if (small_grid) dims.grid[0] = 2 * unsigned(vars.at("CLUSTER") * vars.at("CLUSTERN"));
    auto v = data.validate([&](TtGemmParams a) {
      a.workspace = ws.get();
      auto bytes = ops::kernel_arguments(t, a, p, vars);
      dev.launch(*kernel, dims, bytes.data(), bytes.size());
    });
    if (!v.ok) failed += s.kernel_name() + " on " + p.key() + (small_grid ? " (two CTAs or clusters)" : "") + ": " + v.reason + "\n";
  }
  return failed;
}

// A spread of the space configs/h200/h200_gemm_fp8_int8.json sweeps, on shapes with edge tiles in
// M, N and K: about 12 candidates per problem, each validated.
TEST_F(CudaDevice, EightBitWgmmaSampleValidates) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  const std::vector<GemmProblem> problems = {gemm(DataType::E4M3, DataType::BF16, true, false, 1008, 1008, 1008),
                                             gemm(DataType::E4M3, DataType::F32, true, false, 520, 264, 2064, 1, false),
                                             gemm(DataType::S8, DataType::S32, true, false, 1008, 1008, 1008),
                                             gemm(DataType::S8, DataType::S32, true, false, 264, 520, 4112, 2, false)};
  const tuner::TuningConfig config =
      tuner::load_config(std::string(TILETUNE_SOURCE_DIR) + "/configs/h200/h200_gemm_fp8_int8.json");
  ASSERT_EQ(config.templates.size(), 1u);
  const KernelTemplate& t = config.templates[0];
  auto e = tuner::enumerate(config.templates, problems, dev_->info());
  std::vector<std::vector<const tuner::Candidate*>> per(problems.size());
  for (const auto& c : e.candidates) per[c.problem_index].push_back(&c);
  std::size_t checked = 0;
  for (std::size_t pi = 0; pi < problems.size(); ++pi) {
    const GemmProblem& p = problems[pi];
    ASSERT_FALSE(per[pi].empty()) << p.key();
    const std::size_t stride = std::max<std::size_t>(1, per[pi].size() / 12);
    for (std::size_t i = 0; i < per[pi].size(); i += stride) {
      ASSERT_NO_FATAL_FAILURE(validate_as_launched(*dev_, t, per[pi][i]->solution, p));
      ++checked;
    }
  }
  EXPECT_GE(checked, 40u);
}

// Small 8-bit problems, cheap enough for compute-sanitizer (memcheck, racecheck): both loaders,
// cooperative, ping-pong and split-N consumers, 80-column tiles, a cluster pair, the TMA store and
// the threads' stores (beta != 0 takes them), split-K for fp8, batches; each on the full grid and
// on two CTAs. fp8 as e4m3, and as e4m3 x e5m2, e5m2 x e4m3 (the backward pass's products) and
// e5m2 x e5m2.
TEST_F(CudaDevice, SanitizerSampleOfWgmmaEightBit) {
  if (dev_->info().compute_capability != 90) GTEST_SKIP() << "wgmma_gemm needs sm_90a";
  // fp8's K: 9 K tiles, enough for split-K 2 (its constraint wants 4 per split); every K is a
  // multiple of 16 bytes (TMA) but not of 128 (the cp.async loader's condition).
  const std::vector<GemmProblem> problems = {gemm(DataType::E4M3, DataType::BF16, true, false, 200, 136, 1040),
                                             gemm(DataType::E4M3, DataType::F32, true, false, 136, 200, 1040, 2, false),
                                             gemm(DataType::S8, DataType::S32, true, false, 200, 136, 400),
                                             gemm(DataType::S8, DataType::S32, true, false, 136, 200, 528, 2, false),
                                             with_b(gemm(DataType::E4M3, DataType::BF16, true, false, 200, 136, 1040), DataType::E5M2),
                                             with_b(gemm(DataType::E5M2, DataType::F32, true, false, 136, 200, 1040, 2, false), DataType::E4M3),
                                             with_b(gemm(DataType::E5M2, DataType::BF16, true, false, 1008, 520, 2064), DataType::E5M2)};
  struct Case { int bm, bn, pingpong, coopn, loader, epi, cluster, splitk; };
  const std::vector<Case> cases = {{128, 128, 1, 0, 0, 1, 1, 1}, {128, 128, 0, 0, 0, 0, 2, 1}, {64, 128, 0, 1, 0, 1, 1, 1},
                                   {128, 80, 1, 0, 0, 0, 1, 1},  {128, 64, 0, 0, 1, 0, 1, 1},  {128, 256, 0, 0, 0, 1, 1, 1}};
  std::size_t checked = 0;
  for (std::size_t pi = 0; pi < problems.size(); ++pi) {
    const GemmProblem& p = problems[pi];
    std::vector<Case> mine = cases;
    if (is_fp8(p.a_type)) mine.push_back({128, 64, 0, 0, 0, 0, 1, 2});
    for (const Case& c : mine) {
      const std::map<std::string, std::int64_t> params = {
          {"BK", 128},          {"BM", c.bm},         {"BN", c.bn},           {"PINGPONG", c.pingpong},
          {"COOPN", c.coopn},   {"LOADER", c.loader}, {"EPI", c.epi},         {"CLUSTER", c.cluster},
          {"SPLITK", c.splitk}, {"STAGES", 4},        {"CONSUMERS", 2}};
      const std::string why = validate_wgmma(*dev_, p, params);
      EXPECT_TRUE(why.empty()) << why;
      ++checked;
    }
  }
  EXPECT_EQ(checked, problems.size() * cases.size() + 5);
}

// The vendor rung runs fp8 and int8 TN GEMMs through cuBLASLt (its default algorithm and each of
// its alternatives), fp8 as e4m3 and as the mixed e4m3 x e5m2 and e5m2 x e4m3, and declines the
// other layouts with the reason; and e5m2 x e5m2, which cuBLASLt lacks, with that reason rather
// than a failure inside cuBLASLt.
TEST_F(CudaDevice, VendorRunsEightBitGemmsThroughCublasLt) {
  std::string why;
  auto vendor = gpu::make_vendor_gemm(*dev_, &why);
  if (!vendor) GTEST_SKIP() << why;
  for (const GemmProblem& p : {gemm(DataType::E4M3, DataType::BF16, true, false, 1024, 512, 2048),
                               gemm(DataType::S8, DataType::S32, true, false, 512, 1024, 2048, 1, false),
                               with_b(gemm(DataType::E4M3, DataType::BF16, true, false, 1024, 512, 2048), DataType::E5M2),
                               with_b(gemm(DataType::E5M2, DataType::F32, true, false, 512, 1024, 2048), DataType::E4M3)}) {
    ASSERT_EQ(vendor->unsupported(p), "") << p.key();
    ops::GemmInputs data(*dev_, p, false);
    std::vector<gpu::VendorChoice> choices = vendor->alternatives(p, data.call_params(0).gemm, 4);
    choices.insert(choices.begin(), gpu::VendorChoice{});
    for (const gpu::VendorChoice& choice : choices) {
      auto v = data.validate([&](const TtGemmParams& a) { vendor->run(p, a, nullptr, choice); });
      EXPECT_TRUE(v.ok) << p.key() << " " << Solution{"vendor", choice}.kernel_name() << ": " << v.reason;
    }
    GemmProblem nn = p;
    nn.trans_a = false;
    EXPECT_NE(vendor->unsupported(nn).find("TN"), std::string::npos) << vendor->unsupported(nn);
  }
  const GemmProblem both = with_b(gemm(DataType::E5M2, DataType::BF16, true, false, 256, 256, 256), DataType::E5M2);
  EXPECT_NE(vendor->unsupported(both).find("no e5m2 x e5m2"), std::string::npos) << vendor->unsupported(both);
  ops::GemmInputs data(*dev_, both, false);
  try {
    vendor->run(both, data.call_params(0).gemm, nullptr, gpu::VendorChoice{});
    ADD_FAILURE() << "cuBLASLt ran e5m2 x e5m2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no e5m2 x e5m2"), std::string::npos) << e.what();
  }
}

}  // namespace
