// Tests of the host (CPU) backend through the vendor-neutral interface (gpu/backend.h): compile the
// host_gemm template, load, launch and validate against GemmInputs's fp64 reference; check that
// wrong kernels fail validation, compile errors and bad arches are reported, and that events and
// memory copies work. Each distinct host_gemm variant is compiled once (in parallel) per run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "gpu/backend.h"
#include "gpu/stream_buffers.h"
#include "solutions/kernel_template.h"
#include "tuner/timing.h"
#include "ops/elements.h"
#include "ops/output_check.h"
#include "ops/gemm/inputs.h"
#include "tests/test_util.h"

using namespace tiletune;
using tiletune::ops::GemmInputs;
using tiletune::ops::ValidationResult;

using namespace tiletune::testing;

namespace {


GemmProblem make(std::int64_t m, std::int64_t n, std::int64_t k, DataType a = DataType::F32, DataType c = DataType::F32,
                 bool ta = false, bool tb = false) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = a;
  p.c_type = c;
  p.trans_a = ta;
  p.trans_b = tb;
  return p;
}

// A hand-written kernel for the negative tests: correct f32 NN GEMM for MODE 0; MODE 1 writes only
// the first half of the columns, MODE 2 adds 1 to every element, MODE 3 also writes row m (padding).
const char* kBadSource = R"(
#include "gemm_params.h"
template <int MODE>
void bad(const void* arg, unsigned, unsigned, unsigned bz) {
  const TtGemmParams& p = *static_cast<const TtGemmParams*>(arg);
  const float* A = static_cast<const float*>(p.a) + (long long)bz * p.stride_a;
  const float* B = static_cast<const float*>(p.b) + (long long)bz * p.stride_b;
  float* C = static_cast<float*>(p.c) + (long long)bz * p.stride_c;
  const int ncols = MODE == 1 ? p.n / 2 : p.n;
  for (int j = 0; j < ncols; ++j)
    for (int i = 0; i < p.m; ++i) {
      float s = 0.f;
      for (int l = 0; l < p.k; ++l) s += A[i + (long long)l * p.lda] * B[l + (long long)j * p.ldb];
      float v = p.alpha * s;
      if (p.beta != 0.f) v += p.beta * C[i + (long long)j * p.ldc];
      if (MODE == 2) v += 1.0f;
      C[i + (long long)j * p.ldc] = v;
      if (MODE == 3 && i == p.m - 1 && p.ldc > p.m) C[p.m + (long long)j * p.ldc] = v;
    }
}
)";

struct Variant {
  DataType a, c;
  bool ta, tb;
  Solution sol;
  std::optional<DataType> b = std::nullopt;  // B's type where it is not A's
  std::string key() const {
    return std::string(to_string(a)) + (b ? std::string(".") + to_string(*b) : "") + ">" + to_string(c) +
           (ta ? "T" : "N") + (tb ? "T" : "N") + sol.kernel_name();
  }
};

Solution other_solution() {
  Solution s = find_template("host_gemm").default_solution();
  s.params = {{"MT0", 16}, {"MT1", 64}, {"KU", 64}, {"TT0", 16}, {"TT1", 2}};
  return s;
}

