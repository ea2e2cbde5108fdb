// The MFMA GEMM template (kernel_templates/mfma_gemm.cuh + .json), without an AMD GPU:
//  - a host emulation of one macro tile: the kernel's own index functions (mfma_layout.h) stage the
//    operand tiles into emulated LDS and read the MFMA fragments back; an independent model of the
//    MFMA instructions (register layouts from the CDNA ISA) combines them, and every product
//    A(m,k)*B(k,n) of the tile must land exactly once in the right C(m,n);
//  - gfx942's FNUZ reading of OCP fp8 (kernel_templates/mfma_fp8.h) on every byte;
//  - its search space enumerated for a gfx90a-like device (bf16 and fp16, all layouts, odd sizes);
//  - a sample of variants compiled with hipRTC for gfx90a (and the default for gfx908), checked for
//    v_mfma instructions and sane register / LDS metadata.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/backend.h"
#include "gpu/hip/code_object_info.h"
#include "gpu/hip/hip_backend.h"
#include "gpu/hip/traits.h"
#include "kernel_templates/host_types.h"
#include "kernel_templates/mfma_fp8.h"
#include "kernel_templates/mfma_layout.h"
#include "solutions/kernel_template.h"
#include "solutions/gemm_problem.h"
#include "tuner/enumerator.h"
#include "tests/test_util.h"

