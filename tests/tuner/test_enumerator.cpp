// Tests of candidate enumeration (tuner/enumerator.h) against the builtin templates
// (solutions/kernel_template.h) on fake devices, and of tuning config parsing (tuner/config.h).
// Enumeration is pure: no GPU is needed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "solutions/kernel_template.h"
#include "tuner/config.h"
#include "tuner/enumerator.h"
#include "tests/test_util.h"

using namespace tiletune;
using namespace tiletune::tuner;
using nlohmann::json;
namespace fs = std::filesystem;

using namespace tiletune::testing;

namespace {



gpu::DeviceInfo cuda_device() {
  gpu::DeviceInfo d;
  d.backend = gpu::BackendKind::Cuda;
  d.name = "fake GPU";
  d.arch = "sm_80";
  d.multiprocessors = 108;
  d.max_threads_per_block = 1024;
  d.shared_bytes_per_block = 48 * 1024;
  d.warp_size = 32;
  return d;
}

gpu::DeviceInfo host_device() {
  gpu::DeviceInfo d;
  d.backend = gpu::BackendKind::Host;
  d.arch = "x86_64";
  d.multiprocessors = 2;
  d.max_threads_per_block = 1;
  d.shared_bytes_per_block = 0;
  d.warp_size = 1;
  return d;
}

GemmProblem make(std::int64_t m, std::int64_t n, std::int64_t k, DataType t = DataType::F32) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.c_type = t;
  return p;
}

// kernel_templates/<name>.json as built into this binary (the file on disk may be newer).
json template_spec(const std::string& name) {
  return json::parse(embedded_kernel_sources().at(name + ".json"));
}

std::size_t product_of_counts(const KernelTemplate& t) {
  std::size_t n = 1;
  for (const auto& [name, values] : t.parameters()) n *= values.size();
  return n;
}