class HostBackend : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dev_ = gpu::open_device(gpu::BackendKind::Host, 0).release();
    const KernelTemplate& t = find_template("host_gemm");
    const Solution def = t.default_solution();
    std::vector<Variant> variants;
    for (int tr = 0; tr < 4; ++tr) variants.push_back({DataType::F32, DataType::F32, bool(tr & 1), bool(tr & 2), def});
    variants.push_back({DataType::F16, DataType::F16, false, false, def});
    variants.push_back({DataType::BF16, DataType::BF16, true, false, def});
    variants.push_back({DataType::F16, DataType::F32, false, true, def});
    variants.push_back({DataType::F32, DataType::F32, false, false, other_solution()});
    variants.push_back({DataType::E4M3, DataType::BF16, true, false, def});
    variants.push_back({DataType::E4M3, DataType::F32, false, true, def});
    variants.push_back({DataType::E5M2, DataType::BF16, true, false, def});
    variants.push_back({DataType::E4M3, DataType::BF16, true, false, def, DataType::E5M2});
    variants.push_back({DataType::E5M2, DataType::F32, false, true, def, DataType::E4M3});
    variants.push_back({DataType::S8, DataType::S32, true, false, def});
    variants.push_back({DataType::S8, DataType::S32, false, false, def});

    std::vector<std::pair<std::string, std::future<gpu::CompileResult>>> jobs;
    for (const auto& v : variants) {
      GemmProblem p = make(8, 8, 8, v.a, v.c, v.ta, v.tb);
      p.b_type = v.b;
      gpu::CompileRequest req = t.compile_request(v.sol, p, dev_->info());
      jobs.emplace_back(v.key(), std::async(std::launch::async, [req] { return dev_->compiler().compile(req); }));
    }
    for (int mode = 0; mode < 4; ++mode) {
      gpu::CompileRequest req;
      req.source = kBadSource;
      req.headers = {{"gemm_params.h", embedded_kernel_sources().at("gemm_params.h")}};
      req.name_expression = "bad<" + std::to_string(mode) + ">";
      req.arch = dev_->info().arch;
      jobs.emplace_back("bad" + std::to_string(mode),
                        std::async(std::launch::async, [req] { return dev_->compiler().compile(req); }));
    }
    kernels_ = new std::map<std::string, std::shared_ptr<gpu::Kernel>>;
    code_ = new std::map<std::string, gpu::CodeObject>;
    for (auto& [key, fut] : jobs) {
      gpu::CompileResult r = fut.get();
      if (!r.ok) {
        compile_failures_ += key + ":\n" + r.log + "\n";
        continue;
      }
      (*code_)[key] = r.code;
      (*kernels_)[key] = dev_->load(r.code);
    }
  }
  static void TearDownTestSuite() {
    delete kernels_;
    delete code_;
    delete dev_;
    kernels_ = nullptr;
    code_ = nullptr;
    dev_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(compile_failures_.empty()) << compile_failures_; }

  static gpu::Kernel& kernel(const std::string& key) {
    auto it = kernels_->find(key);
    if (it == kernels_->end()) throw Error("test kernel " + key + " was not compiled");
    return *it->second;
  }

  // Runs the host_gemm variant matching `p` and `sol` on fresh random data and validates it.
  static ValidationResult run_gemm(const GemmProblem& p, const Solution& sol, gpu::Kernel* k = nullptr) {
    const KernelTemplate& t = find_template("host_gemm");
    if (!k) k = &kernel(Variant{p.a_type, p.c_type, p.trans_a, p.trans_b, sol, p.canonical().b_type}.key());
    GemmInputs data(*dev_, p, /*rotate=*/false);
    gpu::LaunchDims dims = t.launch_dims(t.variables(sol, p, dev_->info()));
    return data.validate([&](const TtGemmParams& prm) { dev_->launch(*k, dims, &prm, sizeof prm); });
  }
  static ValidationResult run_bad(int mode, const GemmProblem& p) {
    GemmInputs data(*dev_, p, /*rotate=*/false);
    gpu::LaunchDims dims;
    dims.grid[2] = unsigned(p.batch);
    gpu::Kernel& k = kernel("bad" + std::to_string(mode));
    return data.validate([&](const TtGemmParams& prm) { dev_->launch(k, dims, &prm, sizeof prm); });
  }

  static gpu::Device* dev_;
  static std::map<std::string, std::shared_ptr<gpu::Kernel>>* kernels_;
  static std::map<std::string, gpu::CodeObject>* code_;
  static std::string compile_failures_;
};

gpu::Device* HostBackend::dev_ = nullptr;
std::map<std::string, std::shared_ptr<gpu::Kernel>>* HostBackend::kernels_ = nullptr;
std::map<std::string, gpu::CodeObject>* HostBackend::code_ = nullptr;
std::string HostBackend::compile_failures_;

#define EXPECT_VALID(r) \
  do { \
    ValidationResult r_ = (r); \
    EXPECT_TRUE(r_.ok) << r_.reason; \
    EXPECT_TRUE(r_.reason.empty()) << r_.reason; \
    EXPECT_GE(r_.rel_error, 0.0); \
  } while (0)

