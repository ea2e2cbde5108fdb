// Tests of the GEMM problem description and its key (solutions/gemm_problem.h) and of solutions
// (solutions/solution.h): canonical form, key sensitivity, validation, JSON, alignment, names.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kernel_templates/host_types.h"
#include "solutions/gemm_problem.h"
#include "solutions/problem.h"
#include "solutions/selection.h"
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

TEST(DataType, E5m2) {
  EXPECT_EQ(dtype_from_string("e5m2"), DataType::E5M2);
  EXPECT_EQ(dtype_from_string("fp8_e5m2"), DataType::E5M2);
  EXPECT_STREQ(to_string(DataType::E5M2), "e5m2");
  EXPECT_EQ(size_of(DataType::E5M2), 1);
  EXPECT_STREQ(device_type_name(DataType::E5M2), "tt_e5m2");
  EXPECT_TRUE(is_fp8(DataType::E5M2));
  EXPECT_TRUE(is_fp8(DataType::E4M3));
  EXPECT_FALSE(is_fp8(DataType::S8));
  EXPECT_FALSE(is_integer(DataType::E5M2));
  // Appended, never renumbered.
  EXPECT_EQ(int(DataType::E4M3), 3);
  EXPECT_EQ(int(DataType::S32), 5);
  EXPECT_EQ(int(DataType::E5M2), 6);
}

// Solution databases find their winners by these keys, and their code objects by the name the
// template instantiates: a problem whose A and B share a type keeps both exactly as before B had
// a type of its own (the strings below are what the commit before e5m2 wrote), whether b_type is
// left unset or set to A's.
TEST(GemmProblem, OneInputTypeKeepsItsKeyAndJson) {
  struct Pinned {
    const char* problem;
    const char* key;
    const char* json;
  };
  const Pinned pinned[] = {
      {R"({"dtype":"fp8","transA":"T","m":64,"n":32,"k":128})",
       "gemm|e4m3>bf16|acc_f32|TN|m64|n32|k128|b1|lda128|ldb128|ldc64|sa0|sb0|sc0|beta0",
       R"({"a_type":"e4m3","batch":1,"beta_zero":true,"c_type":"bf16","k":128,"lda":128,"ldb":128,"ldc":64,"m":64,"n":32,"stride_a":0,"stride_b":0,"stride_c":0,"transA":"T","transB":"N"})"},
      {R"({"dtype":"bf16","transA":"T","transB":"N","m":4096,"n":512,"k":4096,"batch":3,"beta_zero":false})",
       "gemm|bf16>bf16|acc_f32|TN|m4096|n512|k4096|b3|lda4096|ldb4096|ldc4096|sa16777216|sb2097152|sc2097152|beta1",
       R"({"a_type":"bf16","batch":3,"beta_zero":false,"c_type":"bf16","k":4096,"lda":4096,"ldb":4096,"ldc":4096,"m":4096,"n":512,"stride_a":16777216,"stride_b":2097152,"stride_c":2097152,"transA":"T","transB":"N"})"},
  };
  for (const Pinned& pin : pinned) {
    GemmProblem p = json::parse(pin.problem).get<GemmProblem>();
    for (int same_b = 0; same_b < 2; ++same_b) {
      if (same_b) p.b_type = p.a_type;
      EXPECT_FALSE(p.mixed_inputs());
      EXPECT_EQ(p.key(), pin.key);
      EXPECT_EQ(json(p.canonical()).dump(), pin.json);
      EXPECT_FALSE(p.canonical().b_type.has_value());
      EXPECT_EQ(input_type_name(p), device_type_name(p.a_type));
    }
  }
}

// fp8 A and B of two types (the backward pass's e4m3 x e5m2): the key, the JSON and the config's
// dtype say both; only fp8 pairs are valid, and fp8 is never an output.
TEST(GemmProblem, MixedFp8Inputs) {
  GemmProblem m = json{{"dtype", "e4m3"}, {"b_type", "e5m2"}, {"transA", "T"}, {"m", 64}, {"n", 32}, {"k", 128}}
                      .get<GemmProblem>();
  EXPECT_EQ(m.a_type, DataType::E4M3);
  EXPECT_EQ(m.type_b(), DataType::E5M2);
  EXPECT_EQ(m.c_type, DataType::BF16);
  EXPECT_TRUE(m.mixed_inputs());
  EXPECT_NO_THROW(m.validate());
  EXPECT_EQ(m.key(), "gemm|e4m3.e5m2>bf16|acc_f32|TN|m64|n32|k128|b1|lda128|ldb128|ldc64|sa0|sb0|sc0|beta0");
  EXPECT_EQ(input_type_name(m), "tt_ab<tt_e4m3, tt_e5m2>");
  GemmProblem r = m;
  r.a_type = DataType::E5M2, r.b_type = DataType::E4M3;
  EXPECT_EQ(r.key().rfind("gemm|e5m2.e4m3>bf16|", 0), 0u) << r.key();
  GemmProblem both = m;
  both.a_type = DataType::E5M2, both.b_type = DataType::E5M2;
  EXPECT_NO_THROW(both.validate());  // wgmma reads it; cuBLASLt does not (its vendor rung says so)
  EXPECT_EQ(both.key().rfind("gemm|e5m2>bf16|", 0), 0u) << both.key();
  std::set<std::string> keys{m.key(), r.key(), both.key(), json::parse(R"({"dtype":"fp8","transA":"T","m":64,"n":32,"k":128})").get<GemmProblem>().key()};
  EXPECT_EQ(keys.size(), 4u);
  // JSON names B's type only where it differs, and reads it back.
  // The pool never lends a kernel of one type pair to another.
  GemmProblem one = m;
  one.b_type.reset();
  EXPECT_TRUE(std::isinf(problem_distance(Problem(m), Problem(one))));
  EXPECT_EQ(problem_distance(Problem(m), Problem(m)), 0.0);
  EXPECT_NE(Problem(m).describe().find("e4m3.e5m2>bf16"), std::string::npos) << Problem(m).describe();
  const json j = m;
  EXPECT_EQ(j.at("b_type"), "e5m2");
  EXPECT_EQ(j.get<GemmProblem>().key(), m.key());
  EXPECT_FALSE(json(both).contains("b_type"));
  struct Bad {
    DataType a, b, c;
    const char* expect;
  };
  const Bad bad[] = {{DataType::E5M2, DataType::BF16, DataType::BF16, "only as two fp8 types (got e5m2 x bf16)"},
                     {DataType::BF16, DataType::E5M2, DataType::BF16, "only as two fp8 types (got bf16 x e5m2)"},
                     {DataType::E5M2, DataType::S8, DataType::S32, "only as two fp8 types (got e5m2 x s8)"},
                     {DataType::E4M3, DataType::E5M2, DataType::E5M2, "e5m2 is an input type only"},
                     {DataType::F32, DataType::F32, DataType::E5M2, "e5m2 is an input type only"},
                     {DataType::E5M2, DataType::E5M2, DataType::S32, "int8"}};
  for (const Bad& b : bad) {
    GemmProblem p = make(8, 8, 8);
    p.a_type = b.a, p.b_type = b.b, p.c_type = b.c;
    std::string msg = error_of([&] { p.validate(); });
    EXPECT_NE(msg.find(b.expect), std::string::npos) << msg;
  }
}

