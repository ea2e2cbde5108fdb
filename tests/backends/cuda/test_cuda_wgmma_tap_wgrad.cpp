// wgmma_tap_wgrad (the Hopper weight gradient of small stride-1 filters, x's rows staged once per K
// step for every tap of a filter row): which problems its constraints admit (host), an NVRTC
// compile of a sample for sm_90a without spills (no GPU needed), and on a GPU a sample validated
// against the fp64 reference twice per candidate (the split-K counters must be left zeroed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "kernel_templates/conv_tma_params.h"
#include "ops/arguments.h"
#include "ops/cuda/tma_arguments.h"
#include "solutions/model.h"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

ConvProblem tap_rows_wgrad(DataType in, DataType out, int n, int c, int h, int w, int k, int r = 3, int s = 3, int pad = 1,
                           int stride = 1) {
  ConvProblem p;
  p.direction = ConvDirection::BackwardFilter, p.in_type = in, p.out_type = out;
  p.n = n, p.c = c, p.h = h, p.w = w, p.k = k, p.r = r, p.s = s;
  p.stride_h = p.stride_w = stride, p.pad_h = p.pad_w = pad, p.dil_h = p.dil_w = 1, p.groups = 1;
  return p;
}

// Rows of 14 (four a K step) and 7 (seven; PACK 1: two images, the last step's second outside the
// tensor), a long row cut into segments (130 pixels: three), an
// unpadded 3x3, a 1x3 filter, Inception's 5x5 with 48 channels (row groups, a channel tile past C),
// K off the 64-channel tiles, stride 2 (two copies of x per filter row) with odd sizes, several
// channel tiles, both input types and every output type.
std::vector<Problem> wgmma_tap_problems() {
  return {Problem(tap_rows_wgrad(DataType::BF16, DataType::BF16, 4, 64, 14, 14, 64)),
          Problem(tap_rows_wgrad(DataType::F16, DataType::F32, 5, 128, 7, 7, 64)),
          Problem(tap_rows_wgrad(DataType::BF16, DataType::F32, 2, 64, 5, 130, 128)),
          Problem(tap_rows_wgrad(DataType::F16, DataType::F16, 3, 64, 12, 20, 64, 3, 3, 0)),
          Problem(tap_rows_wgrad(DataType::BF16, DataType::BF16, 4, 64, 9, 30, 64, 1, 3, 0)),
          Problem(tap_rows_wgrad(DataType::BF16, DataType::BF16, 3, 48, 11, 11, 64, 5, 5, 2)),
          Problem(tap_rows_wgrad(DataType::F16, DataType::F32, 2, 72, 9, 10, 40, 3, 3, 1)),
          Problem(tap_rows_wgrad(DataType::BF16, DataType::BF16, 3, 64, 15, 13, 128, 3, 3, 1, 2))};
}

// Where SCHED 1 streams: 48 tiles of one filter row (C = K = 256) and 32 images of 7x7 (rows of
// an image a K step, or two images with PACK 1), bf16 and fp16 -> fp32.
std::vector<Problem> wgmma_tap_stream_k_problems() {
  return {Problem(tap_rows_wgrad(DataType::BF16, DataType::BF16, 32, 256, 7, 7, 256)),
          Problem(tap_rows_wgrad(DataType::F16, DataType::F32, 33, 256, 7, 7, 256))};
}

// conv_sample's candidates plus, per problem, the first of each SHIFT (a copy per tap, the shifted
// descriptor), of each AREG (dy from shared memory, from registers), of each PACK (rows of an
// image, whole images with a shared halo) and the first split count that
// is not a power of two (splits that fill 132 multiprocessors), at stride 2 and on the 5x5 too.
std::vector<tuner::Candidate> wgmma_tap_sample(const std::vector<Problem>& ps, const gpu::DeviceInfo& dev,
                                               std::size_t per) {
  auto features = [](const tuner::Candidate& c) {
    const std::int64_t splitk = c.solution.params.at("SPLITK");
    return std::vector<std::pair<std::string, std::int64_t>>{
        {"SHIFT", c.solution.params.at("SHIFT")}, {"AREG", c.solution.params.at("AREG")},
        {"PACK", c.solution.params.at("PACK")},
        {"SPLITK not a power of two", (splitk & (splitk - 1)) != 0}};
  };
  std::vector<tuner::Candidate> out = conv_sample("wgmma_tap_wgrad", ps, dev, per);
  std::set<std::tuple<std::size_t, std::string, std::int64_t>> have;
  for (const auto& c : out)
    for (const auto& [name, v] : features(c)) have.insert({c.problem_index, name, v});
  for (const auto& c : tuner::enumerate({find_template("wgmma_tap_wgrad")}, ps, dev).candidates) {
    bool added = false;
    for (const auto& [name, v] : features(c)) added = have.insert({c.problem_index, name, v}).second || added;
    if (added) out.push_back(c);
  }
  return out;
}

