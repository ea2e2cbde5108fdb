// wgmma_conv on CUDA: NVRTC compiles a sample of its space for sm_90a without a GPU (ptxas: no
// spills; SASS: HGMMA and im2col TMA loads, where cuobjdump is found), the host side encodes its two
// tensor maps as the kernel expects (through fake encoders that record their arguments), and on a
// GPU a sample is validated against the fp64 reference, directly and through the runtime.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <fstream>
#include <regex>
#include <thread>
#include <tuple>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_backend.h"
#include "ops/cuda/tma_arguments.h"
#include "ops/operation.h"
#include "kernel_templates/conv_tma_params.h"
#include "runtime/tiletune.hpp"
#include "tests/conv_test_util.h"
#include "tests/test_util.h"
#include "tuner/config.h"
#include "tuner/enumerator.h"
#include "tuner/sweep.h"

using namespace tiletune;
using namespace tiletune::testing;

namespace {

ConvProblem wgmma_conv(DataType in, DataType out, int n, int c, int h, int w, int k, int r, int s, int stride_h,
                 int stride_w, int pad_h, int pad_w, int dil_h = 1, int dil_w = 1,
                 ConvDirection dir = ConvDirection::Forward) {
  ConvProblem p;
  p.direction = dir, p.in_type = in, p.out_type = out;
  p.n = n, p.c = c, p.h = h, p.w = w, p.k = k, p.r = r, p.s = s;
  p.stride_h = stride_h, p.stride_w = stride_w, p.pad_h = pad_h, p.pad_w = pad_w, p.dil_h = dil_h, p.dil_w = dil_w;
  return p;
}

// Small problems with the corners the TMA im2col walk has: padding, stride 2, dilation, R != S
// with anisotropic padding, odd P*Q (partial tiles, boxes running past the last image), several
// channel chunks per tap, GEMM sizes not multiples of the tile, every output type. The gradients:
// dgrad's flipped, transposed filters and its padding dil (R - 1) - pad, C off the 64-column boxes;
// wgrad's reduction over N*P*Q ending inside a 64-pixel step, stride 2, K not a multiple of BM;
// strided dgrads by their stride phases (PHASE 1); reductions over C (K) not multiples of 64.
std::vector<Problem> wgmma_problems() {
  using D = DataType;
  constexpr ConvDirection DG = ConvDirection::BackwardData, WG = ConvDirection::BackwardFilter;
  return {
      wgmma_conv(D::BF16, D::BF16, 2, 64, 15, 13, 64, 3, 3, 1, 1, 1, 1),     // 3x3 same, P*Q = 195
      wgmma_conv(D::F16, D::F16, 3, 128, 12, 11, 136, 3, 3, 2, 2, 1, 1),     // stride 2, K = 136
      wgmma_conv(D::BF16, D::F32, 2, 128, 9, 9, 256, 1, 1, 2, 2, 0, 0),      // 1x1 stride 2
      wgmma_conv(D::BF16, D::BF16, 2, 64, 11, 10, 72, 3, 3, 1, 1, 2, 2, 2, 2),  // dilation 2
      wgmma_conv(D::F16, D::F32, 2, 192, 10, 9, 64, 3, 5, 2, 1, 1, 2, 1, 2),    // R != S, anisotropic
      wgmma_conv(D::BF16, D::F16, 4, 256, 7, 7, 512, 1, 1, 1, 1, 0, 0),       // 1x1, deep
      wgmma_conv(D::BF16, D::BF16, 2, 64, 15, 13, 64, 3, 3, 1, 1, 1, 1, 1, 1, DG),     // dgrad 3x3 same
      wgmma_conv(D::F16, D::F32, 3, 72, 9, 11, 192, 1, 1, 1, 1, 0, 0, 1, 1, DG),       // dgrad 1x1, C = 72, 3 chunks
      wgmma_conv(D::BF16, D::F16, 2, 136, 11, 10, 128, 3, 5, 1, 1, 1, 2, 2, 1, DG),    // dgrad R != S, dilation
      wgmma_conv(D::BF16, D::BF16, 2, 64, 15, 13, 64, 3, 3, 1, 1, 1, 1, 1, 1, WG),     // wgrad 3x3, N*P*Q = 390
      wgmma_conv(D::F16, D::F32, 3, 128, 12, 11, 136, 3, 3, 2, 2, 1, 1, 1, 1, WG),     // wgrad stride 2, K = 136
      wgmma_conv(D::BF16, D::BF16, 2, 256, 9, 9, 512, 1, 1, 2, 2, 0, 0, 1, 1, WG),     // wgrad 1x1 stride 2
      wgmma_conv(D::BF16, D::F16, 2, 64, 12, 13, 64, 3, 3, 1, 1, 2, 2, 2, 2, WG),      // wgrad dilation 2
      wgmma_conv(D::BF16, D::BF16, 2, 64, 9, 11, 64, 1, 1, 2, 2, 0, 0, 1, 1, DG),      // dgrad 1x1 stride 2, scattered, odd H, W
      wgmma_conv(D::F16, D::F32, 2, 128, 10, 9, 64, 1, 1, 3, 2, 0, 0, 1, 1, DG),       // scattered, anisotropic stride
      wgmma_conv(D::BF16, D::BF16, 2, 64, 11, 9, 128, 3, 3, 2, 2, 1, 1, 1, 1, DG),     // dgrad 3x3 stride 2 by phases, odd H, W
      wgmma_conv(D::F16, D::F32, 3, 72, 12, 10, 64, 3, 3, 2, 2, 0, 0, 1, 1, DG),       // phases without padding, C = 72
      wgmma_conv(D::BF16, D::BF16, 2, 48, 9, 8, 64, 5, 5, 1, 1, 2, 2),                 // 5x5, C = 48: a partial chunk
      wgmma_conv(D::F16, D::F32, 2, 64, 9, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1, DG),         // dgrad, K = 40
  };
}

// Deep split-K on two weight gradients of few tiles and long reductions (N*P*Q 25,088 and 19,600):
// 16 and 32 parts meeting in two levels (64 accumulators a thread, splitk_tree.h), and one of 128
// accumulators a thread, which meets in one level. For the compile test and the GPU sample.
std::vector<Problem> wgmma_conv_deep_split_problems() {
  using D = DataType;
  constexpr ConvDirection WG = ConvDirection::BackwardFilter;
  return {wgmma_conv(D::BF16, D::BF16, 32, 64, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1, WG),
          wgmma_conv(D::F16, D::F32, 16, 128, 35, 35, 160, 1, 1, 1, 1, 0, 0, 1, 1, WG)};
}
// Whether the template refuses candidate c with `changed` parameters on problem p.
bool refuses(const tuner::Candidate& c, const Problem& p, const gpu::DeviceInfo& dev,
             const std::map<std::string, std::int64_t>& changed = {}) {
  Solution s = c.solution;
  for (const auto& [name, value] : changed) s.params[name] = value;
  return bool(c.tmpl->violation(c.tmpl->variables(s, p, dev)));
}
// Problem p as a weight gradient.
Problem as_wgrad(const Problem& p) {
  ConvProblem w = p.conv();
  w.direction = ConvDirection::BackwardFilter;
  return Problem{w};
}
std::vector<tuner::Candidate> wgmma_conv_deep_split_candidates(const std::vector<Problem>& ps,
                                                               const gpu::DeviceInfo& dev) {
  return conv_rows("wgmma_conv", ps, dev,
      {{"CONSUMERS", 2}, {"PHASE", 0}},
      {"BM", "BN", "PINGPONG", "SPLITK"},
      {{0, 128, 128, 0, 16}, {0, 128, 64, 0, 32}, {1, 128, 128, 0, 32}, {1, 64, 64, 1, 16}, {1, 128, 128, 1, 16}});
}

// Stream-K (SCHED 1): weight gradients of fewer tiles than multiprocessors (every tile streamed;
// reductions ending inside a 64-pixel step, K off BM, fp32 out), forward passes and an input
// gradient with a partial last wave (one after two whole waves), SWAP 1 and 2 among them. For the
// compile test and the GPU sample (on a 132-multiprocessor Hopper: on others the constraints may
// take variants out).
std::vector<Problem> wgmma_conv_stream_k_problems() {
  using D = DataType;
  constexpr ConvDirection DG = ConvDirection::BackwardData, WG = ConvDirection::BackwardFilter;
  return {wgmma_conv(D::BF16, D::BF16, 2, 512, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1, WG),
          wgmma_conv(D::F16, D::F32, 4, 256, 14, 14, 192, 3, 3, 1, 1, 1, 1, 1, 1, WG),
          wgmma_conv(D::BF16, D::F32, 2, 128, 40, 40, 256, 3, 3, 1, 1, 1, 1),
          wgmma_conv(D::BF16, D::BF16, 2, 64, 48, 48, 320, 3, 3, 1, 1, 1, 1),
          wgmma_conv(D::F16, D::F16, 4, 64, 30, 30, 256, 3, 3, 1, 1, 1, 1, 1, 1, DG)};
}
std::vector<tuner::Candidate> wgmma_conv_stream_k_candidates(const std::vector<Problem>& ps,
                                                             const gpu::DeviceInfo& dev) {
  return conv_rows("wgmma_conv", ps, dev,
      {{"PINGPONG", 0}, {"SPLITK", 1}, {"STAGES", 4}, {"PHASE", 0}, {"SCHED", 1}},
      {"BM", "BN", "CONSUMERS", "SWAP"},
      {{0, 128, 128, 2, 0}, {0, 64, 256, 1, 0}, {1, 128, 64, 2, 0}, {2, 128, 128, 2, 0}, {2, 128, 64, 2, 1},
       {3, 64, 64, 1, 0}, {4, 64, 64, 1, 1}, {4, 64, 64, 1, 2}});
}

// PHASE 1 with more units than multiprocessors, so that the walk's last (partial) pass follows whole
// ones: 196 units of 128 x 128 (a stride-2 3x3 of 128 channels at batch 32) and 392 of
// 64 x 128 (ping-pong), 100 of 256 x 128 (one pass); odd H and W with K = 136 (a partial chunk), fp32
// out, in 108 units of 128 x 64 (ping-pong) and 212 of 64 x 64 (one consumer). For the compile test and
// the GPU sample (sized for 132 multiprocessors: on fewer, the passes differ).
std::vector<Problem> wgmma_conv_phase_pass_problems() {
  using D = DataType;
  constexpr ConvDirection DG = ConvDirection::BackwardData;
  return {wgmma_conv(D::BF16, D::BF16, 32, 128, 28, 28, 128, 3, 3, 2, 2, 1, 1, 1, 1, DG),
          wgmma_conv(D::F16, D::F32, 16, 64, 27, 29, 136, 3, 3, 2, 2, 1, 1, 1, 1, DG)};
}
std::vector<tuner::Candidate> wgmma_conv_phase_pass_candidates(const std::vector<Problem>& ps,
                                                               const gpu::DeviceInfo& dev) {
  return conv_rows("wgmma_conv", ps, dev,
      {{"PHASE", 1}, {"SPLITK", 1}, {"SCHED", 0}, {"SWAP", 0}, {"HALO", 0}, {"EPI", 0}, {"STAGES", 4}},
      {"BM", "BN", "CONSUMERS", "PINGPONG"},
      {{0, 128, 128, 2, 0}, {0, 64, 128, 2, 1}, {0, 256, 128, 2, 0}, {1, 128, 64, 2, 1}, {1, 64, 64, 1, 0}});
}

// A sample of chosen variants (`candidates` of `problems`) built for a fake H200: all `count` of them
// admitted, each compiled for sm_90a without spills. Returns them (empty after a failure).
std::vector<tuner::Candidate> expect_variants_compile(
    std::vector<Problem> (*problems)(),
    std::vector<tuner::Candidate> (*candidates)(const std::vector<Problem>&, const gpu::DeviceInfo&),
    std::size_t count) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = problems();
  const auto cands = candidates(ps, dev);
  EXPECT_EQ(cands.size(), count);
  if (cands.size() != count) return {};
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  expect_no_spills(*compiler, cands, ps, dev, 0);
  return cands;
}