// e5m2 is the top byte of an fp16 (1 sign, 5 exponent bits, bias 15): every one of its 256 codes
// decodes to what the binary16 with that byte on top and zeros below decodes to, infinities and
// NaNs included; e4m3's decode by its own rules. Encoding rounds to nearest even and saturates.
TEST(Fp8, EveryCodeDecodesExactly) {
  auto bits = [](float f) { return tt_host_float_to_bits(f); };
  for (unsigned c = 0; c < 256; ++c) {
    const float e5 = tt_host_to_float(tt_e5m2{(unsigned char)c});
    const float h = tt_host_to_float(tt_half{(unsigned short)(c << 8)});
    if (std::isnan(h)) {
      EXPECT_TRUE(std::isnan(e5)) << c;
    } else {
      EXPECT_EQ(bits(e5), bits(h)) << "e5m2 code " << c;
      // Every finite code (and infinity: saturated to the largest finite) encodes back to itself.
      const unsigned back = tt_host_from_float<tt_e5m2>(e5).bits;
      EXPECT_EQ(back, std::isinf(e5) ? (c & 0x80u) | 0x7bu : c) << "e5m2 code " << c;
    }
    // e4m3: sign, exponent bits 6..3 (bias 7), mantissa 2..0; exponent 0 is man * 2^-9; only
    // S.1111.111 is NaN.
    const float e4 = tt_host_to_float(tt_e4m3{(unsigned char)c});
    const unsigned ex = (c >> 3) & 15u, man = c & 7u;
    if (ex == 15 && man == 7) {
      EXPECT_TRUE(std::isnan(e4)) << c;
      continue;
    }
    const double mag = ex == 0 ? std::ldexp(double(man), -9) : std::ldexp(1.0 + man / 8.0, int(ex) - 7);
    EXPECT_EQ(double(e4), (c & 0x80u) ? -mag : mag) << "e4m3 code " << c;
    EXPECT_EQ(unsigned(tt_host_from_float<tt_e4m3>(e4).bits), c) << "e4m3 code " << c;
  }
  EXPECT_EQ(tt_host_to_float(tt_e5m2{0x7b}), 57344.0f);           // largest finite
  EXPECT_EQ(tt_host_to_float(tt_e5m2{0x01}), std::ldexp(1.0f, -16));  // smallest subnormal
  EXPECT_TRUE(std::isinf(tt_host_to_float(tt_e5m2{0xfc})) && tt_host_to_float(tt_e5m2{0xfc}) < 0);
  EXPECT_EQ(tt_host_from_float<tt_e5m2>(1e9f).bits, 0x7b);          // satfinite
  EXPECT_EQ(tt_host_from_float<tt_e5m2>(-INFINITY).bits, 0xfb);
  EXPECT_TRUE(std::isnan(tt_host_to_float(tt_host_from_float<tt_e5m2>(NAN))));
  // Ties to even: 1.125 lies halfway between 1 (0x3c) and 1.25 (0x3d); 1.375 between 0x3d and 1.5 (0x3e).
  EXPECT_EQ(tt_host_from_float<tt_e5m2>(1.125f).bits, 0x3c);
  EXPECT_EQ(tt_host_from_float<tt_e5m2>(1.375f).bits, 0x3e);
  EXPECT_EQ(tt_host_from_float<tt_e5m2>(1.126f).bits, 0x3d);
  // Subnormal ties: 1.5 * 2^-16 rounds to 2 * 2^-16 (even), 0.5 * 2^-16 to zero.
  EXPECT_EQ(tt_host_from_float<tt_e5m2>(std::ldexp(1.5f, -16)).bits, 0x02);
  EXPECT_EQ(tt_host_from_float<tt_e5m2>(std::ldexp(0.5f, -16)).bits, 0x00);
  EXPECT_EQ(tt_host_from_float<tt_e4m3>(1e9f).bits, 0x7e);
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
