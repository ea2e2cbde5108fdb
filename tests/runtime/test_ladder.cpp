// The runtime's dispatch ladder on the host backend, rung by rung (solutions/selection.h): an exact
// winner (the user database's first, the vendor library as a winner too), a pool kernel only with
// evidence that it beats the vendor, the vendor library (OpenBLAS), the template default; and the
// warning for a database that holds nothing for this arch. Every call is checked against fp64.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "db/database.h"
#include "db/explain.h"
#include "db/ship.h"
#include "gpu/backend.h"
#include "gpu/host/host_backend.h"
#include "tests/process_util.h"
#include "tests/runtime_test_util.h"
#include "solutions/kernel_template.h"
#include "solutions/model.h"
#include "solutions/selection.h"
#include "tuner/config.h"
#include "tuner/search.h"
#include "tuner/sweep.h"
#include "vendors/libraries.h"
#include "vendors/vendor.h"

namespace fs = std::filesystem;
using namespace tiletune;
using testing_util::dispatch_host;

namespace {

// The source OpenBLAS's thread-count choices are recorded under (its default call: "OpenBLAS").
constexpr const char* kOpenblasChoices = "OpenBLAS, threads set";

GemmProblem f32(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmProblem p;
  p.m = m, p.n = n, p.k = k;
  return p.canonical();
}

class Ladder : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("TILETUNE_VENDOR");
    ::unsetenv("TILETUNE_USER_DB");
    if (!gpu::host::make_openblas_gemm()) {
      if (std::getenv("CI")) FAIL() << "OpenBLAS (libopenblas0) is not installed: scripts/install-deps.sh installs it";
      GTEST_SKIP() << "OpenBLAS (libopenblas0) is not installed";
    }
    dir_ = fs::temp_directory_path() / ("tiletune-ladder-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    arch_ = gpu::list_devices(gpu::BackendKind::Host)[0].arch;
  }
  void TearDown() override {
    ::unsetenv("TILETUNE_VENDOR");
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Records a measurement of `s` on `p` (a kernel without a code object: the runtime compiles it).
  void record(const std::string& path, const Problem& p, const Solution& s, const std::string& source_hash,
              double median_ms, const std::string& arch = "") {
    db::Database d = db::Database::open(path, db::Mode::ReadWrite);
    db::MeasurementRecord m;
    m.problem_id = d.upsert_problem(p);
    m.solution_id = d.upsert_solution(s, source_hash);
    m.arch = arch.empty() ? arch_ : arch;
    m.min_ms = m.median_ms = m.max_ms = median_ms;
    m.tflops = p.flops() / (median_ms * 1e-3) / 1e12;
    m.sweep = "ladder-test";
    d.put_measurement(m);
  }
  void record_kernel(const std::string& path, const Problem& p, double ms) {
    const KernelTemplate& t = find_template("host_gemm");
    record(path, p, t.default_solution(), t.source_hash(), ms);
  }
  void record_vendor(const std::string& path, const Problem& p, double ms) {
    record(path, p, Solution{kVendorTemplate, {}}, "OpenBLAS", ms);
  }

  tiletune_handle_t open(const std::string& shipped, const char* user = nullptr) {
    tiletune_handle_t h = nullptr;
    EXPECT_EQ(tiletune_create_ex(&h, shipped.empty() ? nullptr : shipped.c_str(), user, "host", 0), TILETUNE_SUCCESS)
        << tiletune_last_error();
    return h;
  }
  static tiletune_stats_t stats(tiletune_handle_t h) {
    tiletune_stats_t s{};
    EXPECT_EQ(tiletune_get_stats(h, &s), TILETUNE_SUCCESS);
    return s;
  }
  static std::string explain(tiletune_handle_t h, const GemmProblem& p) {
    char why[1024];
    EXPECT_EQ(tiletune_explain(h, p.trans_a ? TILETUNE_OP_T : TILETUNE_OP_N, p.trans_b ? TILETUNE_OP_T : TILETUNE_OP_N,
                               p.m, p.n, p.k, testing_util::c_api_type(p.a_type), p.lda, p.ldb,
                               testing_util::c_api_type(p.c_type), p.ldc, p.batch, p.beta_zero,
                               p.compute_tf32 ? TILETUNE_COMPUTE_32F_FAST_TF32 : TILETUNE_COMPUTE_32F, why, sizeof why),
              TILETUNE_SUCCESS);
    return why;
  }
  static tiletune_choice_t choice(tiletune_handle_t h, const GemmProblem& p) {
    tiletune_choice_t c{};
    EXPECT_EQ(tiletune_gemm_choice(h, p.trans_a ? TILETUNE_OP_T : TILETUNE_OP_N, p.trans_b ? TILETUNE_OP_T : TILETUNE_OP_N,
                                   p.m, p.n, p.k, testing_util::c_api_type(p.a_type), p.lda, p.stride_a, p.ldb,
                                   p.stride_b, testing_util::c_api_type(p.c_type), p.ldc, p.stride_c, p.batch,
                                   p.beta_zero, TILETUNE_COMPUTE_32F, &c),
              TILETUNE_SUCCESS)
        << tiletune_last_error();
    return c;
  }
  static void expect_correct(tiletune_handle_t h, const GemmProblem& p) {
    auto r = dispatch_host(h, p);
    EXPECT_TRUE(r.ok) << p.key() << ": " << r.reason;
  }

  fs::path dir_;
  std::string arch_;
};

TEST_F(Ladder, WithoutADatabaseTheVendorServesWhatItComputesAndTheDefaultTheRest) {
  tiletune_handle_t h = open("");
  expect_correct(h, f32(37, 29, 51));
  tiletune_stats_t s = stats(h);
  EXPECT_EQ(s.vendor, 1u);
  EXPECT_EQ(s.fallbacks, 0u);
  EXPECT_EQ(s.jit_compiles, 0u);
  EXPECT_EQ(explain(h, f32(37, 29, 51)).rfind("vendor: OpenBLAS", 0), 0u) << explain(h, f32(37, 29, 51));

  GemmProblem half = f32(16, 24, 8);
  half.a_type = half.c_type = DataType::F16;  // OpenBLAS has no fp16 GEMM
  expect_correct(h, half);
  s = stats(h);
  EXPECT_EQ(s.fallbacks, 1u);
  EXPECT_EQ(s.calls, 2u);
  EXPECT_NE(explain(h, half).find("OpenBLAS computes fp32 GEMMs only"), std::string::npos) << explain(h, half);
  tiletune_destroy(h);
}

TEST_F(Ladder, VendorOffLeavesTheDefault) {
  ::setenv("TILETUNE_VENDOR", "off", 1);
  tiletune_handle_t h = open("");
  expect_correct(h, f32(37, 29, 51));
  EXPECT_EQ(stats(h).fallbacks, 1u);
  EXPECT_EQ(stats(h).vendor, 0u);
  tiletune_destroy(h);
}

TEST_F(Ladder, AVendorWinnerIsServedByTheVendorAsTuned) {
  const std::string db = (dir_ / "v.db").string();
  record_kernel(db, f32(64, 64, 64), 2.0);
  record_vendor(db, f32(64, 64, 64), 1.0);  // faster: the winner
  tiletune_handle_t h = open(db);
  expect_correct(h, f32(64, 64, 64));
  tiletune_stats_t s = stats(h);
  EXPECT_EQ(s.tuned, 1u);
  EXPECT_EQ(s.vendor, 0u);
  EXPECT_EQ(s.jit_compiles, 0u) << "the vendor needs no kernel";
  EXPECT_NE(explain(h, f32(64, 64, 64)).find("exact winner the vendor library"), std::string::npos);
  tiletune_destroy(h);

  ::setenv("TILETUNE_VENDOR", "off", 1);  // a winner the vendor won, without the vendor: the ladder goes on
  h = open(db);
  expect_correct(h, f32(64, 64, 64));
  EXPECT_EQ(stats(h).fallbacks, 1u);
  EXPECT_EQ(stats(h).tuned, 0u);
  EXPECT_EQ(explain(h, f32(64, 64, 64)).rfind("default:", 0), 0u) << explain(h, f32(64, 64, 64));
  tiletune_destroy(h);
}

TEST_F(Ladder, ATunedKernelWithinTheMarginOfTheVendorGivesWayToIt) {
  const std::string close = (dir_ / "close.db").string(), clear = (dir_ / "clear.db").string();
  record_kernel(close, f32(64, 64, 64), 1.0);
  record_vendor(close, f32(64, 64, 64), 1.05);  // the kernel won, by less than kKernelMargin
  record_kernel(clear, f32(64, 64, 64), 1.0);
  record_vendor(clear, f32(64, 64, 64), 1.5);

  tiletune_handle_t h = open(close);
  expect_correct(h, f32(64, 64, 64));
  EXPECT_EQ(stats(h).tuned, 1u);
  EXPECT_EQ(stats(h).jit_compiles, 0u) << "the vendor served it, not the kernel";
  EXPECT_NE(explain(h, f32(64, 64, 64)).find("the vendor library serves it"), std::string::npos)
      << explain(h, f32(64, 64, 64));
  tiletune_destroy(h);
  db::Database cd = db::Database::open(close, db::Mode::ReadOnly);
  const std::string text = db::format(db::explain(cd, f32(64, 64, 64), ""));
  EXPECT_NE(text.find("the vendor library serves it"), std::string::npos) << text;

  // A packed database, as a trainer ships it, keeps the vendor's timing beside the winner.
  const std::string packed = (dir_ / "close-packed.db").string();
  db::pack(close, packed, {}, false);
  h = open(packed);
  EXPECT_NE(explain(h, f32(64, 64, 64)).find("the vendor library serves it"), std::string::npos)
      << explain(h, f32(64, 64, 64));
  tiletune_destroy(h);

  h = open(clear);
  expect_correct(h, f32(64, 64, 64));
  EXPECT_EQ(stats(h).tuned, 1u);
  EXPECT_EQ(stats(h).jit_compiles, 1u) << "the kernel (no code object stored: compiled once)";
  tiletune_destroy(h);

  ::setenv("TILETUNE_VENDOR", "off", 1);  // without a vendor the kernel serves whatever its lead
  h = open(close);
  expect_correct(h, f32(64, 64, 64));
  EXPECT_EQ(stats(h).jit_compiles, 1u);
  tiletune_destroy(h);
}

TEST_F(Ladder, TheChoiceSaysTheRungWhetherAKernelRunsAndItsLeadOverTheVendor) {
  const std::string close = (dir_ / "close.db").string(), clear = (dir_ / "clear.db").string();
  record_kernel(close, f32(64, 64, 64), 1.0);
  record_vendor(close, f32(64, 64, 64), 1.05);  // a lead under kKernelMargin: the vendor serves it
  record_kernel(clear, f32(64, 64, 64), 1.0);
  record_vendor(clear, f32(64, 64, 64), 2.0);
  tiletune_handle_t h = open(clear);
  tiletune_choice_t c = choice(h, f32(64, 64, 64));
  EXPECT_EQ(c.rung, TILETUNE_RUNG_TUNED);
  EXPECT_EQ(c.kernel, 1);
  EXPECT_DOUBLE_EQ(c.vendor_ratio, 2.0);
  c = choice(h, f32(60, 70, 64));  // the neighbour's lead, on its own problem
  EXPECT_EQ(c.rung, TILETUNE_RUNG_POOL);
  EXPECT_EQ(c.kernel, 1);
  EXPECT_DOUBLE_EQ(c.vendor_ratio, 2.0);
  c = choice(h, f32(500, 500, 500));
  EXPECT_EQ(c.rung, TILETUNE_RUNG_VENDOR);
  EXPECT_EQ(c.kernel, 0);
  EXPECT_DOUBLE_EQ(c.vendor_ratio, 1.0);
  EXPECT_EQ(stats(h).calls, 0u) << "asking runs nothing";
  tiletune_destroy(h);

  h = open(close);
  c = choice(h, f32(64, 64, 64));
  EXPECT_EQ(c.rung, TILETUNE_RUNG_TUNED);
  EXPECT_EQ(c.kernel, 0) << "the vendor's default serves a kernel that led by too little";
  EXPECT_DOUBLE_EQ(c.vendor_ratio, 1.0);
  GemmProblem half = f32(16, 24, 8);
  half.a_type = half.c_type = DataType::F16;  // no vendor computes it
  c = choice(h, half);
  EXPECT_EQ(c.rung, TILETUNE_RUNG_DEFAULT);
  EXPECT_EQ(c.kernel, 1);
  EXPECT_EQ(stats(h).jit_compiles, 0u) << "asking compiles nothing";
  GemmProblem batched = f32(32, 16, 8);
  batched.batch = 3;
  batched.stride_a = 32 * 8, batched.stride_b = 8 * 16, batched.stride_c = 32 * 16;
  EXPECT_EQ(choice(h, batched).rung, TILETUNE_RUNG_VENDOR);
  EXPECT_EQ(tiletune_gemm_choice(h, TILETUNE_OP_N, TILETUNE_OP_N, 4, 4, 4, TILETUNE_R_32F, 4, 0, 4, 0, TILETUNE_R_32F, 4,
                                 0, 1, 1, TILETUNE_COMPUTE_32F, nullptr),
            TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiletune_gemm_choice(h, TILETUNE_OP_N, TILETUNE_OP_N, 4, 4, 4, TILETUNE_R_32F, 2, 0, 4, 0, TILETUNE_R_32F, 4,
                                 0, 1, 1, TILETUNE_COMPUTE_32F, &c),
            TILETUNE_ERROR_INVALID_VALUE)
      << "lda < m";
  tiletune_destroy(h);
}

// fp8 and int8 GEMMs through the C API: without a database the template default serves them
// (OpenBLAS computes fp32 only), exact for int8; int8 takes integer alpha and beta only, and the
// type pairs are checked.
TEST_F(Ladder, EightBitGemmsRunAndBadScalarsOrTypePairsAreRefused) {
  tiletune_handle_t h = open("");
  GemmProblem fp8, int8;
  fp8.m = 40, fp8.n = 24, fp8.k = 200, fp8.a_type = DataType::E4M3, fp8.c_type = DataType::BF16, fp8.trans_a = true;
  int8.m = 33, int8.n = 17, int8.k = 300, int8.a_type = DataType::S8, int8.c_type = DataType::S32, int8.beta_zero = false;
  fp8 = fp8.canonical(), int8 = int8.canonical();
  expect_correct(h, fp8);
  expect_correct(h, int8);
  EXPECT_EQ(choice(h, int8).rung, TILETUNE_RUNG_DEFAULT);
  EXPECT_NE(explain(h, fp8).find("OpenBLAS computes fp32 GEMMs only"), std::string::npos) << explain(h, fp8);
  std::vector<std::int32_t> c(4 * 4);
  std::vector<std::int8_t> a(4 * 4, 1);
  EXPECT_EQ(tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, 4, 4, 4, 0.5f, a.data(), TILETUNE_R_8I, 4, a.data(), 4, 0.0f,
                          c.data(), TILETUNE_R_32I, 4, nullptr),
            TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("integer alpha and beta"), std::string::npos) << tiletune_last_error();
  EXPECT_EQ(tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, 4, 4, 4, 2.0f, a.data(), TILETUNE_R_8I, 4, a.data(), 4, 0.0f,
                          c.data(), TILETUNE_R_32I, 4, nullptr),
            TILETUNE_SUCCESS)
      << tiletune_last_error();
  EXPECT_EQ(c[5], 8);  // 2 * (1 * 1 * 4)
  EXPECT_EQ(tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, 4, 4, 4, 1.0f, a.data(), TILETUNE_R_8I, 4, a.data(), 4, 0.0f,
                          c.data(), TILETUNE_R_32F, 4, nullptr),
            TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("s32"), std::string::npos) << tiletune_last_error();
  tiletune_destroy(h);
}