TEST(WgmmaConvCompile, PhasesOverSeveralPassesCompileWithoutSpills) {
  expect_variants_compile(wgmma_conv_phase_pass_problems, wgmma_conv_phase_pass_candidates, 5);
}

TEST(WgmmaConvCompile, StreamKCompilesWithoutSpills) {
  expect_variants_compile(wgmma_conv_stream_k_problems, wgmma_conv_stream_k_candidates, 8);
}

// CLUSTERN (wgrad; dy's rows multicast to the cluster's CTAs on adjacent tile columns): clusters of 2
// and 4 streaming every tile (36 tile columns, ResNet-50's l4 weight gradient at batch 2), whole tiles,
// tile columns not a multiple of the cluster (5 and 9 of them: the last cluster's ranks past them
// compute nothing), fp32 output, ping-pong and one consumer, split-K on a stride-2 3x3, the warps' TMA
// stores (EPI 1, which the shipped configs take wherever it fits) on four; ping-pong consumers taking
// turns (72 units on 66 clusters), stream-K with ranks past the last column (23 columns in clusters of 4),
// and stream-K after a full wave (92 units: 45 columns of 64 in clusters of 2). For the compile
// test and the GPU sample (sized for 132 multiprocessors: the stream-K rows' constraints count them).
std::vector<Problem> wgmma_conv_cluster_problems() {
  using D = DataType;
  constexpr ConvDirection WG = ConvDirection::BackwardFilter;
  return {wgmma_conv(D::BF16, D::BF16, 2, 512, 28, 28, 256, 3, 3, 1, 1, 1, 1, 1, 1, WG),
          wgmma_conv(D::F16, D::F32, 3, 64, 11, 13, 256, 3, 3, 1, 1, 1, 1, 1, 1, WG),
          wgmma_conv(D::BF16, D::BF16, 16, 128, 15, 15, 256, 3, 3, 2, 2, 1, 1, 1, 1, WG),
          wgmma_conv(D::BF16, D::BF16, 2, 320, 20, 20, 512, 3, 3, 1, 1, 1, 1, 1, 1, WG)};
}
std::vector<tuner::Candidate> wgmma_conv_cluster_candidates(const std::vector<Problem>& ps, const gpu::DeviceInfo& dev) {
  return conv_rows("wgmma_conv", ps, dev,
      {{"STAGES", 4}, {"PHASE", 0}, {"SWAP", 0}, {"HALO", 0}},
      {"BM", "BN", "CONSUMERS", "PINGPONG", "SPLITK", "SCHED", "CLUSTERN", "EPI"},
      {{0, 256, 128, 2, 0, 1, 1, 2, 1}, {0, 256, 128, 2, 0, 1, 1, 4, 0}, {0, 128, 128, 2, 0, 1, 0, 2, 1},
       {1, 128, 128, 2, 0, 1, 0, 2, 0}, {1, 256, 64, 2, 0, 1, 0, 4, 0}, {1, 128, 128, 2, 1, 1, 0, 2, 0},
       {1, 128, 64, 1, 0, 1, 0, 2, 0}, {2, 128, 128, 2, 0, 2, 0, 2, 1}, {2, 256, 128, 2, 0, 2, 0, 2, 0},
       {0, 128, 64, 2, 1, 1, 0, 2, 1}, {3, 256, 128, 2, 0, 1, 1, 4, 0}, {3, 128, 64, 2, 0, 1, 1, 2, 1}});
}

TEST(WgmmaConvCompile, ClustersSharingDyCompileWithoutSpills) {
  const auto cands = expect_variants_compile(wgmma_conv_cluster_problems, wgmma_conv_cluster_candidates, 12);
  ASSERT_EQ(cands.size(), 12u);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  // Forward passes, input gradients and a cluster wider than a tile's dy boxes are refused.
  const Problem fwd{wgmma_conv(DataType::BF16, DataType::BF16, 2, 512, 28, 28, 256, 3, 3, 1, 1, 1, 1)};
  EXPECT_TRUE(refuses(cands[2], as_wgrad(fwd), dev, {{"BM", 64}, {"CONSUMERS", 1}}));
  ConvProblem dg = fwd.conv();
  dg.direction = ConvDirection::BackwardData;
  EXPECT_TRUE(refuses(cands[2], Problem{dg}, dev));
  EXPECT_FALSE(refuses(cands[2], Problem{dg}, dev, {{"CLUSTERN", 1}}));
  EXPECT_TRUE(refuses(cands[2], fwd, dev));
  EXPECT_FALSE(refuses(cands[2], fwd, dev, {{"CLUSTERN", 1}}));
  EXPECT_FALSE(refuses(cands[2], as_wgrad(fwd), dev));
}