std::size_t wgmma_tap_candidates(const ConvProblem& p) {
  return tuner::enumerate({find_template("wgmma_tap_wgrad")}, std::vector<Problem>{Problem(p)},
                          fake_device(gpu::BackendKind::Cuda))
      .candidates.size();
}

TEST(WgmmaTapWgradSpace, TakesWeightGradientsOfSmallFiltersAndStridesOnly) {
  // 5x5: one filter row a block (FR divides R and is at most 3): five row groups.
  std::set<std::int64_t> rows_per_block;
  for (const auto& c : tuner::enumerate({find_template("wgmma_tap_wgrad")},
                                        std::vector<Problem>{Problem(tap_rows_wgrad(DataType::BF16, DataType::BF16, 32, 48,
                                                                                    35, 35, 64, 5, 5, 2))},
                                        fake_device(gpu::BackendKind::Cuda))
                           .candidates)
    rows_per_block.insert(c.solution.params.at("FR"));
  EXPECT_EQ(rows_per_block, std::set<std::int64_t>{1});
  for (int i = 0; i < 4; ++i) {  // ResNet-50's four 3x3 layers at batch 128
    const int c = 64 << i, hw = 56 >> i;
    EXPECT_GT(wgmma_tap_candidates(tap_rows_wgrad(DataType::BF16, DataType::BF16, 128, c, hw, hw, c)), 0u) << c;
  }
  for (const Problem& p : wgmma_tap_problems()) EXPECT_GT(wgmma_tap_candidates(p.conv()), 0u) << p.key();
  const ConvProblem base = tap_rows_wgrad(DataType::BF16, DataType::BF16, 128, 64, 56, 56, 64);
  ConvProblem other = base;
  other.direction = ConvDirection::Forward;
  EXPECT_EQ(wgmma_tap_candidates(other), 0u);
  other.direction = ConvDirection::BackwardData;
  EXPECT_EQ(wgmma_tap_candidates(other), 0u);
  other = base, other.stride_h = other.stride_w = 2;
  EXPECT_GT(wgmma_tap_candidates(other), 0u);  // a copy per column residue
  other = base, other.stride_h = other.stride_w = 3;
  EXPECT_EQ(wgmma_tap_candidates(other), 0u);
  other = base, other.r = other.s = 7, other.pad_h = other.pad_w = 3;
  EXPECT_EQ(wgmma_tap_candidates(other), 0u);  // 7 taps a row: more accumulators than registers
  other = base, other.r = other.s = 1, other.pad_h = other.pad_w = 0;
  EXPECT_EQ(wgmma_tap_candidates(other), 0u);  // a 1x1 is a GEMM (wgmma_conv1x1)
  other = base, other.dil_h = other.dil_w = 2, other.pad_h = other.pad_w = 2;
  EXPECT_EQ(wgmma_tap_candidates(other), 0u);
  other = base, other.groups = 2;
  EXPECT_EQ(wgmma_tap_candidates(other), 0u);
  other = base, other.c = 20;
  EXPECT_EQ(wgmma_tap_candidates(other), 0u);  // TMA rows of 16 bytes: C % 8 == 0
  other = base, other.layout = ConvLayout::NCHW;
  EXPECT_EQ(wgmma_tap_candidates(other), 0u);
  other = base, other.in_type = other.out_type = DataType::F32;
  EXPECT_EQ(wgmma_tap_candidates(other), 0u);
}

// What the host encodes for the kernel: tiled 4-D maps over rows of x and dy, boxes by the packing.
struct RowsMapSeen {
  void* base = nullptr;
  cuuint64_t dims[4] = {};
  cuuint64_t strides[3] = {};
  cuuint32_t box[4] = {};
  cuuint32_t elem_strides[4] = {};
  CUtensorMapSwizzle swizzle{};
};
std::vector<RowsMapSeen> rows_maps_seen;