// e5m2 GEMMs through the C API: e5m2 x e5m2 through the old entry points, e4m3 x e5m2 and the
// reverse through tiletune_gemm_strided_batched_mixed, all correct on the host's default kernel;
// every pair that is not two fp8 types, an fp8 output and an unknown type are refused by name.
TEST_F(Ladder, E5m2AndMixedFp8GemmsRunAndBadPairsAreRefused) {
  tiletune_handle_t h = open("");
  GemmProblem p;
  p.m = 40, p.n = 24, p.k = 200, p.trans_a = true, p.c_type = DataType::BF16;
  for (auto [a, b] : {std::pair{DataType::E5M2, DataType::E5M2}, std::pair{DataType::E4M3, DataType::E5M2},
                      std::pair{DataType::E5M2, DataType::E4M3}}) {
    p.a_type = a, p.b_type = b;
    expect_correct(h, p.canonical());
  }
  GemmProblem same = p.canonical();
  same.a_type = DataType::E4M3, same.b_type = DataType::E4M3;
  tiletune_choice_t c{}, c_mixed{};
  auto ask = [&](tiletune_datatype_t ta, tiletune_datatype_t tb, tiletune_choice_t* out) {
    return tiletune_gemm_choice_mixed(h, TILETUNE_OP_T, TILETUNE_OP_N, 40, 24, 200, ta, tb, 200, 0, 200, 0,
                                      TILETUNE_R_16BF, 40, 0, 1, 1, TILETUNE_COMPUTE_32F, out);
  };
  EXPECT_EQ(ask(TILETUNE_R_8F_E4M3, TILETUNE_R_8F_E5M2, &c_mixed), TILETUNE_SUCCESS) << tiletune_last_error();
  EXPECT_EQ(c_mixed.rung, TILETUNE_RUNG_DEFAULT);
  // One type through the mixed entry point is the old call.
  EXPECT_EQ(ask(TILETUNE_R_8F_E4M3, TILETUNE_R_8F_E4M3, &c_mixed), TILETUNE_SUCCESS);
  c = choice(h, same);
  EXPECT_EQ(c.rung, c_mixed.rung);
  EXPECT_EQ(c.kernel, c_mixed.kernel);
  // tiletune_explain_mixed: the same pairs, one type the old call's line, a bad pair refused by name.
  auto why = [&](int ta, int tb, std::string* text) {
    char buf[1024] = {};
    tiletune_datatype_t a_t, b_t;
    std::memcpy(&a_t, &ta, sizeof a_t), std::memcpy(&b_t, &tb, sizeof b_t);
    const tiletune_status_t st = tiletune_explain_mixed(h, TILETUNE_OP_T, TILETUNE_OP_N, 40, 24, 200, a_t, b_t, 200,
                                                        200, TILETUNE_R_16BF, 40, 1, 1, TILETUNE_COMPUTE_32F, buf,
                                                        sizeof buf);
    *text = buf;
    return st;
  };
  std::string line;
  EXPECT_EQ(why(TILETUNE_R_8F_E4M3, TILETUNE_R_8F_E5M2, &line), TILETUNE_SUCCESS) << tiletune_last_error();
  EXPECT_EQ(line.rfind("default: ", 0), 0u) << line;  // the rung tiletune_gemm_choice_mixed gave above
  EXPECT_EQ(why(TILETUNE_R_8F_E4M3, TILETUNE_R_8F_E4M3, &line), TILETUNE_SUCCESS);
  EXPECT_EQ(line, explain(h, same));
  EXPECT_EQ(why(TILETUNE_R_8F_E5M2, TILETUNE_R_16BF, &line), TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("only as two fp8 types"), std::string::npos)
      << tiletune_last_error();

  std::vector<std::uint8_t> x(64 * 64);
  std::vector<float> out(64 * 64);
  struct Bad {
    int a, b, c;
    const char* expect;
  };
  const Bad bad[] = {{TILETUNE_R_8F_E5M2, TILETUNE_R_16BF, TILETUNE_R_16BF, "only as two fp8 types (got e5m2 x bf16)"},
                     {TILETUNE_R_16F, TILETUNE_R_8F_E5M2, TILETUNE_R_32F, "only as two fp8 types (got f16 x e5m2)"},
                     {TILETUNE_R_8F_E5M2, TILETUNE_R_8I, TILETUNE_R_32I, "only as two fp8 types (got e5m2 x s8)"},
                     {TILETUNE_R_8F_E4M3, TILETUNE_R_8F_E5M2, TILETUNE_R_8F_E5M2, "e5m2 is an input type only"},
                     {TILETUNE_R_8F_E5M2, TILETUNE_R_8F_E5M2, TILETUNE_R_32I, "int8"},
                     {TILETUNE_R_8F_E4M3, 7, TILETUNE_R_16BF, "unknown data type 7"}};
  for (const Bad& bb : bad) {
    tiletune_datatype_t ta, tb, tc;
    std::memcpy(&ta, &bb.a, sizeof ta), std::memcpy(&tb, &bb.b, sizeof tb), std::memcpy(&tc, &bb.c, sizeof tc);
    EXPECT_EQ(tiletune_gemm_strided_batched_mixed(h, TILETUNE_OP_T, TILETUNE_OP_N, 8, 8, 8, 1.0f, x.data(), ta, 8, 0,
                                                  x.data(), tb, 8, 0, 0.0f, out.data(), tc, 8, 0, 1,
                                                  TILETUNE_COMPUTE_32F, nullptr),
              TILETUNE_ERROR_INVALID_VALUE);
    EXPECT_NE(std::string(tiletune_last_error()).find(bb.expect), std::string::npos) << tiletune_last_error();
  }
  // A value no data type has, through either choice call: an error naming it. (7 is the one such value
  // a C++ caller can pass without itself loading an invalid enum; the library reads every enum as raw
  // bytes, whatever a C caller passes.)
  tiletune_datatype_t wild;
  const int seven = 7;
  std::memcpy(&wild, &seven, sizeof wild);
  EXPECT_EQ(tiletune_gemm_choice(h, TILETUNE_OP_T, TILETUNE_OP_N, 8, 8, 8, wild, 8, 0, 8, 0, TILETUNE_R_16BF, 8, 0, 1, 1,
                                 TILETUNE_COMPUTE_32F, &c),
            TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("unknown data type 7"), std::string::npos) << tiletune_last_error();
  EXPECT_EQ(ask(TILETUNE_R_8F_E4M3, wild, &c), TILETUNE_ERROR_INVALID_VALUE);
  // e5m2 output through the old entry point too.
  EXPECT_EQ(tiletune_gemm(h, TILETUNE_OP_T, TILETUNE_OP_N, 8, 8, 8, 1.0f, x.data(), TILETUNE_R_8F_E5M2, 8, x.data(), 8,
                          0.0f, out.data(), TILETUNE_R_8F_E5M2, 8, nullptr),
            TILETUNE_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(tiletune_last_error()).find("input type only"), std::string::npos) << tiletune_last_error();
  tiletune_destroy(h);
}

