// Tests of the GEMM problem description and its key (solutions/gemm_problem.h) and of solutions
// (solutions/solution.h): canonical form, key sensitivity, validation, JSON, alignment, names.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "solutions/gemm_problem.h"
#include "solutions/solution.h"
#include "tests/test_util.h"

using namespace tiletune;
using nlohmann::json;

using namespace tiletune::testing;

namespace {



GemmProblem make(std::int64_t m, std::int64_t n, std::int64_t k, bool ta = false, bool tb = false, std::int64_t batch = 1) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.trans_a = ta;
  p.trans_b = tb;
  p.batch = batch;
  return p;
}

void expect_same_fields(const GemmProblem& a, const GemmProblem& b) {
  EXPECT_EQ(a.a_type, b.a_type);
  EXPECT_EQ(a.c_type, b.c_type);
  EXPECT_EQ(a.trans_a, b.trans_a);
  EXPECT_EQ(a.trans_b, b.trans_b);
  EXPECT_EQ(a.m, b.m);
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.k, b.k);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.lda, b.lda);
  EXPECT_EQ(a.ldb, b.ldb);
  EXPECT_EQ(a.ldc, b.ldc);
  EXPECT_EQ(a.stride_a, b.stride_a);
  EXPECT_EQ(a.stride_b, b.stride_b);
  EXPECT_EQ(a.stride_c, b.stride_c);
  EXPECT_EQ(a.beta_zero, b.beta_zero);
}

TEST(DataType, NamesAndSizes) {
  EXPECT_EQ(dtype_from_string("f32"), DataType::F32);
  EXPECT_EQ(dtype_from_string("fp32"), DataType::F32);
  EXPECT_EQ(dtype_from_string("float"), DataType::F32);
  EXPECT_EQ(dtype_from_string("f16"), DataType::F16);
  EXPECT_EQ(dtype_from_string("fp16"), DataType::F16);
  EXPECT_EQ(dtype_from_string("half"), DataType::F16);
  EXPECT_EQ(dtype_from_string("bf16"), DataType::BF16);
  for (DataType t : {DataType::F32, DataType::F16, DataType::BF16}) EXPECT_EQ(dtype_from_string(to_string(t)), t);
  EXPECT_EQ(size_of(DataType::F32), 4);
  EXPECT_EQ(size_of(DataType::F16), 2);
  EXPECT_EQ(size_of(DataType::BF16), 2);
  EXPECT_STREQ(device_type_name(DataType::F32), "float");
  EXPECT_STREQ(device_type_name(DataType::F16), "tt_half");
  EXPECT_STREQ(device_type_name(DataType::BF16), "tt_bf16");
  std::string msg = error_of([] { dtype_from_string("f64"); });
  EXPECT_NE(msg.find("f64"), std::string::npos) << msg;
}

TEST(DataType, EightBitAndInt32) {
  EXPECT_EQ(dtype_from_string("fp8"), DataType::E4M3);
  EXPECT_EQ(dtype_from_string("fp8_e4m3"), DataType::E4M3);
  EXPECT_EQ(dtype_from_string("int8"), DataType::S8);
  EXPECT_EQ(dtype_from_string("int32"), DataType::S32);
  for (DataType t : {DataType::E4M3, DataType::S8, DataType::S32}) EXPECT_EQ(dtype_from_string(to_string(t)), t);
  EXPECT_EQ(size_of(DataType::E4M3), 1);
  EXPECT_EQ(size_of(DataType::S8), 1);
  EXPECT_EQ(size_of(DataType::S32), 4);
  EXPECT_STREQ(device_type_name(DataType::E4M3), "tt_e4m3");
  EXPECT_STREQ(device_type_name(DataType::S8), "signed char");
  EXPECT_STREQ(device_type_name(DataType::S32), "int");
  EXPECT_TRUE(is_integer(DataType::S8));
  EXPECT_FALSE(is_integer(DataType::E4M3));
}