TEST_F(HostBackend, DeviceInfo) {
  const gpu::DeviceInfo& info = dev_->info();
  EXPECT_EQ(info.backend, gpu::BackendKind::Host);
  EXPECT_FALSE(info.arch.empty());
  EXPECT_GE(info.multiprocessors, 1);
  EXPECT_TRUE(gpu::backend_built(gpu::BackendKind::Host));
  EXPECT_EQ(gpu::list_devices(gpu::BackendKind::Host).size(), 1u);
  EXPECT_THROW(gpu::open_device(gpu::BackendKind::Host, 1), Error);
  EXPECT_FALSE(dev_->compiler().version().empty());
  EXPECT_FALSE(gpu::make_compiler(gpu::BackendKind::Host)->version().empty());
}

// Scratch per stream is bounded: a program that issues work on ever new streams keeps at most
// max_streams buffers, the stream used longest ago giving its buffer up (marked fresh, so that a
// caller that needs zeroed scratch zeroes it again); a stream's buffer grows to what it is asked.
TEST_F(HostBackend, StreamBuffersAreBoundedAndReusedLeastRecentlyUsedFirst) {
  gpu::StreamBuffers buffers(3);
  auto stream = [](std::uintptr_t i) { return reinterpret_cast<gpu::Stream>(i); };
  bool fresh = false;
  void* first = buffers.get(*dev_, stream(1), 64, &fresh).get();
  EXPECT_TRUE(fresh);
  EXPECT_EQ(buffers.get(*dev_, stream(1), 32, &fresh).get(), first);
  EXPECT_FALSE(fresh) << "a stream keeps its buffer";
  void* second = buffers.get(*dev_, stream(2), 64, &fresh).get();
  EXPECT_NE(second, first) << "two streams never share scratch";
  buffers.get(*dev_, stream(3), 64, &fresh);
  buffers.get(*dev_, stream(1), 64, &fresh);  // stream 2 is now the one used longest ago
  gpu::DeviceBuffer& taken = buffers.get(*dev_, stream(4), 64, &fresh);
  EXPECT_TRUE(fresh) << "a buffer taken over is fresh to its new stream";
  EXPECT_EQ(taken.get(), second);
  EXPECT_EQ(buffers.streams(), 3u);
  EXPECT_EQ(buffers.evictions(), 1u);
  for (std::uintptr_t i = 10; i < 110; ++i) buffers.get(*dev_, stream(i), 64);
  EXPECT_EQ(buffers.streams(), 3u) << "buffers must not grow with the number of streams ever used";
  gpu::DeviceBuffer& grown = buffers.get(*dev_, stream(109), 4096, &fresh);
  EXPECT_TRUE(fresh);
  EXPECT_GE(grown.size(), 4096u);
}