TEST_F(Ladder, ThePoolServesANeighbourOnlyWhereItBeatTheVendor) {
  const std::string strong = (dir_ / "strong.db").string(), weak = (dir_ / "weak.db").string(),
                    unmeasured = (dir_ / "unmeasured.db").string();
  record_kernel(strong, f32(64, 64, 64), 1.0);
  // The kernel was 2x the vendor: beyond kKernelMargin there, and still where the model expects
  // its 6 tiles to take 1.5x its 4 (the vendor's time scales by the flops).
  record_vendor(strong, f32(64, 64, 64), 2.0);
  record_kernel(weak, f32(64, 64, 64), 1.0);
  record_vendor(weak, f32(64, 64, 64), 1.05);
  record_kernel(unmeasured, f32(64, 64, 64), 1.0);
  const GemmProblem near = f32(60, 70, 64);

  tiletune_handle_t h = open(strong);
  expect_correct(h, near);
  EXPECT_EQ(stats(h).nearest, 1u);
  EXPECT_EQ(explain(h, near).rfind("pool:", 0), 0u) << explain(h, near);
  tiletune_destroy(h);

  for (const std::string& db : {weak, unmeasured}) {
    h = open(db);
    expect_correct(h, near);
    EXPECT_EQ(stats(h).vendor, 1u) << db;
    EXPECT_EQ(stats(h).nearest, 0u) << db;
    EXPECT_EQ(explain(h, near).rfind("vendor:", 0), 0u) << explain(h, near);
    tiletune_destroy(h);
  }
  // `db explain` states the same rule without a device.
  db::Database sd = db::Database::open(strong, db::Mode::ReadOnly);
  EXPECT_EQ(db::explain(sd, near, "").choice, db::Explanation::Choice::Nearest);
  db::Database wd = db::Database::open(weak, db::Mode::ReadOnly);
  db::Explanation we = db::explain(wd, near, "");
  EXPECT_EQ(we.choice, db::Explanation::Choice::Vendor);
  EXPECT_NE(db::format(we).find("VENDOR (untuned)"), std::string::npos) << db::format(we);
  // With no vendor, the neighbour serves whatever was measured.
  ::setenv("TILETUNE_VENDOR", "off", 1);
  h = open(weak);
  expect_correct(h, near);
  EXPECT_EQ(stats(h).nearest, 1u);
  tiletune_destroy(h);
}

