// Convolution problems: key, JSON round trip, implicit-GEMM views, validation messages, configs
// listing convolutions (explicit and from a layers file), and the database's problems.kind.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "db/database.h"
#include "db/explain.h"
#include "tests/test_util.h"
#include "tuner/config.h"

namespace tiletune {
namespace {

using testing::error_of;

ConvProblem resnet_3x3() {
  ConvProblem p;
  p.direction = ConvDirection::Forward;
  p.in_type = p.out_type = DataType::BF16;
  p.n = 128, p.c = 64, p.h = 56, p.w = 56, p.k = 64, p.r = 3, p.s = 3, p.pad_h = p.pad_w = 1;
  return p;
}

TEST(ConvProblem, Key) {
  EXPECT_EQ(resnet_3x3().key(), "conv|fwd|bf16>bf16|acc_f32|NHWC|n128|c64|h56|w56|k64|r3|s3|u1x1|pad1x1|dil1x1|g1");
  ConvProblem q = resnet_3x3();
  q.direction = ConvDirection::BackwardFilter;
  q.layout = ConvLayout::NCHW;
  q.stride_w = 2;
  q.groups = 4;
  EXPECT_EQ(q.key(), "conv|wgrad|bf16>bf16|acc_f32|NCHW|n128|c64|h56|w56|k64|r3|s3|u1x2|pad1x1|dil1x1|g4");
}

TEST(ConvProblem, JsonRoundTripKeepsTheKey) {
  for (int i = 0; i < 200; ++i) {
    ConvProblem p;
    p.direction = ConvDirection(testing::rand_in(0, 2));
    p.layout = ConvLayout(testing::rand_in(0, 1));
    p.in_type = DataType(testing::rand_in(0, 2));
    p.out_type = DataType(testing::rand_in(0, 2));
    p.groups = testing::rand_in(1, 3);
    p.n = testing::rand_in(1, 9), p.c = p.groups * testing::rand_in(1, 9), p.k = p.groups * testing::rand_in(1, 9);
    p.r = testing::rand_in(1, 4), p.s = testing::rand_in(1, 4);
    p.stride_h = testing::rand_in(1, 3), p.stride_w = testing::rand_in(1, 3);
    p.dil_h = testing::rand_in(1, 2), p.dil_w = testing::rand_in(1, 2);
    p.pad_h = testing::rand_in(0, 2), p.pad_w = testing::rand_in(0, 2);
    p.h = testing::rand_in(p.dil_h * (p.r - 1) + 1, 20), p.w = testing::rand_in(p.dil_w * (p.s - 1) + 1, 20);
    ASSERT_NO_THROW(p.validate()) << p.key();
    nlohmann::json j = Problem(p);
    Problem back = j.get<Problem>();
    ASSERT_TRUE(back.is_conv());
    EXPECT_EQ(back.key(), p.key());
    EXPECT_EQ(nlohmann::json::parse(j.dump()).get<Problem>().key(), p.key());
  }
  // A GEMM spec (with or without "kind") stays a GEMM.
  Problem g = nlohmann::json{{"dtype", "f32"}, {"m", 8}, {"n", 9}, {"k", 10}}.get<Problem>();
  EXPECT_FALSE(g.is_conv());
  nlohmann::json gj = g;
  EXPECT_EQ(gj.get<Problem>().key(), g.key());
  EXPECT_NE(error_of([] { nlohmann::json{{"kind", "fft"}}.get<Problem>(); }).find("fft"), std::string::npos);
}

TEST(ConvProblem, ShorthandFields) {
  auto p = nlohmann::json{{"kind", "conv"}, {"dtype", "f16"}, {"n", 2}, {"c", 8}, {"h", 9}, {"w", 7}, {"k", 4},
                          {"r", 3}, {"s", 3}, {"stride", 2}, {"pad", {1, 0}}, {"dilation", 1}}
               .get<ConvProblem>();
  EXPECT_EQ(p.stride_h, 2);
  EXPECT_EQ(p.stride_w, 2);
  EXPECT_EQ(p.pad_h, 1);
  EXPECT_EQ(p.pad_w, 0);
  EXPECT_EQ(p.in_type, DataType::F16);
  EXPECT_EQ(p.out_type, DataType::F16);
  EXPECT_EQ(p.p(), 5);  // (9 + 2 - 3) / 2 + 1
  EXPECT_EQ(p.q(), 3);  // (7 - 3) / 2 + 1
}

TEST(ConvProblem, ImplicitGemm) {
  ConvProblem p = resnet_3x3();
  ImplicitGemm f = p.implicit_gemm();
  EXPECT_EQ(f.m, 128 * 56 * 56);
  EXPECT_EQ(f.n, 64);
  EXPECT_EQ(f.k, 64 * 9);
  EXPECT_EQ(f.batch, 1);
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * f.m * f.n * f.k);
  p.groups = 2;
  p.direction = ConvDirection::BackwardData;
  ImplicitGemm d = p.implicit_gemm();
  EXPECT_EQ(d.m, 128 * 56 * 56);
  EXPECT_EQ(d.n, 32);
  EXPECT_EQ(d.k, 32 * 9);
  EXPECT_EQ(d.batch, 2);
  p.direction = ConvDirection::BackwardFilter;
  ImplicitGemm w = p.implicit_gemm();
  EXPECT_EQ(w.m, 32);
  EXPECT_EQ(w.n, 32 * 9);
  EXPECT_EQ(w.k, 128 * 56 * 56);
  // Every direction does the same arithmetic.
  EXPECT_DOUBLE_EQ(2.0 * d.m * d.n * d.k * d.batch, p.flops());
  EXPECT_DOUBLE_EQ(2.0 * w.m * w.n * w.k * w.batch, p.flops());
  GemmProblem v = Problem(p).gemm_view();
  EXPECT_EQ(v.m, 32);
  EXPECT_EQ(v.batch, 2);
}

TEST(ConvProblem, BadInputNamesTheField) {
  auto err = [](auto change) {
    ConvProblem p = resnet_3x3();
    change(p);
    return error_of([&] { p.validate(); });
  };
  EXPECT_NE(err([](ConvProblem& p) { p.n = -1; }).find("n=-1"), std::string::npos);
  EXPECT_NE(err([](ConvProblem& p) { p.c = 0; }).find("c=0"), std::string::npos);
  EXPECT_NE(err([](ConvProblem& p) { p.stride_w = 0; }).find("stride_w"), std::string::npos);
  EXPECT_NE(err([](ConvProblem& p) { p.pad_h = -2; }).find("pad_h"), std::string::npos);
  EXPECT_NE(err([](ConvProblem& p) { p.dil_w = 0; }).find("dilation_w"), std::string::npos);
  EXPECT_NE(err([](ConvProblem& p) { p.groups = 3; }).find("c=64 is not divisible by groups=3"), std::string::npos);
  EXPECT_NE(err([](ConvProblem& p) { p.c = 6, p.groups = 3, p.k = 64; }).find("k=64 is not divisible by groups=3"),
            std::string::npos);
  std::string e = err([](ConvProblem& p) { p.h = 2, p.pad_h = 0; });
  EXPECT_NE(e.find("output height"), std::string::npos) << e;
  e = err([](ConvProblem& p) { p.w = 4, p.pad_w = 0, p.dil_w = 2; });
  EXPECT_NE(e.find("output width"), std::string::npos) << e;
  // Sizes whose products would wrap a 64-bit int (or a field a 32-bit one) while P = Q = 1 passes.
  e = err([](ConvProblem& p) { p.n = p.c = p.k = 1, p.r = p.s = 1, p.h = p.w = 1ll << 32, p.stride_h = p.stride_w = 1ll << 32; });
  EXPECT_NE(e.find("h=4294967296 is larger than 2^20"), std::string::npos) << e;
  e = err([](ConvProblem& p) { p.n = 1 << 20, p.c = 1 << 20, p.k = 1, p.h = p.w = 1, p.r = p.s = 1, p.pad_h = p.pad_w = 0; });
  EXPECT_NE(e.find("2^31 elements"), std::string::npos) << e;
  EXPECT_NE(error_of([] { nlohmann::json{{"kind", "conv"}, {"n", 1}}.get<ConvProblem>(); }).find("'c'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              nlohmann::json{{"kind", "conv"}, {"direction", "sideways"}, {"n", 1}, {"c", 1}, {"h", 1}, {"w", 1},
                             {"k", 1}, {"r", 1}, {"s", 1}}
                  .get<ConvProblem>();
            }).find("sideways"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              nlohmann::json{{"kind", "conv"}, {"n", 1}, {"c", 1}, {"h", 1}, {"w", 1}, {"k", 1}, {"r", 1}, {"s", 1},
                             {"stride", {1, 2, 3}}}
                  .get<ConvProblem>();
            }).find("'stride'"),
            std::string::npos);
}

class ConvConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tiletune_conv_config_" + std::to_string(::getpid()) + "_" + std::to_string(testing::rand_in(0, 1 << 30)));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ConvConfig, ExplicitProblemsAndLayersFile) {
  // Three layers in the format of configs/shapes/conv_resnet50.json, written here so that the test
  // runs where that folder is not beside the checkout (CI's fresh clone).
  const std::string shapes = (dir_ / "conv_layers.json").string();
  std::ofstream(shapes) << R"({"n": 128, "layers": [
    {"name": "conv1_7x7", "c": 3, "k": 64, "h": 224, "w": 224, "r": 7, "s": 7, "stride": 2, "pad": 3},
    {"name": "l2_down_s2", "c": 256, "k": 512, "h": 56, "w": 56, "r": 1, "s": 1, "stride": 2, "pad": 0},
    {"name": "l4_1x1_2048", "c": 512, "k": 2048, "h": 7, "w": 7, "r": 1, "s": 1, "stride": 1, "pad": 0}]})";
  tuner::TuningConfig c = tuner::parse_config(R"({
    "problems": [
      {"kind": "conv", "direction": "dgrad", "dtype": "f32", "n": [1, 3, 2], "c": 8, "h": 9, "w": 9, "k": 4,
       "r": 3, "s": 3, "pad": 1, "name": "small"},
      {"dtype": "f32", "m": 8, "n": 8, "k": 8}
    ],
    "shapes": {"file": ")" + shapes + R"(", "names": ["conv1_7x7", "l2_down_s2"], "dtypes": ["bf16"],
               "directions": ["fwd", "wgrad"], "batch": 2}
  })", dir_.string());
  ASSERT_EQ(c.problems.size(), 2u + 1u + 4u);
  EXPECT_EQ(c.problems[0].key(), "conv|dgrad|f32>f32|acc_f32|NHWC|n1|c8|h9|w9|k4|r3|s3|u1x1|pad1x1|dil1x1|g1");
  EXPECT_EQ(c.problems[1].conv().n, 3);
  EXPECT_FALSE(c.problems[2].is_conv());
  EXPECT_EQ(c.problems[3].key(), "conv|fwd|bf16>bf16|acc_f32|NHWC|n2|c3|h224|w224|k64|r7|s7|u2x2|pad3x3|dil1x1|g1");
  EXPECT_EQ(c.problems[4].conv().direction, ConvDirection::BackwardFilter);
  EXPECT_EQ(c.problems[6].conv().stride_h, 2);
  EXPECT_EQ(c.problems[6].conv().n, 2);
  // Without a batch override the file's n (128) is used.
  tuner::TuningConfig full = tuner::parse_config(
      R"({"shapes": {"file": ")" + shapes + R"(", "names": ["l4_1x1_2048"]}})", dir_.string());
  ASSERT_EQ(full.problems.size(), 1u);
  EXPECT_EQ(full.problems[0].conv().n, 128);
}