TEST_F(HostBackend, CompileRequestForHost) {
  const KernelTemplate& t = find_template("host_gemm");
  gpu::CompileRequest r = t.compile_request(t.default_solution(), make(8, 8, 8, DataType::BF16, DataType::F32, false, true),
                                            dev_->info());
  EXPECT_EQ(r.name_expression, "host_gemm<tt_bf16, float, false, true, 32, 32, 16, 8, 4>");
  EXPECT_EQ(r.source.find("prelude"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("host_gemm.h"), std::string::npos) << r.source;
  EXPECT_EQ(r.arch, dev_->info().arch);
}

TEST_F(HostBackend, AllTransposesF32) {
  const Solution def = find_template("host_gemm").default_solution();
  for (int tr = 0; tr < 4; ++tr) {
    SCOPED_TRACE("transposes " + std::to_string(tr));
    EXPECT_VALID(run_gemm(make(37, 29, 53, DataType::F32, DataType::F32, tr & 1, tr & 2), def));
    EXPECT_VALID(run_gemm(make(rand_in(1, 150), rand_in(1, 150), rand_in(1, 150), DataType::F32, DataType::F32, tr & 1, tr & 2), def));
    EXPECT_VALID(run_gemm(make(1, 1, 1, DataType::F32, DataType::F32, tr & 1, tr & 2), def));
  }
}

TEST_F(HostBackend, HalfPrecisionInputs) {
  const Solution def = find_template("host_gemm").default_solution();
  EXPECT_VALID(run_gemm(make(64, 48, 80, DataType::F16, DataType::F16), def));
  EXPECT_VALID(run_gemm(make(37, 29, 53, DataType::F16, DataType::F16), def));
  EXPECT_VALID(run_gemm(make(37, 29, 53, DataType::BF16, DataType::BF16, true, false), def));
  EXPECT_VALID(run_gemm(make(rand_in(1, 120), rand_in(1, 120), rand_in(1, 200), DataType::BF16, DataType::BF16, true, false), def));
  EXPECT_VALID(run_gemm(make(37, 29, 53, DataType::F16, DataType::F32, false, true), def));
}

// fp8 inputs with bf16 / fp32 output, int8 with int32 output (the CPU twins of the wgmma kernels,
// in more layouts than those: the host template reads any).
TEST_F(HostBackend, Fp8Inputs) {
  const Solution def = find_template("host_gemm").default_solution();
  EXPECT_VALID(run_gemm(make(64, 48, 256, DataType::E4M3, DataType::BF16, true, false), def));
  EXPECT_VALID(run_gemm(make(rand_in(1, 120), rand_in(1, 120), rand_in(1, 300), DataType::E4M3, DataType::BF16, true, false), def));
  GemmProblem p = make(37, 29, 53, DataType::E4M3, DataType::F32, false, true);
  p.batch = 2;
  p.beta_zero = false;
  EXPECT_VALID(run_gemm(p, def));
}

// e5m2 inputs, alone and against e4m3 (the backward pass's mixed products): the host template
// reads each operand in its own type, validated against the fp64 reference decoding the same codes.
TEST_F(HostBackend, E5m2Inputs) {
  const Solution def = find_template("host_gemm").default_solution();
  EXPECT_VALID(run_gemm(make(64, 48, 256, DataType::E5M2, DataType::BF16, true, false), def));
  GemmProblem mixed = make(rand_in(1, 120), rand_in(1, 120), rand_in(1, 300), DataType::E4M3, DataType::BF16, true, false);
  mixed.b_type = DataType::E5M2;
  EXPECT_VALID(run_gemm(mixed, def));
  GemmProblem p = make(37, 29, 53, DataType::E5M2, DataType::F32, false, true);
  p.b_type = DataType::E4M3;
  p.batch = 2;
  p.beta_zero = false;
  EXPECT_VALID(run_gemm(p, def));
  // The name the template instantiates says both types; one type keeps its single name.
  EXPECT_NE(find_template("host_gemm").name_expression(def, p).find("host_gemm<tt_ab<tt_e5m2, tt_e4m3>, float,"),
            std::string::npos);
}

TEST_F(HostBackend, Int8IsExact) {
  const Solution def = find_template("host_gemm").default_solution();
  EXPECT_VALID(run_gemm(make(64, 48, 4096, DataType::S8, DataType::S32, true, false), def));
  GemmProblem p = make(rand_in(1, 120), rand_in(1, 120), rand_in(1, 300), DataType::S8, DataType::S32);
  p.batch = 2;
  p.beta_zero = false;
  p.ldc = p.m + 3;
  EXPECT_VALID(run_gemm(p, def));
  // Exact means exact: one element off by one fails.
  const GemmProblem q = make(33, 17, 100, DataType::S8, DataType::S32, true, false);
  const KernelTemplate& t = find_template("host_gemm");
  GemmInputs data(*dev_, q, /*rotate=*/false);
  EXPECT_EQ(ops::tolerance(q), 0.0);
  const gpu::LaunchDims dims = t.launch_dims(t.variables(def, q, dev_->info()));
  gpu::Kernel& k = kernel(Variant{q.a_type, q.c_type, q.trans_a, q.trans_b, def}.key());
  ValidationResult r = data.validate([&](const TtGemmParams& prm) {
    dev_->launch(k, dims, &prm, sizeof prm);
    static_cast<std::int32_t*>(prm.c)[5 + 7 * prm.ldc] += 1;  // host memory
  });
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("relative error"), std::string::npos) << r.reason;
}

TEST_F(HostBackend, LeadingDimensionsLargerThanPacked) {
  const Solution def = find_template("host_gemm").default_solution();
  GemmProblem p = make(37, 29, 53);
  p.lda = 45;
  p.ldb = 60;
  p.ldc = 41;
  EXPECT_VALID(run_gemm(p, def));
  GemmProblem q = make(37, 29, 53, DataType::F32, DataType::F32, true, true);
  q.lda = 64;   // >= k
  q.ldb = 33;   // >= n
  q.ldc = 40;
  q.beta_zero = false;
  EXPECT_VALID(run_gemm(q, def));
}

