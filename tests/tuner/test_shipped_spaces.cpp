// Coverage of the shipped H200 configs (issue 15): every problem of the types a config tunes, in
// every layout, at awkward sizes, odd leading dimensions, odd K and odd batch strides, admits at
// least one generated candidate of that config's space, so that a sweep always has a kernel to
// measure. Enumeration only (a fake H200): no GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "tests/test_util.h"
#include "tuner/config.h"
#include "tuner/enumerator.h"
#include "tuner/search.h"

using namespace tiletune;

namespace {

tuner::TuningConfig shipped(const std::string& name) {
  return tuner::load_config(std::string(TILETUNE_SOURCE_DIR) + "/configs/h200/" + name);
}

// The problems no candidate admits, by key. Each problem tries the config's templates from the
// smallest space up and stops at the first that admits one: enumerating whole spaces of ~10^5
// candidates per problem would take minutes.
std::vector<std::string> uncovered(const tuner::TuningConfig& config, const std::vector<Problem>& problems) {
  std::vector<const KernelTemplate*> templates;
  for (const KernelTemplate& t : config.templates) templates.push_back(&t);
  std::map<const KernelTemplate*, std::size_t> size;
  for (const KernelTemplate* t : templates) size[t] = tuner::combinations(*t);
  std::sort(templates.begin(), templates.end(), [&](auto* a, auto* b) { return size[a] < size[b]; });
  std::vector<std::string> out;
  for (const Problem& p : problems) {
    bool covered = false;
    for (const KernelTemplate* t : templates)
      if (!tuner::enumerate({*t}, std::vector<Problem>{p}, tiletune::testing::fake_device(gpu::BackendKind::Cuda))
               .candidates.empty()) {
        covered = true;
        break;
      }
    if (!covered) out.push_back(p.key());
  }
  return out;
}

// Awkward GEMMs of each type signature the config tunes: sizes of 1 and odd sizes, odd K, an odd
// leading dimension (padded by one), an odd batch stride, all four layouts.
std::vector<Problem> awkward_gemms(const tuner::TuningConfig& config) {
  std::set<std::tuple<DataType, DataType, DataType, bool, bool>> types;
  for (const Problem& p : config.problems)
    if (!p.is_conv())
      types.insert({p.gemm().a_type, p.gemm().type_b(), p.gemm().c_type, p.gemm().compute_tf32, p.gemm().beta_zero});
  const std::int64_t sizes[][3] = {{1, 1, 1},       {1, 4096, 4096}, {4096, 1, 4096}, {7, 13, 29},  {96, 96, 96},
                                   {777, 1333, 2049}, {4096, 4096, 4095}, {4096, 8, 4096}, {50257, 2048, 768},
                                   {1000, 1000, 1000}, {64, 64, 100000}};
  std::vector<Problem> out;
  for (const auto& [a, b, c, tf32, beta_zero] : types)
    for (const auto& s : sizes)
      for (int layout = 0; layout < 4; ++layout)
        for (int variant = 0; variant < 3; ++variant) {
          GemmProblem p;
          p.a_type = a, p.b_type = b, p.c_type = c, p.compute_tf32 = tf32, p.beta_zero = beta_zero;
          p.trans_a = layout & 1, p.trans_b = layout & 2;
          p.m = s[0], p.n = s[1], p.k = s[2];
          if (variant == 1) {  // every leading dimension one past packed
            p.lda = p.rows_a() + 1, p.ldb = p.rows_b() + 1, p.ldc = p.m + 1;
          } else if (variant == 2) {  // a batch whose strides are odd
            if (s[0] * s[1] * s[2] > (std::int64_t(1) << 33)) continue;
            p.batch = 3;
            p.stride_a = p.rows_a() * p.cols_a() + 1, p.stride_b = p.rows_b() * p.cols_b() + 1;
            p.stride_c = p.m * p.n + 1;
          }
          out.push_back(p.canonical());
        }
  return out;
}

// Awkward convolutions of each type signature and layout the config tunes, in every direction it
// tunes: a 3-channel stem, odd channel counts, strides, padding, dilation, groups, 1x1 and 7x7.
std::vector<Problem> awkward_convs(const tuner::TuningConfig& config) {
  std::set<std::tuple<DataType, DataType, ConvLayout, ConvDirection>> kinds;
  for (const Problem& p : config.problems)
    if (p.is_conv()) kinds.insert({p.conv().in_type, p.conv().out_type, p.conv().layout, p.conv().direction});
  // n, c, h, w, k, r, s, stride, pad, dilation, groups
  const int layers[][11] = {{32, 3, 224, 224, 64, 7, 7, 2, 3, 1, 1}, {8, 5, 17, 19, 7, 3, 3, 1, 1, 1, 1},
                            {32, 96, 35, 35, 160, 1, 1, 1, 0, 1, 1}, {32, 48, 35, 35, 64, 5, 5, 1, 2, 1, 1},
                            {4, 64, 33, 33, 64, 3, 3, 2, 1, 1, 1},   {4, 64, 28, 28, 64, 3, 3, 1, 2, 2, 1},
                            {4, 64, 28, 28, 64, 3, 3, 1, 1, 1, 4},   {1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1},
                            {64, 144, 56, 56, 24, 1, 1, 1, 0, 1, 1}, {2, 1000, 7, 7, 1000, 1, 1, 1, 0, 1, 1}};
  std::vector<Problem> out;
  for (const auto& [in, o, layout, direction] : kinds)
    for (const auto& l : layers) {
      ConvProblem p;
      p.in_type = in, p.out_type = o, p.layout = layout, p.direction = direction;
      p.n = l[0], p.c = l[1], p.h = l[2], p.w = l[3], p.k = l[4], p.r = l[5], p.s = l[6];
      p.stride_h = p.stride_w = l[7], p.pad_h = p.pad_w = l[8], p.dil_h = p.dil_w = l[9], p.groups = l[10];
      p.validate();
      out.push_back(p);
    }
  return out;
}

class ShippedSpace : public ::testing::TestWithParam<const char*> {};

TEST_P(ShippedSpace, EveryProblemOfItsTypesHasACandidate) {
  const tuner::TuningConfig config = shipped(GetParam());
  std::vector<Problem> problems = awkward_gemms(config);
  const std::vector<Problem> convs = awkward_convs(config);
  problems.insert(problems.end(), convs.begin(), convs.end());
  ASSERT_FALSE(problems.empty()) << GetParam() << " tunes no problem the test knows how to vary";
  const std::vector<std::string> missing = uncovered(config, problems);
  EXPECT_TRUE(missing.empty()) << GetParam() << ": " << missing.size() << " of " << problems.size()
                               << " problems have no candidate, the first: " << missing.front();
}

INSTANTIATE_TEST_SUITE_P(H200, ShippedSpace,
                         ::testing::Values("h200_gemm_bf16.json", "h200_gemm_fp16.json", "h200_gemm_tf32.json",
                                           "h200_simt_sgemm.json", "h200_conv_resnet50.json", "h200_conv_bf16.json"),
                         [](const auto& info) {
                           std::string s = info.param;
                           s = s.substr(5, s.size() - 10);  // between "h200_" and ".json"
                           return s;
                         });

// The fp8 / int8 config: its kernels (wgmma_gemm) read 8-bit operands K-major only, so it covers
// TN, every awkward size and odd leading dimension and batch stride of it (operand repacking copies
// rows off 16 bytes), for e4m3, e4m3 x e5m2 and int8; the other layouts have no 8-bit kernel on the
// GPU, which the test states too.
TEST(ShippedSpaceTest, EightBitConfigCoversEveryTnProblem) {
  const tuner::TuningConfig config = shipped("h200_gemm_fp8_int8.json");
  const auto mixed = std::count_if(config.problems.begin(), config.problems.end(),
                                   [](const Problem& p) { return p.gemm().mixed_inputs(); });
  EXPECT_EQ(mixed, 6) << "the config's e4m3 x e5m2 problems";
  std::vector<Problem> tn, other;
  for (const Problem& p : awkward_gemms(config)) (p.gemm().trans_a && !p.gemm().trans_b ? tn : other).push_back(p);
  ASSERT_EQ(tn.size() * 3, other.size());
  // A candidate of part of the space is one of the space: the TN problems enumerate a slice of it
  // (the whole, ~3 * 10^4 candidates a problem with the copies, took 2 s each).
  tuner::TuningConfig slice = config;
  ASSERT_EQ(slice.templates.size(), 1u);
  KernelTemplate& t = slice.templates[0];
  for (const std::string fixed : {"STAGES", "GROUP", "RASTER", "CLUSTER", "CLUSTERN", "SPLITK"}) {
    const auto& ps = t.parameters();
    const auto it = std::find_if(ps.begin(), ps.end(), [&](const auto& p) { return p.first == fixed; });
    ASSERT_NE(it, ps.end()) << fixed;
    const std::int64_t first = it->second.front();
    t.set_values(fixed, {first});
  }
  const std::vector<std::string> missing = uncovered(slice, tn);
  EXPECT_TRUE(missing.empty()) << missing.size() << " of " << tn.size() << " TN problems have no candidate, the first: "
                               << missing.front();
  other.resize(2);  // the whole space for these: none of it may admit them
  EXPECT_EQ(uncovered(config, other).size(), other.size());
}

// The test can fail: wgmma_gemm alone, without operand repacking, leaves an odd leading
// dimension without a kernel (TMA needs 16-byte strides), and the test names it; with repacking
// (its template's default) the copies give it one.
TEST(ShippedSpaceTest, AnOddLeadingDimensionNeedsElementCopiesOrRepacking) {
  tuner::TuningConfig config = shipped("h200_gemm_bf16.json");
  std::erase_if(config.templates, [](const KernelTemplate& t) { return t.name() != "wgmma_gemm"; });
  ASSERT_EQ(config.templates.size(), 1u);
  GemmProblem odd;
  odd.a_type = odd.c_type = DataType::BF16;
  odd.m = odd.n = 4096, odd.k = 4095;
  ASSERT_TRUE(config.templates[0].offers_repack());
  EXPECT_TRUE(uncovered(config, {Problem(odd.canonical())}).empty());
  config.templates[0].set_offers_repack(false);
  EXPECT_EQ(uncovered(config, {Problem(odd.canonical())}).size(), 1u);
}

// The GPT-2 LM head (C's ldc 50257, off 16 bytes) gets phased candidates (REPACK 2) in the shipped
// bf16 space, with the TMA store they need; a config's "column_phases": false takes them away.
TEST(ShippedSpaceTest, AnOddLeadingDimensionOfCOffersColumnPhases) {
  tuner::TuningConfig config = shipped("h200_gemm_bf16.json");
  std::erase_if(config.templates, [](const KernelTemplate& t) { return t.name() != "wgmma_gemm"; });
  ASSERT_EQ(config.templates.size(), 1u);
  GemmProblem head = tiletune::testing::gemm(DataType::BF16, DataType::BF16, true, false, 50257, 4096, 768);
  const gpu::DeviceInfo dev = tiletune::testing::fake_device(gpu::BackendKind::Cuda);
  auto phased = [&] {
    std::size_t n = 0;
    for (const auto& c : tuner::enumerate(config.templates, {head}, dev).candidates) {
      const auto r = c.solution.params.find("REPACK");
      if (r == c.solution.params.end() || r->second != kRepackColumnPhases) continue;
      EXPECT_EQ(c.solution.params.at("EPI"), 1) << c.solution.kernel_name();
      ++n;
    }
    return n;
  };
  EXPECT_GT(phased(), 0u);
  const tuner::TuningConfig off = tuner::parse_config(
      R"({"name": "x", "problems": [{"dtype": "bf16", "m": 64, "n": 64, "k": 64}],
          "templates": {"wgmma_gemm": {"column_phases": false}}})", ".");
  ASSERT_EQ(off.templates.size(), 1u);
  EXPECT_FALSE(off.templates[0].offers_column_phases());
  config.templates[0].set_offers_column_phases(false);
  EXPECT_EQ(phased(), 0u);
  EXPECT_THROW(tuner::parse_config(R"({"name": "x", "problems": [{"dtype": "bf16", "m": 64, "n": 64, "k": 64}],
                                       "templates": {"wgmma_gemm": {"column_phases": 1}}})", "."),
               Error);
}

}  // namespace