TEST_F(Ladder, TheUserDatabaseTakesPrecedence) {
  const std::string shipped = (dir_ / "shipped.db").string(), user = (dir_ / "user.db").string();
  record_kernel(shipped, f32(64, 64, 64), 1.0);  // no code object: compiled on first use
  record_vendor(user, f32(64, 64, 64), 1.0);

  tiletune_handle_t h = open(shipped);
  expect_correct(h, f32(64, 64, 64));
  EXPECT_EQ(stats(h).jit_compiles, 1u);
  EXPECT_EQ(stats(h).user_tuned, 0u);
  tiletune_destroy(h);

  h = open(shipped, user.c_str());
  expect_correct(h, f32(64, 64, 64));
  EXPECT_EQ(stats(h).tuned, 1u);
  EXPECT_EQ(stats(h).user_tuned, 1u);
  EXPECT_EQ(stats(h).jit_compiles, 0u) << "the user database's vendor winner, not the shipped kernel";
  EXPECT_NE(explain(h, f32(64, 64, 64)).find("(user database)"), std::string::npos);
  tiletune_destroy(h);

  ::setenv("TILETUNE_USER_DB", user.c_str(), 1);  // the same through the environment
  h = open(shipped);
  expect_correct(h, f32(64, 64, 64));
  EXPECT_EQ(stats(h).user_tuned, 1u);
  tiletune_destroy(h);
  ::unsetenv("TILETUNE_USER_DB");

  // A user database that does not exist yet is skipped; one that is not a database is an error.
  const std::string missing = (dir_ / "not-yet.db").string();
  h = open(shipped, missing.c_str());
  expect_correct(h, f32(64, 64, 64));
  EXPECT_EQ(stats(h).user_tuned, 0u);
  EXPECT_EQ(stats(h).jit_compiles, 1u) << "the shipped kernel";
  tiletune_destroy(h);
  const std::string junk = (dir_ / "junk.db").string();
  { std::FILE* f = std::fopen(junk.c_str(), "w"); std::fputs("not sqlite", f); std::fclose(f); }
  tiletune_handle_t bad = nullptr;
  EXPECT_EQ(tiletune_create_ex(&bad, shipped.c_str(), junk.c_str(), "host", 0), TILETUNE_ERROR_DATABASE);
  EXPECT_NE(std::string(tiletune_last_error()).find("junk.db"), std::string::npos) << tiletune_last_error();
}