TEST(Templates, BuiltinsLoad) {
  const auto& simt = find_template("simt_gemm");
  const auto& host = find_template("host_gemm");
  EXPECT_TRUE(simt.supports(gpu::BackendKind::Cuda));
  EXPECT_TRUE(simt.supports(gpu::BackendKind::Hip));
  EXPECT_FALSE(simt.supports(gpu::BackendKind::Host));
  EXPECT_TRUE(host.supports(gpu::BackendKind::Host));
  EXPECT_FALSE(host.supports(gpu::BackendKind::Cuda));
  std::string msg = error_of([] { find_template("tensor_gemm"); });
  EXPECT_NE(msg.find("tensor_gemm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("simt_gemm"), std::string::npos) << "should list known templates: " << msg;
  // the parameters are those of the JSON file
  json spec = template_spec("simt_gemm");
  EXPECT_EQ(simt.parameters().size(), spec["parameters"].size());
  for (const auto& [name, values] : simt.parameters()) EXPECT_EQ(spec["parameters"][name].get<std::vector<std::int64_t>>(), values);
}

TEST(Enumerator, CartesianSizeIsProductOfCounts) {
  for (const auto& t : builtin_templates()) {
    EXPECT_EQ(combinations(t), product_of_counts(t)) << t.name();
    // Spaces of ~10^6 maps take seconds to build; the code is the same for all sizes.
    if (product_of_counts(t) > 50000) continue;
    std::vector<Solution> all = cartesian(t);
    EXPECT_EQ(all.size(), product_of_counts(t)) << t.name();
    std::set<std::string> names;
    for (const auto& s : all) {
      EXPECT_EQ(s.template_name, t.name());
      EXPECT_EQ(s.params.size(), t.parameters().size());
      for (const auto& [name, values] : t.parameters())
        EXPECT_NE(std::find(values.begin(), values.end(), s.params.at(name)), values.end());
      names.insert(s.kernel_name());
    }
    EXPECT_EQ(names.size(), all.size()) << t.name() << ": combinations must be distinct";
  }
  EXPECT_EQ(cartesian(find_template("simt_gemm")).size(), 4u * 4 * 2 * 2 * 2 * 4 * 2 * 2);
  // a narrowed template
  KernelTemplate t = find_template("host_gemm");
  t.set_values("MT0", {16});
  t.set_values("KU", {16, 32, 64});
  EXPECT_EQ(cartesian(t).size(), 1u * 3 * 3 * 2 * 2);
}

TEST(Enumerator, SimtPrunesWithReasons) {
  // Candidates hold shared copies of their template.
  const std::vector<KernelTemplate> templates = {find_template("simt_gemm")};
  const KernelTemplate& simt = templates[0];
  json spec = template_spec("simt_gemm");
  const json& constraints = spec["constraints"];
  const auto dev = cuda_device();
  std::vector<GemmProblem> problems = {make(rand_in(512, 4096) & ~std::int64_t(7), rand_in(512, 4096) & ~std::int64_t(7),
                                            rand_in(64, 2048) & ~std::int64_t(7)),
                                       make(rand_in(1, 100), rand_in(1, 100), rand_in(1, 100), DataType::F16)};
  Enumeration e = enumerate(templates, problems, dev, {.keep_pruned = true});
  const std::size_t space = cartesian(simt).size();
  EXPECT_EQ(e.total, space * problems.size());
  EXPECT_EQ(e.pruned.size() + e.candidates.size(), e.total);
  EXPECT_FALSE(e.candidates.empty());
  EXPECT_FALSE(e.pruned.empty());

  std::size_t by_reason = 0;
  for (const auto& [name, count] : e.pruned_by_reason) {
    EXPECT_TRUE(constraints.contains(name)) << "unknown constraint " << name;
    by_reason += count;
  }
  EXPECT_EQ(by_reason, e.pruned.size());
  EXPECT_EQ(e.pruned_count, e.pruned.size());
  // the hardware limits, at least, prune something in this space
  EXPECT_GT(e.pruned_by_reason.count("register_budget") + e.pruned_by_reason.count("threads_per_block"), 0u);

  for (const auto& p : e.pruned) {
    auto colon = p.reason.find(": ");
    ASSERT_NE(colon, std::string::npos) << p.reason;
    std::string name = p.reason.substr(0, colon);
    ASSERT_TRUE(constraints.contains(name)) << p.reason;
    EXPECT_EQ(p.reason.substr(colon + 2), constraints[name].get<std::string>());
    // the named constraint really is false for this candidate
    Variables v = simt.variables(p.solution, problems[p.problem_index], dev);
    EXPECT_EQ(Expression::parse(constraints[name].get<std::string>()).eval(v), 0) << p.reason << " " << p.solution.kernel_name();
  }

  for (const auto& c : e.candidates) {
    ASSERT_EQ(c.tmpl->name(), simt.name());
    const auto& s = c.solution.params;
    const GemmProblem& p = problems[c.problem_index];
    std::int64_t threads = (s.at("MT0") / s.at("TT0")) * (s.at("MT1") / s.at("TT1"));
    std::int64_t lds = (s.at("DB") + 1) * s.at("DU") * (s.at("MT0") + s.at("MT1") + 2 * s.at("PAD")) * 4;
    EXPECT_LE(threads, dev.max_threads_per_block) << c.solution.kernel_name();
    EXPECT_EQ(threads % dev.warp_size, 0) << c.solution.kernel_name();
    EXPECT_LE(lds, dev.shared_bytes_per_block) << c.solution.kernel_name();
    EXPECT_LE(s.at("VW") * size_of(p.a_type), 16) << c.solution.kernel_name();
    EXPECT_EQ(s.at("MT0") % s.at("TT0"), 0);
    EXPECT_EQ(s.at("DU") % s.at("VW"), 0);
    EXPECT_EQ(c.dims.block[0], unsigned(threads));
    EXPECT_FALSE(simt.violation(simt.variables(c.solution, p, dev)).has_value());
  }
}

TEST(Enumerator, SmallerDeviceLimitsPruneMore) {
  const KernelTemplate& simt = find_template("simt_gemm");
  std::vector<GemmProblem> problems = {make(2048, 2048, 512)};
  auto big = cuda_device();
  auto small = big;
  small.max_threads_per_block = 128;
  small.shared_bytes_per_block = 16 * 1024;
  Enumeration eb = enumerate({simt}, problems, big), es = enumerate({simt}, problems, small);
  EXPECT_LT(es.candidates.size(), eb.candidates.size());
  for (const auto& c : es.candidates) {
    const auto& s = c.solution.params;
    EXPECT_LE((s.at("MT0") / s.at("TT0")) * (s.at("MT1") / s.at("TT1")), 128);
    EXPECT_LE((s.at("DB") + 1) * s.at("DU") * (s.at("MT0") + s.at("MT1") + 2 * s.at("PAD")) * 4, 16 * 1024);
  }
  EXPECT_GT(es.pruned_by_reason["lds_fits"] + es.pruned_by_reason["threads_per_block"], 0u);
}

TEST(Enumerator, OddLeadingDimensionLeavesOnlyScalarVectors) {
  const KernelTemplate& simt = find_template("simt_gemm");
  for (DataType t : {DataType::F32, DataType::F16}) {
    GemmProblem p = make(1024, 1024, 1024, t);
    p.lda = 1025;  // alignment 1
    Enumeration e = enumerate({simt}, {p}, cuda_device());
    ASSERT_FALSE(e.candidates.empty());
    for (const auto& c : e.candidates) EXPECT_EQ(c.solution.params.at("VW"), 1) << c.solution.kernel_name();

    // Aligned: the widest vector for the type is used (and only it or 1).
    GemmProblem q = make(1024, 1024, 1024, t);
    Enumeration ea = enumerate({simt}, {q}, cuda_device());
    std::set<std::int64_t> widths;
    for (const auto& c : ea.candidates) widths.insert(c.solution.params.at("VW"));
    std::int64_t widest = 16 / size_of(t);
    EXPECT_TRUE(widths.count(widest)) << "no VW=" << widest << " candidate";
    for (auto w : widths) EXPECT_TRUE(w == 1 || w == widest) << w;
  }
  // ldb with alignment 2 (f32): at most VW 2 -> scalars only, as 2 is then "widest"
  GemmProblem p = make(1024, 1024, 1024);
  p.ldb = 1026;
  for (const auto& c : enumerate({simt}, {p}, cuda_device()).candidates) EXPECT_LE(c.solution.params.at("VW"), 2);
}

TEST(Enumerator, BackendFiltering) {
  std::vector<GemmProblem> problems = {make(300, 200, 100), make(64, 64, 64, DataType::BF16)};
  // Every builtin template, each narrowed to its default solution: which templates a backend
  // enumerates does not depend on how large their spaces are (the full spaces take many seconds).
  std::vector<KernelTemplate> all;
  for (KernelTemplate t : builtin_templates()) {
    for (const auto& [name, values] : t.parameters()) t.set_values(name, {t.defaults().at(name)});
    all.push_back(std::move(t));
  }
  ASSERT_EQ(all.size(), builtin_templates().size());
  for (const auto& dev : {cuda_device(), host_device()}) {
    Enumeration e = enumerate(all, problems, dev, {.keep_pruned = true});
    std::size_t expected = 0;
    std::set<std::string> allowed;
    for (const auto& t : all)
      if (t.supports(dev.backend) && t.problem_kind() == ProblemKind::Gemm) {  // GEMM problems: GEMM templates
        expected += cartesian(t).size() * problems.size();
        allowed.insert(t.name());
      }
    EXPECT_EQ(e.total, expected);
    ASSERT_FALSE(e.candidates.empty());
    for (const auto& c : e.candidates) EXPECT_TRUE(allowed.count(c.tmpl->name())) << c.tmpl->name();
    for (const auto& p : e.pruned) EXPECT_TRUE(allowed.count(p.solution.template_name)) << p.solution.template_name;
    std::set<std::size_t> seen;
    for (const auto& c : e.candidates) seen.insert(c.problem_index);
    EXPECT_EQ(seen, (std::set<std::size_t>{0, 1}));
  }
  EXPECT_TRUE(find_template("simt_gemm").supports(gpu::BackendKind::Cuda));
  EXPECT_FALSE(find_template("simt_gemm").supports(gpu::BackendKind::Host));
  EXPECT_TRUE(find_template("host_gemm").supports(gpu::BackendKind::Host));
  EXPECT_FALSE(find_template("host_gemm").supports(gpu::BackendKind::Cuda));
}

TEST(Enumerator, LaunchDimsCoverProblem) {
  // Every candidate of every builtin template, for three random shapes on the host and the first
  // of them on CUDA (whose full spaces take about 9 s a shape to enumerate).
  for (int trial = 0; trial < 3; ++trial) {
    GemmProblem p = make(rand_in(1, 3000), rand_in(1, 3000), rand_in(1, 500));
    p.batch = rand_in(1, 5);
    std::vector<gpu::DeviceInfo> devices = {host_device()};
    if (trial == 0) devices.push_back(cuda_device());
    for (const auto& dev : devices) {
      Enumeration e = enumerate(builtin_templates(), {p}, dev);
      ASSERT_FALSE(e.candidates.empty()) << p.key();
      for (const auto& c : e.candidates) {
        std::int64_t mt0 = c.solution.params.at("MT0"), mt1 = c.solution.params.at("MT1");
        std::int64_t gx = c.dims.grid[0], gy = c.dims.grid[1];
        EXPECT_GE(gx * mt0, p.m);
        EXPECT_LT((gx - 1) * mt0, p.m);  // no empty tile rows
        EXPECT_GE(gy * mt1, p.n);
        EXPECT_LT((gy - 1) * mt1, p.n);
        EXPECT_EQ(c.dims.grid[2], unsigned(p.batch));
        EXPECT_GE(c.dims.block[0], 1u);
        EXPECT_LE(c.dims.block[0], unsigned(dev.max_threads_per_block));
      }
    }
  }
}

TEST(KernelTemplate, SetValuesAndConstraints) {
  KernelTemplate t = find_template("simt_gemm");
  std::string msg = error_of([&] { t.set_values("MT2", {64}); });
  EXPECT_NE(msg.find("MT2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MT0"), std::string::npos) << "should list the parameters: " << msg;
  EXPECT_THROW(t.set_values("MT0", {}), Error);
  EXPECT_THROW(t.add_constraint("broken", "MT0 +"), Error);
  t.add_constraint("square", "MT0 == MT1");
  Enumeration e = enumerate({t}, {make(2048, 2048, 256)}, cuda_device());
  ASSERT_FALSE(e.candidates.empty());
  for (const auto& c : e.candidates) EXPECT_EQ(c.solution.params.at("MT0"), c.solution.params.at("MT1"));
  EXPECT_GT(e.pruned_by_reason["square"], 0u);
  // the builtin is unchanged
  Enumeration b = enumerate({find_template("simt_gemm")}, {make(2048, 2048, 256)}, cuda_device());
  EXPECT_EQ(b.pruned_by_reason.count("square"), 0u);
  EXPECT_GT(b.candidates.size(), e.candidates.size());
}

// simt_gemm at MT0 128, the rest at its defaults, on a 64^3 fp16 -> fp32 problem with B transposed.
struct SimtSample {
  const KernelTemplate& t = find_template("simt_gemm");
  Solution s = t.default_solution();
  GemmProblem p = make(64, 64, 64, DataType::F16);
  SimtSample() {
    s.params["MT0"] = 128;
    p.c_type = DataType::F32;
    p.trans_b = true;
  }
};

TEST(KernelTemplate, NameExpressionAndCompileRequest) {
  const SimtSample x;
  const KernelTemplate& t = x.t;
  const Solution& s = x.s;
  const GemmProblem& p = x.p;
  EXPECT_EQ(t.name_expression(s, p), "simt_gemm<tt_half, float, false, true, 128, 64, 8, 4, 4, 1, 0, 0>");
  gpu::CompileRequest r = t.compile_request(s, p, cuda_device());
  EXPECT_NE(r.source.find("prelude_cuda.h"), std::string::npos);
  EXPECT_NE(r.source.find("simt_gemm.cuh"), std::string::npos);
  EXPECT_EQ(r.arch, "sm_80");
  EXPECT_TRUE(r.headers.count("simt_gemm.cuh"));
  EXPECT_TRUE(r.headers.count("gemm_params.h"));
}

// A code object compiled before the template grew its last parameters (PAD, DB here) is the kernel of a
// solution that leaves them at their defaults, and of no other.
TEST(KernelTemplate, CompiledAsAcceptsTrailingDefaultsOnly) {
  SimtSample x;
  const KernelTemplate& t = x.t;
  Solution& s = x.s;
  const GemmProblem& p = x.p;
  EXPECT_TRUE(t.compiled_as("simt_gemm<tt_half, float, false, true, 128, 64, 8, 4, 4, 1, 0, 0>", s, p));
  EXPECT_TRUE(t.compiled_as("simt_gemm<tt_half, float, false, true, 128, 64, 8, 4, 4, 1, 0>", s, p));
  EXPECT_TRUE(t.compiled_as("simt_gemm<tt_half, float, false, true, 128, 64, 8, 4, 4, 1>", s, p));
  // VW (1) at its default as well.
  EXPECT_TRUE(t.compiled_as("simt_gemm<tt_half, float, false, true, 128, 64, 8, 4, 4>", s, p));
  EXPECT_FALSE(t.compiled_as("simt_gemm<tt_half, float, false, true, 128, 64, 8, 4, 4, 1, 0, 1>", s, p));
  EXPECT_FALSE(t.compiled_as("simt_gemm<tt_half, float, false, true, 64, 64, 8, 4, 4, 1, 0>", s, p));
  EXPECT_FALSE(t.compiled_as("simt_gemm<tt_half, float, false, true, 128, 64, 8, 4, 4, 1, 0, 0, 0>", s, p));
  s.params["DB"] = 1;  // not at its default: the full name only
  EXPECT_TRUE(t.compiled_as("simt_gemm<tt_half, float, false, true, 128, 64, 8, 4, 4, 1, 0, 1>", s, p));
  EXPECT_FALSE(t.compiled_as("simt_gemm<tt_half, float, false, true, 128, 64, 8, 4, 4, 1, 0>", s, p));
  // MT0 is not at its default (64): dropping down to it stops there.
  s.params["DB"] = 0;
  EXPECT_FALSE(t.compiled_as("simt_gemm<tt_half, float, false, true>", s, p));
}

// ---- config -------------------------------------------------------------------------------------

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tiletune_config_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream f(dir_ / name);
    f << text;
  }
  std::string config_error(const std::string& text) {
    return error_of([&] { parse_config(text, dir_.string()); });
  }
  fs::path dir_;
};