CUresult CUDAAPI fake_rows_encoder(CUtensorMap* map, CUtensorMapDataType, cuuint32_t rank, void* base,
                                   const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                   const cuuint32_t* elem_strides, CUtensorMapInterleave, CUtensorMapSwizzle swizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  if (rank != 4) return CUDA_ERROR_INVALID_VALUE;
  RowsMapSeen r;
  r.base = base, r.swizzle = swizzle;
  for (int i = 0; i < 4; ++i) r.dims[i] = dims[i], r.box[i] = box[i], r.elem_strides[i] = elem_strides[i];
  for (int i = 0; i < 3; ++i) r.strides[i] = strides[i];
  rows_maps_seen.push_back(r);
  std::memset(map, 0xC3, sizeof *map);
  return CUDA_SUCCESS;
}

// The model prices a K step's loads as the stage the producer copies (load_bytes): one x copy per
// filter row (SHIFT 1) loads less than one per tap (SHIFT 0), and the estimate says so.
// The model's best estimate among wgmma_tap_wgrad's candidates for `p`, per value of `param`.
std::map<std::int64_t, double> tap_model_best(const Problem& p, const char* param) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  std::map<std::int64_t, double> best;
  for (const auto& c : tuner::enumerate({find_template("wgmma_tap_wgrad")}, std::vector<Problem>{p}, dev).candidates) {
    const ModelEstimate e = model_estimate(*c.tmpl, c.solution, p, dev);
    EXPECT_TRUE(e.has_model);
    const std::int64_t v = c.solution.params.at(param);
    best[v] = best.count(v) ? std::min(best[v], e.seconds) : e.seconds;
  }
  return best;
}

// The template with SCHED (stream-K) opened to `scheds` (its space holds 0 until SCHED 1 has run on
// a GPU), one filter row a block.
KernelTemplate tap_with_sched(std::vector<std::int64_t> scheds) {
  KernelTemplate t = find_template("wgmma_tap_wgrad");
  t.set_values("SCHED", scheds);
  t.set_values("FR", {1});
  return t;
}

// SCHED 1 on 7x7 images: ResNet-50's layer (192 tiles of one filter row for 132 multiprocessors: a
// second wave of 60) prices below whole tiles; the test problem of the GPU sample streams too.
TEST(WgmmaTapWgradSpace, TheModelPricesStreamKBelowAPartialSecondWave) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const Problem l4(tap_rows_wgrad(DataType::BF16, DataType::BF16, 128, 512, 7, 7, 512));
  std::map<std::int64_t, double> best;
  for (const auto& c : tuner::enumerate({tap_with_sched({0, 1})}, std::vector<Problem>{l4}, dev).candidates) {
    if (c.solution.params.at("SPLITK") != 1) continue;
    const double e = model_estimate(*c.tmpl, c.solution, l4, dev).seconds;
    const std::int64_t v = c.solution.params.at("SCHED");
    best[v] = best.count(v) ? std::min(best[v], e) : e;
  }
  ASSERT_EQ(best.size(), 2u);
  EXPECT_LT(best.at(1), best.at(0));
  EXPECT_FALSE(tuner::enumerate({tap_with_sched({1})}, std::vector<Problem>{wgmma_tap_stream_k_problems()[0]}, dev)
                   .candidates.empty());
}

TEST(WgmmaTapWgradSpace, TheModelPricesTheStagedCopies) {
  const auto best = tap_model_best(Problem(tap_rows_wgrad(DataType::BF16, DataType::BF16, 128, 256, 14, 14, 256)), "SHIFT");
  ASSERT_EQ(best.size(), 2u);
  EXPECT_LT(best.at(1), best.at(0));
}

// On 7x7 images whole images a step (PACK 1: 98 pixels in 112 lines) price below rows of one image
// (49 in 64); on 14x14 PACK 1 does not apply.
TEST(WgmmaTapWgradSpace, TheModelPricesWholeImagesBelowRowsOnSmallImages) {
  const auto l4 = tap_model_best(Problem(tap_rows_wgrad(DataType::BF16, DataType::BF16, 128, 512, 7, 7, 512)), "PACK");
  ASSERT_EQ(l4.size(), 2u);
  EXPECT_LT(l4.at(1), l4.at(0));
  const auto l3 = tap_model_best(Problem(tap_rows_wgrad(DataType::BF16, DataType::BF16, 128, 256, 14, 14, 256)), "PACK");
  EXPECT_EQ(l3.size(), 1u);
  EXPECT_EQ(l3.count(0), 1u);
}