TEST_F(HostBackend, BatchedWithBeta) {
  const Solution def = find_template("host_gemm").default_solution();
  GemmProblem p = make(37, 29, 53, DataType::F32, DataType::F32, true, false);
  p.batch = 3;
  p.beta_zero = false;
  EXPECT_VALID(run_gemm(p, def));
  // explicit strides and lds larger than packed
  p.lda = 60;
  p.ldc = 39;
  p.stride_a = 60 * 37 + 13;
  p.stride_b = 53 * 29 + 7;
  p.stride_c = 39 * 29 + 5;
  EXPECT_VALID(run_gemm(p, def));
  {
    GemmInputs d(*dev_, p, false);
    EXPECT_NE(d.beta(), 0.f);
    EXPECT_NE(d.alpha(), 0.f);
  }
  GemmProblem h = make(33, 20, 70, DataType::BF16, DataType::BF16, true, false);
  h.batch = 3;
  h.beta_zero = false;
  EXPECT_VALID(run_gemm(h, def));
}

TEST_F(HostBackend, OtherTileShape) {
  const Solution s = other_solution();
  EXPECT_VALID(run_gemm(make(37, 29, 53), s));
  EXPECT_VALID(run_gemm(make(rand_in(60, 200), rand_in(60, 200), rand_in(65, 300)), s));
  GemmProblem p = make(50, 70, 130);
  p.batch = 2;
  p.beta_zero = false;
  EXPECT_VALID(run_gemm(p, s));
}

TEST_F(HostBackend, WrongTransposeFailsValidation) {
  // The NN kernel on an NT problem of square packed shapes runs in bounds but computes A*B, not A*B^T.
  const Solution def = find_template("host_gemm").default_solution();
  gpu::Kernel& nn = kernel(Variant{DataType::F32, DataType::F32, false, false, def}.key());
  ValidationResult r = run_gemm(make(40, 40, 40, DataType::F32, DataType::F32, false, true), def, &nn);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("relative error"), std::string::npos) << r.reason;
  EXPECT_GT(r.rel_error, 0.1);
}

TEST_F(HostBackend, CustomKernelControl) {
  // The hand-written kernel in its correct mode passes: the failures below are its deliberate bugs.
  EXPECT_VALID(run_bad(0, make(37, 29, 53)));
  GemmProblem p = make(20, 10, 30);
  p.batch = 3;
  p.beta_zero = false;
  EXPECT_VALID(run_bad(0, p));
}

TEST_F(HostBackend, PartialWriteFailsValidation) {
  ValidationResult r = run_bad(1, make(37, 29, 53));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("not written"), std::string::npos) << r.reason;
  // with beta != 0, C starts from random values rather than poison: still caught
  GemmProblem p = make(37, 29, 53);
  p.beta_zero = false;
  p.batch = 2;
  r = run_bad(1, p);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.reason.empty());
}

TEST_F(HostBackend, OffByOneFailsValidation) {
  ValidationResult r = run_bad(2, make(37, 29, 53));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("relative error"), std::string::npos) << r.reason;
  EXPECT_GT(r.rel_error, ops::tolerance(make(37, 29, 53)));
}

TEST_F(HostBackend, WritingPaddingFailsValidation) {
  GemmProblem p = make(37, 29, 53);
  p.ldc = 40;
  ValidationResult r = run_bad(3, p);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("outside C"), std::string::npos) << r.reason;
  // the same kernel with packed C has no padding to spoil
  EXPECT_VALID(run_bad(3, make(37, 29, 53)));
}