// Every config under configs/ (examples, h200, probes) loads where it lies, with no help from
// TILETUNE_SHAPES_DIR: its shapes file resolves relative to its folder, inside the repository, so
// that a fresh clone and an installed share/tiletune/configs can run it. The shapes files are
// inputs of configs, not configs.
TEST(ShippedConfigs, EveryConfigLoadsFromItsFolder) {
  namespace fs = std::filesystem;
  ::unsetenv("TILETUNE_SHAPES_DIR");
  const fs::path root = fs::path(TILETUNE_SOURCE_DIR) / "configs";
  std::set<std::string> folders;
  for (const auto& f : fs::recursive_directory_iterator(root)) {
    if (f.path().extension() != ".json" || f.path().parent_path().filename() == "shapes") continue;
    folders.insert(f.path().parent_path().filename().string());
    EXPECT_EQ(f.path().parent_path().parent_path(), root) << f.path() << ": configs live one folder below configs/";
    EXPECT_NO_THROW(tuner::load_config(f.path().string())) << f.path();
  }
  EXPECT_EQ(folders, (std::set<std::string>{"examples", "h200", "probes"}));
}

namespace {

// A config's search over its candidates for one problem: the candidates and the picks (indices into them).
struct Selection {
  tuner::Enumeration e;
  std::vector<tuner::SearchCandidate> cands;
  std::vector<std::size_t> pick;
  Selection(const tuner::TuningConfig& config, const Problem& p, const gpu::DeviceInfo& dev)
      : e(tuner::enumerate(config.templates, std::vector<Problem>{p}, dev)) {
    for (const auto& c : e.candidates) cands.push_back({c.tmpl.get(), &c.solution});
    pick = tuner::select_candidates(config.search, cands, p, dev);
  }
  Selection(const Selection&) = delete;  // cands point into e
  Selection& operator=(const Selection&) = delete;
};

}  // namespace

