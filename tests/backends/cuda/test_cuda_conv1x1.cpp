// wgmma_conv1x1 (the 1x1 stride-1 convolutions on wgmma_gemm's kernel, "arguments":
// "conv_as_gemm_tma") on CUDA: the host encodes the mapped GEMM's tensor maps over the
// convolution's tensors (through a fake encoder that records its arguments), NVRTC compiles a
// sample for sm_90a without spills (no GPU needed), and on an sm_90 GPU a sample is validated
// against the fp64 reference twice per candidate (split-K must leave its workspace zeroed), and a
// tuned winner of each direction is served by the runtime.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>
#include <vector>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "kernel_templates/gemm_tma_params.h"
#include "ops/arguments.h"
#include "ops/cuda/tma_arguments.h"
#include "runtime/tiletune.hpp"
#include "solutions/conv_gemm.h"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "tuner/config.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

constexpr ConvDirection kFwd = ConvDirection::Forward, kDgrad = ConvDirection::BackwardData,
                        kWgrad = ConvDirection::BackwardFilter;

ConvProblem conv1x1(ConvDirection dir, DataType in, DataType out, int n, int c, int h, int w, int k) {
  ConvProblem p;
  p.direction = dir, p.in_type = in, p.out_type = out;
  p.n = n, p.c = c, p.h = h, p.w = w, p.k = k;
  return p;
}

// One tiled map as the fake encoder saw it.
struct Map {
  void* base = nullptr;
  cuuint32_t rank = 0;
  cuuint64_t dims[3] = {}, strides[2] = {};
  cuuint32_t box[3] = {};
  CUtensorMapDataType dt{};
  CUtensorMapSwizzle swizzle{};
};
std::vector<Map> seen;

CUresult CUDAAPI fake_tiled_1x1(CUtensorMap* map, CUtensorMapDataType dt, cuuint32_t rank, void* base,
                            const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                            const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion,
                            CUtensorMapFloatOOBfill) {
  Map m;
  m.base = base, m.rank = rank, m.dt = dt, m.swizzle = swizzle;
  for (cuuint32_t i = 0; i < rank && i < 3; ++i) m.dims[i] = dims[i], m.box[i] = box[i];
  for (cuuint32_t i = 0; i + 1 < rank && i < 2; ++i) m.strides[i] = strides[i];
  seen.push_back(m);
  std::memset(map, 0xC3, sizeof *map);
  return CUDA_SUCCESS;
}

alignas(16) std::uint8_t x_buf[16], w_buf[16], y_buf[16];

// Encodes the default solution with BM x BN tiles (and EPI) for `p` on the three static buffers.
TtGemmTmaParams encode(const ConvProblem& p, int bm, int bn, int epi = 0) {
  const KernelTemplate& t = find_template("wgmma_conv1x1");
  Variables vars = t.variables(t.default_solution(), Problem(p), fake_device(gpu::BackendKind::Cuda));
  vars["BM"] = bm, vars["BN"] = bn, vars["EPI"] = epi;
  seen.clear();
  const auto bytes = gpu::cuda::encode_tma_conv_gemm_arguments(fake_tiled_1x1, ops::conv_arguments(p, x_buf, w_buf, y_buf), p, vars);
  TtGemmTmaParams args;
  EXPECT_EQ(bytes.size(), sizeof args);
  std::memcpy(&args, bytes.data(), sizeof args);
  return args;
}

void expect_map(const Map& m, void* base, std::uint64_t inner, std::uint64_t outer, std::uint64_t ld_bytes,
                unsigned box_inner, unsigned box_outer) {
  EXPECT_EQ(m.base, base);
  EXPECT_EQ(m.rank, 3u);
  EXPECT_EQ(m.dims[0], inner);
  EXPECT_EQ(m.dims[1], outer);
  EXPECT_EQ(m.dims[2], 1u);
  EXPECT_EQ(m.strides[0], ld_bytes);
  EXPECT_EQ(m.box[0], box_inner);
  EXPECT_EQ(m.box[1], box_outer);
}