// SWAP 1 and 2 (channels as wgmma's M; 2: the epilogue's chunks staged by all four warps): 64-channel
// outputs (fwd K = 64, dgrad C = 64) with partial pixel tiles, 128 channels of a 5x5 with a partial
// chunk (C = 48: two m64 of channels), a strided dgrad by its phases, fp32 output; cooperative
// consumers of 64 and 128 pixels, one of 256, ping-pong of 128, split-K. For the compile test and the
// GPU sample.
std::vector<Problem> wgmma_conv_swap_problems() {
  using D = DataType;
  constexpr ConvDirection DG = ConvDirection::BackwardData;
  return {wgmma_conv(D::BF16, D::BF16, 2, 64, 20, 20, 64, 3, 3, 1, 1, 1, 1),
          wgmma_conv(D::F16, D::F32, 2, 64, 19, 17, 128, 3, 3, 1, 1, 1, 1, 1, 1, DG),
          wgmma_conv(D::BF16, D::BF16, 2, 48, 17, 17, 128, 5, 5, 1, 1, 2, 2),
          wgmma_conv(D::BF16, D::BF16, 4, 64, 16, 16, 64, 3, 3, 2, 2, 1, 1, 1, 1, DG)};
}
std::vector<tuner::Candidate> wgmma_conv_swap_candidates(const std::vector<Problem>& ps, const gpu::DeviceInfo& dev) {
  std::vector<tuner::Candidate> out;
  for (int swap : {1, 2}) {
    const auto some = conv_rows("wgmma_conv", ps, dev,
        {{"STAGES", 4}, {"SWAP", swap}},
        {"BM", "BN", "CONSUMERS", "PINGPONG", "SPLITK", "PHASE"},
        {{0, 256, 64, 2, 0, 1, 0}, {0, 256, 64, 1, 0, 1, 0}, {0, 128, 64, 2, 1, 1, 0}, {1, 128, 64, 2, 0, 2, 0},
         {1, 256, 64, 2, 0, 1, 0}, {2, 128, 128, 2, 0, 1, 0}, {2, 256, 128, 2, 0, 1, 0}, {3, 256, 64, 2, 0, 1, 1}});
    out.insert(out.end(), some.begin(), some.end());
  }
  return out;
}

// BN 160 (fwd, dgrad): tiles across 144-160 channels. A forward pass of 144 output channels (one tile
// column, its last 16 past K) and of 304 (a second column starting at 160), an input gradient of a 1x1 of
// 144 channels (MobileNet's shape, its filters' third 64-channel box mostly past C), fp16 -> fp32 of 304
// through a 3x3, split-K on one, 256 x 160 tiles (160 accumulators a thread) on two.
std::vector<Problem> wgmma_conv_bn160_problems() {
  using D = DataType;
  constexpr ConvDirection DG = ConvDirection::BackwardData;
  return {wgmma_conv(D::BF16, D::BF16, 2, 64, 15, 13, 144, 3, 3, 1, 1, 1, 1),
          wgmma_conv(D::F16, D::F16, 2, 72, 11, 9, 304, 1, 1, 1, 1, 0, 0),
          wgmma_conv(D::BF16, D::BF16, 4, 144, 20, 19, 24, 1, 1, 1, 1, 0, 0, 1, 1, DG),
          wgmma_conv(D::F16, D::F32, 2, 304, 9, 11, 128, 3, 3, 1, 1, 1, 1, 1, 1, DG)};
}
std::vector<tuner::Candidate> wgmma_conv_bn160_candidates(const std::vector<Problem>& ps, const gpu::DeviceInfo& dev) {
  return conv_rows("wgmma_conv", ps, dev,
      {{"BN", 160}, {"PINGPONG", 0}, {"PHASE", 0}, {"SWAP", 0}, {"SCHED", 0}},
      {"BM", "CONSUMERS", "SPLITK", "STAGES"},
      {{0, 128, 2, 1, 4}, {0, 64, 1, 1, 4}, {0, 256, 2, 1, 3}, {1, 128, 2, 1, 4}, {2, 128, 2, 1, 4}, {2, 64, 1, 1, 4},
       {2, 256, 2, 1, 3}, {3, 128, 2, 1, 4}, {3, 128, 2, 2, 4}});
}

TEST(WgmmaConvCompile, OneHundredSixtyChannelTilesCompileWithoutSpills) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = wgmma_conv_bn160_problems();
  const auto cands = wgmma_conv_bn160_candidates(ps, dev);
  ASSERT_EQ(cands.size(), 9u);
  // Not for wgrad (its tile columns are 64-column taps), nor swapped.
  EXPECT_TRUE(refuses(cands[0], as_wgrad(ps[0]), dev));
  EXPECT_TRUE(refuses(cands[0], ps[0], dev, {{"SWAP", 1}}));
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  expect_no_spills(*compiler, cands, ps, dev, 16);
}

// EPI 1 (the warps' TMA stores): every direction; bf16 and fp16; tiles of 64-256 columns and 160 across
// one tile column; edges in M and N inside a warp's rows and a 64-column group; one and two m64 per
// consumer, ping-pong, split-K and stream-K before the epilogue; several tiles a CTA.
std::vector<Problem> wgmma_conv_warp_store_problems() {
  using D = DataType;
  constexpr ConvDirection DG = ConvDirection::BackwardData, WG = ConvDirection::BackwardFilter;
  return {wgmma_conv(D::BF16, D::BF16, 2, 64, 15, 13, 200, 3, 3, 1, 1, 1, 1),
          wgmma_conv(D::F16, D::F16, 4, 144, 20, 19, 24, 1, 1, 1, 1, 0, 0, 1, 1, DG),
          wgmma_conv(D::BF16, D::BF16, 2, 128, 9, 11, 72, 3, 3, 1, 1, 1, 1, 1, 1, DG),
          wgmma_conv(D::BF16, D::BF16, 8, 128, 28, 28, 136, 3, 3, 1, 1, 1, 1, 1, 1, WG)};
}
std::vector<tuner::Candidate> wgmma_conv_warp_store_candidates(const std::vector<Problem>& ps,
                                                               const gpu::DeviceInfo& dev) {
  return conv_rows("wgmma_conv", ps, dev,
      {{"PHASE", 0}, {"SWAP", 0}, {"EPI", 1}},
      {"BM", "BN", "CONSUMERS", "PINGPONG", "SPLITK", "SCHED", "STAGES"},
      {{0, 128, 128, 2, 0, 1, 0, 4}, {0, 64, 256, 1, 0, 1, 0, 4}, {0, 128, 64, 2, 1, 1, 0, 4},
       {1, 256, 160, 2, 0, 1, 0, 3}, {1, 128, 192, 2, 0, 1, 0, 4}, {1, 128, 128, 1, 0, 1, 0, 4},
       {2, 128, 128, 2, 0, 2, 0, 4}, {2, 256, 64, 2, 0, 1, 0, 3}, {3, 128, 128, 2, 0, 4, 0, 4},
       {3, 128, 64, 2, 0, 1, 1, 4}});
}

// EPI 2 (the warps' own 16-byte stores): every direction and stride-2 input gradients by their phases (odd
// sizes: phases of unequal pixels, tiles ending inside a phase); bf16 and fp16; N past a 64-column group and
// past the tile (BN 160 over two tile columns of 200 channels, and over one of 144), 192 columns over 144;
// one and two m64 per consumer, ping-pong, split-K and stream-K before the epilogue.
std::vector<Problem> wgmma_conv_warp_vector_problems() {
  using D = DataType;
  constexpr ConvDirection DG = ConvDirection::BackwardData;
  std::vector<Problem> ps = wgmma_conv_warp_store_problems();  // EPI 1's four, then two with phases
  ps.push_back(wgmma_conv(D::BF16, D::BF16, 4, 128, 27, 29, 136, 3, 3, 2, 2, 1, 1, 1, 1, DG));
  ps.push_back(wgmma_conv(D::F16, D::F16, 3, 64, 14, 14, 64, 3, 3, 2, 2, 1, 1, 1, 1, DG));
  return ps;
}
std::vector<tuner::Candidate> wgmma_conv_warp_vector_candidates(const std::vector<Problem>& ps,
                                                                const gpu::DeviceInfo& dev) {
  return conv_rows("wgmma_conv", ps, dev,
      {{"SWAP", 0}, {"HALO", 0}, {"EPI", 2}},
      {"BM", "BN", "CONSUMERS", "PINGPONG", "SPLITK", "SCHED", "STAGES", "PHASE"},
      {{0, 128, 128, 2, 0, 1, 0, 4, 0}, {0, 128, 160, 2, 0, 1, 0, 3, 0}, {1, 256, 160, 2, 0, 1, 0, 3, 0},
       {1, 128, 192, 2, 0, 1, 0, 4, 0}, {1, 128, 64, 2, 1, 1, 0, 4, 0}, {2, 128, 128, 1, 0, 1, 0, 4, 0},
       {2, 64, 128, 2, 1, 1, 0, 4, 0}, {3, 128, 128, 2, 0, 4, 0, 4, 0}, {3, 128, 64, 2, 0, 1, 1, 4, 0},
       {4, 128, 128, 2, 0, 1, 0, 4, 1}, {4, 64, 128, 2, 1, 1, 0, 4, 1}, {5, 128, 64, 1, 0, 1, 0, 4, 1},
       {5, 256, 64, 2, 0, 1, 0, 3, 1}});
}