TEST(WgmmaTapWgradArguments, EncodesRowMapsOfXAndDyByThePacking) {
  alignas(16) static std::uint8_t x[16], w[16], y[16];
  // 14-pixel rows: a pitch of 16 lines, four rows a K step; dy's box is the pitch (zeros past Q).
  ConvProblem cp = tap_rows_wgrad(DataType::BF16, DataType::F32, 2, 128, 14, 14, 64);
  TtConvParams p = ops::conv_arguments(cp.canonical(), x, w, y);
  rows_maps_seen.clear();
  const auto bytes = gpu::cuda::encode_tma_conv_rows_arguments(fake_rows_encoder, p, cp);
  ASSERT_EQ(bytes.size(), sizeof(TtConvTmaParams));
  ASSERT_EQ(rows_maps_seen.size(), 2u);
  const RowsMapSeen &xm = rows_maps_seen[0], &dym = rows_maps_seen[1];
  EXPECT_EQ(xm.base, x);
  EXPECT_EQ(dym.base, y);
  EXPECT_EQ(xm.dims[0], 128u);
  EXPECT_EQ(xm.dims[1], 14u);
  EXPECT_EQ(xm.dims[3], 2u);
  EXPECT_EQ(xm.strides[0], 256u);
  EXPECT_EQ(dym.dims[0], 64u);
  EXPECT_EQ(dym.strides[1], 14u * 64 * 2);
  EXPECT_EQ(xm.box[0], 64u);
  EXPECT_EQ(xm.box[1], 16u);
  EXPECT_EQ(xm.box[2], 4u);
  EXPECT_EQ(dym.box[1], 16u);
  EXPECT_EQ(dym.box[2], 4u);
  EXPECT_EQ(xm.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  // 130-pixel rows: three segments of 44; dy's box is one segment, x's its pitch.
  cp = tap_rows_wgrad(DataType::BF16, DataType::F32, 2, 64, 5, 130, 64);
  p = ops::conv_arguments(cp.canonical(), x, w, y);
  rows_maps_seen.clear();
  gpu::cuda::encode_tma_conv_rows_arguments(fake_rows_encoder, p, cp);
  ASSERT_EQ(rows_maps_seen.size(), 2u);
  EXPECT_EQ(rows_maps_seen[0].box[1], 46u);
  EXPECT_EQ(rows_maps_seen[1].box[1], 44u);
  EXPECT_EQ(rows_maps_seen[1].box[2], 1u);
  // Stride 2 (P 8, Q 7): x walked every other pixel, its box dimensions doubled; a pitch of 8 lines
  // (Q and one of halo), eight rows a K step.
  cp = tap_rows_wgrad(DataType::BF16, DataType::BF16, 2, 64, 15, 13, 64, 3, 3, 1, 2);
  p = ops::conv_arguments(cp.canonical(), x, w, y);
  rows_maps_seen.clear();
  gpu::cuda::encode_tma_conv_rows_arguments(fake_rows_encoder, p, cp);
  ASSERT_EQ(rows_maps_seen.size(), 2u);
  EXPECT_EQ(rows_maps_seen[0].box[1], 2u * (7 + 1));  // Q 7 plus a line of halo, every other column
  EXPECT_EQ(rows_maps_seen[0].box[2], 2u * 8);
  EXPECT_EQ(rows_maps_seen[0].elem_strides[1], 2u);
  EXPECT_EQ(rows_maps_seen[0].elem_strides[2], 2u);
  EXPECT_EQ(rows_maps_seen[1].elem_strides[1], 1u);  // dy: every pixel
  // PACK 1 on 7x7 images: whole images, two a box, at a pitch of 8 (the halo shared).
  cp = tap_rows_wgrad(DataType::BF16, DataType::BF16, 5, 64, 7, 7, 64);
  p = ops::conv_arguments(cp.canonical(), x, w, y);
  for (int pack : {0, 1}) {
    rows_maps_seen.clear();
    gpu::cuda::encode_tma_conv_rows_arguments(fake_rows_encoder, p, cp, pack);
    ASSERT_EQ(rows_maps_seen.size(), 2u);
    for (const RowsMapSeen& m : rows_maps_seen) {
      EXPECT_EQ(m.box[1], pack ? 8u : 9u);
      EXPECT_EQ(m.box[2], 7u);
      EXPECT_EQ(m.box[3], pack ? 2u : 1u);
    }
  }
  // Refused: unaligned dy, stride 3, fp32 inputs, no driver.
  TtConvParams off = p;
  off.y = y + 2;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_rows_arguments(fake_rows_encoder, off, cp), Error);
  off = p, off.stride_h = off.stride_w = 3;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_rows_arguments(fake_rows_encoder, off, cp), Error);
  ConvProblem f32 = cp;
  f32.in_type = DataType::F32;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_rows_arguments(fake_rows_encoder, p, f32), Error);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_rows_arguments(nullptr, p, cp), Error);
}