namespace {

namespace hipb = tiletune::gpu::hip;
using tiletune::DataType;
using tiletune::GemmProblem;
using tiletune::KernelTemplate;
using tiletune::Solution;

// ---------------------------------------------------------------------------------------------
// Host emulation of one macro tile.

struct TileConfig {
  int mt0, mt1, du, wm, wn, mi, kpl, vw, pad;
  bool transa, transb;
  bool split_bf16 = false;  // gfx908 bf16: each instruction issued as two 2-value halves
  int bytes = 2;            // input element size: fragment reads are aligned to min(16, KPL * bytes)
  int frag_align() const { return std::min(16, kpl * bytes); }
};

// The MFMA instructions as the ISA defines them (written independently of mfma_layout.h).
// A (MI x K) operand: lane, slot -> (row, k); B (K x MI): lane, slot -> (k, col);
// D (MI x MI): lane, accumulator r -> (row, col). `vals` values per lane (8 for gfx950's doubled-K
// 16-bit instructions, 4, 2 or 1): lane group l / MI holds k = vals * (l / MI) + slot. (Were the
// hardware's k order within an instruction another one, A and B would see the same permutation of
// k, which leaves every product and sum as it is.)
struct IsaModel {
  int mi, vals;
  int k() const { return (64 / mi) * vals; }
  std::pair<int, int> a(int lane, int slot) const { return {lane % mi, vals * (lane / mi) + slot}; }
  std::pair<int, int> b(int lane, int slot) const { return {vals * (lane / mi) + slot, lane % mi}; }
  std::pair<int, int> d(int lane, int r) const {
    if (mi == 32) return {8 * (r / 4) + 4 * (lane / 32) + (r % 4), lane % 32};  // 16 accumulators
    return {4 * (lane / 16) + r, lane % 16};                                    // 4 accumulators
  }
};

struct Coord {
  int mn = -1, k = -1;
};

// Emulates the kernel's staging of one operand tile into LDS for one K tile. Global tile CONT x STRD
// (as in mfma_gemm.cuh), returns the LDS contents as tile coordinates (mn, k).
std::vector<Coord> stage_tile(int cont, int strd, bool cont_is_k, int vw, int threads, int pitch, int rows,
                              std::string& err) {
  using namespace tt_mfma;
  std::vector<Coord> lds(static_cast<size_t>(rows) * pitch);
  const int total = cont * strd / vw;
  const int nv = (total + threads - 1) / threads;
  const int sw = common_pow2(vw, pitch);
  for (int tid = 0; tid < threads; ++tid)
    for (int i = 0; i < nv; ++i) {
      const int v = tid + i * threads;
      if (v >= total) break;
      const int st = stage_strd(v, cont, vw);
      for (int j = 0; j < vw; ++j) {
        const int c = stage_cont(v, j, cont, vw);
        // op(A)/op(B) tile coordinates of this global element
        const int mn = cont_is_k ? st : c;
        const int k = cont_is_k ? c : st;
        const int idx = cont_is_k ? lds_index(st, c, pitch) : lds_index(c, st, pitch);
        if (cont_is_k && j % sw == 0 && idx % sw != 0) err += "misaligned LDS vector store; ";
        if (idx < 0 || idx >= static_cast<int>(lds.size())) {
          err += "LDS index out of range; ";
          return lds;
        }
        if (lds[idx].mn >= 0) err += "LDS slot written twice; ";
        lds[idx] = {mn, k};
      }
    }
  return lds;
}

// Returns "" when every product of the tile is accumulated exactly once into the right C element.
std::string emulate_tile(const TileConfig& t) {
  using namespace tt_mfma;
  std::string err;
  const int pitch = t.du + t.pad;
  const int waves = (t.mt0 / t.wm) * (t.mt1 / t.wn);
  const int threads = waves * 64;
  const int ki = inst_k(t.mi, t.kpl);
  if (t.du % ki || pitch * t.bytes % t.frag_align() || t.mt0 % t.wm || t.mt1 % t.wn || t.wm % t.mi || t.wn % t.mi)
    return "config breaks the template's static_asserts";

  const auto a_lds = stage_tile(t.transa ? t.du : t.mt0, t.transa ? t.mt0 : t.du, t.transa, t.vw, threads, pitch,
                                t.mt0, err);
  const auto b_lds = stage_tile(t.transb ? t.mt1 : t.du, t.transb ? t.du : t.mt1, !t.transb, t.vw, threads, pitch,
                                t.mt1, err);
  if (!err.empty()) return err;
  for (int r = 0; r < t.mt0; ++r)
    for (int k = 0; k < t.du; ++k)
      if (a_lds[lds_index(r, k, pitch)].mn != r || a_lds[lds_index(r, k, pitch)].k != k) return "A tile not staged";
  for (int r = 0; r < t.mt1; ++r)
    for (int k = 0; k < t.du; ++k)
      if (b_lds[lds_index(r, k, pitch)].mn != r || b_lds[lds_index(r, k, pitch)].k != k) return "B tile not staged";

  std::vector<int> hits(static_cast<size_t>(t.mt0) * t.mt1 * t.du, 0);
  std::vector<int> owner(static_cast<size_t>(t.mt0) * t.mt1, 0);
  const int fm = t.wm / t.mi, fn = t.wn / t.mi, nr = acc_regs(t.mi);
  // The instruction(s) one kernel MFMA step issues: k slots [s0, s0 + vals) of the fragment.
  std::vector<std::pair<IsaModel, int>> parts;
  if (t.split_bf16) parts = {{IsaModel{t.mi, 2}, 0}, {IsaModel{t.mi, 2}, 2}};
  else parts = {{IsaModel{t.mi, t.kpl}, 0}};

  for (int wave = 0; wave < waves; ++wave) {
    const int wm0 = wave_m0(wave, t.mt0, t.wm), wn0 = wave_n0(wave, t.mt0, t.wm, t.wn);
    // What each lane reads (slot s of fragment i / j at step kk), exactly as the kernel indexes.
    auto a_frag = [&](int lane, int i, int kk, int s) {
      const int off = lds_index(wm0 + frag_mn(lane, t.mi), frag_k(lane, 0, t.mi, t.kpl), pitch);
      const int idx = off + lds_index(i * t.mi, kk * ki, pitch);
      if (idx * t.bytes % t.frag_align()) err = "misaligned A fragment read";
      return a_lds[idx + s];
    };
    auto b_frag = [&](int lane, int j, int kk, int s) {
      const int off = lds_index(wn0 + frag_mn(lane, t.mi), frag_k(lane, 0, t.mi, t.kpl), pitch);
      const int idx = off + lds_index(j * t.mi, kk * ki, pitch);
      if (idx * t.bytes % t.frag_align()) err = "misaligned B fragment read";
      return b_lds[idx + s];
    };
    for (int i = 0; i < fm; ++i)
      for (int j = 0; j < fn; ++j) {
        // Accumulator (lane, r) -> C element, exactly as the kernel's epilogue writes it.
        std::vector<std::vector<std::pair<int, int>>> c_of(64, std::vector<std::pair<int, int>>(nr));
        for (int lane = 0; lane < 64; ++lane)
          for (int r = 0; r < nr; ++r) {
            const int q = r / 4, tt = r % 4;  // epilogue: row of r = acc_row(lane, 4q) + t
            const int m = wm0 + i * t.mi + acc_row(lane, 4 * q, t.mi) + tt;
            const int n = wn0 + j * t.mi + acc_col(lane, t.mi);
            c_of[lane][r] = {m, n};
            if (m < 0 || m >= t.mt0 || n < 0 || n >= t.mt1) return "C element outside the tile";
            ++owner[static_cast<size_t>(m) + static_cast<size_t>(n) * t.mt0];
          }
        for (int kk = 0; kk < t.du / ki; ++kk)
          for (const auto& [isa, s0] : parts) {
            // Instruction operand matrices, filled from the lanes' registers per the ISA layout.
            std::vector<Coord> am(static_cast<size_t>(t.mi) * isa.k()), bm(static_cast<size_t>(t.mi) * isa.k());
            for (int lane = 0; lane < 64; ++lane)
              for (int s = 0; s < isa.vals; ++s) {
                const auto [ar, ak] = isa.a(lane, s);
                am[ar * isa.k() + ak] = a_frag(lane, i, kk, s0 + s);
                const auto [bk, bc] = isa.b(lane, s);
                bm[bc * isa.k() + bk] = b_frag(lane, j, kk, s0 + s);
              }
            // D[row][col] += sum_k A[row][k] * B[k][col]
            for (int lane = 0; lane < 64; ++lane)
              for (int r = 0; r < nr; ++r) {
                const auto [row, col] = isa.d(lane, r);
                const auto [m, n] = c_of[lane][r];
                for (int k = 0; k < isa.k(); ++k) {
                  const Coord a = am[row * isa.k() + k], b = bm[col * isa.k() + k];
                  if (a.mn != m) return "A row does not match the C row";
                  if (b.mn != n) return "B column does not match the C column";
                  if (a.k != b.k) return "A and B k differ";
                  ++hits[(static_cast<size_t>(m) + static_cast<size_t>(n) * t.mt0) * t.du + a.k];
                }
              }
          }
      }
  }
  if (!err.empty()) return err;
  for (int o : owner)
    if (o != 1) return "a C element is written " + std::to_string(o) + " times";
  for (int h : hits)
    if (h != 1) return "a product is accumulated " + std::to_string(h) + " times";
  return "";
}

TEST(MfmaEmulation, EveryProductLandsOnceInTheRightElement) {
  std::vector<TileConfig> configs;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      configs.push_back({64, 64, 16, 32, 32, 16, 4, 1, 4, ta, tb});       // the default (16-bit)
      configs.push_back({64, 64, 16, 32, 32, 16, 1, 1, 4, ta, tb});       // the default (fp32)
      configs.push_back({128, 128, 32, 64, 64, 32, 4, 8, 4, ta, tb});
      configs.push_back({128, 128, 32, 64, 64, 32, 4, 8, 4, ta, tb, true});  // gfx908 bf16
      configs.push_back({64, 64, 32, 32, 32, 16, 4, 8, 8, ta, tb, true});
      configs.push_back({256, 128, 32, 128, 64, 32, 4, 8, 0, ta, tb});
      configs.push_back({128, 64, 64, 64, 32, 32, 4, 4, 8, ta, tb});
      configs.push_back({32, 64, 16, 32, 32, 32, 4, 2, 4, ta, tb});      // one wave along m
      configs.push_back({128, 256, 16, 64, 128, 16, 4, 8, 4, ta, tb});   // 4 waves, 64 acc blocks
      configs.push_back({64, 128, 16, 32, 64, 32, 1, 4, 0, ta, tb});     // fp32, 32x32x2
      configs.push_back({64, 32, 8, 32, 32, 16, 1, 2, 4, ta, tb});       // fp32, 16x16x4
      // gfx950's doubled-K shapes (XK = 2): 8 values per lane, 32x32x16 and 16x16x32.
      configs.push_back({64, 64, 32, 32, 32, 32, 8, 8, 8, ta, tb});
      configs.push_back({64, 64, 32, 32, 32, 16, 8, 8, 8, ta, tb});
      configs.push_back({256, 128, 64, 64, 64, 32, 8, 8, 8, ta, tb});    // 108 KiB double-buffered on gfx950
      configs.push_back({128, 64, 64, 64, 32, 16, 8, 4, 0, ta, tb});
      // 8-bit inputs (one byte, 16-byte vectors, PAD 16): gfx942's fp8 / int8 32x32x16 and
      // 16x16x32 (8 values per lane), gfx950's int8 32x32x32 / 16x16x64 (16) and fp8 f8f6f4
      // 32x32x64 / 16x16x128 (32: two 16-byte reads per fragment), gfx90a's int8 32x32x8 (4).
      configs.push_back({64, 64, 64, 32, 32, 32, 8, 16, 16, ta, tb, false, 1});
      configs.push_back({64, 64, 64, 32, 32, 16, 8, 16, 16, ta, tb, false, 1});
      configs.push_back({64, 64, 64, 32, 32, 32, 16, 16, 16, ta, tb, false, 1});
      configs.push_back({64, 64, 64, 32, 32, 16, 16, 16, 0, ta, tb, false, 1});
      configs.push_back({128, 128, 128, 64, 64, 32, 32, 16, 16, ta, tb, false, 1});
      configs.push_back({64, 64, 128, 32, 32, 16, 32, 16, 16, ta, tb, false, 1});
      configs.push_back({64, 64, 32, 32, 32, 32, 4, 16, 16, ta, tb, false, 1});
    }
  for (const auto& c : configs) {
    SCOPED_TRACE(testing::Message() << c.mt0 << "x" << c.mt1 << " DU" << c.du << " W" << c.wm << "x" << c.wn
                                    << " MI" << c.mi << " KPL" << c.kpl << " VW" << c.vw << " PAD" << c.pad
                                    << (c.transa ? " T" : " N") << (c.transb ? "T" : "N")
                                    << (c.split_bf16 ? " split" : "") << " " << c.bytes << "B");
    EXPECT_EQ(emulate_tile(c), "");
  }
}