// HALO 1 (a patch of input rows a tile, each tap's A a descriptor into it): forward and stride-1 input
// gradients; 5x5 filters of 48 channels (a chunk's zero fill), 96 channels (a second, partial chunk), a
// valid 3x3 input gradient of 40 output channels (its dy padded by two), several images, tiles running
// past an image's last pixel, patches of 9 to 122 pixels a row; BM 64-256, one and two consumers, BN
// 64 and 128 (N past the tile), bf16, fp16 and an fp32 output; ping-pong consumers (a patch buffer
// each) on the 5x5 forward and the valid input gradient.
std::vector<Problem> wgmma_conv_halo_problems() {
  using D = DataType;
  constexpr ConvDirection DG = ConvDirection::BackwardData;
  return {wgmma_conv(D::BF16, D::BF16, 3, 48, 13, 11, 64, 5, 5, 1, 1, 2, 2),
          wgmma_conv(D::BF16, D::BF16, 2, 48, 12, 17, 64, 5, 5, 1, 1, 2, 2, 1, 1, DG),
          wgmma_conv(D::F16, D::F16, 2, 96, 9, 20, 72, 3, 3, 1, 1, 1, 1),
          wgmma_conv(D::BF16, D::BF16, 3, 64, 14, 14, 40, 3, 3, 1, 1, 0, 0, 1, 1, DG),
          wgmma_conv(D::BF16, D::F32, 2, 64, 7, 7, 128, 3, 3, 1, 1, 1, 1),
          wgmma_conv(D::BF16, D::BF16, 1, 16, 6, 120, 64, 3, 3, 1, 1, 1, 1)};
}
std::vector<tuner::Candidate> wgmma_conv_halo_candidates(const std::vector<Problem>& ps, const gpu::DeviceInfo& dev) {
  return conv_rows("wgmma_conv", ps, dev,
      {{"SPLITK", 1}, {"PHASE", 0}, {"SWAP", 0}, {"SCHED", 0}, {"EPI", 0}, {"HALO", 1}},
      {"BM", "BN", "CONSUMERS", "STAGES", "PINGPONG"},
      {{0, 128, 64, 2, 4, 0}, {0, 256, 64, 2, 4, 0}, {0, 64, 64, 1, 4, 0}, {1, 128, 64, 2, 4, 0},
       {1, 256, 64, 2, 3, 0}, {2, 128, 64, 2, 4, 0}, {2, 128, 128, 2, 4, 0}, {3, 128, 64, 1, 6, 0},
       {4, 128, 128, 2, 4, 0}, {5, 128, 64, 2, 4, 0}, {0, 128, 64, 2, 4, 1}, {3, 64, 64, 2, 8, 1}});
}

TEST(WgmmaConvCompile, HaloPatchesCompileWithoutSpills) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = wgmma_conv_halo_problems();
  const auto cands = wgmma_conv_halo_candidates(ps, dev);
  ASSERT_EQ(cands.size(), 12u);
  // Not for weight gradients, strides, split-K nor the warps' TMA stores; no HALO but 0 and 1.
  EXPECT_TRUE(refuses(cands[0], as_wgrad(ps[0]), dev));
  ConvProblem strided = ps[0].conv();
  strided.stride_h = strided.stride_w = 2;
  EXPECT_TRUE(refuses(cands[0], Problem{strided}, dev));
  for (const auto& [name, value] : std::vector<std::pair<std::string, int>>{{"SPLITK", 2}, {"EPI", 1}, {"HALO", 2}})
    EXPECT_TRUE(refuses(cands[0], ps[0], dev, {{name, value}})) << name;
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  expect_no_spills(*compiler, cands, ps, dev, 16);
}

TEST(WgmmaConvCompile, WarpTmaStoresCompileWithoutSpills) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = wgmma_conv_warp_store_problems();
  const auto cands = wgmma_conv_warp_store_candidates(ps, dev);
  ASSERT_EQ(cands.size(), 10u);
  // Not with SWAP, nor fp32 output, nor BN 160 over several tile columns.
  EXPECT_TRUE(refuses(cands[0], ps[0], dev, {{"SWAP", 1}}));
  ConvProblem f32 = ps[0].conv();
  f32.out_type = DataType::F32;
  EXPECT_TRUE(refuses(cands[0], Problem{f32}, dev));
  EXPECT_TRUE(refuses(cands[0], ps[0], dev, {{"BN", 160}}));  // 200 channels: two tile columns of 160
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  expect_no_spills(*compiler, cands, ps, dev, 16);
}

TEST(WgmmaConvCompile, WarpVectorStoresCompileWithoutSpills) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = wgmma_conv_warp_vector_problems();
  const auto cands = wgmma_conv_warp_vector_candidates(ps, dev);
  ASSERT_EQ(cands.size(), 13u);
  // Not with SWAP, HALO, fp32 output, nor a strided 1x1 input gradient's scattered rows; a strided 3x3's
  // phases, yes, where EPI 1 cannot.
  EXPECT_TRUE(refuses(cands[0], ps[0], dev, {{"SWAP", 1}}));
  EXPECT_TRUE(refuses(cands[0], ps[0], dev, {{"HALO", 1}}));
  ConvProblem f32 = ps[0].conv();
  f32.out_type = DataType::F32;
  EXPECT_TRUE(refuses(cands[0], Problem{f32}, dev));
  ConvProblem scattered = ps[1].conv();
  scattered.stride_h = scattered.stride_w = 2;
  EXPECT_TRUE(refuses(cands[2], Problem{scattered}, dev));
  EXPECT_FALSE(refuses(cands[2], Problem{scattered}, dev, {{"EPI", 0}}));
  EXPECT_TRUE(refuses(cands[9], ps[4], dev, {{"EPI", 1}}));
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  expect_no_spills(*compiler, cands, ps, dev, 16);
}

TEST(WgmmaConvCompile, SwappedOperandsCompileWithoutSpills) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = wgmma_conv_swap_problems();
  const auto cands = wgmma_conv_swap_candidates(ps, dev);
  ASSERT_EQ(cands.size(), 16u);
  // Where SWAP holds: the gradients and 128-channel tiles do not take it.
  EXPECT_TRUE(refuses(cands[0], as_wgrad(ps[0]), dev));
  EXPECT_TRUE(refuses(cands[0], ps[0], dev, {{"BN", 256}}));
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  expect_no_spills(*compiler, cands, ps, dev, 0);
}

TEST(WgmmaConvCompile, DeepSplitKCompilesForSm90a) {
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = wgmma_conv_deep_split_problems();
  const auto cands = wgmma_conv_deep_split_candidates(ps, dev);
  ASSERT_EQ(cands.size(), 5u);
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  // As the sample below: the gradients' split-K variants may keep up to 16 bytes on the stack.
  expect_no_spills(*compiler, cands, ps, dev, 16);
}