// The comparison both validation paths rest on (on a GPU check_output.cuh does the same): the
// lowest bad element in column order, padding and gaps that lost their 0xFF poison, the sums.
TEST(OutputCheck, FindsTheLowestBadElementPaddingAndGaps) {
  ops::OutputLayout l;
  l.type = DataType::F32;
  l.rows = 3, l.cols = 2, l.ld = 4, l.stride = 10, l.batch = 2;  // one padding row, a gap of 2 after batch 0
  ASSERT_EQ(l.elements(), 18);
  std::vector<double> ref(12);
  std::vector<std::uint8_t> good(18 * 4, 0xFF);
  double ref2 = 0;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t j = 0; j < 2; ++j)
      for (std::int64_t i = 0; i < 3; ++i) {
        const double v = 0.25 * double(1 + i + 3 * j + 6 * b);
        ref[std::size_t((b * 2 + j) * 3 + i)] = v;
        ops::store_element(good.data(), b * 10 + j * 4 + i, DataType::F32, float(v + 0.5));
        ref2 += v * v;
      }
  ops::Comparison c = ops::compare_output(l, good.data(), ref.data());
  EXPECT_EQ(c.first_bad, -1);
  EXPECT_EQ(c.first_gap, -1);
  EXPECT_DOUBLE_EQ(c.ref, ref2);
  EXPECT_DOUBLE_EQ(c.err, 12 * 0.25);
  EXPECT_DOUBLE_EQ(c.rel_error(), std::sqrt(3 / ref2));

  std::vector<std::uint8_t> out = good;
  ops::store_element(out.data(), 15, DataType::F32, NAN);   // batch 1, column 1, row 1
  ops::store_element(out.data(), 13, DataType::F32, 0.f);   // batch 1, column 0, padding: lower
  ops::store_element(out.data(), 8, DataType::F32, 1.f);    // the gap after batch 0
  c = ops::compare_output(l, out.data(), ref.data());
  EXPECT_EQ(c.first_bad, 13);
  EXPECT_EQ(c.first_gap, 8);
  ops::store_element(out.data(), 5, DataType::F32, INFINITY);  // batch 0, column 1, row 1: lower still
  EXPECT_EQ(ops::compare_output(l, out.data(), ref.data()).first_bad, 5);

  // A flat tensor (convolutions): no padding, the first NaN.
  const ops::OutputLayout flat = ops::OutputLayout::flat(DataType::F32, 12);
  std::vector<std::uint8_t> packed(12 * 4);
  for (std::int64_t i = 0; i < 12; ++i) ops::store_element(packed.data(), i, DataType::F32, float(ref[std::size_t(i)]));
  c = ops::compare_output(flat, packed.data(), ref.data());
  EXPECT_EQ(c.first_bad, -1);
  EXPECT_EQ(c.err, 0);
  ops::store_element(packed.data(), 7, DataType::F32, NAN);
  EXPECT_EQ(ops::compare_output(flat, packed.data(), ref.data()).first_bad, 7);
}

TEST_F(HostBackend, WritingBetweenBatchesFailsValidation) {
  GemmProblem p = make(7, 5, 3);
  p.batch = 2;
  p.stride_c = 7 * 5 + 4;
  GemmInputs data(*dev_, p, false, 3);
  std::vector<std::uint8_t> c(std::size_t(data.problem().elements_c()) * 4, 0xFF);
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t j = 0; j < 5; ++j)
      for (std::int64_t i = 0; i < 7; ++i)
        ops::store_element(c.data(), b * p.stride_c + j * 7 + i, DataType::F32,
                             float(data.reference()[std::size_t((b * 5 + j) * 7 + i)]));
  dev_->copy_to_device(data.params(0).c, c.data(), c.size());
  EXPECT_VALID(data.check_output());
  ops::store_element(c.data(), 36, DataType::F32, 0.f);
  dev_->copy_to_device(data.params(0).c, c.data(), c.size());
  ValidationResult r = data.check_output();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.rel_error, 0);
  EXPECT_EQ(r.reason, "wrote between batches of C at element 36");
}

TEST_F(HostBackend, CompileErrorReturnsLog) {
  gpu::CompileRequest req;
  req.source = "int broken() { return undefined_symbol_xyz; }\n"
               "template <int X> void bad(const void*, unsigned, unsigned, unsigned) {}\n";
  req.name_expression = "bad<0>";
  req.arch = dev_->info().arch;
  gpu::CompileResult r = dev_->compiler().compile(req);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("undefined_symbol_xyz"), std::string::npos) << r.log;
  EXPECT_TRUE(r.code.bytes.empty());
}