TEST_F(ConfigTest, ProblemRangesExpand) {
  std::int64_t n = rand_in(1, 1000);
  TuningConfig c = parse_config(R"({"name": "r", "problems": [{"m": [64, 256, 64], "n": )" + std::to_string(n) +
                                    R"(, "k": [32, 70, 32], "dtype": "f16", "transA": "T", "name": "x"}]})",
                                dir_.string());
  EXPECT_EQ(c.name, "r");
  ASSERT_EQ(c.problems.size(), 4u * 2);
  std::set<std::pair<std::int64_t, std::int64_t>> mk;
  for (const auto& any : c.problems) {
    const GemmProblem& p = any.gemm();
    mk.insert({p.m, p.k});
    EXPECT_EQ(p.n, n);
    EXPECT_EQ(p.a_type, DataType::F16);
    EXPECT_TRUE(p.trans_a);
    EXPECT_EQ(p.lda, p.k);  // canonical
    EXPECT_EQ(p.ldc, p.m);
  }
  std::set<std::pair<std::int64_t, std::int64_t>> want;
  for (std::int64_t m : {64, 128, 192, 256})
    for (std::int64_t k : {32, 64}) want.insert({m, k});
  EXPECT_EQ(mk, want);
  EXPECT_EQ(c.templates.size(), builtin_templates().size());  // no "templates": all builtins
}