// SCHED 1 (stream-K) compiles without spills for each AREG and PACK.
TEST(WgmmaTapWgradCompile, NvrtcCompilesStreamKWithoutSpills) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = wgmma_tap_stream_k_problems();
  std::vector<tuner::Candidate> cands;
  std::set<std::tuple<std::int64_t, std::int64_t>> have;
  for (const auto& c : tuner::enumerate({tap_with_sched({1})}, ps, dev).candidates)
    if (have.insert({c.solution.params.at("AREG"), c.solution.params.at("PACK")}).second) cands.push_back(c);
  ASSERT_EQ(cands.size(), 4u);
  const auto values = expect_no_spills(*compiler, cands, ps, dev);
  EXPECT_EQ(values.at("SCHED"), (std::set<std::int64_t>{1}));
}

TEST(WgmmaTapWgradCompile, NvrtcCompilesASampleForSm90aWithoutSpills) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = wgmma_tap_problems();
  const auto cands = wgmma_tap_sample(ps, dev, 1);
  ASSERT_FALSE(cands.empty());
  const auto values = expect_no_spills(*compiler, cands, ps, dev);
  EXPECT_GT(values.at("SPLITK").size(), 1u);
  EXPECT_EQ(values.at("SHIFT").size(), 2u);
  EXPECT_EQ(values.at("AREG").size(), 2u);
  EXPECT_EQ(values.at("PACK").size(), 2u);
  EXPECT_TRUE(std::any_of(values.at("SPLITK").begin(), values.at("SPLITK").end(),
                          [](std::int64_t k) { return (k & (k - 1)) != 0; }));
  EXPECT_EQ(values.at("FS"), (std::set<std::int64_t>{3, 5}));  // 160 accumulators a thread for the 5x5
  EXPECT_GT(values.at("FR").size(), 1u);
  std::printf("wgmma_tap_wgrad: %zu candidates compiled\n", cands.size());
}

TEST(WgmmaTapWgradGpu, SampleMatchesTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> ps = wgmma_tap_problems();
  const std::size_t checked =
      validate_conv_candidates(*dev, wgmma_tap_sample(ps, dev->info(), 12), ps);
  std::printf("%zu candidates validated\n", checked);
}

// The sample compute-sanitizer's racecheck and memcheck run (scripts/h200_grad_probes.sh): one
// candidate a problem and each SHIFT and AREG, small enough for racecheck's minutes.
// SCHED 1 (stream-K): each AREG and PACK on the problems where the last wave streams; valid twice,
// the workspace left zeroed. Small enough for compute-sanitizer.
TEST(WgmmaTapWgradGpu, StreamKSanitizerSample) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> ps = wgmma_tap_stream_k_problems();
  std::vector<tuner::Candidate> cands;
  std::set<std::tuple<std::size_t, std::int64_t, std::int64_t>> have;
  for (const auto& c : tuner::enumerate({tap_with_sched({1})}, ps, dev->info()).candidates)
    if (have.insert({c.problem_index, c.solution.params.at("AREG"), c.solution.params.at("PACK")}).second)
      cands.push_back(c);
  EXPECT_EQ(cands.size(), 2 * ps.size() * 2);
  std::printf("%zu stream-K candidates validated\n", validate_conv_candidates(*dev, cands, ps));
}

TEST(WgmmaTapWgradGpu, SanitizerSample) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  const std::vector<Problem> ps = wgmma_tap_problems();
  EXPECT_GE(validate_conv_candidates(*dev, wgmma_tap_sample(ps, dev->info(), 1), ps), 2 * ps.size());
}

}  // namespace