// No shell between the tuner and the compiler (issue 17): a temporary directory whose name holds
// shell syntax and spaces is only ever a path. Before, `TMPDIR='/tmp/x;touch /tmp/INJECTED;'` ran
// the touch and a space failed every compile.
TEST_F(HostBackend, ATemporaryDirectoryNameIsNeverRunAsACommand) {
  const std::filesystem::path base = std::filesystem::temp_directory_path() /
                                     ("tiletune host;touch INJECTED;$(touch INJECTED2) `touch INJECTED3` " +
                                      std::to_string(::getpid()));
  std::filesystem::create_directories(base);
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", base.c_str(), 1);
  gpu::CompileRequest req;
  req.source = "template <int X> void ok(const void*, unsigned, unsigned, unsigned) {}\n";
  req.name_expression = "ok<0>";
  req.arch = dev_->info().arch;
  gpu::CompileResult r = dev_->compiler().compile(req);
  if (old) ::setenv("TMPDIR", saved.c_str(), 1);
  else ::unsetenv("TMPDIR");
  EXPECT_TRUE(r.ok) << r.log;
  for (const char* f : {"INJECTED", "INJECTED2", "INJECTED3"}) {
    EXPECT_FALSE(std::filesystem::exists(f)) << f;
    EXPECT_FALSE(std::filesystem::exists(base / f)) << f;
  }
  std::filesystem::remove_all(base);
}

// A compiler that cannot be started is the environment's failure: compile() throws (the sweep
// stops and names it, nothing is recorded against the candidate), it returns no failed result.
TEST_F(HostBackend, ACompilerThatCannotStartIsAnErrorNotACompileFailure) {
  ::setenv("TILETUNE_HOST_CXX", "/nonexistent/tiletune-no-such-compiler", 1);
  gpu::CompileRequest req;
  req.source = "template <int X> void ok(const void*, unsigned, unsigned, unsigned) {}\n";
  req.name_expression = "ok<0>";
  req.arch = dev_->info().arch;
  std::string what;
  try {
    dev_->compiler().compile(req);
  } catch (const Error& e) {
    what = e.what();
  }
  ::unsetenv("TILETUNE_HOST_CXX");
  EXPECT_NE(what.find("tiletune-no-such-compiler"), std::string::npos) << what;
}

TEST_F(HostBackend, BadArchRefused) {
  gpu::CompileRequest req;
  req.source = "template <int X> void ok(const void*, unsigned, unsigned, unsigned) {}\n";
  req.name_expression = "ok<0>";
  for (const char* arch : {"sm_90a", "gfx90a", ""}) {
    req.arch = arch;
    gpu::CompileResult r = dev_->compiler().compile(req);
    EXPECT_FALSE(r.ok) << arch;
    EXPECT_NE(r.log.find("arch"), std::string::npos) << r.log;
    EXPECT_NE(r.log.find(std::string("'") + arch + "'"), std::string::npos) << r.log;
  }
}

TEST_F(HostBackend, LoadErrors) {
  gpu::CodeObject garbage;
  garbage.bytes.resize(4096);
  for (auto& b : garbage.bytes) b = std::uint8_t(rand_in(0, 255));
  garbage.symbol = "tt_entry";
  EXPECT_THROW(dev_->load(garbage), Error);
  gpu::CodeObject wrong = code_->at("bad0");
  wrong.symbol = "no_such_entry";
  try {
    dev_->load(wrong);
    ADD_FAILURE() << "loaded a missing symbol";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_entry"), std::string::npos) << e.what();
  }
  // a second load of a good object gives an independent, working kernel
  auto again = dev_->load(code_->at("bad0"));
  EXPECT_VALID(run_bad(0, make(9, 7, 5)));
}

// time_runs: the mean (first event to last, over the runs) lies within the runs' min and max and
// matches what each run costs.
TEST_F(HostBackend, TimeRunsGivesTheMeanOfTheRuns) {
  tuner::BenchmarkOptions o;
  o.warmup = 1, o.min_iterations = 6, o.max_iterations = 6, o.target_ms = 1;
  int calls = 0;
  const tuner::Timing t = tuner::time_runs(*dev_, 2, o, [&](std::size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2 + 2 * (calls++ % 2)));  // 2 and 4 ms
  });
  EXPECT_EQ(t.iterations, 6);
  EXPECT_GE(t.mean_ms, t.min_ms);
  EXPECT_LE(t.mean_ms, t.max_ms);
  EXPECT_GE(t.mean_ms, 2.9);
  EXPECT_LT(t.mean_ms, 1000.0);
}