TEST(WgmmaConvCompile, NvrtcCompilesASampleForSm90aWithoutSpills) {
  auto compiler = gpu::make_compiler(gpu::BackendKind::Cuda);
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const std::vector<Problem> ps = wgmma_problems();
  auto cands = conv_sample("wgmma_conv", ps, dev, 1);
  ASSERT_GE(cands.size(), ps.size());
  // The sample leans to small tiles: add the largest (two im2col boxes per stage; 256 columns).
  for (auto [bm, bn, pp] : {std::tuple{256, 128, 0}, std::tuple{128, 256, 0}, std::tuple{64, 256, 1}}) {
    tuner::Candidate c = cands.back();
    for (const auto& x : cands)  // of the deep 1x1 forward problem: M = 196, N = 512
      if (x.problem_index == 5) c = x;
    c.solution.params["BM"] = bm, c.solution.params["BN"] = bn, c.solution.params["PINGPONG"] = pp;
    c.solution.params["CONSUMERS"] = 2, c.solution.params["STAGES"] = 3;
    const auto broken = c.tmpl->violation(c.tmpl->variables(c.solution, ps[c.problem_index], dev));
    ASSERT_FALSE(broken) << c.solution.kernel_name() << ": " << *broken;
    cands.push_back(c);
  }
  std::vector<gpu::CompileResult> results(cands.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < cands.size();) {
        gpu::CompileRequest req =
            cands[i].tmpl->compile_request(cands[i].solution, ps[cands[i].problem_index], dev);
        req.options.push_back("--ptxas-options=-v");
        results[i] = compiler->compile(req);
      }
    });
  for (auto& t : pool) t.join();
  const std::string tool = cuobjdump();
  const std::regex regs("Used ([0-9]+) registers"), spill("([0-9]+) bytes spill stores");
  bool pingpong = false, one_consumer = false, split_k = false;
  // The same instance asked for by two problems may come back with one ptxas report between them
  // (an identical NVRTC request): the figures are looked up per instance.
  auto instance = [&](const tuner::Candidate& c) {
    const ConvProblem& cp = ps[c.problem_index].conv();
    return c.solution.kernel_name() + "|" + std::to_string(int(cp.direction)) + "|" + to_string(cp.in_type) + ">" +
           to_string(cp.out_type);
  };
  std::map<std::string, std::pair<std::string, std::string>> figures;  // instance -> (registers, spill bytes)
  for (std::size_t i = 0; i < cands.size(); ++i) {
    std::smatch mr, ms;
    if (std::regex_search(results[i].log, mr, regs) && std::regex_search(results[i].log, ms, spill))
      figures[instance(cands[i])] = {mr[1].str(), ms[1].str()};
  }
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const auto& c = cands[i];
    const gpu::CompileResult& r = results[i];
    const Problem& p = ps[c.problem_index];
    ASSERT_TRUE(r.ok) << c.solution.kernel_name() << " for " << p.key() << "\n" << r.log;
    const auto fig = figures.find(instance(c));
    const bool have = fig != figures.end();
    // The gradients' split-K variants keep a few bytes on the stack (8 of them under NVRTC 13.0);
    // anything more, or a spill anywhere else, is a regression.
    const bool grad_split = p.conv().direction != ConvDirection::Forward && c.solution.params.at("SPLITK") > 1;
    EXPECT_TRUE(have && std::stoi(fig->second.second) <= (grad_split ? 16 : 0))
        << c.solution.kernel_name() << " spills " << (have ? fig->second.second : "?") << " bytes for " << p.key()
        << (have ? "" : "\n" + r.log);
    // ptxas's C7515 warning: wgmma serialised, e.g. by non-wgmma writes to the accumulators.
    EXPECT_EQ(r.log.find("serialized"), std::string::npos) << c.solution.kernel_name() << "\n" << r.log;
    // The kernel's machine code: a rarely run path unrolled once made instances of 290-410 KB, whose
    // warps stalled on instruction fetch (such paths are kept rolled).
    const std::size_t code = tiletune::testing::kernel_code_bytes(r.code);
    EXPECT_GT(code, 0u) << c.solution.kernel_name();
    EXPECT_LE(code, 160u * 1024) << c.solution.kernel_name() << " for " << p.key();
    std::string hgmma = "no cuobjdump";
    if (!tool.empty()) {
      const std::string sass = sass_of(r.code.bytes, tool, "wgmma_conv_" + std::to_string(i));
      EXPECT_NE(sass.find("HGMMA.64x"), std::string::npos) << c.solution.kernel_name() << ": no HGMMA in its SASS";
      EXPECT_NE(sass.find("UTMALDG.4D.IM2COL"), std::string::npos) << c.solution.kernel_name() << ": no im2col TMA";
      hgmma = "HGMMA ok";
    }
    std::printf("%-62s %-52s regs %3s spill %s %s\n", c.solution.kernel_name().c_str(), p.key().substr(5, 52).c_str(),
                have ? fig->second.first.c_str() : "?", have ? fig->second.second.c_str() : "?", hgmma.c_str());
    pingpong = pingpong || c.solution.params.at("PINGPONG") == 1;
    one_consumer = one_consumer || c.solution.params.at("CONSUMERS") == 1;
    split_k = split_k || c.solution.params.at("SPLITK") > 1;
  }
  EXPECT_TRUE(pingpong);
  EXPECT_TRUE(one_consumer);
  EXPECT_TRUE(split_k);
}

// The fake encoders keep what they were given.
struct Recorded {
  int calls = 0;
  CUtensorMapDataType dt{};
  cuuint32_t rank = 0;
  void* base = nullptr;
  cuuint64_t dims[5] = {}, strides[4] = {};
  int lower[3] = {}, upper[3] = {};
  cuuint32_t channels = 0, pixels = 0, box[5] = {}, elem_strides[5] = {};
  CUtensorMapSwizzle swizzle{};
  CUtensorMapFloatOOBfill fill{};
};
Recorded im2col_seen, tiled_seen;

CUresult CUDAAPI fake_im2col(CUtensorMap* map, CUtensorMapDataType dt, cuuint32_t rank, void* base,
                             const cuuint64_t* dims, const cuuint64_t* strides, const int* lower, const int* upper,
                             cuuint32_t channels, cuuint32_t pixels, const cuuint32_t* elem_strides,
                             CUtensorMapInterleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion,
                             CUtensorMapFloatOOBfill fill) {
  Recorded& r = im2col_seen;
  ++r.calls, r.dt = dt, r.rank = rank, r.base = base, r.channels = channels, r.pixels = pixels;
  r.swizzle = swizzle, r.fill = fill;
  for (cuuint32_t i = 0; i < rank; ++i) r.dims[i] = dims[i], r.elem_strides[i] = elem_strides[i];
  for (cuuint32_t i = 0; i + 1 < rank; ++i) r.strides[i] = strides[i];
  for (cuuint32_t i = 0; i + 2 < rank; ++i) r.lower[i] = lower[i], r.upper[i] = upper[i];
  std::memset(map, 0xA1, sizeof *map);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_tiled_wgmma(CUtensorMap* map, CUtensorMapDataType dt, cuuint32_t rank, void* base,
                            const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                            const cuuint32_t* elem_strides, CUtensorMapInterleave, CUtensorMapSwizzle swizzle,
                            CUtensorMapL2promotion, CUtensorMapFloatOOBfill fill) {
  Recorded& r = tiled_seen;
  ++r.calls, r.dt = dt, r.rank = rank, r.base = base, r.swizzle = swizzle, r.fill = fill;
  for (cuuint32_t i = 0; i < rank; ++i) r.dims[i] = dims[i], r.box[i] = box[i], r.elem_strides[i] = elem_strides[i];
  for (cuuint32_t i = 0; i + 1 < rank; ++i) r.strides[i] = strides[i];
  std::memset(map, 0xB2, sizeof *map);
  return CUDA_SUCCESS;
}

TEST(WgmmaConvArguments, EncodesTheIm2colAndFilterMapsFromTheProblem) {
  // N 2, C 128, H 10, W 9, K 72, R 3, S 5, stride (2, 1), pad (1, 2), dilation (1, 2).
  const ConvProblem cp = wgmma_conv(DataType::F16, DataType::F32, 2, 128, 10, 9, 72, 3, 5, 2, 1, 1, 2, 1, 2);
  alignas(16) static std::uint8_t x[16], w[16], y[16];
  const TtConvParams p = ops::conv_arguments(cp.canonical(), x, w, y);
  im2col_seen = tiled_seen = Recorded();
  const auto bytes = gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::Forward, DataType::F16, 256, 128);
  ASSERT_EQ(bytes.size(), sizeof(TtConvTmaParams));
  TtConvTmaParams args;
  std::memcpy(&args, bytes.data(), sizeof args);
  EXPECT_EQ(reinterpret_cast<const std::uint8_t*>(&args.map_im2col)[0], 0xA1);
  EXPECT_EQ(reinterpret_cast<const std::uint8_t*>(&args.map_tiled)[0], 0xB2);
  EXPECT_EQ(std::memcmp(&args.c, &p, sizeof p), 0);

  const Recorded& a = im2col_seen;
  ASSERT_EQ(a.calls, 1);
  EXPECT_EQ(a.dt, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(a.rank, 4u);
  EXPECT_EQ(a.base, x);
  EXPECT_EQ(a.dims[0], 128u);
  EXPECT_EQ(a.dims[1], 9u);
  EXPECT_EQ(a.dims[2], 10u);
  EXPECT_EQ(a.dims[3], 2u);
  EXPECT_EQ(a.strides[0], 256u);
  EXPECT_EQ(a.strides[1], 9u * 256);
  EXPECT_EQ(a.strides[2], 10u * 9 * 256);
  EXPECT_EQ(a.lower[0], -2);
  EXPECT_EQ(a.lower[1], -1);  // {W, H}: -pad
  EXPECT_EQ(a.upper[0], 2 - 2 * 4);
  EXPECT_EQ(a.upper[1], 1 - 1 * 2);  // pad - dil * (extent - 1)
  EXPECT_EQ(a.channels, 64u);   // one 128-byte swizzle atom
  EXPECT_EQ(a.pixels, 128u);    // BM 256 takes two copies of 128 pixels
  EXPECT_EQ(a.elem_strides[1], 1u);
  EXPECT_EQ(a.elem_strides[2], 2u);  // traversal stride {W, H}
  EXPECT_EQ(a.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(a.fill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);  // zeros in the padding

  const Recorded& b = tiled_seen;
  ASSERT_EQ(b.calls, 1);
  EXPECT_EQ(b.base, w);
  EXPECT_EQ(b.dims[0], 3u * 5 * 128);
  EXPECT_EQ(b.dims[1], 72u);
  EXPECT_EQ(b.strides[0], 3u * 5 * 128 * 2);
  EXPECT_EQ(b.box[0], 64u);
  EXPECT_EQ(b.box[1], 128u);
  EXPECT_EQ(b.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);

  // C = 96: the filters as {C, R*S, K} boxes of one tap, so that a tap's second chunk reads zeros
  // past C instead of the next tap's channels.
  TtConvParams c96 = p;
  c96.c = 96;
  gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, c96, ConvDirection::Forward, DataType::F16, 256, 128);
  EXPECT_EQ(tiled_seen.dims[0], 96u);
  EXPECT_EQ(tiled_seen.dims[1], 3u * 5);
  EXPECT_EQ(tiled_seen.dims[2], 72u);
  EXPECT_EQ(tiled_seen.box[0], 64u);
  EXPECT_EQ(tiled_seen.box[1], 1u);
  EXPECT_EQ(tiled_seen.box[2], 128u);
  // A 64-row tile copies 64 pixels at a time.
  gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::Forward, DataType::F16, 64, 64);
  EXPECT_EQ(im2col_seen.pixels, 64u);
  // Refused: unaligned x, channels off 16-byte rows, fp32 inputs.
  TtConvParams off = p;
  off.x = x + 2;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, off, ConvDirection::Forward, DataType::F16, 128, 128), Error);
  off = p;
  off.c = 20;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, off, ConvDirection::Forward, DataType::F16, 128, 128), Error);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::Forward, DataType::F32, 128, 128), Error);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(nullptr, fake_tiled_wgmma, p, ConvDirection::Forward, DataType::F16, 128, 128), Error);
}

