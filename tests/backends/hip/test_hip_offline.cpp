// The offline AMD compiler (gpu/hip/clang_compiler.h) and the arch table (gpu/hip/arch_table.h):
//  - the name-expression lookup and the arch table, without any tool;
//  - a sample of every HIP template's space (mfma_conv's in all three directions) compiled with
//    clang-22 for gfx90a, gfx942 and gfx950, with the v_mfma instructions of the arch (and only
//    those) in the disassembly and the register / LDS figures of the metadata within its limits;
//  - gfx950's doubled-K MFMA builtin, which gfx942 refuses, and mfma_gemm's instruction shapes and
//    LDS per arch (gfx950's 32x32x16 / 16x16x32, tiles beyond 64 KiB), its fp8 and int8 shapes
//    per arch, and mfma_conv's in every direction;
//  - a compile-only sweep for gfx942 with a bf16 and an fp8 GEMM, packed and explained as unmeasured.
// The compile tests skip, saying why, where clang-22, hipRTC's header or the device libraries are
// missing (scripts/install-deps.sh installs them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/temp_dir.h"
#include "db/database.h"
#include "db/explain.h"
#include "db/ship.h"
#include "gpu/backend.h"
#include "gpu/compile_cache.h"
#include "gpu/hip/arch_table.h"
#include "gpu/hip/clang_compiler.h"
#include "gpu/hip/code_object_info.h"
#include "gpu/hip/hip_backend.h"
#include "gpu/hip/traits.h"
#include "solutions/conv_problem.h"
#include "solutions/kernel_template.h"
#include "tests/test_util.h"
#include "tuner/compile_only.h"
#include "tuner/config.h"
#include "tuner/enumerator.h"

