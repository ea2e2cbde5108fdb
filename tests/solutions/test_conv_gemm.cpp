// Convolutions computed as GEMMs (solutions/conv_gemm.h, the wgmma_conv1x1 template): the mapping's
// sizes, transposes and leading dimensions per direction, replayed on the host (the host GEMM
// kernel run on the mapped parameters over the convolution's own tensors, against the fp64
// convolution reference); which problems the template admits and why it refuses the others; its
// instances, variables and model estimate being wgmma_gemm's for the mapped GEMM.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "kernel_templates/host_gemm.h"
#include "ops/arguments.h"
#include "ops/conv/reference.h"
#include "ops/operation.h"
#include "solutions/conv_gemm.h"
#include "solutions/template_extends.h"
#include "solutions/model.h"
#include "tests/test_util.h"
#include "tuner/config.h"
#include "tuner/enumerator.h"

namespace tiletune {
namespace {

ConvProblem conv1x1(ConvDirection dir, int n, int c, int h, int w, int k, DataType in = DataType::BF16,
                    DataType out = DataType::BF16) {
  ConvProblem p;
  p.direction = dir, p.in_type = in, p.out_type = out;
  p.n = n, p.c = c, p.h = h, p.w = w, p.k = k;
  return p;
}

constexpr ConvDirection kFwd = ConvDirection::Forward, kDgrad = ConvDirection::BackwardData,
                        kWgrad = ConvDirection::BackwardFilter;

TEST(ConvGemm, MapsEachDirectionOutputChannelsFirst) {
  // N 2, C 24, 3 x 5 pixels, K 40: 30 pixels.
  const ConvGemm f = conv_as_gemm(conv1x1(kFwd, 2, 24, 3, 5, 40));
  EXPECT_EQ(f.gemm.m, 40);  // y^T: K x NHW
  EXPECT_EQ(f.gemm.n, 30);
  EXPECT_EQ(f.gemm.k, 24);
  EXPECT_TRUE(f.gemm.trans_a);  // the filters, C contiguous: K-major
  EXPECT_FALSE(f.gemm.trans_b);
  EXPECT_EQ(f.gemm.lda, 24);
  EXPECT_EQ(f.gemm.ldb, 24);
  EXPECT_EQ(f.gemm.ldc, 40);
  EXPECT_EQ(f.a, ConvTensor::W);
  EXPECT_EQ(f.b, ConvTensor::X);
  EXPECT_EQ(f.c, ConvTensor::Y);

  const ConvGemm d = conv_as_gemm(conv1x1(kDgrad, 2, 24, 3, 5, 40));
  EXPECT_EQ(d.gemm.m, 24);  // dx^T: C x NHW
  EXPECT_EQ(d.gemm.n, 30);
  EXPECT_EQ(d.gemm.k, 40);
  EXPECT_FALSE(d.gemm.trans_a);  // the filters as C x K: MN-major
  EXPECT_FALSE(d.gemm.trans_b);  // dy as K x NHW: K-major
  EXPECT_EQ(d.gemm.lda, 24);
  EXPECT_EQ(d.gemm.ldb, 40);
  EXPECT_EQ(d.gemm.ldc, 24);
  EXPECT_EQ(d.a, ConvTensor::W);
  EXPECT_EQ(d.b, ConvTensor::Y);
  EXPECT_EQ(d.c, ConvTensor::X);

  const ConvGemm w = conv_as_gemm(conv1x1(kWgrad, 2, 24, 3, 5, 40, DataType::F16, DataType::F32));
  EXPECT_EQ(w.gemm.m, 24);  // dW^T: C x K
  EXPECT_EQ(w.gemm.n, 40);
  EXPECT_EQ(w.gemm.k, 30);
  EXPECT_FALSE(w.gemm.trans_a);  // x as C x NHW: MN-major
  EXPECT_TRUE(w.gemm.trans_b);   // dy as K x NHW: MN-major
  EXPECT_EQ(w.gemm.lda, 24);
  EXPECT_EQ(w.gemm.ldb, 40);
  EXPECT_EQ(w.gemm.ldc, 24);
  EXPECT_EQ(w.gemm.a_type, DataType::F16);
  EXPECT_EQ(w.gemm.c_type, DataType::F32);
  EXPECT_EQ(w.a, ConvTensor::X);
  EXPECT_EQ(w.b, ConvTensor::Y);
  EXPECT_EQ(w.c, ConvTensor::W);
  for (const ConvGemm* g : {&f, &d, &w}) {
    EXPECT_EQ(g->gemm.batch, 1);
    EXPECT_TRUE(g->gemm.beta_zero);
  }
}

TEST(ConvGemm, ParamsPointAtTheTensorsByRole) {
  int x = 0, wt = 0, y = 0, ws = 0;
  const ConvProblem p = conv1x1(kWgrad, 2, 24, 3, 5, 40);
  TtConvParams a = ops::conv_arguments(p, &x, &wt, &y);
  a.workspace = &ws;
  const TtGemmParams g = conv_gemm_params(conv_as_gemm(p), a);
  EXPECT_EQ(g.a, &x);
  EXPECT_EQ(g.b, &y);
  EXPECT_EQ(g.c, &wt);
  EXPECT_EQ(g.workspace, &ws);
  EXPECT_EQ(g.m, 24);
  EXPECT_EQ(g.n, 40);
  EXPECT_EQ(g.k, 30);
  EXPECT_EQ(g.ldb, 40);
  EXPECT_EQ(g.alpha, 1.0f);
  EXPECT_EQ(g.beta, 0.0f);
}

// The host GEMM kernel (kernel_templates/host_gemm.h) over its whole grid of 16 x 16 tiles.
template <bool TA, bool TB>
void host_gemm_all(const TtGemmParams& p) {
  for (unsigned bx = 0; bx < unsigned((p.m + 15) / 16); ++bx)
    for (unsigned by = 0; by < unsigned((p.n + 15) / 16); ++by) host_gemm<float, float, TA, TB, 16, 16, 16, 8, 2>(&p, bx, by, 0);
}

void run_host_gemm(const TtGemmParams& p, bool ta, bool tb) {
  if (ta && !tb) return host_gemm_all<true, false>(p);
  if (!ta && !tb) return host_gemm_all<false, false>(p);
  if (!ta && tb) return host_gemm_all<false, true>(p);
  return host_gemm_all<true, true>(p);
}

// Random sizes in every direction, C and K off any tile; values multiples of 1/4 in [-2, 2], so
// that the fp32 host GEMM is exact and must equal the fp64 reference to the last bit.
TEST(ConvGemm, HostGemmOnTheMappedOperandsIsTheConvolution) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::uniform_int_distribution<int> quarter(-8, 8);
  int checked = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const ConvDirection dir = trial % 3 == 0 ? kFwd : trial % 3 == 1 ? kDgrad : kWgrad;
    const ConvProblem p = conv1x1(dir, pick(1, 3), pick(1, 37), pick(1, 6), pick(1, 7), pick(1, 41), DataType::F32,
                                  DataType::F32);
    ASSERT_FALSE(conv_gemm_refusal(p)) << p.key();
    std::vector<float> t[3] = {std::vector<float>(std::size_t(p.elements_x())),
                               std::vector<float>(std::size_t(p.elements_w())),
                               std::vector<float>(std::size_t(p.elements_y()))};
    for (auto& v : t)
      for (float& e : v) e = float(quarter(rng)) / 4;
    const ConvTensor out = dir == kFwd ? ConvTensor::Y : dir == kDgrad ? ConvTensor::X : ConvTensor::W;
    std::fill(t[int(out)].begin(), t[int(out)].end(), std::numeric_limits<float>::quiet_NaN());
    auto as_double = [&](ConvTensor c) { return std::vector<double>(t[int(c)].begin(), t[int(c)].end()); };
    // conv_reference reads fwd (x, w), dgrad (dy, w), wgrad (x, dy).
    const std::vector<double> want =
        dir == kFwd     ? ops::conv_reference(p, as_double(ConvTensor::X), as_double(ConvTensor::W))
        : dir == kDgrad ? ops::conv_reference(p, as_double(ConvTensor::Y), as_double(ConvTensor::W))
                        : ops::conv_reference(p, as_double(ConvTensor::X), as_double(ConvTensor::Y));
    const ConvGemm g = conv_as_gemm(p);
    run_host_gemm(conv_gemm_params(g, ops::conv_arguments(p, t[0].data(), t[1].data(), t[2].data())), g.gemm.trans_a,
                  g.gemm.trans_b);
    ASSERT_EQ(want.size(), t[int(out)].size());
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(double(t[int(out)][i]), want[i]) << p.key() << " element " << i;
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

const KernelTemplate& conv1x1_template() { return find_template("wgmma_conv1x1"); }

// The template with a few values per parameter (its whole space takes seconds per problem), each
// switch of the GEMM's kernel both ways.
KernelTemplate narrowed(const KernelTemplate& full) {
  KernelTemplate t = full;
  t.set_values("BM", {64, 128});
  t.set_values("BN", {64, 128, 256});
  t.set_values("STAGES", {4});
  t.set_values("RASTER", {0});
  t.set_values("GROUP", {8});
  t.set_values("LOADER", {0});
  t.set_values("SPLITK", {1, 2, 4});
  t.set_values("COOPK", {0});
  return t;
}

std::size_t candidates(const ConvProblem& p) {
  return tuner::enumerate({narrowed(conv1x1_template())}, std::vector<Problem>{Problem(p)},
                          testing::fake_device(gpu::BackendKind::Cuda))
      .candidates.size();
}

// The first constraint the template's default breaks for `p`, by name ("" when none).
std::string refused_by(const ConvProblem& p) {
  const KernelTemplate& t = conv1x1_template();
  const auto v = t.violation(t.variables(t.default_solution(), Problem(p), testing::fake_device(gpu::BackendKind::Cuda)));
  return v ? v->substr(0, v->find(':')) : "";
}

TEST(ConvGemmTemplate, AdmitsThePlainGemmsOfResNet50) {
  // ResNet-50's stride-1 1x1 layers (batch 128) in all three directions, bf16 and fp16.
  const int layers[][4] = {{64, 64, 56, 56}, {64, 256, 56, 56}, {128, 512, 28, 28}, {256, 1024, 14, 14}, {512, 2048, 7, 7},
                           {256, 64, 56, 56}, {2048, 512, 7, 7}};
  for (ConvDirection dir : {kFwd, kDgrad, kWgrad})
    for (DataType in : {DataType::BF16, DataType::F16})
      for (const auto& l : layers) {
        const ConvProblem p = conv1x1(dir, 128, l[0], l[2], l[3], l[1], in, in);
        EXPECT_FALSE(conv_gemm_refusal(p)) << p.key();
        EXPECT_EQ(refused_by(p), "") << p.key();
        EXPECT_GT(candidates(p), 0u) << p.key();
      }
  ConvProblem f32_out = conv1x1(kWgrad, 4, 256, 7, 7, 512, DataType::BF16, DataType::F32);
  EXPECT_GT(candidates(f32_out), 0u);
}

// Each refusal names its rule, the template's first broken constraint agrees with
// conv_gemm_refusal, and no candidate is enumerated.
TEST(ConvGemmTemplate, RefusesWhatIsNotAPlainGemmNamingTheRule) {
  const ConvProblem ok = conv1x1(kFwd, 8, 256, 14, 14, 512);
  struct Case {
    ConvProblem p;
    const char* constraint;
    const char* reason;  // in conv_gemm_refusal's text; nullptr: a plain GEMM the kernel cannot take
  };
  std::vector<Case> cases;
  ConvProblem p = ok;
  p.layout = ConvLayout::NCHW;
  cases.push_back({p, "nhwc", "NCHW"});
  p = ok, p.r = p.s = 3, p.pad_h = p.pad_w = 1;
  cases.push_back({p, "one_by_one_filter", "3x3"});
  p = ok, p.pad_h = 1;
  cases.push_back({p, "no_padding", "padding"});
  p = ok, p.groups = 2;
  cases.push_back({p, "groups_1", "groups 2"});
  for (ConvDirection dir : {kFwd, kDgrad, kWgrad}) {  // ResNet-50's downsampling 1x1
    p = conv1x1(dir, 8, 256, 56, 56, 512), p.stride_h = p.stride_w = 2;
    cases.push_back({p, "stride_1", "stride 2x2"});
  }
  p = ok, p.in_type = p.out_type = DataType::F32;
  cases.push_back({p, "bf16_or_fp16_inputs", nullptr});
  p = ok, p.c = 100;  // rows of 200 bytes: no TMA
  cases.push_back({p, "tma_strides_16_bytes", nullptr});
  p = ok, p.direction = kWgrad, p.k = 36;
  cases.push_back({p, "tma_strides_16_bytes", nullptr});
  for (const Case& c : cases) {
    EXPECT_EQ(refused_by(c.p), c.constraint) << c.p.key();
    EXPECT_EQ(candidates(c.p), 0u) << c.p.key();
    const auto why = conv_gemm_refusal(c.p);
    if (c.reason) {
      ASSERT_TRUE(why) << c.p.key();
      EXPECT_NE(why->find(c.reason), std::string::npos) << *why;
    } else {
      EXPECT_FALSE(why) << c.p.key();
    }
  }
  // Dilation does not matter to a 1x1.
  p = ok, p.dil_h = p.dil_w = 2;
  EXPECT_FALSE(conv_gemm_refusal(p));
  EXPECT_GT(candidates(p), 0u);
}

// wgmma_conv1x1.json extends wgmma_gemm.json and writes only what differs: the kernel is the same,
// so every rule, derived value, launch and model expression of the GEMM's stays, and the
// convolution's own constraints are checked (and named as the reason) before the GEMM's.
TEST(ConvGemmTemplate, ExtendsWgmmaGemmKeepingItsRules) {
  const auto& files = embedded_kernel_sources();
  const auto gemm = nlohmann::ordered_json::parse(files.at("wgmma_gemm.json"));
  const auto own = nlohmann::ordered_json::parse(files.at("wgmma_conv1x1.json"));
  EXPECT_EQ(own.at("extends"), "wgmma_gemm.json");
  for (const char* key : {"source", "instance", "default", "derived", "launch", "workspace_bytes"})
    EXPECT_FALSE(own.contains(key)) << key;
  for (const auto& [key, value] : own.at("model").items()) EXPECT_EQ(key, "about");
  for (const auto& [name, values] : own.at("parameters").items())
    for (const auto& v : values) {
      const auto& all = gemm.at("parameters").at(name);
      EXPECT_NE(std::find(all.begin(), all.end(), v), all.end()) << name << " " << v;
    }
  const auto conv = resolve_extends("wgmma_conv1x1.json", own, files);
  std::vector<std::string> expected, names;
  for (const auto& [name, text] : own.at("constraints").items()) {
    EXPECT_FALSE(gemm.at("constraints").contains(name)) << name;
    expected.push_back(name);
  }
  for (const auto& [name, text] : gemm.at("constraints").items()) expected.push_back(name);
  for (const auto& [name, text] : conv.at("constraints").items()) names.push_back(name);
  EXPECT_EQ(names, expected);
}

// A convolution Problem carries its GEMM, computed once when it is made, for the templates,
// the model and the arguments to share; a GEMM has none, and a problem that would divide by zero
// gets none without crashing (validate() names its field).
TEST(ConvGemmTemplate, ProblemCarriesItsGemm) {
  for (ConvDirection dir : {kFwd, kDgrad, kWgrad}) {
    const ConvProblem cp = conv1x1(dir, 8, 256, 14, 14, 512);
    const ConvGemm direct = conv_as_gemm(cp);
    const Problem p(cp);
    EXPECT_EQ(p.conv_gemm().gemm.key(), direct.gemm.key());
    EXPECT_EQ(p.conv_gemm().a, direct.a);
    EXPECT_EQ(p.conv_gemm().c, direct.c);
    EXPECT_EQ(conv1x1_template().kernel_gemm(p).key(), direct.gemm.key());
  }
  EXPECT_NE(testing::error_of([] { Problem(GemmProblem{}).conv_gemm(); }).find("convolution problem was expected"),
            std::string::npos);
  ConvProblem zero = conv1x1(kFwd, 8, 256, 14, 14, 512);
  zero.groups = 0;
  EXPECT_NE(testing::error_of([&] { Problem(zero).validate(); }).find("groups"), std::string::npos);
}

// The runtime serves conv_as_gemm_tma only where x, w and y are all on 16 bytes (TMA loads two
// and may store the third); the pointer class says so apart from the TMA loads' two.
TEST(ConvGemmTemplate, NeedsAllThreePointersOn16Bytes) {
  const ops::Operation& op = ops::operation(ProblemKind::Conv);
  const KernelTemplate& t = conv1x1_template();
  const gpu::DeviceInfo dev = testing::fake_device(gpu::BackendKind::Cuda);
  alignas(16) static char memory[64];
  const Problem p(conv1x1(kFwd, 8, 256, 14, 14, 512));  // fwd: TMA loads x and w
  const ops::Pointers aligned = {memory, memory + 16, memory + 32};
  EXPECT_TRUE(op.admits(t, t.default_solution(), p, aligned, dev));
  EXPECT_EQ(op.pointer_class(p, aligned), "");
  for (int i = 0; i < 3; ++i) {
    ops::Pointers off = aligned;
    off[i] = memory + 16 * i + 2;
    EXPECT_FALSE(op.admits(t, t.default_solution(), p, off, dev)) << i;
    EXPECT_EQ(op.pointer_class(p, off), i == 2 ? "|output_unaligned" : "|unaligned") << i;
  }
}

// The same solution on the convolution and on its GEMM: one kernel instance, the same GEMM
// variables, the same model estimate.
TEST(ConvGemmTemplate, IsWgmmaGemmOnTheMappedGemm) {
  const KernelTemplate& conv = conv1x1_template();
  const KernelTemplate& gemm = find_template("wgmma_gemm");
  const gpu::DeviceInfo dev = testing::fake_device(gpu::BackendKind::Cuda);
  int compared = 0;
  for (ConvDirection dir : {kFwd, kDgrad, kWgrad}) {
    const ConvProblem cp = conv1x1(dir, 128, 512, 7, 7, 2048, DataType::BF16, DataType::BF16);
    const GemmProblem gp = conv_as_gemm(cp).gemm;
    EXPECT_EQ(conv.kernel_gemm(Problem(cp)).key(), gp.key());
    const auto cands = tuner::enumerate({narrowed(conv)}, std::vector<Problem>{Problem(cp)}, dev).candidates;
    ASSERT_FALSE(cands.empty());
    const std::size_t stride = std::max<std::size_t>(1, cands.size() / 16);
    std::set<std::string> instances;
    for (std::size_t i = 0; i < cands.size(); i += stride) {
      const Solution s{"wgmma_gemm", cands[i].solution.params};
      EXPECT_EQ(conv.name_expression(cands[i].solution, Problem(cp)), gemm.name_expression(s, Problem(gp)));
      instances.insert(gemm.name_expression(s, Problem(gp)));
      const Variables cv = conv.variables(cands[i].solution, Problem(cp), dev);
      const Variables gv = gemm.variables(s, Problem(gp), dev);
      for (const auto& [name, value] : gv)
        if (name.rfind("REPACK", 0) != 0) EXPECT_EQ(cv.at(name), value) << name;  // convolutions copy nothing
      EXPECT_FALSE(gemm.violation(gv)) << s.kernel_name();
      const ModelEstimate ce = model_estimate(conv, cands[i].solution, Problem(cp), dev);
      const ModelEstimate ge = model_estimate(gemm, s, Problem(gp), dev);
      ASSERT_TRUE(ce.has_model);
      EXPECT_EQ(ce.seconds, ge.seconds) << s.kernel_name();
      EXPECT_EQ(ce.tiles, ge.tiles);
      ++compared;
    }
    const std::string layout = dir == kFwd ? ", true, false, " : dir == kDgrad ? ", false, false, " : ", false, true, ";
    EXPECT_NE(instances.begin()->find("wgmma_gemm<tt_bf16, tt_bf16" + layout), std::string::npos) << *instances.begin();
  }
  EXPECT_GT(compared, 12);
}

// The shipped ResNet-50 configs give every stride-1 1x1 layer of each direction they tune
// wgmma_conv1x1 candidates, and the other layers none.
TEST(ConvGemmTemplate, ShippedResNet50ConfigsOfferItToThe1x1Layers) {
  for (const char* name : {"h200_conv_resnet50.json", "h200_conv_grad.json"}) {
    const tuner::TuningConfig config = tuner::load_config(std::string(TILETUNE_SOURCE_DIR) + "/configs/h200/" + name);
    const KernelTemplate* t = nullptr;
    for (const KernelTemplate& x : config.templates)
      if (x.name() == "wgmma_conv1x1") t = &x;
    ASSERT_TRUE(t) << name;
    std::set<ConvDirection> directions;
    int gemms = 0;
    std::size_t total = 0;
    for (const Problem& p : config.problems) {
      if (conv_gemm_refusal(p.conv())) {  // refused by its own rules, before any of the GEMM's
        EXPECT_NE(refused_by(p.conv()), "") << p.key();
        continue;
      }
      const std::size_t n =
          tuner::enumerate({*t}, std::vector<Problem>{p}, testing::fake_device(gpu::BackendKind::Cuda)).candidates.size();
      EXPECT_GT(n, 0u) << name << " " << p.key();
      directions.insert(p.conv().direction), ++gemms, total += n;
    }
    std::printf("%s: %d 1x1 problems, %zu wgmma_conv1x1 candidates\n", name, gemms, total);
    EXPECT_GE(gemms, 10) << name;  // 5 or 6 layers, two or three directions
    EXPECT_GE(directions.size(), 2u) << name;
  }
}


}  // namespace
}  // namespace tiletune