// The gradients' maps: dgrad gathers dy on x's pixel grid with padding dil (R - 1) - pad and reads
// the filters as {C, R*S, K} boxes of one tap; wgrad gathers x 64 pixels at a time and reads dy as
// an N*P*Q x K matrix. Stride-2 dgrad and a wgrad tile straddling two taps are refused.
TEST(WgmmaConvArguments, EncodesTheGradientsMaps) {
  const ConvProblem fwd = wgmma_conv(DataType::BF16, DataType::BF16, 2, 128, 10, 9, 128, 3, 5, 1, 1, 1, 2, 1, 2);
  alignas(16) static std::uint8_t x[16], w[16], y[16];
  const TtConvParams p = ops::conv_arguments(fwd.canonical(), x, w, y);  // P 10, Q 9 - 8 + 4 = 5
  ASSERT_EQ(p.p, 10);
  ASSERT_EQ(p.q, 5);
  im2col_seen = tiled_seen = Recorded();
  gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardData, DataType::BF16, 128, 128);
  EXPECT_EQ(im2col_seen.base, y);
  EXPECT_EQ(im2col_seen.dims[0], 128u);  // dy: {K, Q, P, N}
  EXPECT_EQ(im2col_seen.dims[1], 5u);
  EXPECT_EQ(im2col_seen.dims[2], 10u);
  EXPECT_EQ(im2col_seen.lower[0], -(2 * 4 - 2));  // -(dil (S - 1) - pad)
  EXPECT_EQ(im2col_seen.lower[1], -(1 * 2 - 1));
  EXPECT_EQ(im2col_seen.upper[0], -2);  // -pad
  EXPECT_EQ(im2col_seen.upper[1], -1);
  EXPECT_EQ(im2col_seen.elem_strides[1], 1u);
  EXPECT_EQ(tiled_seen.base, w);
  EXPECT_EQ(tiled_seen.dims[0], 128u);  // {C, R*S, K}
  EXPECT_EQ(tiled_seen.dims[1], 15u);
  EXPECT_EQ(tiled_seen.dims[2], 128u);
  EXPECT_EQ(tiled_seen.strides[0], 128u * 2);
  EXPECT_EQ(tiled_seen.strides[1], 15u * 128 * 2);
  EXPECT_EQ(tiled_seen.box[0], 64u);
  EXPECT_EQ(tiled_seen.box[1], 1u);
  EXPECT_EQ(tiled_seen.box[2], 64u);

  gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardFilter, DataType::BF16, 128, 128);
  EXPECT_EQ(im2col_seen.base, x);
  EXPECT_EQ(im2col_seen.dims[0], 128u);  // x: {C, W, H, N}
  EXPECT_EQ(im2col_seen.pixels, 64u);    // one K step of output pixels per copy
  EXPECT_EQ(im2col_seen.lower[0], -2);
  EXPECT_EQ(tiled_seen.base, y);
  EXPECT_EQ(tiled_seen.dims[0], 128u);  // dy: {K, N*P*Q}
  EXPECT_EQ(tiled_seen.dims[1], 2u * 10 * 5);
  EXPECT_EQ(tiled_seen.box[0], 64u);
  EXPECT_EQ(tiled_seen.box[1], 64u);

  TtConvParams s2 = p;
  s2.stride_h = 2;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, s2, ConvDirection::BackwardData,
                                                    DataType::BF16, 128, 128), Error);
  TtConvParams c96 = p;
  c96.c = 96;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, c96, ConvDirection::BackwardFilter,
                                                    DataType::BF16, 128, 128), Error);
  // A 1x1 with stride 2 and no padding is scattered: dy's own pixel grid, no padding.
  TtConvParams one = p;
  one.r = one.s = 1, one.pad_h = one.pad_w = 0, one.stride_h = one.stride_w = 2, one.p = 5, one.q = 5;
  gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, one, ConvDirection::BackwardData, DataType::BF16, 128, 128);
  EXPECT_EQ(im2col_seen.dims[1], 5u);
  EXPECT_EQ(im2col_seen.lower[0], 0);
  EXPECT_EQ(im2col_seen.upper[0], 0);
  EXPECT_EQ(im2col_seen.elem_strides[1], 1u);
}

// A strided dgrad by its phases (PHASE 1): one im2col map over dy walking a phase's grid at stride 1
// (3x3, stride 2, pad 1, 11 x 9 -> dy 6 x 5: grids of 6 x 5, lower corner 0, upper 0 and 0).
TEST(WgmmaConvArguments, EncodesThePhasesMapOfAStridedDgrad) {
  const ConvProblem cp = wgmma_conv(DataType::BF16, DataType::BF16, 2, 64, 11, 9, 128, 3, 3, 2, 2, 1, 1, 1, 1,
                                    ConvDirection::BackwardData);
  alignas(16) static std::uint8_t x[16], w[16], y[16];
  const TtConvParams p = ops::conv_arguments(cp.canonical(), x, w, y);
  ASSERT_EQ(p.p, 6);
  ASSERT_EQ(p.q, 5);
  im2col_seen = tiled_seen = Recorded();
  gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardData, DataType::BF16,
                                       128, 64, 1);
  EXPECT_EQ(im2col_seen.base, y);
  EXPECT_EQ(im2col_seen.dims[1], 5u);  // dy: {K, Q, P, N}
  EXPECT_EQ(im2col_seen.dims[2], 6u);
  EXPECT_EQ(im2col_seen.lower[0], 0);
  EXPECT_EQ(im2col_seen.lower[1], 0);
  EXPECT_EQ(im2col_seen.upper[0], 0);  // ceil(9 / 2) - Q + lower
  EXPECT_EQ(im2col_seen.upper[1], 0);  // ceil(11 / 2) - P + lower
  EXPECT_EQ(im2col_seen.elem_strides[1], 1u);
  EXPECT_EQ(im2col_seen.elem_strides[2], 1u);
  EXPECT_EQ(tiled_seen.dims[1], 9u);  // the filters {C, R*S, K}
  // Without padding the phases read one row and column before their grid: lower corner -1.
  TtConvParams valid = p;
  valid.pad_h = valid.pad_w = 0, valid.p = 5, valid.q = 4;
  gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, valid, ConvDirection::BackwardData,
                                       DataType::BF16, 128, 64, 1);
  EXPECT_EQ(im2col_seen.lower[0], -1);
  EXPECT_EQ(im2col_seen.upper[0], 5 - 4 - 1);
  EXPECT_EQ(im2col_seen.lower[1], -1);
  EXPECT_EQ(im2col_seen.upper[1], 6 - 5 - 1);
  // Refused: PHASE on a forward pass, a dilated filter, a filter narrower than the stride.
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::Forward,
                                                    DataType::BF16, 128, 64, 1), Error);
  TtConvParams dilated = p;
  dilated.dil_h = 2;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, dilated, ConvDirection::BackwardData,
                                                    DataType::BF16, 128, 64, 1), Error);
  TtConvParams narrow = p;
  narrow.r = narrow.s = 1, narrow.pad_h = narrow.pad_w = 0;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, narrow, ConvDirection::BackwardData,
                                                    DataType::BF16, 128, 64, 1), Error);
}