TEST_F(Ladder, ADatabaseOfAnotherArchWarnsOnceAndServesUntuned) {
  const std::string db = (dir_ / "foreign.db").string();
  record(db, f32(64, 64, 64), find_template("host_gemm").default_solution(), find_template("host_gemm").source_hash(),
         1.0, "sm_90a");
  ::testing::internal::CaptureStderr();
  tiletune_handle_t h = open(db);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("holds no winners for " + arch_), std::string::npos) << err;
  EXPECT_NE(err.find("sm_90a"), std::string::npos) << err;
  expect_correct(h, f32(64, 64, 64));
  EXPECT_EQ(stats(h).vendor, 1u);
  tiletune_destroy(h);
}

// Among several qualifying neighbours the pool takes the one the model, calibrated by each kernel's
// measured time on its own problem, expects fastest here, not the nearest.
TEST_F(Ladder, ThePoolRanksItsKernelsByTheCalibratedModel) {
  const KernelTemplate& t = find_template("host_gemm");
  Solution small = t.default_solution(), big = t.default_solution();
  small.params["MT0"] = small.params["MT1"] = 16;
  const Problem here = f32(60, 70, 64);
  const Problem near = f32(64, 64, 64), far = f32(128, 128, 64);  // distance 0.16 and 1.36
  const gpu::DeviceInfo dev = gpu::list_devices(gpu::BackendKind::Host)[0];
  std::vector<TunedEntry> tuned = {{near, &t, small, 3.0, 1.0}, {far, &t, big, 3.0, 0.5}};
  auto estimate = [&](const TunedEntry& e) {
    return e.median_ms * model_estimate(t, e.solution, here, dev).seconds / model_estimate(t, e.solution, e.problem, dev).seconds;
  };
  ASSERT_LT(estimate(tuned[1]), estimate(tuned[0])) << "the test's premise";
  const PoolRanking r = rank_pool(tuned, here, dev, true);
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->index, 1u) << "the nearest would be entry 0";
  EXPECT_DOUBLE_EQ(r.best->estimate_ms, estimate(tuned[1]));
  ASSERT_TRUE(r.nearest);
  EXPECT_EQ(r.nearest->index, 0u);

  // Through the runtime and `db explain`: the far problem's kernel serves, correctly.
  const std::string db = (dir_ / "pool.db").string();
  record(db, near, small, t.source_hash(), 1.0);
  record_vendor(db, near, 3.0);
  record(db, far, big, t.source_hash(), 0.5);
  record_vendor(db, far, 1.5);
  tiletune_handle_t h = open(db);
  expect_correct(h, here.gemm());
  EXPECT_EQ(stats(h).nearest, 1u);
  const std::string why = explain(h, here.gemm());
  EXPECT_NE(why.find(big.kernel_name() + " of the tuned problem " + far.key()), std::string::npos) << why;
  EXPECT_NE(why.find("model estimate"), std::string::npos) << why;
  tiletune_destroy(h);
}