TEST(MfmaEmulation, DetectsABrokenLayout) {
  // The checker itself: fragments of 2 values per lane (KPL 2) fed to instructions as if they held
  // 4 (the second half reads the next lane group's k): products are counted twice or go missing.
  TileConfig wrong{64, 64, 16, 32, 32, 16, 2, 1, 4, false, false};
  wrong.split_bf16 = true;
  EXPECT_NE(emulate_tile(wrong), "");
  // A staging that does not fit the tile (VW does not divide the contiguous extent) is caught too.
  TileConfig odd{64, 64, 16, 32, 32, 16, 4, 3, 4, false, false};
  EXPECT_NE(emulate_tile(odd), "");
  // gfx950's 32-byte fp8 fragments with a pitch of 72 bytes: the 16-byte reads would straddle.
  TileConfig unaligned{64, 64, 64, 32, 32, 32, 32, 16, 8, true, false, false, 1};
  EXPECT_NE(emulate_tile(unaligned), "");
}

// gfx942's FNUZ reading of OCP e4m3 and e5m2 (kernel_templates/mfma_fp8.h), on every byte,
// against decoders of the formats written from their definitions (E exponent bits, bias B).
double fp8_value(unsigned b, int e_bits, int bias) {
  const int mb = 7 - e_bits, e = int(b >> mb) & ((1 << e_bits) - 1), m = int(b) & ((1 << mb) - 1);
  const double mag = e == 0 ? std::ldexp(m, 1 - bias - mb) : std::ldexp((1 << mb) + m, e - bias - mb);
  return b & 0x80 ? -mag : mag;
}
double ocp_e4m3(unsigned b) { return (b & 0x7f) == 0x7f ? std::nan("") : fp8_value(b, 4, 7); }
double ocp_e5m2(unsigned b) {
  if ((b & 0x7f) > 0x7c) return std::nan("");
  if ((b & 0x7f) == 0x7c) return b & 0x80 ? -INFINITY : INFINITY;
  return fp8_value(b, 5, 15);
}
double fnuz_e4m3(unsigned b) { return b == 0x80 ? std::nan("") : fp8_value(b, 4, 8); }
double fnuz_e5m2(unsigned b) { return b == 0x80 ? std::nan("") : fp8_value(b, 5, 16); }