TEST_F(ConvConfig, BadConvolutionsAreNamed) {
  auto err = [&](const std::string& text) { return error_of([&] { tuner::parse_config(text, dir_.string()); }); };
  std::string e = err(R"({"problems": [{"kind": "conv", "n": 1, "c": 6, "h": 8, "w": 8, "k": 4, "r": 1, "s": 1, "groups": 4}]})");
  EXPECT_NE(e.find("c=6 is not divisible by groups=4"), std::string::npos) << e;
  e = err(R"({"problems": [{"kind": "conv", "n": 1, "c": 6, "h": 8, "w": 8, "k": 4, "r": 1, "s": 1, "strid": 2}]})");
  EXPECT_NE(e.find("unknown key 'strid'"), std::string::npos) << e;
  e = err(R"({"problems": [{"kind": "conv", "n": 1, "c": 6, "h": 2, "w": 8, "k": 4, "r": 3, "s": 1}]})");
  EXPECT_NE(e.find("output height"), std::string::npos) << e;
  std::ofstream(dir_ / "layers.json") << R"({"n": 4, "layers": [{"name": "bad", "c": 3, "k": 8, "h": 2, "w": 2, "r": 5, "s": 5}]})";
  e = err(R"({"shapes": {"file": "layers.json"}})");
  EXPECT_NE(e.find("layer 'bad'"), std::string::npos) << e;
  e = err(R"({"shapes": {"file": "layers.json", "names": ["nope"]}})");
  EXPECT_NE(e.find("'nope'"), std::string::npos) << e;
  e = err(R"({"shapes": {"file": "layers.json", "transA": "N"}})");
  EXPECT_NE(e.find("unknown key 'transA'"), std::string::npos) << e;
}

TEST_F(ConvConfig, DatabaseKindAndExplainParsing) {
  const std::string path = (dir_ / "t.db").string();
  ConvProblem p = resnet_3x3();
  {
    db::Database d = db::Database::open(path, db::Mode::ReadWrite);
    std::int64_t id = d.upsert_problem(p);
    EXPECT_EQ(d.upsert_problem(p), id);
    d.upsert_problem(testing::gemm(DataType::F32, DataType::F32, false, false, 8, 8, 8));
    auto specs = d.problem_specs();
    ASSERT_EQ(specs.size(), 2u);
    bool seen = false;
    for (const auto& s : specs)
      if (s.problem.is_conv()) {
        seen = true;
        EXPECT_EQ(s.problem.key(), p.key());
        EXPECT_EQ(s.key, p.key());
      }
    EXPECT_TRUE(seen);
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT kind, m, n, k FROM problems WHERE key LIKE 'conv|%'", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "conv");
  EXPECT_EQ(sqlite3_column_int64(st, 1), 128 * 56 * 56);
  EXPECT_EQ(sqlite3_column_int64(st, 3), 64 * 9);
  sqlite3_finalize(st);
  sqlite3_close(raw);

  Problem parsed = db::parse_problem_json(
      R"({"kind": "conv", "dtype": "bf16", "n": 128, "c": 64, "h": 56, "w": 56, "k": 64, "r": 3, "s": 3, "pad": 1})");
  EXPECT_EQ(parsed.key(), p.key());
  std::string e = error_of([] { db::parse_problem_json(R"({"kind": "conv", "m": 4})"); });
  EXPECT_NE(e.find("unknown field 'm'"), std::string::npos) << e;
}

}  // namespace
}  // namespace tiletune