TEST_F(HostBackend, EventsTime) {
  gpu::Event a = dev_->create_event(), b = dev_->create_event(), c = dev_->create_event();
  dev_->record(a);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  dev_->record(b);
  EXPECT_GE(dev_->elapsed_ms(a, b), 19.f);
  EXPECT_LT(dev_->elapsed_ms(a, b), 5000.f);
  // a kernel launch between two events
  GemmProblem p = make(100, 100, 100);
  GemmInputs data(*dev_, p, false);
  const KernelTemplate& t = find_template("host_gemm");
  const Solution def = t.default_solution();
  gpu::LaunchDims dims = t.launch_dims(t.variables(def, p, dev_->info()));
  TtGemmParams prm = data.params(0);
  dev_->record(b);
  dev_->launch(kernel(Variant{DataType::F32, DataType::F32, false, false, def}.key()), dims, &prm, sizeof prm);
  dev_->record(c);
  dev_->synchronize();
  float ms = dev_->elapsed_ms(b, c);
  EXPECT_GE(ms, 0.f);
  EXPECT_LE(ms, dev_->elapsed_ms(a, c));
  EXPECT_GE(dev_->elapsed_ms(a, c), dev_->elapsed_ms(a, b));
  dev_->destroy_event(a);
  dev_->destroy_event(b);
  dev_->destroy_event(c);
}

TEST_F(HostBackend, MemoryRoundTrip) {
  const std::size_t n = 100003;
  std::vector<std::uint8_t> src(n), back(n, 0);
  for (auto& v : src) v = std::uint8_t(rand_in(1, 255));
  gpu::DeviceBuffer buf(*dev_, n);
  ASSERT_NE(buf.get(), nullptr);
  EXPECT_EQ(buf.size(), n);
  dev_->copy_to_device(buf.get(), src.data(), n);
  dev_->copy_to_host(back.data(), buf.get(), n);
  EXPECT_EQ(back, src);
  // a sub-range
  std::vector<std::uint8_t> part(1000);
  dev_->copy_to_host(part.data(), static_cast<std::uint8_t*>(buf.get()) + 5000, part.size());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), src.begin() + 5000));
  // fill
  std::uint8_t value = std::uint8_t(rand_in(1, 255));
  dev_->fill_bytes(static_cast<std::uint8_t*>(buf.get()) + 10, value, 500);
  dev_->copy_to_host(back.data(), buf.get(), n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t want = (i >= 10 && i < 510) ? value : src[i];
    ASSERT_EQ(back[i], want) << "byte " << i;
  }
  // moving a buffer moves ownership
  gpu::DeviceBuffer moved(std::move(buf));
  EXPECT_EQ(buf.get(), nullptr);
  ASSERT_NE(moved.get(), nullptr);
  dev_->copy_to_host(back.data(), moved.get(), 10);
  EXPECT_TRUE(std::equal(back.begin(), back.begin() + 10, src.begin()));
}

TEST_F(HostBackend, GemmInputsRotateCopies) {
  GemmProblem p = make(64, 64, 64);
  GemmInputs d(*dev_, p);  // rotate: enough copies to pass twice the cache
  EXPECT_GE(d.sets(), 1u);
  if (dev_->info().cache_bytes > 0) EXPECT_GT(d.sets(), 1u);
  for (std::size_t s = 1; s < d.sets(); ++s) {
    EXPECT_NE(d.params(s).a, d.params(0).a);
    EXPECT_NE(d.params(s).c, d.params(0).c);
  }
  EXPECT_EQ(d.params(0).lda, 64);
  EXPECT_EQ(d.params(0).m, 64);
  EXPECT_EQ(d.beta(), 0.f);
  EXPECT_GE(d.alpha(), 0.5f);
  EXPECT_LE(d.alpha(), 1.5f);
  GemmInputs single(*dev_, p, false);
  EXPECT_EQ(single.sets(), 1u);
}

}  // namespace