namespace {

namespace hipb = tiletune::gpu::hip;
using tiletune::DataType;
using tiletune::Problem;
using tiletune::Solution;
using tiletune::gpu::BackendKind;
using tiletune::gpu::DeviceInfo;

DeviceInfo device_for(const std::string& arch) {
  DeviceInfo d;
  d.backend = BackendKind::Hip;
  d.arch = arch;
  hipb::assume_from_arch(d, false);
  return d;
}

// ---------------------------------------------------------------------------------------------
// Without tools.

TEST(ClangNameLookup, PicksTheKernelTheProbeNames) {
  // What llvm-nm lists for a code object with two instances of one template and a plain kernel.
  const std::vector<std::string> symbols = {
      "_DYNAMIC",
      "_Z3fooILi1EEvi", "_Z3fooILi1EEvi.kd",
      "_Z3fooILi2EEvi", "_Z3fooILi2EEvi.kd",
      "_Z3bari", "_Z3bari.kd",
      "_Z13tt_name_probeIXadL_Z3fooILi2EEviEEE",
  };
  EXPECT_EQ(hipb::kernel_for_probe(symbols), "_Z3fooILi2EEvi");
  auto plain = symbols;
  plain.back() = "_Z13tt_name_probeIXadL_Z3bariEEE";
  EXPECT_EQ(hipb::kernel_for_probe(plain), "_Z3bari");
  // No probe, or a probe naming no kernel of the object (a function without a descriptor).
  EXPECT_EQ(hipb::kernel_for_probe({"_Z3bari", "_Z3bari.kd"}), "");
  EXPECT_EQ(hipb::kernel_for_probe({"_Z3bazi", "_Z13tt_name_probeIXadL_Z3baziEEE"}), "");
  EXPECT_EQ(hipb::probe_source(""), "");
  EXPECT_NE(hipb::probe_source("foo<2>").find("tt_name_probe<&foo<2>>"), std::string::npos);
}

TEST(AmdArchTable, FiguresOfTheTrainingGpus) {
  const auto* mi300 = hipb::amd_arch("gfx942");
  const auto* mi355 = hipb::amd_arch("gfx950:sramecc+:xnack-");
  ASSERT_NE(mi300, nullptr);
  ASSERT_NE(mi355, nullptr);
  EXPECT_EQ(mi300->compute_units, 304);
  EXPECT_EQ(mi300->lds_bytes_per_cu, 64 * 1024);
  EXPECT_EQ(mi355->compute_units, 256);
  EXPECT_EQ(mi355->lds_bytes_per_cu, 160 * 1024);
  EXPECT_EQ(mi300->vgprs, 512);
  EXPECT_TRUE(mi300->unified_registers);
  EXPECT_EQ(hipb::amd_arch("gfx1100"), nullptr);
  // The table's shapes and cycles give back the data sheets' dense peaks (within 3%).
  auto near = [](double got, double want) { return std::abs(got / want - 1) < 0.03; };
  EXPECT_TRUE(near(mi300->peak_flops("bf16"), 1307.4e12)) << mi300->peak_flops("bf16");
  EXPECT_TRUE(near(mi300->peak_flops("e4m3"), 2614.9e12)) << mi300->peak_flops("e4m3");
  EXPECT_TRUE(near(mi300->peak_flops("s8"), 2614.9e12)) << mi300->peak_flops("s8");
  EXPECT_TRUE(near(mi300->peak_flops("f32"), 163.4e12)) << mi300->peak_flops("f32");
  EXPECT_TRUE(near(mi355->peak_flops("bf16"), 2.5e15)) << mi355->peak_flops("bf16");
  EXPECT_TRUE(near(mi355->peak_flops("e4m3"), 5.0e15)) << mi355->peak_flops("e4m3");
  EXPECT_TRUE(near(mi355->peak_flops("s8"), 5.0e15)) << mi355->peak_flops("s8");
  EXPECT_TRUE(near(hipb::amd_arch("gfx90a")->peak_flops("bf16") * 2, 383e12));  // two GCDs
  EXPECT_TRUE(near(hipb::amd_arch("gfx90a")->peak_flops("s8") * 2, 383e12));
  EXPECT_TRUE(near(hipb::amd_arch("gfx908")->peak_flops("s8"), 184.6e12));
  EXPECT_EQ(hipb::amd_arch("gfx1030")->peak_flops("f16"), 0);
  ASSERT_NE(mi355->shape("bf16", 32, 16), nullptr);
  EXPECT_EQ(mi300->shape("bf16", 32, 16), nullptr);
  // The K of the 32x32 16-bit shapes, which the templates prune gfx950's doubled-K shapes by.
  EXPECT_EQ(mi355->mfma_k16(), 16);
  EXPECT_EQ(mi300->mfma_k16(), 8);
  EXPECT_EQ(hipb::amd_arch("gfx90a")->mfma_k16(), 8);
  EXPECT_EQ(hipb::amd_arch("gfx908")->mfma_k16(), 4);  // its bf16 is 32x32x4
  EXPECT_EQ(hipb::amd_arch("gfx1030")->mfma_k16(), 0);
  EXPECT_EQ(device_for("gfx950").mfma_k16, 16);
  EXPECT_EQ(device_for("gfx942").mfma_k16, 8);
  // 8-bit inputs: the K of the 32x32 fp8 and int8 shapes, and which arch reads fp8 as FNUZ.
  EXPECT_EQ(device_for("gfx950").mfma_k_fp8, 64);
  EXPECT_EQ(device_for("gfx942").mfma_k_fp8, 16);
  EXPECT_EQ(device_for("gfx90a").mfma_k_fp8, 0);
  EXPECT_EQ(device_for("gfx950").mfma_k_int8, 32);
  EXPECT_EQ(device_for("gfx942").mfma_k_int8, 16);
  EXPECT_EQ(device_for("gfx90a").mfma_k_int8, 8);
  EXPECT_EQ(device_for("gfx1030").mfma_k_int8, 0);
  EXPECT_TRUE(mi300->fp8_fnuz);
  EXPECT_FALSE(mi355->fp8_fnuz);
}

TEST(AmdArchTable, PruningFollowsTheArch) {
  const DeviceInfo mi300 = device_for("gfx942"), mi355 = device_for("gfx950");
  EXPECT_EQ(mi300.multiprocessors, 304);
  EXPECT_EQ(mi300.warp_size, 64);
  EXPECT_EQ(mi300.shared_bytes_per_block, 65536);
  EXPECT_EQ(mi355.shared_bytes_per_block, 163840);
  // A double-buffered 128x128x64 fp32 tile needs 144 KiB of LDS: beyond an MI300X, within an MI355X.
  const auto& t = tiletune::find_template("mfma_gemm");
  const auto p = tiletune::testing::gemm(DataType::F32, DataType::F32, false, true, 4096, 4096, 4096, 1);
  const Solution s{"mfma_gemm", {{"MT0", 128}, {"MT1", 128}, {"DU", 64}, {"WM", 64}, {"WN", 32}, {"MI", 32},
                                 {"VW", 4}, {"PAD", 8}, {"DB", 1}}};
  const auto on300 = t.violation(t.variables(s, p, mi300));
  ASSERT_TRUE(on300.has_value());
  EXPECT_NE(on300->find("lds_fits"), std::string::npos) << *on300;
  const auto on355 = t.violation(t.variables(s, p, mi355));
  EXPECT_FALSE(on355.has_value()) << *on355;
}

// fp8 and int8 in mfma_gemm: the values per lane and the instruction K follow the arch table, and
// the constraints prune what an arch lacks (fp8 before CDNA3, gfx950's deeper K) and what the
// template does not do (8-bit operands other than TN, the 8-bit-only depth and pad on 16-bit).
TEST(AmdArchTable, EightBitPruningFollowsTheArch) {
  const auto& t = tiletune::find_template("mfma_gemm");
  auto gemm = [](DataType a, DataType c, bool ta, bool tb) {
    return tiletune::testing::gemm(a, c, ta, tb, 4096, 4096, 4096, 1);
  };
  const Problem fp8 = gemm(DataType::E4M3, DataType::BF16, true, false);
  const Problem int8 = gemm(DataType::S8, DataType::S32, true, false);
  std::map<std::string, std::int64_t> p = {{"MT0", 64}, {"MT1", 64}, {"DU", 64}, {"WM", 32}, {"WN", 32},
                                           {"MI", 32}, {"VW", 16}, {"PAD", 16}, {"DB", 1}};
  auto vars = [&](const Problem& pr, const std::string& arch) { return t.variables(Solution{"mfma_gemm", p}, pr, device_for(arch)); };
  auto why = [&](const Problem& pr, const std::string& arch) { return t.violation(vars(pr, arch)).value_or(""); };
  EXPECT_EQ(vars(fp8, "gfx942").at("INST_K"), 16);
  EXPECT_EQ(vars(fp8, "gfx950").at("INST_K"), 64);
  EXPECT_EQ(vars(int8, "gfx90a").at("INST_K"), 8);
  EXPECT_EQ(vars(int8, "gfx942").at("INST_K"), 16);
  EXPECT_EQ(vars(int8, "gfx950").at("INST_K"), 32);
  for (const std::string arch : {"gfx942", "gfx950"}) EXPECT_EQ(why(fp8, arch), "") << arch;
  for (const std::string arch : {"gfx90a", "gfx942", "gfx950"}) EXPECT_EQ(why(int8, arch), "") << arch;
  EXPECT_NE(why(fp8, "gfx90a").find("eight_bit_mfma_on_the_arch"), std::string::npos) << why(fp8, "gfx90a");
  EXPECT_NE(why(gemm(DataType::E4M3, DataType::F32, false, true), "gfx942").find("eight_bit_inputs_tn"), std::string::npos);
  p["MI"] = 16;  // 16x16x32 on gfx942; gfx950's 16x16x128 needs DU 128
  EXPECT_EQ(why(fp8, "gfx942"), "");
  EXPECT_NE(why(fp8, "gfx950").find("depth_multiple_of_instruction_k"), std::string::npos) << why(fp8, "gfx950");
  p["DU"] = 128;
  EXPECT_EQ(why(fp8, "gfx950"), "");
  p["PAD"] = 8;  // 136-byte pitch: gfx950's 32-byte fragments would straddle 16-byte reads
  EXPECT_NE(why(fp8, "gfx950").find("pad_keeps_fragments_aligned"), std::string::npos) << why(fp8, "gfx950");
  // DU 128 and PAD 16 are 8-bit only: the 16-bit spaces stay as they were.
  p = {{"MT0", 64}, {"MT1", 64}, {"DU", 128}, {"WM", 32}, {"WN", 32}, {"MI", 32}, {"VW", 8}, {"PAD", 8}, {"DB", 0}};
  EXPECT_NE(why(gemm(DataType::BF16, DataType::BF16, true, false), "gfx950").find("deep_tiles_and_wide_pads"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Compiles.

#define REQUIRE_TOOLCHAIN()                                                                  \
  do {                                                                                       \
    if (!hipb::clang_toolchain().missing.empty())                                            \
      GTEST_SKIP() << "offline AMD compiler unavailable: " << hipb::clang_toolchain().missing; \
  } while (0)

std::vector<Problem> problems_for(const std::string& templ) {
  std::vector<Problem> ps;
  if (templ.find("gemm") != std::string::npos) {
    ps.push_back(tiletune::testing::gemm(DataType::BF16, DataType::BF16, false, true, 4096, 4096, 4096, 1));
    ps.push_back(tiletune::testing::gemm(DataType::F16, DataType::F32, true, false, 1000, 777, 333, 2));
    return ps;
  }
  tiletune::ConvProblem c;
  c.in_type = c.out_type = DataType::BF16;
  c.n = 4, c.c = 64, c.h = c.w = 56, c.k = 64, c.r = c.s = 3, c.pad_h = c.pad_w = 1;
  ps.push_back(c);
  if (templ == "mfma_conv") {  // and its gradients: a strided dgrad, a wgrad writing fp32
    c.direction = tiletune::ConvDirection::BackwardData, c.stride_h = c.stride_w = 2;
    ps.push_back(c);
    c.direction = tiletune::ConvDirection::BackwardFilter, c.out_type = DataType::F32, c.stride_h = c.stride_w = 1;
    ps.push_back(c);
  }
  return ps;
}

struct Outcome {
  std::string what, error;
  hipb::AmdKernelInfo info;
  std::set<std::string> mfma;
  int mfma_count = 0;  // v_mfma instructions in the kernel's code
  std::int64_t lds_needed = 0, threads = 0;
};

Outcome compile_one(const tiletune::gpu::Compiler& compiler, const tiletune::tuner::Candidate& c,
                    const Problem& p, const DeviceInfo& dev) {
  Outcome o;
  o.what = dev.arch + " " + c.solution.kernel_name() + " " + p.key();
  try {
    const auto vars = c.tmpl->variables(c.solution, p, dev);
    if (auto shape = c.tmpl->model_shape(vars)) o.lds_needed = shape->shared_bytes, o.threads = shape->threads;
    const auto res = compiler.compile(c.tmpl->compile_request(c.solution, p, dev));
    if (!res.ok) return o.error = "compile failed:\n" + res.log, o;
    for (const auto& k : hipb::read_amd_code_object(res.code.bytes))
      if (k.name == res.code.symbol) o.info = k;
    if (o.info.name.empty()) return o.error = "kernel " + res.code.symbol + " not in the metadata", o;
    const std::string dis = hipb::disassemble_amd(res.code.bytes, dev.arch);
    static const std::regex mfma(R"(\bv_mfma_[a-z0-9_]+)");
    for (std::sregex_iterator it(dis.begin(), dis.end(), mfma), end; it != end; ++it) {
      o.mfma.insert(it->str());
      ++o.mfma_count;
    }
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

// Per arch and HIP template, from the enumerated space of its first problem: the first and the
// last candidate of the MFMA templates (the smallest and the largest tiles), the last of the
// others; from its further problems (mfma_conv's gradients), the last candidate.
TEST(OfflineCompile, SampleOfEveryHipTemplateForTheCdnaArches) {
  REQUIRE_TOOLCHAIN();
  auto compiler = tiletune::gpu::with_compile_cache(hipb::make_clang_compiler());
  std::vector<std::string> templates;
  for (const auto& t : tiletune::builtin_templates())
    if (t.supports(BackendKind::Hip)) templates.push_back(t.name());
  ASSERT_GE(templates.size(), 4u);  // mfma_gemm, mfma_conv, simt_gemm, simt_conv
  std::vector<std::pair<DeviceInfo, Problem>> context;
  std::vector<tiletune::tuner::Candidate> picks;
  for (const std::string arch : {"gfx90a", "gfx942", "gfx950"}) {
    const DeviceInfo dev = device_for(arch);
    for (const auto& name : templates) {
      const auto problems = problems_for(name);
      const auto e = tiletune::tuner::enumerate({tiletune::find_template(name)}, problems, dev);
      for (std::size_t pi = 0; pi < problems.size(); ++pi) {
        std::vector<const tiletune::tuner::Candidate*> mine;
        for (const auto& c : e.candidates)
          if (c.problem_index == pi) mine.push_back(&c);
        ASSERT_FALSE(mine.empty()) << name << " has no candidate for " << arch << " " << problems[pi].key();
        std::vector<const tiletune::tuner::Candidate*> sample = {mine.back()};
        if (pi == 0 && name.rfind("mfma_", 0) == 0 && mine.size() > 1) sample.push_back(mine.front());
        for (const auto* c : sample) {
          picks.push_back(*c);
          context.emplace_back(dev, problems[pi]);
        }
      }
    }
  }
  // Four at a time: each compile is its own clang process.
  std::vector<Outcome> done;
  for (std::size_t i = 0; i < picks.size(); i += 4) {
    std::vector<std::future<Outcome>> batch;
    for (std::size_t j = i; j < std::min(picks.size(), i + 4); ++j)
      batch.push_back(std::async(std::launch::async, [&, j] {
        return compile_one(*compiler, picks[j], context[j].second, context[j].first);
      }));
    for (auto& f : batch) done.push_back(f.get());
  }
  std::set<std::string> arches_with_mfma, conv_directions_with_mfma;
  for (std::size_t i = 0; i < done.size(); ++i) {
    const Outcome& o = done[i];
    SCOPED_TRACE(o.what);
    ASSERT_EQ(o.error, "");
    const hipb::AmdArch* arch = hipb::amd_arch(context[i].first.arch);
    ASSERT_NE(arch, nullptr);
    std::printf("%-84.84s vgpr=%3d agpr=%3d sgpr=%3d lds=%6d scratch=%d mfma=%s x%d\n", o.what.c_str(),
                o.info.vgpr_count, o.info.agpr_count, o.info.sgpr_count, o.info.lds_bytes, o.info.private_bytes,
                o.mfma.empty() ? "-" : o.mfma.begin()->c_str(), o.mfma_count);
    EXPECT_EQ(o.info.wavefront_size, 64);
    EXPECT_GT(o.info.vgpr_count, 0);
    EXPECT_LE(o.info.vgpr_count, arch->vgprs);
    EXPECT_LE(o.info.agpr_count, arch->agprs);
    EXPECT_LE(o.info.lds_bytes, arch->lds_bytes_per_workgroup);
    if (o.threads > 0) EXPECT_EQ(o.info.max_workgroup_size, o.threads);
    // Spills are not failures here (the largest tiles of a space may spill; a sweep measures
    // them), but they are shown: private_bytes > 0 is scratch memory.
    const bool mfma_template = picks[i].tmpl->name().rfind("mfma_", 0) == 0;
    if (mfma_template) {
      EXPECT_GE(o.info.lds_bytes, o.lds_needed) << "the template's LDS_BYTES is exact for its static LDS";
      EXPECT_FALSE(o.mfma.empty()) << "no v_mfma in the disassembly";
      EXPECT_GT(o.mfma_count, 0);
      arches_with_mfma.insert(arch->arch);
      // mfma_conv's samples include split-K with 32 splits, whose reduction once took every
      // register and spilled.
      if (picks[i].tmpl->name() == "mfma_conv") EXPECT_EQ(o.info.private_bytes, 0) << "scratch memory";
      if (picks[i].tmpl->name() == "mfma_conv" && o.mfma_count > 0)
        conv_directions_with_mfma.insert(std::string(arch->arch) + " " + tiletune::to_string(context[i].second.conv().direction));
    }
    // Only instructions the arch table knows for this arch.
    for (const auto& m : o.mfma) {
      const bool known = std::any_of(arch->mfma.begin(), arch->mfma.end(),
                                     [&](const hipb::MfmaShape& s) { return m == s.instruction; });
      EXPECT_TRUE(known) << m << " is not in the arch table of " << arch->arch;
    }
  }
  EXPECT_EQ(arches_with_mfma, (std::set<std::string>{"gfx90a", "gfx942", "gfx950"}));
  EXPECT_EQ(conv_directions_with_mfma.size(), 9u) << "mfma_conv: every direction on every arch";
}

// gfx950's doubled-K bf16 MFMA as a bare builtin, and gfx942 refusing it.
TEST(OfflineCompile, Gfx950DoubledKMfmaAndGfx942RefusesIt) {
  REQUIRE_TOOLCHAIN();
  auto compiler = tiletune::gpu::with_compile_cache(hipb::make_clang_compiler());
  tiletune::gpu::CompileRequest r;
  r.source =
      "typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));\n"
      "typedef float f32x16 __attribute__((ext_vector_type(16)));\n"
      "template <int N> __global__ void k16(const bf16x8* a, f32x16* d) {\n"
      "  d[threadIdx.x] = __builtin_amdgcn_mfma_f32_32x32x16_bf16(a[threadIdx.x], a[threadIdx.x + N], d[threadIdx.x], 0, 0, 0);\n"
      "}\n";
  r.name_expression = "k16<64>";
  r.arch = "gfx950";
  const auto ok = compiler->compile(r);
  ASSERT_TRUE(ok.ok) << ok.log;
  EXPECT_NE(ok.code.symbol.find("3k16ILi64E"), std::string::npos) << ok.code.symbol;
  EXPECT_NE(hipb::disassemble_amd(ok.code.bytes, "gfx950").find("v_mfma_f32_32x32x16_bf16"), std::string::npos);
  r.arch = "gfx942";
  const auto refused = compiler->compile(r);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.log.find("mfma_f32_32x32x16_bf16"), std::string::npos) << refused.log;
  // Nonsense is refused before clang sees it.
  r.arch = "-fplugin=x";
  EXPECT_FALSE(compiler->compile(r).ok);
}

// One solution compiled with clang-22: the kernel's metadata and the v_mfma mnemonics of its code.
struct OfflineCompiled {
  std::string error;
  hipb::AmdKernelInfo info;
  std::set<std::string> mfma;
  std::string disassembly;
};

OfflineCompiled compile_solution(const tiletune::gpu::Compiler& compiler, const tiletune::KernelTemplate& t, const Solution& s,
                          const Problem& p, const std::string& arch) {
  OfflineCompiled c;
  const auto res = compiler.compile(t.compile_request(s, p, device_for(arch)));
  if (!res.ok) return c.error = "compile failed:\n" + res.log, c;
  for (const auto& k : hipb::read_amd_code_object(res.code.bytes))
    if (k.name == res.code.symbol) c.info = k;
  if (c.info.name.empty()) return c.error = "kernel " + res.code.symbol + " not in the metadata", c;
  c.disassembly = hipb::disassemble_amd(res.code.bytes, arch);
  const std::string& dis = c.disassembly;
  static const std::regex mfma(R"(\bv_mfma_[a-z0-9_]+)");
  for (std::sregex_iterator it(dis.begin(), dis.end(), mfma), end; it != end; ++it) c.mfma.insert(it->str());
  return c;
}

// Each case must be admitted by the template's constraints on its arch, compile into exactly the
// expected v_mfma, which must be the arch table's instruction for the input type, MI and the
// template's derived INST_K, with the LDS the template computes, no scratch, and registers within
// the arch's file.
struct ShapeCase {
  std::string arch;
  Problem problem;
  std::map<std::string, std::int64_t> params;
  std::string instruction;
};

void expect_shapes(const std::string& templ, const std::vector<ShapeCase>& cases) {
  const auto& t = tiletune::find_template(templ);
  auto compiler = tiletune::gpu::with_compile_cache(hipb::make_clang_compiler());
  std::vector<std::future<OfflineCompiled>> results;
  for (const auto& c : cases) {
    const Solution s{templ, c.params};
    const auto v = t.variables(s, c.problem, device_for(c.arch));
    const auto why = t.violation(v);
    ASSERT_FALSE(why.has_value()) << c.arch << " " << s.kernel_name() << " " << c.problem.key() << ": " << *why;
    const hipb::AmdArch* arch = hipb::amd_arch(c.arch);
    const DataType in = c.problem.is_conv() ? c.problem.conv().in_type : c.problem.gemm().a_type;
    const hipb::MfmaShape* shape = arch->shape(tiletune::to_string(in), int(v.at("MI")), int(v.at("INST_K")));
    ASSERT_NE(shape, nullptr) << c.arch << " has no " << tiletune::to_string(in) << " MFMA of MI " << v.at("MI")
                              << " and K " << v.at("INST_K");
    EXPECT_EQ(shape->instruction, c.instruction) << "the arch table and the expected instruction differ";
    results.push_back(std::async(std::launch::async, [&, s] { return compile_solution(*compiler, t, s, c.problem, c.arch); }));
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const ShapeCase& c = cases[i];
    const Solution s{templ, c.params};
    SCOPED_TRACE(c.arch + " " + c.problem.key() + " " + s.kernel_name());
    const OfflineCompiled r = results[i].get();
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.mfma, std::set<std::string>{c.instruction});
    EXPECT_EQ(r.info.lds_bytes, t.variables(s, c.problem, device_for(c.arch)).at("LDS_BYTES"));
    EXPECT_EQ(r.info.private_bytes, 0) << "scratch memory";
    const hipb::AmdArch* arch = hipb::amd_arch(c.arch);
    EXPECT_GT(r.info.vgpr_count, 0);
    EXPECT_LE(r.info.vgpr_count + r.info.agpr_count, arch->vgprs + (arch->unified_registers ? 0 : arch->agprs));
    EXPECT_LE(r.info.lds_bytes, arch->lds_bytes_per_workgroup);
    std::printf("%-7s %-30.30s %-60.60s vgpr=%3d agpr=%3d sgpr=%3d lds=%6d scratch=%d %s\n", c.arch.c_str(),
                c.problem.key().c_str(), s.kernel_name().c_str(), r.info.vgpr_count, r.info.agpr_count,
                r.info.sgpr_count, r.info.lds_bytes, r.info.private_bytes, c.instruction.c_str());
  }
}

using Params = std::map<std::string, std::int64_t>;
Params with(Params extra, Params base) {
  for (const auto& [k, v] : extra) base[k] = v;
  return base;
}

// mfma_gemm's instruction shapes per arch: 16-bit inputs take gfx950's doubled-K 32x32x16 /
// 16x16x32 there (XK = 2, derived from the arch table as the kernel derives it from __gfx950__) and
// the CDNA2/CDNA3 shapes elsewhere. Each instance compiles into exactly the expected v_mfma with the
// LDS the template computes; gfx950's 160 KiB admit double-buffered tiles that gfx942 prunes.
TEST(OfflineCompile, MfmaGemmShapesFollowTheArch) {
  REQUIRE_TOOLCHAIN();
  const Params small = {{"MT0", 64}, {"MT1", 64}, {"DU", 32}, {"WM", 32}, {"WN", 32},
                        {"MI", 32},  {"VW", 8},   {"PAD", 8}, {"DB", 1}};
  // 256x128, 64 deep, double-buffered: 2 * 384 * 72 * 2 bytes = 108 KiB of LDS for 16-bit inputs;
  // 128x128x64 fp32: 144 KiB.
  const Params big = with({{"MT0", 256}, {"MT1", 128}, {"DU", 64}, {"WM", 64}, {"WN", 64}}, small);
  const Params big32 = with({{"MT0", 128}, {"MT1", 128}, {"DU", 64}, {"WM", 64}, {"WN", 32}, {"VW", 4}}, small);
  struct Case {
    std::string arch;
    DataType type;
    Params params;
    std::string instruction;
    int xk;
  };
  const std::vector<Case> cases = {
      {"gfx950", DataType::BF16, small, "v_mfma_f32_32x32x16_bf16", 2},
      {"gfx950", DataType::BF16, with({{"MI", 16}}, small), "v_mfma_f32_16x16x32_bf16", 2},
      {"gfx950", DataType::F16, small, "v_mfma_f32_32x32x16_f16", 2},
      {"gfx950", DataType::F16, with({{"MI", 16}}, small), "v_mfma_f32_16x16x32_f16", 2},
      {"gfx950", DataType::BF16, big, "v_mfma_f32_32x32x16_bf16", 2},
      {"gfx950", DataType::F32, big32, "v_mfma_f32_32x32x2_f32", 1},
      {"gfx942", DataType::BF16, small, "v_mfma_f32_32x32x8_bf16", 1},
      {"gfx942", DataType::F16, with({{"MI", 16}}, small), "v_mfma_f32_16x16x16_f16", 1},
      {"gfx90a", DataType::BF16, small, "v_mfma_f32_32x32x8bf16_1k", 1},
  };
  const auto& t = tiletune::find_template("mfma_gemm");
  auto problem = [](DataType type) { return tiletune::testing::gemm(type, type, false, true, 4096, 4096, 4096, 1); };
  auto vars = [&](const Params& p, DataType type, const std::string& arch) {
    return t.variables(Solution{"mfma_gemm", p}, problem(type), device_for(arch));
  };
  // Pruning by the constraints, not by failed compiles: the big tiles fit gfx950 only; a 16-deep
  // tile of 16x16 blocks is shallower than gfx950's 16x16x32, and fine on gfx942.
  for (const auto& [p, type] : {std::pair{big, DataType::BF16}, std::pair{big32, DataType::F32}}) {
    const auto on942 = t.violation(vars(p, type, "gfx942"));
    ASSERT_TRUE(on942.has_value());
    EXPECT_NE(on942->find("lds_fits"), std::string::npos) << *on942;
    EXPECT_GT(vars(p, type, "gfx950").at("LDS_BYTES"), 65536);
  }
  const Params shallow = with({{"MI", 16}, {"DU", 16}}, small);
  const auto on950 = t.violation(vars(shallow, DataType::BF16, "gfx950"));
  ASSERT_TRUE(on950.has_value());
  EXPECT_NE(on950->find("depth_multiple_of_instruction_k"), std::string::npos) << *on950;
  EXPECT_FALSE(t.violation(vars(shallow, DataType::BF16, "gfx942")).has_value());
  for (const std::string arch : {"gfx90a", "gfx942", "gfx950"})  // the default fits every CDNA arch
    EXPECT_FALSE(t.violation(t.variables(t.default_solution(), problem(DataType::BF16), device_for(arch))));

  std::vector<ShapeCase> shapes;
  for (const auto& c : cases) {
    EXPECT_EQ(vars(c.params, c.type, c.arch).at("XK"), c.xk) << c.arch;
    shapes.push_back({c.arch, problem(c.type), c.params, c.instruction});
  }
  expect_shapes("mfma_gemm", shapes);
}

// e5m2 in mfma_gemm, alone and against e4m3: gfx942 issues the MFMA of the operand formats
// (fp8 = e4m3, bf8 = e5m2, read as FNUZ after the conversion on load), gfx950 its f8f6f4 with the
// formats as fields (cbsz for A, blgp for B: 1 = bf8); e4m3 alone keeps fp8_fp8 and format 0. No
// scratch, the LDS the template computes.
TEST(OfflineCompile, MfmaGemmE5m2TakesTheInstructionOfItsOperandFormats) {
  REQUIRE_TOOLCHAIN();
  const auto& t = tiletune::find_template("mfma_gemm");
  auto compiler = tiletune::gpu::with_compile_cache(hipb::make_clang_compiler());
  auto problem = [](DataType a, DataType b) {
    tiletune::GemmProblem g = tiletune::testing::gemm(a, DataType::BF16, true, false, 4096, 4096, 4096, 1);
    g.b_type = b;
    return Problem(g.canonical());
  };
  const Params p942 = {{"MT0", 64}, {"MT1", 64}, {"DU", 64},  {"WM", 32}, {"WN", 32},
                       {"MI", 32},  {"VW", 16},  {"PAD", 16}, {"DB", 1}};
  const Params p950 = with({{"MI", 16}, {"DU", 128}}, p942);
  struct Case {
    std::string arch;
    DataType a, b;
    std::string instruction, formats;  // formats: what the disassembly says of gfx950's operand formats
  };
  const std::vector<Case> cases = {
      {"gfx942", DataType::E5M2, DataType::E5M2, "v_mfma_f32_32x32x16_bf8_bf8", ""},
      {"gfx942", DataType::E4M3, DataType::E5M2, "v_mfma_f32_32x32x16_fp8_bf8", ""},
      {"gfx942", DataType::E5M2, DataType::E4M3, "v_mfma_f32_32x32x16_bf8_fp8", ""},
      {"gfx950", DataType::E4M3, DataType::E4M3, "v_mfma_f32_16x16x128_f8f6f4", ""},
      {"gfx950", DataType::E5M2, DataType::E5M2, "v_mfma_f32_16x16x128_f8f6f4", "cbsz:1 blgp:1"},
      {"gfx950", DataType::E4M3, DataType::E5M2, "v_mfma_f32_16x16x128_f8f6f4", "blgp:1"},
      {"gfx950", DataType::E5M2, DataType::E4M3, "v_mfma_f32_16x16x128_f8f6f4", "cbsz:1"},
  };
  std::vector<std::future<OfflineCompiled>> results;
  for (const Case& c : cases) {
    const Solution s{"mfma_gemm", c.arch == "gfx950" ? p950 : p942};
    const Problem pr = problem(c.a, c.b);
    const auto why = t.violation(t.variables(s, pr, device_for(c.arch)));
    ASSERT_FALSE(why.has_value()) << c.arch << " " << pr.key() << ": " << *why;
    results.push_back(std::async(std::launch::async, [&, s, pr] { return compile_solution(*compiler, t, s, pr, c.arch); }));
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Solution s{"mfma_gemm", c.arch == "gfx950" ? p950 : p942};
    const Problem pr = problem(c.a, c.b);
    SCOPED_TRACE(c.arch + " " + pr.key());
    const OfflineCompiled r = results[i].get();
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.mfma, std::set<std::string>{c.instruction});
    EXPECT_EQ(r.info.private_bytes, 0) << "scratch memory";
    EXPECT_EQ(r.info.lds_bytes, t.variables(s, pr, device_for(c.arch)).at("LDS_BYTES"));
    // The MFMA lines of gfx950 name a format only where it is not fp8 e4m3's 0.
    std::set<std::string> formats;
    static const std::regex field(R"(\b(cbsz|blgp):[0-9]+)");
    std::istringstream lines(r.disassembly);
    for (std::string line; std::getline(lines, line);)
      if (line.find(c.instruction) != std::string::npos) {
        std::string f;
        for (std::sregex_iterator it(line.begin(), line.end(), field), end; it != end; ++it) f += (f.empty() ? "" : " ") + it->str();
        formats.insert(f);
      }
    EXPECT_EQ(formats, std::set<std::string>{c.formats});
  }
}

// The HIP backend's compiler hands hipRTC's refusals (gfx942: Debian's hipRTC aborts on it) to
// the offline compiler.
TEST(OfflineCompile, HipBackendRoutesGfx942ToClang) {
  REQUIRE_TOOLCHAIN();
  auto compiler = tiletune::gpu::make_compiler(tiletune::gpu::BackendKind::Hip);  // through the compile cache
  EXPECT_NE(compiler->version().find("clang-offline"), std::string::npos) << compiler->version();
  const auto& t = tiletune::find_template("mfma_gemm");
  const auto p = tiletune::testing::gemm(DataType::BF16, DataType::BF16, false, false, 256, 256, 256, 1);
  const auto res = compiler->compile(t.compile_request(t.default_solution(), p, device_for("gfx942")));
  ASSERT_TRUE(res.ok) << res.log;
  // An AMDGPU HSA ELF (OS/ABI 64) of code object v5 (ABI version 3).
  ASSERT_GT(res.code.bytes.size(), 16u);
  EXPECT_EQ(res.code.bytes[7], 64);
  EXPECT_EQ(res.code.bytes[8], 3);
  EXPECT_EQ(res.code.symbol, "_Z9mfma_gemmI7tt_bf16S0_Lb0ELb0ELi64ELi64ELi32ELi32ELi32ELi16ELi1ELi8ELi0EEv12TtGemmParams");
  // TILETUNE_HIP_COMPILER picks one compiler for every arch; a bad value is an error naming it.
  ::setenv("TILETUNE_HIP_COMPILER", "hiprtc", 1);
  EXPECT_EQ(hipb::make_compiler()->version().find("clang"), std::string::npos);
  ::setenv("TILETUNE_HIP_COMPILER", "nvcc", 1);
  try {
    hipb::make_compiler();
    ADD_FAILURE() << "TILETUNE_HIP_COMPILER=nvcc accepted";
  } catch (const tiletune::Error& e) {
    EXPECT_NE(std::string(e.what()).find("TILETUNE_HIP_COMPILER=nvcc"), std::string::npos) << e.what();
  }
  ::unsetenv("TILETUNE_HIP_COMPILER");
}

}  // namespace

namespace {

// `tune --compile-only --arch gfx942`: code objects and their figures in the database, nothing
// measured; a rerun finds them cached. A bf16 and an fp8 GEMM (the fp8 one through gfx942's
// v_mfma_f32_*_fp8_fp8), both packed and explained.
TEST(CompileOnly, FillsTheDatabaseForAnArchThatIsNotHere) {
  REQUIRE_TOOLCHAIN();
  const tiletune::TempDir dir("tiletune-compile-only-");
  const auto config = tiletune::tuner::parse_config(R"({
    "name": "mi300_tiny",
    "problems": [{"dtype": "bf16", "transA": "N", "transB": "T", "m": 4096, "n": 4096, "k": 4096},
                 {"dtype": "fp8", "transA": "T", "transB": "N", "m": 4096, "n": 4096, "k": 4096}],
    "templates": {"mfma_gemm": {"parameters": {"MT0": [128], "MT1": [128], "DU": [32], "MI": [32]}}},
    "search": {"strategy": "random", "budget": 2}
  })", dir.path().string());
  tiletune::tuner::SweepOptions o;
  o.backend = BackendKind::Hip;
  o.db_path = (dir.path() / "t.db").string();
  o.compile_jobs = 2;
  std::FILE* quiet = std::fopen("/dev/null", "w");
  const auto s = tiletune::tuner::run_compile_only(config, o, "gfx942", quiet);
  EXPECT_EQ(s.selected, 4u);  // 2 per problem
  EXPECT_EQ(s.compiled, 4u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.with_figures, 4u);
  auto db = tiletune::db::Database::open(o.db_path, tiletune::db::Mode::ReadOnly);
  std::size_t objects = 0;
  db.for_each_code_object([&](const tiletune::db::CodeObjectRecord& r) {
    ++objects;
    EXPECT_EQ(r.arch, "gfx942");
    EXPECT_TRUE(r.ok);
    const auto figures = db.meta(tiletune::tuner::figures_meta_key(r.cache_key));
    ASSERT_TRUE(figures.has_value());
    const auto j = nlohmann::json::parse(*figures);
    EXPECT_GT(j.at("vgpr").get<int>(), 0);
    EXPECT_GT(j.at("mfma_instructions").get<int>(), 0);
    EXPECT_LE(j.at("lds_bytes").get<int>(), 65536);
  });
  EXPECT_EQ(objects, 4u);
  EXPECT_TRUE(db.winners("gfx942").empty());  // nothing measured, nothing won
  EXPECT_EQ(db.compiled("gfx942").size(), 4u);  // ... but all recorded as compiled for their problem
  const auto again = tiletune::tuner::run_compile_only(config, o, "gfx942", quiet);
  EXPECT_EQ(again.cached, 4u);
  EXPECT_EQ(again.compiled, 0u);

  // db pack keeps the model's first of each problem's two, unmeasured; db explain shows its real
  // figures.
  const std::string shipped = (dir.path() / "mi300x.db").string();
  const auto packed = tiletune::db::pack(o.db_path, shipped, {}, false);
  EXPECT_EQ(packed.winners, 0u);
  EXPECT_EQ(packed.compiled, 2u);
  auto ship = tiletune::db::Database::open(shipped, tiletune::db::Mode::ReadOnly);
  for (const auto& problem : config.problems) {
    SCOPED_TRACE(problem.key());
    const auto e = tiletune::db::explain(ship, problem, "");
    EXPECT_EQ(e.arch, "gfx942");
    EXPECT_NE(e.choice, tiletune::db::Explanation::Choice::Tuned);
    EXPECT_FALSE(e.measured);
    ASSERT_EQ(e.compiled.size(), 1u);
    const auto figures = nlohmann::json::parse(e.compiled[0].record.figures);
    EXPECT_GT(figures.at("vgpr").get<int>(), 0);
    EXPECT_GT(figures.at("mfma_instructions").get<int>(), 0);
    const std::string text = tiletune::db::format(e);
    EXPECT_NE(text.find("UNMEASURED"), std::string::npos) << text;
    EXPECT_NE(text.find("VGPR " + figures.at("vgpr").dump()), std::string::npos) << text;
    std::printf("%s", text.c_str());
  }
  EXPECT_THROW(tiletune::tuner::run_compile_only(config, o, "sm_90a", quiet), tiletune::Error);
  EXPECT_THROW(tiletune::tuner::run_compile_only(config, o, "", quiet), tiletune::Error);
  std::fclose(quiet);
}

}  // namespace