TEST_F(ConfigTest, ShapesFile) {
  write("shapes.json", R"({"shapes": [
      {"name": "qkv", "transA": "N", "transB": "T", "m": 384, "n": 512, "k": 96},
      {"name": "mlp", "transA": "T", "transB": "N", "m": 100, "n": 200, "k": 300},
      {"name": "out", "transA": "N", "transB": "N", "m": 7, "n": 9, "k": 11}]})");
  TuningConfig c = parse_config(R"({"shapes": {"file": "shapes.json", "names": ["qkv", "out"], "dtypes": ["f32", "bf16"], "beta_zero": false}})",
                                dir_.string());
  ASSERT_EQ(c.problems.size(), 4u);
  std::set<std::string> seen;
  for (const auto& any : c.problems) {
    const GemmProblem& p = any.gemm();
    EXPECT_NE(p.m, 100) << "mlp was not asked for";
    EXPECT_FALSE(p.beta_zero);
    if (p.m == 384) {
      EXPECT_FALSE(p.trans_a);
      EXPECT_TRUE(p.trans_b);
      EXPECT_EQ(p.n, 512);
      EXPECT_EQ(p.k, 96);
    } else {
      EXPECT_EQ(p.m, 7);
      EXPECT_FALSE(p.trans_b);
    }
    seen.insert(std::to_string(p.m) + to_string(p.a_type));
  }
  EXPECT_EQ(seen, (std::set<std::string>{"384f32", "384bf16", "7f32", "7bf16"}));

  // no names: all shapes, default dtype f32; problems and shapes add up
  TuningConfig all = parse_config(R"({"problems": [{"m": 1, "n": 2, "k": 3}], "shapes": {"file": "shapes.json"}})", dir_.string());
  ASSERT_EQ(all.problems.size(), 4u);
  for (const auto& p : all.problems) EXPECT_EQ(p.gemm().a_type, DataType::F32);

  // load_config resolves the shapes file beside the config
  write("cfg.json", R"({"shapes": {"file": "shapes.json", "names": ["mlp"]}})");
  TuningConfig loaded = load_config((dir_ / "cfg.json").string());
  ASSERT_EQ(loaded.problems.size(), 1u);
  EXPECT_EQ(loaded.problems[0].gemm().k, 300);
  EXPECT_TRUE(loaded.problems[0].gemm().trans_a);

  std::string msg = config_error(R"({"shapes": {"file": "shapes.json", "names": ["qkv", "attn_out"]}})");
  EXPECT_NE(msg.find("attn_out"), std::string::npos) << msg;
  msg = config_error(R"({"shapes": {"file": "missing.json"}})");
  EXPECT_NE(msg.find("missing.json"), std::string::npos) << msg;
  msg = config_error(R"({"shapes": {"file": "shapes.json", "nmaes": ["qkv"]}})");
  EXPECT_NE(msg.find("nmaes"), std::string::npos) << msg;
}