// A kernel that beat the vendor on its own problem is still not served where the model expects it
// to fall behind: 6 tiles instead of 4 (1.5x the time) for 3% more flops.
TEST_F(Ladder, ThePoolLeavesAKernelTheModelExpectsBehindTheVendorHere) {
  const KernelTemplate& t = find_template("host_gemm");
  const Problem own = f32(64, 64, 64), here = f32(66, 64, 64);
  const gpu::DeviceInfo dev = gpu::list_devices(gpu::BackendKind::Host)[0];
  const std::vector<TunedEntry> tuned = {{own, &t, t.default_solution(), 1.2, 1.0}};
  const double kernel = model_estimate(t, t.default_solution(), here, dev).seconds /
                        model_estimate(t, t.default_solution(), own, dev).seconds;
  const double vendor = 1.2 * here.flops() / own.flops();
  ASSERT_LT(vendor / kernel, kKernelMargin) << "the test's premise";
  const PoolRanking r = rank_pool(tuned, here, dev, true);
  EXPECT_FALSE(r.best);
  EXPECT_NE(r.why_not.find("is expected at only"), std::string::npos) << r.why_not;
  // Without a vendor the same kernel serves.
  EXPECT_TRUE(rank_pool(tuned, here, dev, false).best);
}

TEST_F(Ladder, ASweepTimesTheVendorAsACandidate) {
  const std::string db = (dir_ / "sweep.db").string();
  auto cfg = tuner::parse_config(R"({"name": "ladder-sweep",
      "problems": [{"dtype": "f32", "transA": "N", "transB": "T", "m": 48, "n": 40, "k": 64}],
      "templates": {"host_gemm": {"parameters": {"MT0": [16], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [4]}}},
      "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 5, "flush_l2": true}})",
                                 dir_.string());
  ASSERT_TRUE(cfg.benchmark.flush_l2);  // each run alone behind a cache overwrite, as do_bench
  tuner::SweepOptions o;
  o.backend = gpu::BackendKind::Host;
  o.db_path = db;
  tuner::SweepSummary sum = tuner::run_sweep(cfg, o, stderr);
  ASSERT_EQ(sum.winners.size(), 1u);
  EXPECT_EQ(sum.vendor, "OpenBLAS");
  db::Database d = db::Database::open(db, db::Mode::ReadOnly);
  const auto winners = d.winners(arch_);
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_GT(winners[0].vendor_ms, 0) << "the vendor's timing is a measurement of the problem";
  // ... and so is each of its other algorithms: OpenBLAS on fewer threads than its default.
  std::set<std::string> vendor_runs;
  for (const auto& m : d.measurements(*d.find_problem(cfg.problems[0].key())))
    if (m.kernel_name.rfind(kVendorTemplate, 0) == 0 && m.status == db::Status::Ok) vendor_runs.insert(m.kernel_name);
  EXPECT_TRUE(vendor_runs.count("vendor")) << "the library's default";
  // The fastest of them were timed again as finalists (then in rounds against the kernels').
  std::size_t finals = 0;
  for (const auto& m : d.measurements(*d.find_problem(cfg.problems[0].key())))
    finals += m.kernel_name.rfind(kVendorTemplate, 0) == 0 && db::is_finalist_reason(m.reason);
  if (vendor_runs.size() > 1) EXPECT_GE(finals, 2u);
  // Where OpenBLAS runs more than one thread (its own count: cores, OPENBLAS/OMP_NUM_THREADS).
  auto host = gpu::open_device(gpu::BackendKind::Host, 0);
  gpu::Vendor vendor(*host);
  TtGemmParams args{};
  if (!vendor.alternatives(cfg.problems[0], &args, 8).empty())
    EXPECT_TRUE(vendor_runs.count("vendor_THREADS-1")) << "one thread, an alternative";
  // Whichever won, the runtime serves it as the tuned winner, correctly.
  tiletune_handle_t h = open(db);
  expect_correct(h, cfg.problems[0].gemm());
  EXPECT_EQ(stats(h).tuned, 1u);
  tiletune_destroy(h);
}