// Every byte: finite OCP values read as half of themselves in FNUZ; NaN (and e5m2's infinities,
// which FNUZ lacks) as FNUZ's NaN; no byte leaks into its neighbour, alone or in a word of four.
template <unsigned SPECIAL>
void expect_half_value_reading(double (*ocp)(unsigned), double (*fnuz)(unsigned), int specials) {
  int nans = 0;
  for (unsigned b = 0; b < 256; ++b) {
    SCOPED_TRACE(b);
    const unsigned f = tt_mfma::ocp_to_fnuz4<SPECIAL>(b) & 0xffu;
    EXPECT_EQ(tt_mfma::ocp_to_fnuz4<SPECIAL>(b) >> 8, 0u) << "a byte leaked into its neighbour";
    if (!std::isfinite(ocp(b))) {
      EXPECT_TRUE(std::isnan(fnuz(f)));
      ++nans;
    } else {
      EXPECT_EQ(fnuz(f), ocp(b) / 2);  // -0 becomes +0, which compares equal
      EXPECT_FALSE(std::isnan(fnuz(f)));
    }
  }
  EXPECT_EQ(nans, specials);
  for (unsigned b = 0; b < 256; ++b)
    for (unsigned other : {0x00u, 0x7fu, 0x80u, 0xffu, 0x3cu, 0x7cu, 0xfcu})
      for (int pos = 0; pos < 4; ++pos) {
        unsigned w = 0, want = 0;
        for (int q = 0; q < 4; ++q) {
          const unsigned byte = q == pos ? b : other;
          w |= byte << (8 * q);
          want |= tt_mfma::ocp_to_fnuz4<SPECIAL>(byte) << (8 * q);
        }
        ASSERT_EQ(tt_mfma::ocp_to_fnuz4<SPECIAL>(w), want) << std::hex << w;
      }
}