// The 8-bit problems: their keys, the pairs of types a GEMM may have, and what a config's dtype means.
TEST(GemmProblem, EightBitTypes) {
  GemmProblem f = json{{"dtype", "fp8"}, {"transA", "T"}, {"m", 64}, {"n", 32}, {"k", 128}}.get<GemmProblem>();
  EXPECT_EQ(f.a_type, DataType::E4M3);
  EXPECT_EQ(f.c_type, DataType::BF16);  // torch._scaled_mm's output
  EXPECT_NO_THROW(f.validate());
  EXPECT_EQ(f.key().rfind("gemm|e4m3>bf16|acc_f32|TN|", 0), 0u) << f.key();
  GemmProblem i = json{{"dtype", "int8"}, {"transA", "T"}, {"m", 64}, {"n", 32}, {"k", 128}}.get<GemmProblem>();
  EXPECT_EQ(i.a_type, DataType::S8);
  EXPECT_EQ(i.c_type, DataType::S32);
  EXPECT_EQ(i.key().rfind("gemm|s8>s32|acc_s32|TN|", 0), 0u) << i.key();
  GemmProblem g = json{{"dtype", "e4m3"}, {"c_type", "f32"}, {"m", 8}, {"n", 9}, {"k", 10}}.get<GemmProblem>();
  EXPECT_EQ(g.c_type, DataType::F32);
  EXPECT_NO_THROW(g.validate());
  EXPECT_NE(g.key(), f.key());
  // JSON round trip keeps the types.
  EXPECT_EQ(json(i).get<GemmProblem>().key(), i.key());
  const std::vector<std::pair<std::pair<DataType, DataType>, const char*>> bad = {
      {{DataType::S8, DataType::F32}, "int8"},     {{DataType::F16, DataType::S32}, "int8"},
      {{DataType::S32, DataType::S32}, "output type only"}, {{DataType::F32, DataType::E4M3}, "input type only"},
      {{DataType::E4M3, DataType::S8}, "input type only"}};
  for (const auto& [types, expect] : bad) {
    GemmProblem p = make(8, 8, 8);
    p.a_type = types.first, p.c_type = types.second;
    std::string msg = error_of([&] { p.validate(); });
    EXPECT_NE(msg.find(expect), std::string::npos) << to_string(types.first) << ">" << to_string(types.second) << ": " << msg;
  }
}

TEST(GemmProblem, CanonicalFillsPackedLdPerTranspose) {
  for (int t = 0; t < 4; ++t) {
    bool ta = t & 1, tb = t & 2;
    std::int64_t m = rand_in(1, 500), n = rand_in(1, 500), k = rand_in(1, 500);
    GemmProblem c = make(m, n, k, ta, tb).canonical();
    EXPECT_EQ(c.lda, ta ? k : m) << "trans_a=" << ta;
    EXPECT_EQ(c.ldb, tb ? n : k) << "trans_b=" << tb;
    EXPECT_EQ(c.ldc, m);
    EXPECT_EQ(c.stride_a, 0);
    EXPECT_EQ(c.stride_b, 0);
    EXPECT_EQ(c.stride_c, 0);
    EXPECT_EQ(c.m, m);
    EXPECT_EQ(c.n, n);
    EXPECT_EQ(c.k, k);
  }
}

TEST(GemmProblem, CanonicalKeepsExplicitLd) {
  GemmProblem p = make(30, 20, 10);
  p.lda = 33;
  p.ldb = 17;
  p.ldc = 40;
  GemmProblem c = p.canonical();
  EXPECT_EQ(c.lda, 33);
  EXPECT_EQ(c.ldb, 17);
  EXPECT_EQ(c.ldc, 40);
}

