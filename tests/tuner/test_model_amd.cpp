// The AMD side of the analytical model (solutions/model_amd.h): occupancy from registers and LDS
// per arch, matrix-core rates per instruction shape, the machine made from the arch table, and
// rankings of the mfma_gemm space that must hold whatever the constants' exact values.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "gpu/hip/arch_table.h"
#include "gpu/hip/traits.h"
#include "solutions/kernel_template.h"
#include "solutions/model.h"
#include "solutions/model_amd.h"
#include "tests/test_util.h"
#include "tuner/enumerator.h"

namespace {

using namespace tiletune;
using tiletune::testing::gemm;

gpu::DeviceInfo amd(const std::string& arch) {
  gpu::DeviceInfo d;
  d.backend = gpu::BackendKind::Hip;
  d.arch = arch;
  gpu::hip::assume_from_arch(d, false);
  return d;
}

TEST(AmdModel, WorkgroupsPerCuFromRegistersWavesAndLds) {
  // 4 waves: one per SIMD. 512 registers per lane per SIMD, allocated by 8.
  EXPECT_EQ(amd_workgroups_per_cu("gfx942", 256, 0, 0), 8);    // 8 wave slots per SIMD
  EXPECT_EQ(amd_workgroups_per_cu("gfx942", 256, 128, 0), 4);  // 512 / 128
  EXPECT_EQ(amd_workgroups_per_cu("gfx942", 256, 129, 0), 3);  // 136 allocated: 512 / 136
  EXPECT_EQ(amd_workgroups_per_cu("gfx942", 256, 256, 0), 2);
  EXPECT_EQ(amd_workgroups_per_cu("gfx942", 256, 257, 0), 1);
  // 8 waves: two per SIMD.
  EXPECT_EQ(amd_workgroups_per_cu("gfx942", 512, 128, 0), 2);
  // 1 wave: the SIMDs are filled by other work-groups.
  EXPECT_EQ(amd_workgroups_per_cu("gfx942", 64, 128, 0), 16);
  // LDS: 64 KB per CU on gfx942, 160 KB on gfx950.
  EXPECT_EQ(amd_workgroups_per_cu("gfx942", 256, 64, 32768), 2);
  EXPECT_EQ(amd_workgroups_per_cu("gfx950", 256, 64, 32768), 5);
  EXPECT_EQ(amd_workgroups_per_cu("gfx950:sramecc+:xnack-", 256, 64, 32768), 5);
  // gfx908: 10 wave slots per SIMD, 256 registers in each of its two files.
  EXPECT_EQ(amd_workgroups_per_cu("gfx908", 256, 0, 0), 10);
  EXPECT_EQ(amd_workgroups_per_cu("gfx908", 256, 128, 0), 2);
  // Never below one; an arch without figures is an error naming it.
  EXPECT_EQ(amd_workgroups_per_cu("gfx942", 1024, 512, 1 << 20), 1);
  EXPECT_NE(tiletune::testing::error_of([] { amd_workgroups_per_cu("gfx1030", 64, 0, 0); }).find("gfx1030"),
            std::string::npos);
}

TEST(AmdModel, MoreRegistersOrLdsNeverRaiseOccupancy) {
  for (const char* arch : {"gfx90a", "gfx942", "gfx950"})
    for (std::int64_t threads : {64, 128, 256, 512}) {
      std::int64_t last = 1 << 30;
      for (std::int64_t regs = 8; regs <= 512; regs += 8) {
        const std::int64_t now = amd_workgroups_per_cu(arch, threads, regs, 0);
        EXPECT_LE(now, last) << arch << " " << threads << " " << regs;
        last = now;
      }
      last = 1 << 30;
      for (std::int64_t lds = 1024; lds <= 163840; lds += 1024) {
        const std::int64_t now = amd_workgroups_per_cu(arch, threads, 0, lds);
        EXPECT_LE(now, last) << arch << " " << threads << " " << lds;
        last = now;
      }
    }
}

TEST(AmdModel, InstructionRatesFromTheArchTable) {
  const double per_cu_942 = gpu::hip::amd_arch("gfx942")->peak_flops("bf16") / 304;
  // CDNA3: the 32x32x8 and 16x16x16 shapes share one rate, the data sheet's peak.
  EXPECT_NEAR(amd_instruction_flops_per_cu("gfx942", DataType::BF16, 32, 8), per_cu_942, per_cu_942 * 1e-12);
  EXPECT_NEAR(amd_instruction_flops_per_cu("gfx942", DataType::BF16, 16, 16), per_cu_942, per_cu_942 * 1e-12);
  // gfx950 keeps them at that rate (its own clock) and doubles it with the doubled-K shapes.
  const double old950 = amd_instruction_flops_per_cu("gfx950", DataType::BF16, 32, 8);
  EXPECT_NEAR(amd_instruction_flops_per_cu("gfx950", DataType::BF16, 32, 16), 2 * old950, old950 * 1e-12);
  EXPECT_NEAR(amd_instruction_flops_per_cu("gfx950", DataType::F16, 16, 32), 2 * old950, old950 * 1e-12);
  // An instruction the arch lacks, or an arch without matrix cores.
  EXPECT_EQ(amd_instruction_flops_per_cu("gfx942", DataType::BF16, 32, 16), 0);
  EXPECT_EQ(amd_instruction_flops_per_cu("gfx1030", DataType::F16, 16, 16), 0);
}

TEST(AmdModel, MachineFromTheArchTableAndNvidiaUnchanged) {
  const GemmProblem p = gemm(DataType::BF16, DataType::BF16, false, false, 4096, 4096, 4096);
  const ModelMachine mi300 = model_machine(amd("gfx942"), p);
  EXPECT_EQ(mi300.amd_arch, "gfx942");
  EXPECT_DOUBLE_EQ(mi300.flops_per_s, gpu::hip::amd_arch("gfx942")->peak_flops("bf16"));
  EXPECT_EQ(mi300.shared_per_mp, 65536);
  EXPECT_EQ(mi300.registers_per_mp, 4 * 512 * 64);
  EXPECT_GT(mi300.dram_bytes_per_s, 0);
  EXPECT_EQ(model_machine(amd("gfx950"), p).shared_per_mp, 163840);
  // The H200 figures stay for CUDA, and for an AMD arch the table does not describe.
  const ModelMachine h200 = model_machine(tiletune::testing::fake_device(gpu::BackendKind::Cuda), p);
  EXPECT_DOUBLE_EQ(h200.flops_per_s, 989e12);
  EXPECT_TRUE(h200.amd_arch.empty());
  EXPECT_EQ(h200.dram_bytes_per_s, 0);
  EXPECT_TRUE(model_machine(amd("gfx1030"), p).amd_arch.empty());
}

TEST(AmdModel, CodeFiguresFromACompileOnlySweep) {
  const CodeFigures f = code_figures_from_json(R"({"vgpr": 128, "agpr": 64, "sgpr": 40, "lds_bytes": 16384})");
  EXPECT_EQ(f.registers, 128);
  EXPECT_EQ(f.lds_bytes, 16384);
  EXPECT_EQ(code_figures_from_json(R"({"vgpr": 100, "agpr": 256})").registers, 256);
  EXPECT_EQ(code_figures_from_json(R"({"vgpr": 100})").lds_bytes, -1);
  EXPECT_NE(tiletune::testing::error_of([] { code_figures_from_json("{\"vgpr\": 1"); }).find("not JSON"),
            std::string::npos);
  EXPECT_NE(tiletune::testing::error_of([] { code_figures_from_json(R"({"agpr": 3})"); }).find("\"vgpr\""),
            std::string::npos);

  // The figures replace the template's register estimate: 300 registers leave one 4-wave
  // work-group per CU where the template's estimate allowed more, and the estimate is slower.
  const KernelTemplate& t = find_template("mfma_gemm");
  Solution s = t.default_solution();
  s.params["MT0"] = s.params["MT1"] = 128, s.params["WM"] = s.params["WN"] = 64, s.params["MI"] = 32;
  const GemmProblem p = gemm(DataType::BF16, DataType::BF16, false, false, 8192, 8192, 8192);
  const gpu::DeviceInfo dev = amd("gfx942");
  const ModelEstimate est = model_estimate(t, s, p, dev);
  CodeFigures heavy;
  heavy.registers = 300;
  const ModelEstimate measured = model_estimate(t, s, p, dev, &heavy);
  ASSERT_TRUE(est.has_model && measured.has_model);
  EXPECT_GT(est.blocks_per_mp, 1);
  EXPECT_EQ(measured.blocks_per_mp, 1);
  EXPECT_GE(measured.seconds, est.seconds);
}

// A one-wave work-group keeps one of a CU's four matrix cores busy unless other work-groups share
// the CU: on a grid of one tile per CU the math takes four times as long as with four waves.
TEST(AmdModel, OneWaveLeavesThreeSimdsIdle) {
  const KernelTemplate& t = find_template("mfma_gemm");
  Solution one = t.default_solution(), four = t.default_solution();
  one.params["MT0"] = one.params["MT1"] = 64, one.params["WM"] = one.params["WN"] = 64;
  four.params["MT0"] = four.params["MT1"] = 64, four.params["WM"] = four.params["WN"] = 32;
  // 16 x 19 = 304 tiles of 64 x 64: one per CU of gfx942.
  const GemmProblem p = gemm(DataType::BF16, DataType::BF16, false, false, 1024, 1216, 4096);
  const gpu::DeviceInfo dev = amd("gfx942");
  const ModelEstimate a = model_estimate(t, one, p, dev), b = model_estimate(t, four, p, dev);
  ASSERT_TRUE(a.has_model && b.has_model);
  EXPECT_EQ(a.tiles, 304);
  EXPECT_EQ(a.resident, 1);
  EXPECT_NEAR(a.math_seconds, 4 * b.math_seconds, b.math_seconds * 1e-9);
}

// The faster instruction wins where everything else is equal: a template naming gfx950's
// doubled-K shape against one naming the CDNA3 shape, on a big compute-bound GEMM.
TEST(AmdModel, PrefersTheFasterMfmaShape) {
  auto make = [](int k) {
    nlohmann::ordered_json spec = nlohmann::ordered_json::parse(R"({"name": "mfma_probe", "source": "mfma_gemm.cuh",
        "backends": ["hip"], "instance": "x", "parameters": {"A": [1]}, "default": {"A": 1},
        "model": {"tile_m": "256", "tile_n": "256", "tile_k": "64", "threads": "256", "shared_bytes": "65536",
                  "registers": "200", "instruction_m": "32", "instruction_k": "8"},
        "launch": {"block": "256", "grid_x": "(M + 255) / 256", "grid_y": "(N + 255) / 256", "grid_z": "1",
                   "shared_bytes": "0"}})");
    spec["model"]["instruction_k"] = std::to_string(k);
    return KernelTemplate::from_json(spec);
  };
  const KernelTemplate cdna3 = make(8), cdna4 = make(16);
  const GemmProblem p = gemm(DataType::BF16, DataType::BF16, false, false, 8192, 8192, 8192);
  const gpu::DeviceInfo dev = amd("gfx950");
  const ModelEstimate a = model_estimate(cdna3, cdna3.default_solution(), p, dev);
  const ModelEstimate b = model_estimate(cdna4, cdna4.default_solution(), p, dev);
  ASSERT_TRUE(a.has_model && b.has_model);
  EXPECT_NEAR(a.math_seconds, 2 * b.math_seconds, b.math_seconds * 1e-9);
  EXPECT_TRUE(model_before(b, a));
  // gfx942 lacks 32x32x16: that template falls back to the arch's fastest bf16 shape.
  const ModelEstimate c = model_estimate(cdna4, cdna4.default_solution(), p, amd("gfx942"));
  EXPECT_NEAR(c.math_seconds, model_estimate(cdna3, cdna3.default_solution(), p, amd("gfx942")).math_seconds,
              c.math_seconds * 1e-9);
}