TEST(MfmaFp8, Gfx942ReadsEveryOcpByteAsHalfItsValue) {
  expect_half_value_reading<tt_mfma::kOcpSpecialE4m3>(ocp_e4m3, fnuz_e4m3, 2);
  EXPECT_EQ(fnuz_e4m3(tt_mfma::ocp_to_fnuz4<tt_mfma::kOcpSpecialE4m3>(0x7e)), 224.0);  // OCP's largest, 448, halved
  expect_half_value_reading<tt_mfma::kOcpSpecialE5m2>(ocp_e5m2, fnuz_e5m2, 8);  // 2 infinities, 6 NaNs
  EXPECT_EQ(fnuz_e5m2(tt_mfma::ocp_to_fnuz4<tt_mfma::kOcpSpecialE5m2>(0x7b)), 28672.0);  // 57344 halved
  // The decoders agree with tiletune's own (kernel_templates/host_types.h) on every finite code.
  for (unsigned b = 0; b < 256; ++b) {
    if (std::isfinite(ocp_e5m2(b))) EXPECT_EQ(ocp_e5m2(b), tt_host_to_float(tt_e5m2{(unsigned char)b})) << b;
    if (std::isfinite(ocp_e4m3(b))) EXPECT_EQ(ocp_e4m3(b), tt_host_to_float(tt_e4m3{(unsigned char)b})) << b;
  }
}

// ---------------------------------------------------------------------------------------------
// The search space.

const KernelTemplate& mfma_template() {
  static const KernelTemplate t = [] {
    const auto& files = tiletune::embedded_kernel_sources();
    auto it = files.find("mfma_gemm.json");
    if (it == files.end()) throw std::runtime_error("mfma_gemm.json is not embedded");
    return KernelTemplate::from_json(nlohmann::ordered_json::parse(it->second));
  }();
  return t;
}

tiletune::gpu::DeviceInfo fake_gfx90a() { return tiletune::testing::fake_device(tiletune::gpu::BackendKind::Hip); }

GemmProblem make_problem(DataType a, DataType c, bool ta, bool tb, int m, int n, int k, int batch = 1) {
  return tiletune::testing::gemm(a, c, ta, tb, m, n, k, batch);
}

std::vector<GemmProblem> space_problems() {
  std::vector<GemmProblem> ps;
  for (DataType a : {DataType::BF16, DataType::F16})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        ps.push_back(make_problem(a, a == DataType::BF16 ? DataType::BF16 : DataType::F32, ta, tb, 1024, 1024, 1024));
        ps.push_back(make_problem(a, a, ta, tb, 1000, 777, 333));   // odd: scalar loads only
        ps.push_back(make_problem(a, DataType::F32, ta, tb, 37, 5, 3, 3));  // tiny, batched
        ps.push_back(make_problem(a, a, ta, tb, 4096, 64, 1026, 2));     // ALIGN 2, batched
      }
  ps.push_back(make_problem(DataType::F32, DataType::F32, false, true, 512, 512, 512));
  return ps;
}

TEST(MfmaSpace, DefaultIsValidForEveryProblem) {
  const auto& t = mfma_template();
  const auto dev = fake_gfx90a();
  EXPECT_TRUE(t.supports(tiletune::gpu::BackendKind::Hip));
  EXPECT_FALSE(t.supports(tiletune::gpu::BackendKind::Cuda));
  for (const auto& p : space_problems()) {
    const auto why = t.violation(t.variables(t.default_solution(), p, dev));
    EXPECT_FALSE(why.has_value()) << p.key() << ": " << why.value_or("");
  }
}

TEST(MfmaSpace, EnumeratesForGfx90aAndPrunesWave32) {
  const auto dev = fake_gfx90a();
  const auto problems = space_problems();
  const auto e = tiletune::tuner::enumerate({mfma_template()}, problems, dev);
  std::printf("mfma_gemm: %zu enumerated, %zu candidates, %zu pruned\n", e.total, e.candidates.size(), e.pruned_count);
  for (const auto& [reason, n] : e.pruned_by_reason) std::printf("  pruned %7zu by %s\n", n, reason.c_str());
  std::vector<size_t> per_problem(problems.size(), 0);
  for (const auto& c : e.candidates) {
    ++per_problem[c.problem_index];
    EXPECT_LE(c.dims.block[0], 512u);
    EXPECT_EQ(c.dims.block[0] % 64, 0u);
    EXPECT_EQ(c.dims.grid[2], static_cast<unsigned>(problems[c.problem_index].batch));
  }
  for (size_t i = 0; i < problems.size(); ++i) {
    std::printf("  %-90s %5zu candidates\n", problems[i].key().c_str(), per_problem[i]);
    EXPECT_GT(per_problem[i], 0u) << problems[i].key();
  }

  // Wave32 (gfx1030-like) devices get nothing.
  auto rdna = dev;
  rdna.arch = "gfx1030";
  rdna.warp_size = 32;
  const auto none = tiletune::tuner::enumerate({mfma_template()}, problems, rdna);
  EXPECT_TRUE(none.candidates.empty());
  EXPECT_GT(none.pruned_by_reason.count("wave64_device"), 0u);
}

// ---------------------------------------------------------------------------------------------
// hipRTC compiles.

struct MfmaCompiled {
  std::string expr;
  hipb::AmdKernelInfo info;
  std::string dis;
};