// EPI 1: map_out over the output as gemm_m rows of gemm_n elements, box {64, 16} (a warp's 16 rows of a
// 64-column group), 128-byte swizzle; the last map encoded. Without EPI 1 map_out stays zero. Refused: an
// fp32 output, a strided dgrad (scattered rows), an EPI the template lacks.
TEST(WgmmaConvArguments, EncodesTheOutputMapOfTheWarpsTmaStores) {
  const ConvProblem cp = wgmma_conv(DataType::BF16, DataType::BF16, 2, 144, 10, 9, 24, 1, 1, 1, 1, 0, 0, 1, 1,
                                    ConvDirection::BackwardData);
  alignas(16) static std::uint8_t x[16], w[16], y[16];
  const TtConvParams p = ops::conv_arguments(cp.canonical(), x, w, y);
  im2col_seen = tiled_seen = Recorded();
  auto bytes = gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardData,
                                                    DataType::BF16, 256, 160, 0, 1, DataType::BF16);
  TtConvTmaParams args;
  std::memcpy(&args, bytes.data(), sizeof args);
  EXPECT_EQ(reinterpret_cast<const std::uint8_t*>(&args.map_out)[0], 0xB2);
  EXPECT_EQ(tiled_seen.calls, 2);
  EXPECT_EQ(tiled_seen.base, x);  // dx
  EXPECT_EQ(tiled_seen.dt, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(tiled_seen.dims[0], 144u);
  EXPECT_EQ(tiled_seen.dims[1], 2u * 10 * 9);
  EXPECT_EQ(tiled_seen.strides[0], 144u * 2);
  EXPECT_EQ(tiled_seen.box[0], 64u);
  EXPECT_EQ(tiled_seen.box[1], 16u);
  EXPECT_EQ(tiled_seen.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  // The forward pass of fp16 stores y; a weight gradient dW (K rows of R*S*C).
  const ConvProblem fwd = wgmma_conv(DataType::F16, DataType::F16, 2, 64, 10, 9, 96, 3, 3, 1, 1, 1, 1);
  const TtConvParams pf = ops::conv_arguments(fwd.canonical(), x, w, y);
  gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, pf, ConvDirection::Forward, DataType::F16, 128,
                                       128, 0, 1, DataType::F16);
  EXPECT_EQ(tiled_seen.base, y);
  EXPECT_EQ(tiled_seen.dt, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(tiled_seen.dims[0], 96u);
  ConvProblem wg = fwd;
  wg.direction = ConvDirection::BackwardFilter;
  const TtConvParams pw = ops::conv_arguments(wg.canonical(), x, w, y);
  gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, pw, ConvDirection::BackwardFilter,
                                       DataType::F16, 128, 128, 0, 1, DataType::F16);
  EXPECT_EQ(tiled_seen.base, w);
  EXPECT_EQ(tiled_seen.dims[0], 3u * 3 * 64);
  EXPECT_EQ(tiled_seen.dims[1], 96u);
  bytes = gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardData,
                                               DataType::BF16, 256, 160);
  std::memcpy(&args, bytes.data(), sizeof args);
  EXPECT_EQ(reinterpret_cast<const std::uint8_t*>(&args.map_out)[0], 0);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardData,
                                                    DataType::BF16, 256, 160, 0, 1, DataType::F32), Error);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardData,
                                                    DataType::BF16, 256, 160, 0, 3, DataType::BF16), Error);
  TtConvParams s2 = p;
  s2.stride_h = s2.stride_w = 2, s2.p = 5, s2.q = 5;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, s2, ConvDirection::BackwardData,
                                                    DataType::BF16, 128, 128, 0, 1, DataType::BF16), Error);
  TtConvParams wide = p;  // 304 channels: two tile columns of 160
  wide.c = wide.gemm_n = 304;
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, wide, ConvDirection::BackwardData,
                                                    DataType::BF16, 256, 160, 0, 1, DataType::BF16), Error);
}

// HALO 1: map_im2col holds a tiled map over x (dgrad: dy), box {64 channels, output width + S - 1, the
// patch's rows, 1 image}, 128-byte swizzle; no im2col map. Refused: a weight gradient, a stride, a
// patch wider than 256 pixels, EPI 1.
Recorded tiled_first;
CUresult CUDAAPI fake_tiled_first(CUtensorMap* map, CUtensorMapDataType dt, cuuint32_t rank, void* base,
                                  const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                  const cuuint32_t* elem_strides, CUtensorMapInterleave il, CUtensorMapSwizzle swizzle,
                                  CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill) {
  const bool first = tiled_seen.calls == 0;
  fake_tiled_wgmma(map, dt, rank, base, dims, strides, box, elem_strides, il, swizzle, l2, fill);
  if (first) tiled_first = tiled_seen;
  return CUDA_SUCCESS;
}
TEST(WgmmaConvArguments, EncodesTheHaloPatchMap) {
  // dgrad of a 5x5 of 48 channels, pad 2, on 12 x 17: dy (K 64) padded by 2, patch 17 + 4 = 21 wide.
  const ConvProblem cp = wgmma_conv(DataType::BF16, DataType::BF16, 2, 48, 12, 17, 64, 5, 5, 1, 1, 2, 2, 1, 1,
                                    ConvDirection::BackwardData);
  alignas(16) static std::uint8_t x[16], w[16], y[16];
  const TtConvParams p = ops::conv_arguments(cp.canonical(), x, w, y);
  im2col_seen = tiled_seen = tiled_first = Recorded();
  const auto bytes = gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_first, p, ConvDirection::BackwardData,
                                                          DataType::BF16, 128, 64, 0, 0, DataType::BF16, 1);
  TtConvTmaParams args;
  std::memcpy(&args, bytes.data(), sizeof args);
  EXPECT_EQ(im2col_seen.calls, 0);
  EXPECT_EQ(tiled_seen.calls, 2);
  EXPECT_EQ(reinterpret_cast<const std::uint8_t*>(&args.map_im2col)[0], 0xB2);
  EXPECT_EQ(tiled_first.base, y);  // dy
  EXPECT_EQ(tiled_first.rank, 4u);
  EXPECT_EQ(tiled_first.dims[0], 64u);
  EXPECT_EQ(tiled_first.dims[1], 17u);
  EXPECT_EQ(tiled_first.dims[2], 12u);
  EXPECT_EQ(tiled_first.dims[3], 2u);
  EXPECT_EQ(tiled_first.strides[0], 64u * 2);
  EXPECT_EQ(tiled_first.strides[1], 17u * 64 * 2);
  EXPECT_EQ(tiled_first.box[0], 64u);
  EXPECT_EQ(tiled_first.box[1], 21u);
  EXPECT_EQ(tiled_first.box[2], (128u + 19) / 21 + 5);  // rows a 128-pixel tile's pixels and the filter reach
  EXPECT_EQ(tiled_first.box[3], 1u);
  EXPECT_EQ(tiled_first.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  ConvProblem wg = cp;
  wg.direction = ConvDirection::BackwardFilter;
  const TtConvParams pw = ops::conv_arguments(wg.canonical(), x, w, y);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, pw, ConvDirection::BackwardFilter,
                                                    DataType::BF16, 128, 64, 0, 0, DataType::BF16, 1), Error);
  const ConvProblem s2 = wgmma_conv(DataType::BF16, DataType::BF16, 2, 48, 12, 17, 64, 3, 3, 2, 2, 1, 1);
  const TtConvParams ps2 = ops::conv_arguments(s2.canonical(), x, w, y);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, ps2, ConvDirection::Forward,
                                                    DataType::BF16, 128, 64, 0, 0, DataType::BF16, 1), Error);
  const ConvProblem wide = wgmma_conv(DataType::BF16, DataType::BF16, 1, 48, 4, 300, 64, 3, 3, 1, 1, 1, 1);
  const TtConvParams pwide = ops::conv_arguments(wide.canonical(), x, w, y);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, pwide, ConvDirection::Forward,
                                                    DataType::BF16, 128, 64, 0, 0, DataType::BF16, 1), Error);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardData,
                                                    DataType::BF16, 128, 64, 0, 1, DataType::BF16, 1), Error);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardData,
                                                    DataType::BF16, 128, 64, 0, 0, DataType::BF16, 2), Error);  // no HALO 2
}

// EPI 2 stores from the threads: no output map; 16-bit outputs, a strided dgrad only by its phases.
TEST(WgmmaConvArguments, WarpVectorStoresNeedNoMap) {
  alignas(16) static std::uint8_t x[16], w[16], y[16];
  const ConvProblem s2 = wgmma_conv(DataType::BF16, DataType::BF16, 2, 64, 14, 14, 64, 3, 3, 2, 2, 1, 1, 1, 1,
                                    ConvDirection::BackwardData);
  const TtConvParams p = ops::conv_arguments(s2.canonical(), x, w, y);
  im2col_seen = tiled_seen = Recorded();
  EXPECT_NO_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardData,
                                                       DataType::BF16, 128, 64, 1, 2, DataType::BF16, 0));
  EXPECT_EQ(tiled_seen.calls, 1);  // the filters' map alone
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, p, ConvDirection::BackwardData,
                                                    DataType::BF16, 128, 64, 1, 2, DataType::F32, 0), Error);
  const ConvProblem s1x1 = wgmma_conv(DataType::BF16, DataType::BF16, 2, 64, 14, 14, 64, 1, 1, 2, 2, 0, 0, 1, 1,
                                      ConvDirection::BackwardData);
  const TtConvParams q = ops::conv_arguments(s1x1.canonical(), x, w, y);
  EXPECT_NO_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, q, ConvDirection::BackwardData,
                                                       DataType::BF16, 128, 64, 0, 0, DataType::BF16, 0));
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, q, ConvDirection::BackwardData,
                                                    DataType::BF16, 128, 64, 0, 2, DataType::BF16, 0), Error);
  EXPECT_THROW(gpu::cuda::encode_tma_conv_arguments(fake_im2col, fake_tiled_wgmma, q, ConvDirection::BackwardData,
                                                    DataType::BF16, 128, 64, 0, 3, DataType::BF16, 0), Error);
}