// The model's order of the whole mfma_gemm space on one problem.
std::vector<std::pair<ModelEstimate, Solution>> ranked(const GemmProblem& p, const gpu::DeviceInfo& dev) {
  const KernelTemplate& t = find_template("mfma_gemm");
  const tuner::Enumeration en = tuner::enumerate({t}, {p}, dev);
  std::vector<std::pair<ModelEstimate, Solution>> out;
  for (const auto& c : en.candidates) out.emplace_back(model_estimate(t, c.solution, p, dev), c.solution);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return model_before(a.first, b.first); });
  return out;
}

// Big GEMMs want big macro tiles built of 32x32 instructions' wave tiles (fewer L2 bytes per
// flop, and the work keeps every CU busy); a GEMM of fewer tiles than CUs wants small tiles.
TEST(AmdModel, BigShapesPreferBigTilesSmallShapesSmallOnes) {
  for (const char* arch : {"gfx90a", "gfx942", "gfx950"}) {
    const gpu::DeviceInfo dev = amd(arch);
    const auto big = ranked(gemm(DataType::BF16, DataType::BF16, true, false, 8192, 8192, 8192), dev);
    ASSERT_GT(big.size(), 10u) << arch;
    const Solution& best = big.front().second;
    EXPECT_GE(best.params.at("MT0") * best.params.at("MT1"), 64 * 128) << arch << " " << best.kernel_name();
    EXPECT_GE(best.params.at("WM") * best.params.at("WN"), 32 * 64) << arch << " " << best.kernel_name();
    // Every 32x32 macro tile ranks below the best 128x128 one.
    auto first = [&](auto pred) {
      return std::find_if(big.begin(), big.end(), [&](const auto& e) { return pred(e.second); }) - big.begin();
    };
    EXPECT_LT(first([](const Solution& s) { return s.params.at("MT0") == 128 && s.params.at("MT1") == 128; }),
              first([](const Solution& s) { return s.params.at("MT0") == 32 && s.params.at("MT1") == 32; }))
        << arch;

    const auto small = ranked(gemm(DataType::BF16, DataType::BF16, true, false, 1024, 1024, 4096), dev);
    const Solution& s = small.front().second;
    EXPECT_LE(s.params.at("MT0") * s.params.at("MT1"), 64 * 128) << arch << " " << s.kernel_name();
  }
}