TEST(GemmProblem, CanonicalBatchStrides) {
  // batch 1: strides are meaningless and zeroed.
  GemmProblem p = make(30, 20, 10);
  p.stride_a = 1000;
  p.stride_b = 2000;
  p.stride_c = 3000;
  GemmProblem c = p.canonical();
  EXPECT_EQ(c.stride_a, 0);
  EXPECT_EQ(c.stride_b, 0);
  EXPECT_EQ(c.stride_c, 0);

  // batch > 1, strides 0: packed = ld * stored columns.
  for (int t = 0; t < 4; ++t) {
    bool ta = t & 1, tb = t & 2;
    GemmProblem q = make(30, 20, 10, ta, tb, 3);
    q.lda = ta ? 12 : 31;
    GemmProblem cq = q.canonical();
    EXPECT_EQ(cq.stride_a, q.lda * (ta ? 30 : 10));
    EXPECT_EQ(cq.stride_b, (tb ? 20 : 10) * (tb ? 10 : 20));
    EXPECT_EQ(cq.stride_c, 30 * 20);
  }
  // explicit strides are kept
  GemmProblem e = make(30, 20, 10, false, false, 4);
  e.stride_a = 777;
  e.stride_b = 888;
  e.stride_c = 999;
  GemmProblem ce = e.canonical();
  EXPECT_EQ(ce.stride_a, 777);
  EXPECT_EQ(ce.stride_b, 888);
  EXPECT_EQ(ce.stride_c, 999);
  // canonical is idempotent
  expect_same_fields(ce.canonical(), ce);
}

TEST(GemmProblem, ElementCounts) {
  GemmProblem p = make(5, 7, 3, false, false, 3);
  p.lda = 8;
  p.stride_a = 30;
  // A: 5x3 stored, ld 8 -> 24 per batch, 2 more batches 30 apart.
  EXPECT_EQ(p.elements_a(), 2 * 30 + 8 * 3);
  EXPECT_EQ(p.elements_b(), 3 * (3 * 7));   // packed
  EXPECT_EQ(p.elements_c(), 3 * (5 * 7));
  GemmProblem t = make(5, 7, 3, true, true);
  EXPECT_EQ(t.elements_a(), 3 * 5);
  EXPECT_EQ(t.elements_b(), 7 * 3);
  EXPECT_EQ(t.rows_a(), 3);
  EXPECT_EQ(t.cols_a(), 5);
  EXPECT_EQ(t.rows_b(), 7);
  EXPECT_EQ(t.cols_b(), 3);
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 5 * 7 * 3 * 3);
}

GemmProblem random_base() {
  GemmProblem p = make(rand_in(16, 4096), rand_in(16, 4096), rand_in(16, 4096), false, false, rand_in(2, 8));
  p.a_type = DataType::F16;
  p.c_type = DataType::F32;
  return p;
}

TEST(GemmProblem, KeyEqualForEquivalentDescriptions) {
  for (int t = 0; t < 4; ++t) {
    GemmProblem packed = random_base();
    packed.trans_a = t & 1;
    packed.trans_b = t & 2;
    GemmProblem explicit_ = packed.canonical();
    ASSERT_NE(explicit_.lda, 0);
    EXPECT_EQ(packed.key(), explicit_.key());
    // partially explicit
    GemmProblem half = packed;
    half.ldb = explicit_.ldb;
    half.stride_c = explicit_.stride_c;
    EXPECT_EQ(half.key(), packed.key());
  }
  // batch 1: strides do not matter
  GemmProblem a = make(64, 32, 16), b = a;
  b.stride_a = 12345;
  b.stride_c = 999;
  EXPECT_EQ(a.key(), b.key());
}

TEST(GemmProblem, KeyChangesWithEveryField) {
  const GemmProblem base = random_base();
  const GemmProblem c = base.canonical();
  std::vector<std::pair<std::string, std::function<void(GemmProblem&)>>> changes = {
      {"dtype", [](GemmProblem& p) { p.a_type = DataType::BF16; }},
      {"c_type", [](GemmProblem& p) { p.c_type = DataType::F16; }},
      {"transA", [](GemmProblem& p) { p.trans_a = true; }},
      {"transB", [](GemmProblem& p) { p.trans_b = true; }},
      {"m", [](GemmProblem& p) { p.m += 1; }},
      {"n", [](GemmProblem& p) { p.n += 1; }},
      {"k", [](GemmProblem& p) { p.k += 1; }},
      {"batch", [](GemmProblem& p) { p.batch += 1; }},
      {"lda", [&](GemmProblem& p) { p.lda = c.lda + 8; }},
      {"ldb", [&](GemmProblem& p) { p.ldb = c.ldb + 8; }},
      {"ldc", [&](GemmProblem& p) { p.ldc = c.ldc + 8; }},
      {"stride_a", [&](GemmProblem& p) { p.stride_a = c.stride_a + 64; }},
      {"stride_b", [&](GemmProblem& p) { p.stride_b = c.stride_b + 64; }},
      {"stride_c", [&](GemmProblem& p) { p.stride_c = c.stride_c + 64; }},
      {"beta_zero", [](GemmProblem& p) { p.beta_zero = false; }},
  };
  std::set<std::string> keys{base.key()};
  for (const auto& [field, change] : changes) {
    GemmProblem p = base;
    change(p);
    EXPECT_NO_THROW(p.validate()) << field;
    EXPECT_NE(p.key(), base.key()) << "changing " << field << " must change the key";
    EXPECT_TRUE(keys.insert(p.key()).second) << "changing " << field << " collides with another change";
  }
  EXPECT_EQ(keys.size(), changes.size() + 1);
}