TEST_F(ConfigTest, Errors) {
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {R"({"problems": [{"m": 1, "n": 2, "k": 3}],)", "not valid JSON"},
      {R"({"problemz": [{"m": 1, "n": 2, "k": 3}]})", "problemz"},
      {R"({"problems": [{"m": 1, "n": 2, "k": 3}], "templates": {"nope_gemm": {}}})", "nope_gemm"},
      {R"({"problems": [{"m": 1, "n": 2, "k": 3}], "templates": {"simt_gemm": {"parameters": {"TILE": [1]}}}})", "TILE"},
      {R"({"problems": [{"m": 1, "n": 2, "k": 3}], "templates": {"simt_gemm": {"params": {}}}})", "params"},
      {R"({"problems": [{"m": 64, "n": 64}]})", "'k'"},
      {R"({"problems": [{"m": 0, "n": 64, "k": 64}]})", "m=0"},
      {R"({"problems": [{"m": 8, "n": 8, "k": 8, "mm": 3}]})", "mm"},
      {R"({"problems": [{"m": 8, "n": 8, "k": 8, "dtype": "fp64"}]})", "fp64"},
      {R"({"problems": [{"m": 8, "n": 8, "k": 8, "dtype": "int8", "c_type": "bf16"}]})", "int8 GEMMs take s8 inputs and write s32"},
      {R"({"problems": [{"m": [64, 32, 8], "n": 8, "k": 8}]})", "range"},
      {R"({"problems": [{"m": [8, 64, 0], "n": 8, "k": 8}]})", "range"},
      {R"({"problems": [{"m": 8, "n": 8, "k": 8, "lda": 4}]})", "lda"},
      {R"({"problems": []})", "no problems"},
      {R"({"problems": [{"m": 8, "n": 8, "k": 8}], "benchmark": {"min_iterations": 9, "max_iterations": 3}})", "min_iterations"},
      {R"({"problems": [{"m": 8, "n": 8, "k": 8}], "benchmark": {"warmups": 1}})", "warmups"},
      {R"({"problems": [{"m": 8, "n": 8, "k": 8}], "templates": {"simt_gemm": {"constraints": {"bad": "MT0 +"}}}})", "MT0 +"},
      {R"([1, 2])", "object"},
  };
  for (const auto& c : cases) {
    std::string msg = config_error(c.text);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.text << "\n -> " << msg;
  }
}