// db pack pools generic kernels beside the winners: kernels that ran near the best over a class's
// measured problems, each with its measurement on the problem it fit best. Where no vendor computes
// a problem too far from every tuned one, the model ranks them and one serves it instead of the
// template default (no compile at run time); a vendor, where there is one, keeps such problems.
TEST_F(Ladder, GenericKernelsOfThePackServeFarProblemsWhereNoVendorDoes) {
  const std::string src = (dir_ / "sweep.db").string(), packed = (dir_ / "packed.db").string(),
                    bare = (dir_ / "bare.db").string();
  auto cfg = tuner::parse_config(R"({"name": "generic-pool",
      "problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 64, "n": 64, "k": 64},
                   {"dtype": "f32", "transA": "N", "transB": "N", "m": 96, "n": 80, "k": 64},
                   {"dtype": "f32", "transA": "N", "transB": "N", "m": 128, "n": 96, "k": 48}],
      "templates": {"host_gemm": {"parameters": {"MT0": [16, 32], "MT1": [16, 32], "KU": [16], "TT0": [8], "TT1": [4]}}},
      "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 3, "target_ms": 2}})",
                                 dir_.string());
  tuner::SweepOptions o;
  o.backend = gpu::BackendKind::Host;
  o.db_path = src;
  o.compare_vendor = false;
  ASSERT_EQ(tuner::run_sweep(cfg, o, stderr).winners.size(), 3u);
  const db::PackResult r = db::pack(src, packed, {}, false, nullptr, 2);
  EXPECT_EQ(r.generic, 2u) << "one class of problems, two kernels asked for";
  db::Database pd = db::Database::open(packed, db::Mode::ReadOnly);
  const auto pool = pd.pool_kernels(arch_);
  ASSERT_EQ(pool.size(), 2u);
  for (const auto& g : pool) EXPECT_GT(g.median_ms, 0) << g.solution.kernel_name();
  EXPECT_EQ(db::pack(src, bare, {}, false, nullptr, 0).generic, 0u);

  const GemmProblem far = f32(700, 24, 300);  // beyond kMaxNearestDistance of every tuned problem
  ::setenv("TILETUNE_VENDOR", "off", 1);
  tiletune_handle_t h = open(packed);
  expect_correct(h, far);
  EXPECT_EQ(stats(h).nearest, 1u);
  EXPECT_EQ(stats(h).jit_compiles, 0u) << "the pool's code objects come from the database";
  EXPECT_NE(explain(h, far).find("the generic kernel"), std::string::npos) << explain(h, far);
  tiletune_destroy(h);
  EXPECT_EQ(db::explain(pd, far, "").choice, db::Explanation::Choice::Nearest);
  h = open(bare);
  expect_correct(h, far);
  EXPECT_EQ(stats(h).fallbacks, 1u) << "without the pool: the template default";
  tiletune_destroy(h);
  ::unsetenv("TILETUNE_VENDOR");
  h = open(packed);
  expect_correct(h, far);
  EXPECT_EQ(stats(h).vendor, 1u) << "the vendor keeps a problem far from every measurement";
  tiletune_destroy(h);
}

// A vendor algorithm that won is run as that algorithm, and says so.
TEST_F(Ladder, AVendorAlgorithmWinnerIsServedWithItsChoice) {
  const std::string db = (dir_ / "choice.db").string();
  const GemmProblem p = f32(40, 48, 56);
  record_kernel(db, p, 3.0);
  record_vendor(db, p, 2.0);
  record(db, p, Solution{kVendorTemplate, {{"THREADS", 1}}}, kOpenblasChoices, 1.0);
  db::Database d = db::Database::open(db, db::Mode::ReadOnly);
  const auto w = d.find_winner(arch_, Problem(p).key());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->solution.kernel_name(), "vendor_THREADS-1");
  EXPECT_EQ(w->vendor_choice, (std::map<std::string, std::int64_t>{{"THREADS", 1}})) << "the fastest vendor run";
  tiletune_handle_t h = open(db);
  expect_correct(h, p);
  EXPECT_EQ(stats(h).tuned, 1u);
  EXPECT_NE(explain(h, p).find("vendor_THREADS-1"), std::string::npos) << explain(h, p);
  const tiletune_choice_t c = choice(h, p);
  EXPECT_EQ(c.rung, TILETUNE_RUNG_TUNED);
  EXPECT_EQ(c.kernel, 0);
  EXPECT_DOUBLE_EQ(c.vendor_ratio, 2.0) << "against the vendor's default, not its fastest algorithm";
  EXPECT_DOUBLE_EQ(w->vendor_default_ratio(), 2.0);
  tiletune_destroy(h);
  // A packed database, as a trainer ships it, keeps the default's time beside the winner, also
  // where another algorithm came second.
  record(db, p, Solution{kVendorTemplate, {{"THREADS", 2}}}, kOpenblasChoices, 1.5);
  const std::string packed = (dir_ / "choice-packed.db").string();
  db::pack(db, packed, {}, false);
  h = open(packed);
  EXPECT_DOUBLE_EQ(choice(h, p).vendor_ratio, 2.0);
  tiletune_destroy(h);
}