// N 2, C 128, 5 x 7 pixels (70), K 192, bf16: A and B of each direction's GEMM over the right
// tensor, dimensions innermost first, rows of C or K elements.
TEST(Conv1x1Arguments, EncodesTheGemmsMapsOverTheConvolutionsTensors) {
  TtGemmTmaParams a = encode(conv1x1(kFwd, DataType::BF16, DataType::BF16, 2, 128, 5, 7, 192), 128, 128);
  ASSERT_EQ(seen.size(), 2u);
  expect_map(seen[0], w_buf, 128, 192, 256, 64, 128);  // A = W, K-major: C x K
  expect_map(seen[1], x_buf, 128, 70, 256, 64, 128);   // B = x, K-major: C x NHW
  EXPECT_EQ(seen[0].dt, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(a.g.a, w_buf);
  EXPECT_EQ(a.g.c, y_buf);
  EXPECT_EQ(a.g.m, 192);
  EXPECT_EQ(a.g.n, 70);
  EXPECT_EQ(a.g.k, 128);
  EXPECT_EQ(a.g.ldc, 192);
  EXPECT_EQ(a.g.beta, 0.0f);
  EXPECT_EQ(reinterpret_cast<const std::uint8_t*>(&a.map_a)[0], 0xC3);

  a = encode(conv1x1(kDgrad, DataType::F16, DataType::F16, 2, 128, 5, 7, 192), 128, 64);
  ASSERT_EQ(seen.size(), 2u);
  expect_map(seen[0], w_buf, 128, 192, 256, 64, 64);  // A = W, MN-major: C x K, one line x BK
  expect_map(seen[1], y_buf, 192, 70, 384, 64, 64);   // B = dy, K-major: K x NHW
  EXPECT_EQ(seen[0].dt, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(a.g.c, x_buf);
  EXPECT_EQ(a.g.ldc, 128);

  // wgrad with the TMA-store epilogue: a third map over dW (fp32), C x K.
  a = encode(conv1x1(kWgrad, DataType::BF16, DataType::F32, 2, 128, 5, 7, 192), 128, 128, 1);
  ASSERT_EQ(seen.size(), 3u);
  expect_map(seen[0], x_buf, 128, 70, 256, 64, 64);    // A = x, MN-major: C x NHW
  expect_map(seen[1], y_buf, 192, 70, 384, 64, 64);    // B = dy, MN-major: K x NHW
  expect_map(seen[2], w_buf, 128, 192, 512, 32, 32);   // C = dW: 128-byte lines of fp32
  EXPECT_EQ(seen[2].dt, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(a.g.m, 128);
  EXPECT_EQ(a.g.n, 192);
  EXPECT_EQ(a.g.k, 70);
  EXPECT_EQ(seen[1].swizzle, CU_TENSOR_MAP_SWIZZLE_128B);

  // wgrad in 32-column tiles: dy (MN-major) in one box of 32 channels (64-byte lines, the 64-byte
  // swizzle) a stage; x keeps its 128-byte lines.
  encode(conv1x1(kWgrad, DataType::BF16, DataType::BF16, 2, 96, 5, 7, 160), 64, 32);
  ASSERT_EQ(seen.size(), 2u);
  expect_map(seen[0], x_buf, 96, 70, 192, 64, 64);
  expect_map(seen[1], y_buf, 160, 70, 320, 32, 64);
  EXPECT_EQ(seen[0].swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(seen[1].swizzle, CU_TENSOR_MAP_SWIZZLE_64B);
}

TEST(Conv1x1Arguments, RefusesWhatTheGemmCannotRead) {
  ConvProblem p = conv1x1(kFwd, DataType::BF16, DataType::BF16, 2, 128, 6, 6, 64);
  EXPECT_NO_THROW(encode(p, 128, 128));
  const KernelTemplate& t = find_template("wgmma_conv1x1");
  const Variables vars = t.variables(t.default_solution(), Problem(p), fake_device(gpu::BackendKind::Cuda));
  auto run = [&](const ConvProblem& q, std::uint8_t* x) {
    return error_of([&] {
      gpu::cuda::encode_tma_conv_gemm_arguments(fake_tiled_1x1, ops::conv_arguments(q, x, w_buf, y_buf), q, vars);
    });
  };
  ConvProblem s2 = p;
  s2.stride_h = s2.stride_w = 2;
  EXPECT_NE(run(s2, x_buf).find("stride 2x2"), std::string::npos);
  ConvProblem f32 = p;
  f32.in_type = DataType::F32;
  EXPECT_NE(run(f32, x_buf).find("bf16 or fp16"), std::string::npos);
  ConvProblem c100 = p;
  c100.c = 100;  // rows of 200 bytes
  EXPECT_NE(run(c100, x_buf).find("multiples of 16 bytes"), std::string::npos);
  EXPECT_NE(run(p, x_buf + 2).find("16-byte aligned"), std::string::npos);
}

// Sizes off the tiles in every direction, both input types, every output type; the wgrad of a
// long reduction over few tiles takes split-K.
std::vector<Problem> conv1x1_problems() {
  using D = DataType;
  return {Problem(conv1x1(kFwd, D::BF16, D::BF16, 2, 64, 7, 9, 136)),
          Problem(conv1x1(kFwd, D::F16, D::F32, 3, 192, 5, 5, 64)),
          Problem(conv1x1(kDgrad, D::BF16, D::BF16, 2, 72, 9, 11, 128)),
          Problem(conv1x1(kDgrad, D::F16, D::F16, 4, 256, 7, 7, 512)),
          Problem(conv1x1(kWgrad, D::BF16, D::F32, 2, 128, 9, 9, 192)),
          Problem(conv1x1(kWgrad, D::BF16, D::BF16, 16, 64, 16, 16, 64))};
}

// A few values per parameter; every switch of the kernel both ways.
const KernelTemplate& sample_space() {
  static const KernelTemplate t = [] {
    KernelTemplate n = find_template("wgmma_conv1x1");
    n.set_values("BM", {64, 128});
    n.set_values("BN", {64, 128, 256});
    n.set_values("STAGES", {4});
    n.set_values("GROUP", {8});
    n.set_values("LOADER", {0});
    n.set_values("SPLITK", {1, 2, 4, 16});
    return n;
  }();
  return t;
}

TEST(Conv1x1Compile, NvrtcCompilesASampleForSm90aWithoutSpills) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = conv1x1_problems();
  const auto cands = conv_sample(sample_space(), ps, dev, 1);
  ASSERT_GE(cands.size(), ps.size());
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const std::regex spill("([0-9]+) bytes spill stores");
  std::set<std::string> layouts;
  bool split_k = false, tma_store = false;
  for (const auto& c : cands) {
    const Problem& p = ps[c.problem_index];
    gpu::CompileRequest req = c.tmpl->compile_request(c.solution, p, dev);
    req.options.push_back("--ptxas-options=-v");
    const gpu::CompileResult r = compiler->compile(req);
    ASSERT_TRUE(r.ok) << req.name_expression << "\n" << r.log;
    std::smatch ms;
    EXPECT_TRUE(std::regex_search(r.log, ms, spill) && ms[1].str() == "0") << req.name_expression << " spills:\n" << r.log;
    // ptxas's C7515 warning: wgmma serialised (split-K wgrad once was, by its accumulator zeroing).
    EXPECT_EQ(r.log.find("serialized"), std::string::npos) << req.name_expression << "\n" << r.log;
    for (const char* l : {", true, false, ", ", false, false, ", ", false, true, "})  // fwd, dgrad, wgrad
      if (req.name_expression.find(l) != std::string::npos) layouts.insert(l);
    split_k = split_k || c.solution.params.at("SPLITK") > 1;
    tma_store = tma_store || c.solution.params.at("EPI") == 1;
    std::printf("%-110s %s\n", req.name_expression.c_str(), p.key().c_str());
  }
  EXPECT_EQ(layouts.size(), 3u);
  EXPECT_TRUE(split_k);
  EXPECT_TRUE(tma_store);
}

TEST(Conv1x1Gpu, SampleMatchesTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  if (dev->info().compute_capability != 90) GTEST_SKIP() << "wgmma_conv1x1 needs sm_90";
  const std::vector<Problem> ps = conv1x1_problems();
  const auto cands = conv_sample(sample_space(), ps, dev->info(), 8);
  ASSERT_GE(cands.size(), ps.size());
  std::printf("%zu candidates validated\n", validate_conv_candidates(*dev, cands, ps));
}

// 160-column tiles (wgmma_gemm's BN 160, K-major B: forward and input gradient), which the shipped
// spaces leave out until they have run on a GPU: N*P*Q past a whole number of tiles, C and K off 64,
// both epilogues, ping-pong and cooperative consumers, both input types.
std::vector<Problem> bn160_problems() {
  using D = DataType;
  return {Problem(conv1x1(kFwd, D::BF16, D::BF16, 2, 96, 35, 35, 160)),
          Problem(conv1x1(kDgrad, D::F16, D::F16, 2, 96, 35, 35, 160)),
          Problem(conv1x1(kDgrad, D::BF16, D::F32, 3, 240, 13, 11, 40))};
}
std::vector<tuner::Candidate> bn160_sample(const gpu::DeviceInfo& dev) {
  static const KernelTemplate t = [] {
    KernelTemplate n = find_template("wgmma_conv1x1");
    n.set_values("BM", {64, 128});
    n.set_values("BN", {160});
    n.set_values("STAGES", {4});
    n.set_values("GROUP", {8});
    n.set_values("LOADER", {0});
    n.set_values("SPLITK", {1});
    return n;
  }();
  return conv_sample(t, bn160_problems(), dev, 4);
}

// The GPU sample's candidates compile without spills and reach both epilogues and both consumer
// arrangements; an MN-major B (a weight gradient's dy, 64-column boxes) cannot take 160 columns.
TEST(Conv1x1Compile, OneHundredSixtyColumnTilesCompileForSm90aWithoutSpills) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const auto cands = bn160_sample(dev);
  ASSERT_GE(cands.size(), 2 * bn160_problems().size());
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const auto values = expect_no_spills(*compiler, cands, bn160_problems(), dev);
  EXPECT_EQ(values.at("EPI").size(), 2u);
  EXPECT_EQ(values.at("PINGPONG").size(), 2u);
  const auto refused = cands[0].tmpl->violation(cands[0].tmpl->variables(
      cands[0].solution, Problem(conv1x1(kWgrad, DataType::BF16, DataType::BF16, 2, 96, 35, 35, 160)), dev));
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("need_k_major_b"), std::string::npos) << *refused;
}

// 32-column tiles (wgmma_gemm's BN 32, cuBLASLt's tile for these layers): the weight gradients of
// few output channels (Inception's 160 in five tiles, EfficientNet's 40 and MobileNet's 24 ending
// inside a tile), dy MN-major in 64-byte lines; a forward pass for a K-major B of 32 rows; one and two
// consumers, ping-pong, split-K in one and two levels, clusters sharing dy (CLUSTER, 32 or 16 lines of
// a box each) or x (CLUSTERN), both epilogues, deep rings.
std::vector<Problem> bn32_problems() {
  using D = DataType;
  return {Problem(conv1x1(kWgrad, D::BF16, D::BF16, 4, 96, 35, 35, 160)),
          Problem(conv1x1(kWgrad, D::F16, D::F16, 8, 240, 14, 14, 40)),
          Problem(conv1x1(kWgrad, D::BF16, D::F32, 4, 144, 28, 28, 24)),
          Problem(conv1x1(kFwd, D::BF16, D::BF16, 1, 64, 9, 7, 96))};
}
std::vector<tuner::Candidate> bn32_sample(const gpu::DeviceInfo& dev) {
  return conv_rows("wgmma_conv1x1", bn32_problems(), dev, {{"BN", 32}, {"LOADER", 0}, {"GROUP", 8}},
                   {"BM", "CONSUMERS", "PINGPONG", "SPLITK", "CLUSTER", "CLUSTERN", "EPI", "STAGES"},
                   {{0, 64, 1, 0, 16, 1, 1, 1, 12},
                    {0, 64, 1, 0, 11, 1, 2, 1, 12},  // five tile columns in pairs: a CTA past N
                    {0, 128, 2, 0, 3, 1, 1, 0, 4},
                    {0, 64, 2, 1, 4, 2, 1, 0, 4},
                    {1, 64, 1, 0, 3, 4, 1, 1, 12},
                    {1, 64, 2, 1, 1, 1, 2, 0, 8},
                    {2, 128, 2, 0, 8, 1, 1, 0, 8},
                    {2, 64, 1, 0, 12, 2, 1, 1, 16},  // three tile rows in pairs: a CTA past M
                    {3, 64, 1, 0, 1, 1, 1, 1, 4},
                    {3, 64, 2, 1, 1, 1, 2, 0, 4}});
}

// The GPU sample compiles without spills; the template refuses 32 columns to the cp.async loader, to
// tf32 and to a consumer of 128 rows.
TEST(Conv1x1Compile, ThirtyTwoColumnTilesCompileForSm90aWithoutSpills) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const auto cands = bn32_sample(dev);
  ASSERT_EQ(cands.size(), 10u);
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  expect_no_spills(*compiler, cands, bn32_problems(), dev);
  const KernelTemplate& t = find_template("wgmma_conv1x1");
  Solution s = t.default_solution();
  s.params["BM"] = 64, s.params["BN"] = 32, s.params["LOADER"] = 1;
  const auto refused = t.violation(t.variables(s, bn32_problems()[0], dev));
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("bn_32_sixteen_bit_by_tma"), std::string::npos) << *refused;
  const KernelTemplate& g = find_template("wgmma_gemm");
  GemmProblem tf32 = gemm(DataType::F32, DataType::F32, true, false, 256, 256, 256);
  tf32.compute_tf32 = true;
  Solution gs = g.default_solution();
  gs.params["BM"] = 64, gs.params["BN"] = 32, gs.params["BK"] = 32;
  gs.params["CONSUMERS"] = 1, gs.params["PINGPONG"] = 0;
  const auto no_tf32 = g.violation(g.variables(gs, tf32, dev));
  ASSERT_TRUE(no_tf32);
  EXPECT_NE(no_tf32->find("bn_32_sixteen_bit_by_tma"), std::string::npos) << *no_tf32;
  s.params["LOADER"] = 0, s.params["BM"] = 128, s.params["CONSUMERS"] = 1, s.params["PINGPONG"] = 0;
  const auto tall = t.violation(t.variables(s, bn32_problems()[0], dev));
  ASSERT_TRUE(tall);
  EXPECT_NE(tall->find("of_64_rows"), std::string::npos) << *tall;
}