TEST_F(ConfigTest, TemplateOverridesTakeEffect) {
  TuningConfig c = parse_config(R"({
      "problems": [{"m": 2048, "n": 2048, "k": 512}],
      "templates": {"simt_gemm": {"parameters": {"MT0": [64], "MT1": [64, 128]},
                                  "constraints": {"single_buffer": "DB == 0"}}},
      "benchmark": {"warmup": 1, "min_iterations": 2, "max_iterations": 4, "target_ms": 10}})",
                                dir_.string());
  ASSERT_EQ(c.templates.size(), 1u);
  EXPECT_EQ(c.templates[0].name(), "simt_gemm");
  EXPECT_EQ(cartesian(c.templates[0]).size(), cartesian(find_template("simt_gemm")).size() / 4 * 2 / 4);
  EXPECT_EQ(c.benchmark.warmup, 1);
  EXPECT_EQ(c.benchmark.min_iterations, 2);
  EXPECT_EQ(c.benchmark.max_iterations, 4);
  EXPECT_DOUBLE_EQ(c.benchmark.target_ms, 10);

  Enumeration e = enumerate(c.templates, c.problems, cuda_device());
  ASSERT_FALSE(e.candidates.empty());
  std::set<std::int64_t> mt1;
  for (const auto& cand : e.candidates) {
    EXPECT_EQ(cand.solution.params.at("MT0"), 64);
    EXPECT_EQ(cand.solution.params.at("DB"), 0);
    mt1.insert(cand.solution.params.at("MT1"));
  }
  EXPECT_EQ(mt1, (std::set<std::int64_t>{64, 128}));
  EXPECT_GT(e.pruned_by_reason["single_buffer"], 0u);
  // host_gemm was not named, so it is not swept
  EXPECT_EQ(enumerate(c.templates, c.problems, host_device()).total, 0u);
  // the builtin is untouched
  EXPECT_EQ(cartesian(find_template("simt_gemm")).size(), 4u * 4 * 2 * 2 * 2 * 4 * 2 * 2);
}

}  // namespace