// A vendor algorithm runs only under the library version that timed it (an algorithm's number
// names another kernel, or none, in another version); under another the library's default serves
// and explain says why. A source not recorded (older databases) keeps its choice.
TEST_F(Ladder, AVendorAlgorithmOfAnotherLibraryVersionGivesWayToTheDefault) {
  const GemmProblem p = f32(40, 48, 56);
  // A database where the kernel took kernel_ms, the vendor's default default_ms and its algorithm
  // THREADS 1, timed under `source`, algorithm_ms.
  auto make = [&](const char* name, double kernel_ms, double default_ms, const std::string& source, double algorithm_ms) {
    const std::string db = (dir_ / name).string();
    record_kernel(db, p, kernel_ms);
    record_vendor(db, p, default_ms);
    record(db, p, Solution{kVendorTemplate, {{"THREADS", 1}}}, source, algorithm_ms);
    return db;
  };
  {  // the vendor won with an algorithm timed under another OpenBLAS
    const std::string db = make("other-version.db", 3.0, 2.0, "OpenBLAS 0.0-elsewhere", 1.0);
    db::Database d = db::Database::open(db, db::Mode::ReadOnly);
    EXPECT_EQ(d.find_winner(arch_, Problem(p).key())->vendor_choice_source, "OpenBLAS 0.0-elsewhere");
    tiletune_handle_t h = open(db);
    expect_correct(h, p);
    EXPECT_EQ(stats(h).tuned, 1u);
    const std::string why = explain(h, p);
    EXPECT_NE(why.find("timed under OpenBLAS 0.0-elsewhere, this process has OpenBLAS, threads set: the library's default serves"),
              std::string::npos) << why;
    EXPECT_EQ(why.find("vendor_THREADS-1"), std::string::npos) << why;
    EXPECT_DOUBLE_EQ(choice(h, p).vendor_ratio, 1.0) << "the default runs: no lead over itself";
    tiletune_destroy(h);
  }
  {  // a kernel that led by too little gives way to the vendor's fastest algorithm: the same check
    tiletune_handle_t h = open(make("other-version-kernel.db", 1.0, 1.05, "OpenBLAS 0.0-elsewhere", 1.02));
    expect_correct(h, p);
    const std::string why = explain(h, p);
    EXPECT_NE(why.find("the vendor library serves it"), std::string::npos) << why;
    EXPECT_NE(why.find("timed under OpenBLAS 0.0-elsewhere"), std::string::npos) << why;
    tiletune_destroy(h);
  }
  {  // a kernel that leads by the margin serves: the vendor's algorithm, of whatever version, is not asked
    tiletune_handle_t h = open(make("other-version-kernel-serves.db", 1.0, 2.0, "OpenBLAS 0.0-elsewhere", 1.9));
    expect_correct(h, p);
    EXPECT_EQ(explain(h, p).find("timed under"), std::string::npos) << explain(h, p);
    tiletune_destroy(h);
  }
  {  // no source recorded: the choice stands
    tiletune_handle_t h = open(make("no-source.db", 3.0, 2.0, "", 1.0));
    expect_correct(h, p);
    EXPECT_NE(explain(h, p).find("vendor_THREADS-1"), std::string::npos) << explain(h, p);
    EXPECT_DOUBLE_EQ(choice(h, p).vendor_ratio, 2.0);
    tiletune_destroy(h);
  }
}

TEST_F(Ladder, ASweepNamesTheProblemsNoCandidateAdmitsAndTuneExitsWithFour) {
  const std::string cfg = (dir_ / "cover.json").string(), db = (dir_ / "cover.db").string();
  {
    std::FILE* f = std::fopen(cfg.c_str(), "w");
    std::fputs(R"({"name": "coverage",
      "problems": [{"dtype": "f32", "m": 48, "n": 40, "k": 64}, {"dtype": "f32", "m": 480, "n": 40, "k": 64}],
      "templates": {"host_gemm": {"parameters": {"MT0": [16], "MT1": [16], "KU": [16], "TT0": [8], "TT1": [4]},
                                  "constraints": {"small_only": "M <= 64"}}},
      "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 5}})",
               f);
    std::fclose(f);
  }
  const std::string log = (dir_ / "out.txt").string();
  EXPECT_EQ(tiletune::testing::wait_for(tiletune::testing::spawn({TILETUNE_EXE, "tune", cfg, "--db", db, "--backend", "host"}, log)), 4);
  const std::string out = tiletune::testing::read_file(log);
  EXPECT_NE(out.find("no generated candidate (the vendor library serves it, if it computes it): gemm|f32>f32|acc_f32|NN|m480"),
            std::string::npos) << out;
  EXPECT_NE(out.find("small_only"), std::string::npos) << out;
  // The problem still has its vendor measurement, so the runtime serves it as tuned.
  tiletune_handle_t h = open(db);
  expect_correct(h, f32(480, 40, 64));
  EXPECT_EQ(stats(h).tuned, 1u);
  tiletune_destroy(h);

  // Not one problem admitted: the vendor is still timed, and the status is 4, not a failure.
  const std::string none = (dir_ / "none.json").string(), none_db = (dir_ / "none.db").string();
  {
    std::FILE* f = std::fopen(none.c_str(), "w");
    std::fputs(R"({"name": "coverage-none", "problems": [{"dtype": "f32", "m": 480, "n": 40, "k": 64}],
      "templates": {"host_gemm": {"constraints": {"small_only": "M <= 64"}}},
      "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 5, "target_ms": 5}})",
               f);
    std::fclose(f);
  }
  EXPECT_EQ(tiletune::testing::wait_for(tiletune::testing::spawn(
                {TILETUNE_EXE, "tune", none, "--db", none_db, "--backend", "host"}, (dir_ / "none.txt").string())),
            4)
      << tiletune::testing::read_file((dir_ / "none.txt").string());
  db::Database nd = db::Database::open(none_db, db::Mode::ReadOnly);
  ASSERT_EQ(nd.winners(arch_).size(), 1u);
  EXPECT_EQ(nd.winners(arch_)[0].solution.template_name, kVendorTemplate);
}

}  // namespace