// Compiles, checks the code object, prints its numbers. Returns nullopt after a failed assertion.
std::optional<MfmaCompiled> compile_and_check(const tiletune::gpu::Compiler& compiler, const Solution& s,
                                          const GemmProblem& p, const std::string& arch) {
  const auto& t = mfma_template();
  auto dev = fake_gfx90a();
  dev.arch = arch;
  hipb::assume_from_arch(dev, true);  // the arch table's MFMA K per input type
  const auto vars = t.variables(s, p, dev);
  const auto why = t.violation(vars);
  EXPECT_FALSE(why.has_value()) << *why;
  if (why) return std::nullopt;
  const auto req = t.compile_request(s, p, dev);
  const auto t0 = std::chrono::steady_clock::now();
  const auto res = compiler.compile(req);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(res.ok) << req.name_expression << "\n" << res.log;
  if (!res.ok) return std::nullopt;
  MfmaCompiled out;
  out.expr = req.name_expression;
  out.dis = hipb::disassemble_amd(res.code.bytes, arch);
  const auto kernels = hipb::read_amd_code_object(res.code.bytes);
  auto it = std::find_if(kernels.begin(), kernels.end(), [&](const auto& k) { return k.name == res.code.symbol; });
  EXPECT_NE(it, kernels.end()) << "kernel " << res.code.symbol << " not in the metadata";
  if (it == kernels.end()) return std::nullopt;
  out.info = *it;
  // TT_MFMA_DUMP=DIR writes each disassembly there, for reading the generated code.
  if (const char* dir = std::getenv("TT_MFMA_DUMP")) {
    std::ofstream(std::string(dir) + "/" + arch + "_" + s.kernel_name() + "_" + std::to_string(p.trans_a) +
                  std::to_string(p.trans_b) + tiletune::to_string(p.a_type) + ".s")
        << out.dis;
  }
  size_t mfmas = 0;
  for (size_t pos = out.dis.find("v_mfma"); pos != std::string::npos; pos = out.dis.find("v_mfma", pos + 1)) ++mfmas;
  EXPECT_GT(mfmas, 0u) << "no v_mfma in the disassembly of " << out.expr;
  EXPECT_GT(it->vgpr_count, 0);
  EXPECT_GT(it->lds_bytes, 0);
  EXPECT_LE(it->lds_bytes, 65536);
  EXPECT_GE(it->lds_bytes, vars.at("LDS_BYTES"));
  EXPECT_EQ(it->max_workgroup_size, vars.at("THREADS"));
  EXPECT_EQ(it->wavefront_size, 64);
  EXPECT_EQ(it->private_bytes, 0) << "scratch memory (spilled or dynamically indexed accumulators)";
  std::printf("%-6s %-82s %5.2fs vgpr=%3d agpr=%3d sgpr=%3d lds=%5d spill=%d/%d scratch=%d mfma=%zu\n", arch.c_str(),
              out.expr.c_str(), secs, it->vgpr_count, it->agpr_count, it->sgpr_count, it->lds_bytes,
              it->vgpr_spill_count, it->sgpr_spill_count, it->private_bytes, mfmas);
  return out;
}

Solution with(std::map<std::string, std::int64_t> params) { return Solution{"mfma_gemm", std::move(params)}; }

// int8 on gfx90a through the compiler the backend picks there (hipRTC where it loads): the 4-value
// 32x32x8 / 16x16x16 instructions, int32 accumulators and C.
TEST(MfmaCompile, Int8ForGfx90a) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  const GemmProblem p = make_problem(DataType::S8, DataType::S32, true, false, 2048, 2048, 2048);
  for (const auto& [mi, instruction] : {std::pair{32, "v_mfma_i32_32x32x8i8"}, std::pair{16, "v_mfma_i32_16x16x16i8"}}) {
    const Solution s = with({{"MT0", 128}, {"MT1", 128}, {"DU", 64}, {"WM", 64}, {"WN", 64}, {"MI", mi}, {"VW", 16}, {"PAD", 16}, {"DB", 1}});
    SCOPED_TRACE(s.kernel_name());
    const auto out = compile_and_check(*compiler, s, p, "gfx90a");
    ASSERT_TRUE(out.has_value());
    EXPECT_NE(out->dis.find(instruction), std::string::npos) << instruction << " not in the disassembly";
  }
}