TEST(GemmProblem, ValidateAcceptsGoodProblems) {
  for (int t = 0; t < 4; ++t) {
    GemmProblem p = random_base();
    p.trans_a = t & 1;
    p.trans_b = t & 2;
    EXPECT_NO_THROW(p.validate());
    EXPECT_NO_THROW(p.canonical().validate());
  }
}

TEST(GemmProblem, ValidateRejectsWithFieldNamed) {
  struct Case {
    const char* what;
    std::function<void(GemmProblem&)> change;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"m=0", [](GemmProblem& p) { p.m = 0; }, "m=0"},
      {"n=0", [](GemmProblem& p) { p.n = 0; }, "n=0"},
      {"k<0", [](GemmProblem& p) { p.k = -3; }, "k=-3"},
      {"batch=0", [](GemmProblem& p) { p.batch = 0; }, "batch"},
      {"batch too big", [](GemmProblem& p) { p.batch = 70000; }, "batch"},
      {"m too big", [](GemmProblem& p) { p.m = std::int64_t(1) << 32; }, "32 bits"},
      {"lda < rows NN", [](GemmProblem& p) { p.lda = p.m - 1; }, "lda="},
      {"lda < rows TN", [](GemmProblem& p) { p.trans_a = true; p.lda = p.k - 1; }, "lda="},
      {"ldb < rows NN", [](GemmProblem& p) { p.ldb = p.k - 1; }, "ldb="},
      {"ldb < rows NT", [](GemmProblem& p) { p.trans_b = true; p.ldb = p.n - 1; }, "ldb="},
      {"ldc < m", [](GemmProblem& p) { p.ldc = p.m - 1; }, "ldc="},
      {"stride_c overlaps", [](GemmProblem& p) { p.batch = 2; p.stride_c = p.m * p.n - 1; }, "stride_c"},
      {"stride_c overlaps with ldc", [](GemmProblem& p) { p.batch = 2; p.ldc = p.m + 4; p.stride_c = p.m * p.n; }, "stride_c"},
      {"negative stride_a", [](GemmProblem& p) { p.batch = 2; p.stride_a = -1; }, "stride"},
  };
  for (const auto& c : cases) {
    GemmProblem p = make(rand_in(20, 300), rand_in(20, 300), rand_in(20, 300));
    c.change(p);
    std::string msg = error_of([&] { p.validate(); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": " << msg;
  }
  // The ld check follows the transpose: lda between m and k is fine one way and not the other.
  GemmProblem p = make(10, 8, 20);
  p.lda = 15;
  EXPECT_NO_THROW(p.validate());
  p.trans_a = true;
  EXPECT_THROW(p.validate(), Error);
}

TEST(GemmProblem, JsonRoundTrip) {
  for (int t = 0; t < 8; ++t) {
    GemmProblem p = random_base();
    p.a_type = t % 3 == 0 ? DataType::F32 : t % 3 == 1 ? DataType::F16 : DataType::BF16;
    p.c_type = t % 2 ? DataType::F32 : p.a_type;
    p.trans_a = t & 1;
    p.trans_b = t & 2;
    p.beta_zero = t & 4;
    if (t & 1) {
      p.lda = p.rows_a() + rand_in(0, 9);
      p.stride_c = p.m * p.n + rand_in(0, 99);
    }
    json j = p;
    GemmProblem q = j.get<GemmProblem>();
    expect_same_fields(q, p);
    EXPECT_EQ(q.key(), p.key());
    // through text too
    GemmProblem r = json::parse(j.dump()).get<GemmProblem>();
    expect_same_fields(r, p);
  }
}

TEST(GemmProblem, FromJsonDefaultsAndAliases) {
  GemmProblem p = json{{"m", 8}, {"n", 9}, {"k", 10}}.get<GemmProblem>();
  EXPECT_EQ(p.a_type, DataType::F32);
  EXPECT_EQ(p.batch, 1);
  EXPECT_FALSE(p.trans_a);
  EXPECT_TRUE(p.beta_zero);
  GemmProblem q = json{{"dtype", "half"}, {"transA", "t"}, {"transB", "T"}, {"m", 8}, {"n", 9}, {"k", 10}}.get<GemmProblem>();
  EXPECT_EQ(q.a_type, DataType::F16);
  EXPECT_EQ(q.c_type, DataType::F16);
  EXPECT_TRUE(q.trans_a);
  EXPECT_TRUE(q.trans_b);
  GemmProblem r = json{{"dtype", "bf16"}, {"c_type", "f32"}, {"m", 8}, {"n", 9}, {"k", 10}}.get<GemmProblem>();
  EXPECT_EQ(r.a_type, DataType::BF16);
  EXPECT_EQ(r.c_type, DataType::F32);
}

TEST(GemmProblem, FromJsonErrors) {
  std::string msg = error_of([] { json{{"n", 9}, {"k", 10}}.get<GemmProblem>(); });
  EXPECT_NE(msg.find("'m'"), std::string::npos) << msg;
  msg = error_of([] { json{{"m", 9}, {"n", 10}}.get<GemmProblem>(); });
  EXPECT_NE(msg.find("'k'"), std::string::npos) << msg;
  msg = error_of([] { json{{"transA", "X"}, {"m", 8}, {"n", 9}, {"k", 10}}.get<GemmProblem>(); });
  EXPECT_NE(msg.find("transA"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"X\""), std::string::npos) << msg;
  msg = error_of([] { json{{"transB", "C"}, {"m", 8}, {"n", 9}, {"k", 10}}.get<GemmProblem>(); });
  EXPECT_NE(msg.find("transB"), std::string::npos) << msg;
  msg = error_of([] { json{{"dtype", "f64"}, {"m", 8}, {"n", 9}, {"k", 10}}.get<GemmProblem>(); });
  EXPECT_NE(msg.find("f64"), std::string::npos) << msg;
  msg = error_of([] { json{{"m", "big"}, {"n", 9}, {"k", 10}}.get<GemmProblem>(); });
  EXPECT_NE(msg.find("bad GEMM problem"), std::string::npos) << msg;
  msg = error_of([] { json{{"transA", 1}, {"m", 8}, {"n", 9}, {"k", 10}}.get<GemmProblem>(); });
  EXPECT_FALSE(msg.empty());
}

TEST(Alignment, Elements) {
  // f32: at most 4 elements (16 bytes)
  EXPECT_EQ(alignment_elements(64, 0, 1, 4), 4);
  EXPECT_EQ(alignment_elements(8, 0, 1, 4), 4);
  EXPECT_EQ(alignment_elements(6, 0, 1, 4), 2);
  EXPECT_EQ(alignment_elements(7, 0, 1, 4), 1);
  EXPECT_EQ(alignment_elements(1025, 0, 1, 4), 1);
  // f16/bf16: at most 8 elements
  EXPECT_EQ(alignment_elements(64, 0, 1, 2), 8);
  EXPECT_EQ(alignment_elements(12, 0, 1, 2), 4);
  EXPECT_EQ(alignment_elements(6, 0, 1, 2), 2);
  EXPECT_EQ(alignment_elements(9, 0, 1, 2), 1);
  // 1-byte elements: up to 16; 8-byte elements: up to 2
  EXPECT_EQ(alignment_elements(64, 0, 1, 1), 16);
  EXPECT_EQ(alignment_elements(64, 0, 1, 8), 2);
  // batch > 1: the stride matters too, batch 1 ignores it
  EXPECT_EQ(alignment_elements(64, 66, 2, 4), 2);
  EXPECT_EQ(alignment_elements(64, 65, 2, 4), 1);
  EXPECT_EQ(alignment_elements(64, 65, 1, 4), 4);
  EXPECT_EQ(alignment_elements(64, 4096 + 4, 3, 2), 4);
  EXPECT_EQ(alignment_elements(6, 4096, 3, 2), 2);
  // random: the result divides ld (and stride), and twice it does not (unless capped)
  for (int i = 0; i < 200; ++i) {
    std::int64_t ld = rand_in(1, 100000), stride = rand_in(1, 1000000), batch = rand_in(1, 4);
    int eb = rand_in(0, 1) ? 2 : 4;
    int v = alignment_elements(ld, stride, batch, eb);
    ASSERT_GE(v, 1);
    ASSERT_LE(v * eb, 16);
    ASSERT_EQ(ld % v, 0);
    if (batch > 1) ASSERT_EQ(stride % v, 0);
    if (2 * v * eb <= 16) ASSERT_TRUE(ld % (2 * v) != 0 || (batch > 1 && stride % (2 * v) != 0)) << ld << " " << stride;
  }
}

TEST(Solution, KernelNameEncodesEveryParam) {
  Solution s{"simt_gemm", {{"VW", 4}, {"MT0", 128}, {"MT1", 128}, {"DU", 8}, {"TT0", 8}, {"TT1", 8}, {"PAD", 4}, {"DB", 1}}};
  EXPECT_EQ(s.kernel_name(), "simt_gemm_DB-1_DU-8_MT0-128_MT1-128_PAD-4_TT0-8_TT1-8_VW-4");
  // random values: every NAME-value appears, names in order
  Solution r{"host_gemm", {}};
  for (const char* name : {"ZZ", "AA", "MT0", "KU", "X_1"}) r.params[name] = rand_in(0, 1 << 20);
  std::string kn = r.kernel_name();
  EXPECT_EQ(kn.rfind("host_gemm_", 0), 0u) << kn;
  size_t last = 0;
  for (const auto& [name, value] : r.params) {
    size_t at = kn.find("_" + name + "-" + std::to_string(value));
    ASSERT_NE(at, std::string::npos) << kn;
    EXPECT_GT(at, last == 0 ? 0 : last);
    last = at;
  }
  // a different value gives a different name
  Solution r2 = r;
  r2.params["KU"] += 1;
  EXPECT_NE(r2.kernel_name(), kn);
  EXPECT_EQ(Solution{"t"}.kernel_name(), "t");
}

TEST(Solution, ParamsJsonRoundTrip) {
  for (int i = 0; i < 20; ++i) {
    Solution s{"simt_gemm", {}};
    int count = int(rand_in(0, 8));
    for (int p = 0; p < count; ++p) s.params["P" + std::to_string(rand_in(0, 50))] = rand_in(-100000, 100000);
    Solution back = Solution::from_json("simt_gemm", s.params_json());
    EXPECT_EQ(back, s) << s.params_json();
    EXPECT_EQ(back.kernel_name(), s.kernel_name());
  }
  EXPECT_EQ(Solution::from_json("x", R"({"B":2,"A":1})").params, (std::map<std::string, std::int64_t>{{"A", 1}, {"B", 2}}));
  EXPECT_FALSE((Solution{"a", {{"X", 1}}} == Solution{"b", {{"X", 1}}}));
  EXPECT_FALSE((Solution{"a", {{"X", 1}}} == Solution{"a", {{"X", 2}}}));
}

TEST(Solution, FromJsonErrors) {
  std::string msg = error_of([] { Solution::from_json("simt_gemm", "{not json"); });
  EXPECT_NE(msg.find("simt_gemm"), std::string::npos) << msg;
  msg = error_of([] { Solution::from_json("host_gemm", R"({"MT0": "big"})"); });
  EXPECT_NE(msg.find("host_gemm"), std::string::npos) << msg;
}

}  // namespace