TEST(Conv1x1Gpu, ThirtyTwoColumnTilesMatchTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  if (dev->info().compute_capability != 90) GTEST_SKIP() << "wgmma_conv1x1 needs sm_90";
  const auto cands = bn32_sample(dev->info());
  ASSERT_EQ(cands.size(), 10u);
  EXPECT_EQ(validate_conv_candidates(*dev, cands, bn32_problems()), cands.size());
}

TEST(Conv1x1Gpu, OneHundredSixtyColumnTilesMatchTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  if (dev->info().compute_capability != 90) GTEST_SKIP() << "wgmma_conv1x1 needs sm_90";
  const auto cands = bn160_sample(dev->info());
  ASSERT_GE(cands.size(), 2 * bn160_problems().size());
  EXPECT_EQ(validate_conv_candidates(*dev, cands, bn160_problems()), cands.size());
}

// A wgmma_conv1x1 winner of each direction (the generated kernels alone) runs the same way in the
// runtime (the GEMM's tensor maps encoded per call over the caller's tensors) as in its sweep.
TEST(Conv1x1Gpu, SweepThenRuntimeDispatchInEachDirection) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  if (dev->info().compute_capability != 90) GTEST_SKIP() << "wgmma_conv1x1 needs sm_90";
  namespace fs = std::filesystem;
  for (const char* direction : {"fwd", "dgrad", "wgrad"}) {
    const fs::path dir = fs::temp_directory_path() / ("tiletune-conv1x1-" + std::to_string(::getpid()) + "-" + direction);
    fs::create_directories(dir);
    const std::string db = (dir / "conv1x1.db").string();
    const std::string json = std::string(R"({
      "problems": [{"kind": "conv", "direction": ")") + direction + R"(", "dtype": "bf16", "layout": "NHWC", "n": 8,
                    "c": 256, "h": 14, "w": 14, "k": 512, "r": 1, "s": 1, "stride": 1, "pad": 0, "dilation": 1,
                    "groups": 1}],
      "templates": {"wgmma_conv1x1": {"parameters": {"BM": [128], "BN": [128], "STAGES": [4], "CONSUMERS": [2],
                                                     "PINGPONG": [0, 1], "RASTER": [0], "GROUP": [8], "COOPN": [0],
                                                     "COOPK": [0], "LOADER": [0], "EPI": [0, 1], "SPLITK": [1, 2]}}},
      "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 10, "target_ms": 5}
    })";
    auto config = tuner::parse_config(json, dir.string());
    cuda_sweep_one_winner(json, dir.string(), db, false);

    Handle h(db, "cuda");
    ops::ConvInputs data(*dev, config.problems[0].conv(), false);
    const ConvProblem& p = data.problem();
    tiletune_conv_desc_t d;
    tiletune_conv_desc_init(&d, p.n, p.c, p.h, p.w, p.k, p.r, p.s);
    d.in_type = d.out_type = TILETUNE_R_16BF;
    auto v = data.validate([&](const TtConvParams& a) {
      if (p.direction == kFwd) h.conv_forward(d, a.x, a.wt, a.y);
      else if (p.direction == kDgrad) h.conv_backward_data(d, a.y, a.wt, a.x);
      else h.conv_backward_filter(d, a.x, a.y, a.wt);
      h.synchronize();
    });
    EXPECT_TRUE(v.ok) << direction << ": " << v.reason;
    EXPECT_EQ(h.stats().tuned, 1u) << direction;
    fs::remove_all(dir);
  }
}

}  // namespace