// The ResNet-50 config's model search at its shipped budget still picks the kernels measured fastest on its
// layers, where a ranking pushed them near the budget's edge. A parameter the model prices as a saving can fill
// the budget with its own variants and leave a layer's winner untimed: wgmma_conv's CLUSTERN 2 did so to
// l4_1x1_2048's weight gradient (0.78x cuDNN;
// benchmarks/results/conv/2026-12-06_h100_wgrad_clustern_tables_1ba5113.md). A failure here means: measure before
// shipping the change (the winners are the H100 tables' of 2026-12-06, on main's config).
TEST(ShippedSearch, ResNetBudgetKeepsTheMeasuredWinners) {
  const tuner::TuningConfig config = shipped("h200_conv_resnet50.json");
  ASSERT_EQ(config.search.strategy, "model");
  ASSERT_GT(config.search.budget, 0u);
  // The 1x1 layers' winners ranked 71st-89th of the 96 picks on 2026-12-06; each of the five won in two runs.
  const std::string pingpong_64x128 =
      "wgmma_conv1x1_AREG-0_BK-64_BM-64_BN-128_CLUSTER-1_CLUSTERN-1_CONSUMERS-2_COOPK-0_COOPN-0_EPI-1_GROUP-8_"
      "L2PROMO-3_LOADER-0_OCC-1_PINGPONG-1_RASTER-0_SCHED-0_SPLITK-1_STAGES-8";
  const std::map<std::string, std::string> winners = {
      {"conv|fwd|bf16>bf16|acc_f32|NHWC|n128|c64|h56|w56|k64|r1|s1|u1x1|pad0x0|dil1x1|g1",
       "wgmma_conv_BM-128_BN-64_CLUSTERN-1_CONSUMERS-2_EPI-0_GROUP-8_HALO-0_PHASE-0_PINGPONG-0_RASTER-0_SCHED-0_"
       "SPLITK-1_STAGES-3_SWAP-1"},
      {"conv|dgrad|bf16>bf16|acc_f32|NHWC|n128|c64|h56|w56|k64|r1|s1|u1x1|pad0x0|dil1x1|g1",
       "wgmma_conv_BM-64_BN-64_CLUSTERN-1_CONSUMERS-2_EPI-1_GROUP-8_HALO-0_PHASE-0_PINGPONG-1_RASTER-0_SCHED-0_SPLITK-1_"
       "STAGES-4_SWAP-0"},
      {"conv|dgrad|bf16>bf16|acc_f32|NHWC|n128|c128|h28|w28|k512|r1|s1|u1x1|pad0x0|dil1x1|g1", pingpong_64x128},
      {"conv|wgrad|bf16>bf16|acc_f32|NHWC|n128|c512|h7|w7|k2048|r1|s1|u1x1|pad0x0|dil1x1|g1", pingpong_64x128},
      {"conv|wgrad|bf16>bf16|acc_f32|NHWC|n128|c512|h7|w7|k512|r3|s3|u1x1|pad1x1|dil1x1|g1",
       "wgmma_conv_BM-256_BN-128_CLUSTERN-1_CONSUMERS-2_EPI-1_GROUP-8_HALO-0_PHASE-0_PINGPONG-0_RASTER-0_SCHED-1_"
       "SPLITK-1_STAGES-4_SWAP-0"},
  };
  const gpu::DeviceInfo dev = tiletune::testing::fake_device(gpu::BackendKind::Cuda);
  std::size_t found = 0;
  for (const Problem& p : config.problems) {
    const auto w = winners.find(p.key());
    if (w == winners.end()) continue;
    ++found;
    const Selection sel(config, p, dev);
    const auto& cands = sel.cands;
    const auto& pick = sel.pick;
    EXPECT_TRUE(std::any_of(pick.begin(), pick.end(),
                            [&](std::size_t i) { return cands[i].solution->kernel_name() == w->second; }))
        << w->second << " is not among the model's " << pick.size() << " picks of " << cands.size() << " for "
        << p.key() << " (`tiletune tune --compile-only --arch sm_90a --list-selected` lists them)";
  }
  EXPECT_EQ(found, winners.size()) << "a pinned layer is no longer in the config";
}