TEST(MfmaCompile, SampleOfTheSpaceForGfx90a) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  const auto dev = fake_gfx90a();
  const auto& t = mfma_template();
  // Hand-picked main configurations (all must be in the enumerated space of their problem).
  const std::vector<std::map<std::string, std::int64_t>> picks = {
      {{"MT0", 128}, {"MT1", 128}, {"DU", 32}, {"WM", 64}, {"WN", 64}, {"MI", 32}, {"VW", 8}, {"PAD", 4}, {"DB", 1}},
      {{"MT0", 256}, {"MT1", 128}, {"DU", 32}, {"WM", 128}, {"WN", 64}, {"MI", 32}, {"VW", 8}, {"PAD", 8}, {"DB", 1}},
      {{"MT0", 128}, {"MT1", 128}, {"DU", 32}, {"WM", 64}, {"WN", 64}, {"MI", 16}, {"VW", 8}, {"PAD", 8}, {"DB", 0}},
      {{"MT0", 64}, {"MT1", 64}, {"DU", 64}, {"WM", 32}, {"WN", 32}, {"MI", 32}, {"VW", 8}, {"PAD", 4}, {"DB", 1}},
      {{"MT0", 256}, {"MT1", 128}, {"DU", 32}, {"WM", 64}, {"WN", 64}, {"MI", 32}, {"VW", 8}, {"PAD", 8}, {"DB", 1}},
      {{"MT0", 128}, {"MT1", 256}, {"DU", 16}, {"WM", 64}, {"WN", 128}, {"MI", 16}, {"VW", 8}, {"PAD", 8}, {"DB", 1}},
  };
  std::vector<GemmProblem> problems;
  for (DataType a : {DataType::BF16, DataType::F16})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        problems.push_back(make_problem(a, a == DataType::BF16 ? DataType::BF16 : DataType::F32, ta, tb, 2048, 2048, 2048));
  const auto e = tiletune::tuner::enumerate({t}, problems, dev);
  int compiled = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    const Solution s = with(picks[i % picks.size()]);
    const bool enumerated = std::any_of(e.candidates.begin(), e.candidates.end(), [&](const auto& c) {
      return c.problem_index == i && c.solution == s;
    });
    EXPECT_TRUE(enumerated) << s.kernel_name() << " not enumerated for " << problems[i].key();
    SCOPED_TRACE(problems[i].key());
    if (compile_and_check(*compiler, s, problems[i], "gfx90a")) ++compiled;
  }
  // An odd problem: only scalar loads survive; the first enumerated candidate and the default.
  const GemmProblem odd = make_problem(DataType::BF16, DataType::F32, true, false, 1000, 777, 333, 2);
  const auto eo = tiletune::tuner::enumerate({t}, {odd}, dev);
  ASSERT_FALSE(eo.candidates.empty());
  EXPECT_EQ(eo.candidates.front().solution.params.at("VW"), 1);
  if (compile_and_check(*compiler, eo.candidates.front().solution, odd, "gfx90a")) ++compiled;
  if (compile_and_check(*compiler, t.default_solution(), odd, "gfx90a")) ++compiled;
  // fp32 inputs (32x32x2f32).
  const GemmProblem f32 = make_problem(DataType::F32, DataType::F32, false, true, 1024, 1024, 1024);
  const Solution s32 = with({{"MT0", 128}, {"MT1", 128}, {"DU", 16}, {"WM", 64}, {"WN", 64}, {"MI", 32}, {"VW", 4}, {"PAD", 4}, {"DB", 1}});
  if (compile_and_check(*compiler, s32, f32, "gfx90a")) ++compiled;
  EXPECT_EQ(compiled, 11);
}

TEST(MfmaCompile, DefaultCompilesForGfx908) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  const auto& t = mfma_template();
  for (DataType a : {DataType::F16, DataType::BF16, DataType::F32}) {
    const GemmProblem p = make_problem(a, a, false, false, 100, 70, 37);
    auto c = compile_and_check(*compiler, t.default_solution(), p, "gfx908");
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->info.vgpr_spill_count, 0);
    if (a == DataType::BF16) {
      EXPECT_NE(c->dis.find("v_mfma_f32_16x16x8bf16"), std::string::npos) << "gfx908 bf16 uses the 2-value MFMA";
    }
  }
  // And on gfx90a the bf16 default uses the _1k instruction.
  const GemmProblem p = make_problem(DataType::BF16, DataType::BF16, true, true, 100, 70, 37);
  auto c = compile_and_check(*compiler, t.default_solution(), p, "gfx90a");
  ASSERT_TRUE(c.has_value());
  EXPECT_NE(c->dis.find("v_mfma_f32_16x16x16bf16_1k"), std::string::npos);
  EXPECT_EQ(c->info.vgpr_spill_count, 0);
}

}  // namespace

namespace {

// gfx1030 (RDNA2) has no MFMA: hipRTC must refuse the template with an error, not crash.
TEST(MfmaCompile, Gfx1030IsACleanCompileError) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  auto dev = fake_gfx90a();
  dev.arch = "gfx1030";
  const auto& t = mfma_template();
  const GemmProblem p = make_problem(DataType::F16, DataType::F16, false, false, 64, 64, 64);
  const auto res = compiler->compile(t.compile_request(t.default_solution(), p, dev));
  EXPECT_FALSE(res.ok);
  std::printf("gfx1030: %s\n", res.log.substr(0, 300).c_str());
}

}  // namespace