// The runtime serves wgmma_conv on the TMA loads' two tensors on 16 bytes (dgrad: dy and w), and EPI 1
// and 2, which store the third by TMA or in 16-byte vectors, only with all three there.
TEST(WgmmaConvArguments, TheWarpsTmaStoreNeedsTheOutputOn16Bytes) {
  const ops::Operation& op = ops::operation(ProblemKind::Conv);
  const KernelTemplate& t = find_template("wgmma_conv");
  const gpu::DeviceInfo dev = fake_device(gpu::BackendKind::Cuda);
  const Problem p(wgmma_conv(DataType::BF16, DataType::BF16, 2, 144, 10, 9, 24, 1, 1, 1, 1, 0, 0, 1, 1,
                             ConvDirection::BackwardData));
  alignas(16) static char memory[64];
  const ops::Pointers dx_off = {memory + 2, memory + 16, memory + 32};  // x (dx here) off 16 bytes
  Solution staged = t.default_solution(), warps = staged;
  warps.params["EPI"] = 1;
  Solution vectors = staged;
  vectors.params["EPI"] = 2;  // the warps' 16-byte stores
  EXPECT_TRUE(op.admits(t, staged, p, dx_off, dev));
  EXPECT_FALSE(op.admits(t, warps, p, dx_off, dev));
  EXPECT_FALSE(op.admits(t, vectors, p, dx_off, dev));
  const ops::Pointers aligned = {memory, memory + 16, memory + 32};
  EXPECT_TRUE(op.admits(t, warps, p, aligned, dev));
  EXPECT_TRUE(op.admits(t, vectors, p, aligned, dev));
}

TEST(WgmmaConvGpu, SampleMatchesTheReference) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  if (dev->info().compute_capability != 90) GTEST_SKIP() << "wgmma_conv needs sm_90";
  const std::vector<Problem> ps = wgmma_problems();
  const auto cands = conv_sample("wgmma_conv", ps, dev->info(), 6);
  ASSERT_GE(cands.size(), ps.size());
  std::printf("%zu candidates validated\n", validate_conv_candidates(*dev, cands, ps));
}

// The sample compute-sanitizer's racecheck and memcheck run (scripts/h200_grad_probes.sh): one
// candidate a problem.
TEST(WgmmaConvGpu, SanitizerSample) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  if (dev->info().compute_capability != 90) GTEST_SKIP() << "wgmma_conv needs sm_90";
  const std::vector<Problem> ps = wgmma_problems();
  EXPECT_GE(validate_conv_candidates(*dev, conv_sample("wgmma_conv", ps, dev->info(), 1), ps), ps.size());
}

// A sample of chosen variants (`candidates` of `problems`, built for the device): all `count` of them
// valid against the reference. Small enough for compute-sanitizer. Skipped without an sm_90 device, and
// off 132 multiprocessors where the sample is sized for them.
void expect_variants_valid(std::vector<Problem> (*problems)(),
                           std::vector<tuner::Candidate> (*candidates)(const std::vector<Problem>&, const gpu::DeviceInfo&),
                           std::size_t count, bool sized_for_132 = false) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  if (dev->info().compute_capability != 90) GTEST_SKIP() << "wgmma_conv needs sm_90";
  if (sized_for_132 && dev->info().multiprocessors != 132) GTEST_SKIP() << "the sample is sized for 132 multiprocessors";
  const std::vector<Problem> ps = problems();
  const auto cands = candidates(ps, dev->info());
  ASSERT_EQ(cands.size(), count);
  EXPECT_EQ(validate_conv_candidates(*dev, cands, ps), cands.size());
}

// Deep split-K: valid twice against the reference, the workspace left zeroed.
TEST(WgmmaConvGpu, DeepSplitKSanitizerSample) {
  expect_variants_valid(wgmma_conv_deep_split_problems, wgmma_conv_deep_split_candidates, 5);
}

// PHASE 1 over several passes of the units: valid twice against the reference.
TEST(WgmmaConvGpu, PhasesOverSeveralPassesSanitizerSample) {
  expect_variants_valid(wgmma_conv_phase_pass_problems, wgmma_conv_phase_pass_candidates, 5, true);
}

// Stream-K: valid against the reference, the workspace's counters and slots left zeroed.
TEST(WgmmaConvGpu, StreamKSanitizerSample) {
  expect_variants_valid(wgmma_conv_stream_k_problems, wgmma_conv_stream_k_candidates, 8, true);
}

// CLUSTERN: valid twice against the reference, stream-K's workspace left zeroed.
TEST(WgmmaConvGpu, ClustersSharingDySanitizerSample) {
  expect_variants_valid(wgmma_conv_cluster_problems, wgmma_conv_cluster_candidates, 12, true);
}

// SWAP 1 and 2: valid twice against the reference.
TEST(WgmmaConvGpu, SwappedOperandsSanitizerSample) {
  expect_variants_valid(wgmma_conv_swap_problems, wgmma_conv_swap_candidates, 16);
}

// BN 160: valid twice against the reference.
TEST(WgmmaConvGpu, OneHundredSixtyChannelTilesSanitizerSample) {
  expect_variants_valid(wgmma_conv_bn160_problems, wgmma_conv_bn160_candidates, 9);
}

// EPI 1 (the warps' TMA stores): valid twice against the reference.
TEST(WgmmaConvGpu, WarpTmaStoreSanitizerSample) {
  expect_variants_valid(wgmma_conv_warp_store_problems, wgmma_conv_warp_store_candidates, 10, true);
}

// EPI 2 (the warps' own 16-byte stores): valid twice against the reference.
TEST(WgmmaConvGpu, WarpVectorStoreSanitizerSample) {
  expect_variants_valid(wgmma_conv_warp_vector_problems, wgmma_conv_warp_vector_candidates, 13, true);
}

// HALO 1 (a patch a tile): valid twice against the reference.
TEST(WgmmaConvGpu, HaloPatchSanitizerSample) {
  expect_variants_valid(wgmma_conv_halo_problems, wgmma_conv_halo_candidates, 12);
}

// A tuned wgmma_conv winner runs the same way in the runtime (tensor maps encoded per call for the
// caller's pointers) as in the sweep that chose it.
TEST(WgmmaConvGpu, SweepThenRuntimeDispatch) {
  if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
  auto dev = gpu::open_device(gpu::BackendKind::Cuda, 0);
  if (dev->info().compute_capability != 90) GTEST_SKIP() << "wgmma_conv needs sm_90";
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tiletune-wgconv-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "wgconv.db").string();
  const std::string json = R"({
    "problems": [{"kind": "conv", "direction": "fwd", "dtype": "bf16", "layout": "NHWC", "n": 4, "c": 128, "h": 14,
                  "w": 13, "k": 192, "r": 3, "s": 3, "stride": 2, "pad": 1, "dilation": 1, "groups": 1}],
    "templates": {"wgmma_conv": {"parameters": {"BM": [128], "BN": [64, 128], "STAGES": [4], "CONSUMERS": [2],
                                                "PINGPONG": [0, 1], "RASTER": [0], "GROUP": [8]}}},
    "benchmark": {"warmup": 1, "min_iterations": 3, "max_iterations": 10, "target_ms": 5}
  })";
  auto config = tuner::parse_config(json, dir.string());
  auto s = cuda_sweep_one_winner(json, dir.string(), db);
  ASSERT_EQ(s.winners.size(), 1u);

  Handle h(db, "cuda");
  ops::ConvInputs data(*dev, config.problems[0].conv(), false);
  const ConvProblem& p = data.problem();
  tiletune_conv_desc_t d;
  tiletune_conv_desc_init(&d, p.n, p.c, p.h, p.w, p.k, p.r, p.s);
  d.stride_h = d.stride_w = 2, d.pad_h = d.pad_w = 1;
  d.in_type = d.out_type = TILETUNE_R_16BF;
  auto v = data.validate([&](const TtConvParams& a) {
    h.conv_forward(d, a.x, a.wt, a.y);
    h.synchronize();
  });
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(h.stats().tuned, 1u);
  fs::remove_all(dir);
}

}  // namespace