// The SIMT kernels run fp32 FMAs whatever their inputs: the model prices them at that rate on 16-bit
// problems (simt_conv.json's math_percent), so that a memory-bound layer's first picks, which are
// measured first (and alone, where a seconds budget such as the online tuner's runs out), are
// tensor-core kernels. Priced at the tensor-core peak, simt_conv ranked first of 194 for
// EfficientNet's 1x1 input gradient; its template still keeps its quota of the picks.
TEST(ShippedSearch, SimtKernelsAreNotAmongTheFirstPicksOfSixteenBitLayers) {
  tuner::TuningConfig config = shipped("h200_conv_resnet50.json");
  config.search.budget = 24;  // the online tuner's default
  const gpu::DeviceInfo dev = tiletune::testing::fake_device(gpu::BackendKind::Cuda);
  std::vector<Problem> layers;
  for (DataType t : {DataType::BF16, DataType::F16}) {
    ConvProblem c;
    c.in_type = c.out_type = t;
    c.direction = ConvDirection::BackwardData;
    c.n = 64, c.c = 240, c.h = c.w = 28, c.k = 40;  // EfficientNet's 1x1
    layers.push_back(Problem{c});
    c.direction = ConvDirection::Forward;
    c.n = 128, c.c = c.k = 64, c.h = c.w = 56;  // ResNet-50's l1_1x1_64
    layers.push_back(Problem{c});
  }
  for (const Problem& p : layers) {
    const Selection sel(config, p, dev);
    const auto& cands = sel.cands;
    const auto& pick = sel.pick;
    ASSERT_EQ(pick.size(), config.search.budget) << p.key();
    const auto simt =
        std::find_if(pick.begin(), pick.end(), [&](std::size_t i) { return cands[i].tmpl->name() == "simt_conv"; });
    ASSERT_NE(simt, pick.end()) << p.key() << ": simt_conv lost its template's quota of the picks";
    EXPECT_GE(simt - pick.begin(), std::ptrdiff_t(pick.size() / 2))
        << p.key() << ": simt_conv is pick " << simt - pick.begin() + 1 << " of " << pick.size();
  }
}