namespace {

// mfma_conv (NHWC convolution on MFMA, all three directions): samples of its space compiled with
// hipRTC for gfx90a, with v_mfma in the disassembly and no scratch memory.

tiletune::ConvProblem mfma_conv_problem(tiletune::ConvDirection dir, DataType in, DataType out, int c, int hw, int k,
                                        int rs, int stride, int groups) {
  tiletune::ConvProblem p;
  p.direction = dir, p.in_type = in, p.out_type = out, p.n = 4, p.c = c, p.h = p.w = hw, p.k = k, p.r = p.s = rs;
  p.stride_h = p.stride_w = stride, p.pad_h = p.pad_w = rs / 2, p.groups = groups;
  return p;
}

// Compiles `per_problem` candidates spread evenly over each problem's enumerated space (the first
// and the last among them: the smallest and the largest tiles; just the last for 1); returns how
// many compiled, each printed with its v_mfma count.
int compile_conv_sample(const std::vector<tiletune::Problem>& problems, std::size_t per_problem) {
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  const auto dev = fake_gfx90a();
  const auto& t = tiletune::find_template("mfma_conv");
  const auto e = tiletune::tuner::enumerate({t}, problems, dev);
  int compiled = 0;
  for (std::size_t pi = 0; pi < problems.size(); ++pi) {
    std::vector<Solution> mine;
    for (const auto& c : e.candidates)
      if (c.problem_index == pi) mine.push_back(c.solution);
    EXPECT_FALSE(mine.empty()) << problems[pi].key();
    std::set<std::size_t> picks;
    for (std::size_t k = 0; k < per_problem && !mine.empty(); ++k)
      picks.insert(per_problem == 1 ? mine.size() - 1 : k * (mine.size() - 1) / (per_problem - 1));
    for (std::size_t i : picks) {
      const auto res = compiler->compile(t.compile_request(mine[i], problems[pi], dev));
      EXPECT_TRUE(res.ok) << mine[i].kernel_name() << "\n" << res.log;
      if (!res.ok) continue;
      const std::string dis = hipb::disassemble_amd(res.code.bytes, "gfx90a");
      const auto kernels = hipb::read_amd_code_object(res.code.bytes);
      auto it = std::find_if(kernels.begin(), kernels.end(), [&](const auto& k) { return k.name == res.code.symbol; });
      EXPECT_NE(it, kernels.end());
      if (it == kernels.end()) continue;
      int mfma = 0;
      for (std::size_t at = dis.find("v_mfma"); at != std::string::npos; at = dis.find("v_mfma", at + 1)) ++mfma;
      EXPECT_GT(mfma, 0) << mine[i].kernel_name();
      EXPECT_EQ(it->private_bytes, 0) << mine[i].kernel_name() << ": scratch memory";
      std::printf("%-62s %-50s vgpr=%3d agpr=%3d lds=%5d spill=%d v_mfma=%d\n", mine[i].kernel_name().c_str(),
                  problems[pi].key().substr(5, 50).c_str(), it->vgpr_count, it->agpr_count, it->lds_bytes,
                  it->vgpr_spill_count, mfma);
      ++compiled;
    }
  }
  return compiled;
}

TEST(MfmaConvCompile, SampleOfTheForwardSpaceForGfx90a) {
  using tiletune::ConvDirection;
  const auto fwd = ConvDirection::Forward;
  const std::vector<tiletune::Problem> problems = {
      mfma_conv_problem(fwd, DataType::BF16, DataType::BF16, 64, 56, 64, 3, 1, 1),
      mfma_conv_problem(fwd, DataType::F16, DataType::F32, 256, 28, 512, 1, 2, 1),
      mfma_conv_problem(fwd, DataType::BF16, DataType::F16, 36, 17, 20, 3, 2, 2)};  // Cg 18: 2-element vectors
  EXPECT_GE(compile_conv_sample(problems, 3), 6);
}

// dgrad: dy gathered, filters read N-contiguous; wgrad: dy M-contiguous, x gathered per filter
// tap. The smallest tile (no split) and the largest (split-K) of a strided 3x3 layer, the largest
// of a grouped one with 2-element vectors.
TEST(MfmaConvCompile, SampleOfTheGradientSpacesForGfx90a) {
  using tiletune::ConvDirection;
  std::vector<tiletune::Problem> layers, grouped;
  for (ConvDirection d : {ConvDirection::BackwardData, ConvDirection::BackwardFilter}) {
    const bool w = d == ConvDirection::BackwardFilter;
    layers.push_back(mfma_conv_problem(d, DataType::BF16, w ? DataType::F32 : DataType::BF16, 64, 28, 64, 3, 2, 1));
    grouped.push_back(mfma_conv_problem(d, DataType::F16, w ? DataType::F32 : DataType::F16, 36, 17, 20, 3, 1, 2));
  }
  EXPECT_EQ(compile_conv_sample(layers, 2), 4);
  EXPECT_EQ(compile_conv_sample(grouped, 1), 2);
}

}  // namespace