TEST(AmdModel, MonotonicInTheProblemAndTheMachine) {
  const KernelTemplate& t = find_template("mfma_gemm");
  Solution s = t.default_solution();
  s.params["MT0"] = s.params["MT1"] = 128, s.params["WM"] = s.params["WN"] = 64, s.params["MI"] = 32,
  s.params["DU"] = 32;
  const gpu::DeviceInfo dev = amd("gfx942");
  double last = 0;
  for (std::int64_t k : {256, 1024, 4096, 16384}) {
    const ModelEstimate e = model_estimate(t, s, gemm(DataType::BF16, DataType::BF16, false, false, 4096, 4096, k), dev);
    EXPECT_GT(e.seconds, last) << k;
    EXPECT_GE(e.seconds, e.dram_seconds);
    last = e.seconds;
  }
  // Half the CUs (a partition the device reports) is never faster.
  gpu::DeviceInfo half = dev;
  half.multiprocessors = 152;
  const GemmProblem p = gemm(DataType::BF16, DataType::BF16, false, false, 8192, 8192, 8192);
  EXPECT_GT(model_estimate(t, s, p, half).seconds, model_estimate(t, s, p, dev).seconds);
  // A skinny GEMM is bound by HBM: the floor decides its seconds.
  const ModelEstimate skinny = model_estimate(t, s, gemm(DataType::BF16, DataType::BF16, true, false, 16384, 16, 16384), dev);
  EXPECT_DOUBLE_EQ(skinny.seconds, std::max(skinny.schedule_seconds, skinny.dram_seconds));
  EXPECT_NEAR(skinny.dram_seconds, (16384.0 * 16384 + 16384.0 * 16) * 2 / 5.3e12 + 16384.0 * 16 * 2 / 5.3e12, 1e-12);
}

}  // namespace
