// `tiletune import`: each format's fixture (tests/fixtures/import/, README.md there says where each
// format's shape comes from) read into problems with call counts and skip reports, the BLAS and
// PyTorch conventions mapped onto tiletune's (checked by computing the products), format detection,
// the written config loaded by the parser `tiletune tune` uses, and the program's errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/temp_dir.h"
#include "tests/process_util.h"
#include "tests/test_util.h"
#include "tools/import/config_writer.h"
#include "tools/import/formats.h"
#include "tuner/config.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::imports;
using nlohmann::json;
using tiletune::testing::error_of;
using tiletune::ProgramOutput;
using tiletune::testing::run_tiletune;

namespace {

const std::string kFixtures = std::string(TILETUNE_SOURCE_DIR) + "/tests/fixtures/import/";

struct Imported {
  Workload workload;
  FileReport report;
  std::map<std::string, std::int64_t> calls;  // problem key -> calls
};

Imported import_fixture(const std::string& name, ImportOptions options = {}) {
  Imported r;
  r.report = import_file(kFixtures + name, nullptr, options, r.workload);
  for (const auto& e : r.workload.entries()) r.calls[e.problem.key()] = e.calls;
  return r;
}

// Reads `text` as `format` without a file (the formats' own readers).
Imported import_text(const std::string& text, Format format, ImportOptions options = {}) {
  Imported r;
  r.report.file = "text";
  Sink sink(r.workload, r.report, options);
  switch (format) {
    case Format::RocBlas: read_rocblas_log(text, sink); break;
    case Format::HipBlasLt: read_hipblaslt_log(text, sink); break;
    case Format::TunableOp: read_tunableop_csv(text, sink); break;
    case Format::TorchTrace: read_torch_trace(text, sink); break;
  }
  for (const auto& e : r.workload.entries()) r.calls[e.problem.key()] = e.calls;
  return r;
}

GemmProblem gemm(DataType t, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda,
                 std::int64_t ldb, std::int64_t ldc, bool beta_zero = true) {
  GemmProblem p = tiletune::testing::gemm(t, t, ta, tb, m, n, k, 1, beta_zero);
  p.lda = lda, p.ldb = ldb, p.ldc = ldc;
  return p;
}

GemmProblem batched(GemmProblem p, std::int64_t batch) {
  p.batch = batch;
  p.stride_a = p.stride_b = p.stride_c = 0;  // packed
  return p.canonical();
}

// nn.Linear(64, 160, bias=False) in bf16 on 96 rows, as every fixture logs it: PyTorch calls the
// BLAS with transa T (the weight), m = out_features 160, n = rows 96, k = 64, lda = ldb = 64.
const GemmProblem kLinear = gemm(DataType::BF16, true, false, 160, 96, 64, 64, 64, 160);

std::size_t skipped(const FileReport& r, SkipKind k) {
  auto it = r.skipped.find(k);
  return it == r.skipped.end() ? 0 : it->second.count;
}

std::size_t first_skipped(const FileReport& r, SkipKind k) {
  auto it = r.skipped.find(k);
  return it == r.skipped.end() ? 0 : it->second.first_where;
}

}  // namespace

// ---- the formats -------------------------------------------------------------------------------

TEST(Import, RocblasBenchLog) {
  const Imported r = import_fixture("rocblas_bench.log");
  GemmProblem sgemm = gemm(DataType::F32, false, false, 128, 64, 32, 128, 32, 128, /*beta_zero=*/false);
  // -r h: f16 throughout, imported with tiletune's f32 accumulation.
  GemmProblem hgemm = gemm(DataType::F16, false, true, 64, 48, 80, 64, 48, 64);
  GemmProblem strided = batched(gemm(DataType::F16, false, true, 64, 64, 32, 64, 64, 64), 12);
  EXPECT_EQ(r.calls, (std::map<std::string, std::int64_t>{
                         {kLinear.key(), 3}, {sgemm.key(), 1}, {hgemm.key(), 1}, {strided.key(), 1}}));
  EXPECT_EQ(r.report.calls, 6u);
  EXPECT_EQ(skipped(r.report, SkipKind::NotGemm), 1u) << "axpy";
  EXPECT_EQ(first_skipped(r.report, SkipKind::NotGemm), 3u);
  EXPECT_EQ(skipped(r.report, SkipKind::Unsupported), 2u) << "f64, pointer-array batches";
  EXPECT_EQ(skipped(r.report, SkipKind::Unparseable), 2u) << "-n 6x4, a warning line";
  EXPECT_EQ(first_skipped(r.report, SkipKind::Unparseable), 11u);
  EXPECT_NE(r.report.skipped.at(SkipKind::Unparseable).first_detail.find("6x4"), std::string::npos);
  EXPECT_EQ(skipped(r.report, SkipKind::Invalid), 1u) << "lda 100 < m 128";
  EXPECT_EQ(r.workload.entries()[0].first_seen, kFixtures + "rocblas_bench.log:1");
}

TEST(Import, HipblasltBenchLog) {
  const Imported r = import_fixture("hipblaslt_bench.log");
  GemmProblem tf32 = gemm(DataType::F32, false, false, 256, 128, 64, 256, 64, 256);
  tf32.compute_tf32 = true;  // c_xf32_r
  const GemmProblem epilogue = gemm(DataType::BF16, true, false, 3072, 512, 768, 768, 768, 3072);  // bias and gelu dropped
  const GemmProblem strided = batched(gemm(DataType::F16, false, true, 64, 64, 64, 64, 64, 64, false), 16);
  EXPECT_EQ(r.calls, (std::map<std::string, std::int64_t>{
                         {kLinear.key(), 2}, {tf32.key(), 1}, {epilogue.key(), 1}, {strided.key(), 1}}));
  EXPECT_EQ(skipped(r.report, SkipKind::Unparseable), 1u);
  EXPECT_EQ(first_skipped(r.report, SkipKind::Unparseable), 3u) << "the program's own output";
  EXPECT_EQ(skipped(r.report, SkipKind::Unsupported), 2u) << "fp8 scaled, a broadcast B (stride_b 0)";
  EXPECT_NE(r.report.skipped.at(SkipKind::Unsupported).first_detail.find("scaleA"), std::string::npos);
}

TEST(Import, TunableOpResults) {
  const Imported r = import_fixture("tunableop_results0.csv");
  const GemmProblem old_format = gemm(DataType::F32, false, true, 25088, 4096, 64, 0, 0, 0);  // no ld: packed
  // GemmAndBias: the bias reaches tiletune as C (tiletune.torch's addmm), so beta != 0.
  const GemmProblem bias = gemm(DataType::BF16, true, false, 3072, 512, 768, 768, 768, 3072, false);
  const GemmProblem strided = batched(gemm(DataType::F16, false, true, 64, 64, 32, 64, 64, 64), 12);
  EXPECT_EQ(r.calls, (std::map<std::string, std::int64_t>{
                         {kLinear.key(), 1}, {old_format.key(), 1}, {bias.key(), 1}, {strided.key(), 1}}));
  EXPECT_EQ(skipped(r.report, SkipKind::Unsupported), 2u) << "ScaledGemm fp8, double";
  EXPECT_EQ(r.report.skipped_count(), 2u) << "the Validator lines are neither problems nor skips";

  ImportOptions tf32;
  tf32.tf32 = true;
  const Imported t = import_fixture("tunableop_results0.csv", tf32);
  GemmProblem old_tf32 = old_format;
  old_tf32.compute_tf32 = true;
  EXPECT_TRUE(t.calls.count(old_tf32.key())) << "float GEMMs under --tf32";
  EXPECT_TRUE(t.calls.count(kLinear.key())) << "bf16 ones as they are";
}

TEST(Import, TunableOpUntuned) {
  const Imported r = import_fixture("tunableop_untuned0.csv");
  // The linear layer's forward, input gradient (dy @ W) and weight gradient (dy^T @ x).
  const GemmProblem dgrad = gemm(DataType::BF16, false, false, 64, 96, 160, 64, 160, 64);
  const GemmProblem wgrad = gemm(DataType::BF16, false, true, 64, 160, 96, 64, 160, 64);
  const GemmProblem attention = batched(gemm(DataType::BF16, true, false, 128, 128, 64, 64, 64, 128), 32);
  EXPECT_EQ(r.calls, (std::map<std::string, std::int64_t>{
                         {kLinear.key(), 1}, {dgrad.key(), 1}, {wgrad.key(), 1}, {attention.key(), 1}}));
  EXPECT_EQ(skipped(r.report, SkipKind::Unparseable), 1u) << "an ld triple cut short";
  EXPECT_EQ(first_skipped(r.report, SkipKind::Unparseable), 5u);
}

TEST(Import, TunableOpRowsThatDoNotRead) {
  const Imported r = import_text(
      "GemmTunableOp_BFloat16_TN,nt_16_16_16\n"                // layouts disagree
      "GemmTunableOp_BFloat16_TN\n"                            // no params
      "GemmStridedBatchedTunableOp_Half_NN,nn_8_8_8_ld_8_8_8\n"  // no _B_
      "GemmTunableOp_BFloat16_TN,tn_16_16_16_ld_16_16_16_x_1\n"  // more than the signature holds
      "SoftmaxTunableOp_float_NN,nn_8_8_8\n",
      Format::TunableOp);
  EXPECT_EQ(skipped(r.report, SkipKind::Unparseable), 4u);
  EXPECT_EQ(skipped(r.report, SkipKind::NotGemm), 1u);
  EXPECT_TRUE(r.calls.empty());
}

// torch._scaled_mm's TunableOp rows: fp8 GEMMs with per-tensor scales, e4m3 and the mixed pairs, any
// 16-bit or f32 output; row-wise scales, a bias, ROCm's FNUZ fp8 and an fp8 output are not computed.
TEST(Import, TunableOpScaledGemms) {
  const Imported r = import_text(
      "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_BFloat16_TN,tn_4096_2048_1024_ld_1024_1024_4096_rw_0_bias_None,"
      "Gemm_Hipblaslt_77,0.0213\n"
      "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e5m2_Half_TN,tn_1024_512_2048_ld_2048_2048_1024_rw_0_bias_None\n"
      "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_float_TN,tn_64_32_128_ld_128_128_64\n"  // before rw / bias
      "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_BFloat16_TN,tn_64_64_64_ld_64_64_64_rw_1_bias_None\n"
      "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_BFloat16_TN,tn_64_64_64_ld_64_64_64_rw_0_bias_BFloat16\n"
      "ScaledGemmTunableOp_Float8_e4m3fnuz_Float8_e4m3fnuz_BFloat16_TN,tn_64_64_64_ld_64_64_64_rw_0_bias_None\n"
      "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_Float8_e4m3fn_TN,tn_64_64_64_ld_64_64_64_rw_0_bias_None\n"
      "ScaledGemmTunableOp_Float8_e4m3fn_BFloat16_TN,tn_64_64_64_ld_64_64_64_rw_0_bias_None\n"    // two types
      "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_BFloat16_TN,tn_64_64_64_ld_64_64_64_rw\n",  // rw without a value
      Format::TunableOp);
  GemmProblem e4m3 = gemm(DataType::E4M3, true, false, 4096, 2048, 1024, 1024, 1024, 4096);
  e4m3.c_type = DataType::BF16;
  GemmProblem mixed = gemm(DataType::E4M3, true, false, 1024, 512, 2048, 2048, 2048, 1024);
  mixed.b_type = DataType::E5M2, mixed.c_type = DataType::F16;
  GemmProblem f32_out = gemm(DataType::E4M3, true, false, 64, 32, 128, 128, 128, 64);
  f32_out.c_type = DataType::F32;
  EXPECT_EQ(r.calls, (std::map<std::string, std::int64_t>{
                         {e4m3.canonical().key(), 1}, {mixed.canonical().key(), 1}, {f32_out.canonical().key(), 1}}));
  EXPECT_NE(mixed.canonical().key().find("e4m3.e5m2"), std::string::npos) << mixed.canonical().key();
  EXPECT_EQ(skipped(r.report, SkipKind::Unsupported), 4u) << "row-wise scales, a bias, FNUZ, an fp8 output";
  EXPECT_NE(r.report.skipped.at(SkipKind::Unsupported).first_detail.find("row-wise"), std::string::npos);
  EXPECT_EQ(skipped(r.report, SkipKind::Unparseable), 2u);
}

TEST(Import, TorchProfilerTrace) {
  const Imported r = import_fixture("torch_trace.json");
  const GemmProblem addmm = gemm(DataType::BF16, true, false, 160, 96, 64, 64, 64, 160, /*beta_zero=*/false);
  // q @ k^T: k^T (32 x 64, strides [1, 32]) is column-major, so tiletune's A is "T", lda 32.
  const GemmProblem bmm = batched(gemm(DataType::F16, true, false, 64, 64, 32, 32, 32, 64), 12);
  const GemmProblem matmul = gemm(DataType::F32, false, false, 8, 32, 16, 8, 16, 8);
  const GemmProblem dgrad = gemm(DataType::BF16, false, false, 64, 96, 160, 64, 160, 64);
  const GemmProblem wgrad = gemm(DataType::BF16, false, true, 64, 160, 96, 64, 160, 64);
  ConvProblem fwd;
  fwd.layout = ConvLayout::NHWC;
  fwd.n = 2, fwd.c = 3, fwd.h = fwd.w = 32, fwd.k = 16, fwd.r = fwd.s = 3;
  fwd.stride_h = fwd.stride_w = 2, fwd.pad_h = fwd.pad_w = 1;
  ConvProblem first_wgrad = fwd;
  first_wgrad.direction = ConvDirection::BackwardFilter;
  ConvProblem grouped;
  grouped.layout = ConvLayout::NCHW;
  grouped.n = 4, grouped.c = 8, grouped.h = grouped.w = 12, grouped.k = 8, grouped.r = grouped.s = 3;
  grouped.pad_h = grouped.pad_w = 1, grouped.groups = 2;
  ConvProblem grouped_dgrad = grouped, grouped_wgrad = grouped;
  grouped_dgrad.direction = ConvDirection::BackwardData;
  grouped_wgrad.direction = ConvDirection::BackwardFilter;
  // Each linear, matmul and convolution once: the events nested in them are their dispatch.
  EXPECT_EQ(r.calls, (std::map<std::string, std::int64_t>{{kLinear.key(), 2},
                                                         {addmm.key(), 1},
                                                         {bmm.key(), 1},
                                                         {matmul.key(), 1},
                                                         {dgrad.key(), 1},
                                                         {wgrad.key(), 1},
                                                         {Problem(fwd).key(), 1},
                                                         {Problem(first_wgrad).key(), 1},
                                                         {Problem(grouped_dgrad).key(), 1},
                                                         {Problem(grouped_wgrad).key(), 1}}));
  EXPECT_EQ(r.report.unit, "event");
  EXPECT_EQ(skipped(r.report, SkipKind::Unsupported), 2u) << "double, a transposed convolution";
  EXPECT_EQ(skipped(r.report, SkipKind::Unparseable), 1u) << "an mm without shapes";
  EXPECT_NE(r.report.skipped.at(SkipKind::Unparseable).first_detail.find("record_shapes"), std::string::npos);

  // The linear layer's gradients in the trace are the untuned TunableOp file's rows.
  const Imported untuned = import_fixture("tunableop_untuned0.csv");
  EXPECT_TRUE(untuned.calls.count(dgrad.key()) && untuned.calls.count(wgrad.key()));
}

namespace {

// A trace of one operator event.
std::string one_event(const std::string& name, const json& dims, const json& types, const json& strides,
                      const json& concrete) {
  json args = {{"Input Dims", dims}, {"Input type", types}};
  if (!strides.is_null()) args["Input Strides"] = strides;
  if (!concrete.is_null()) args["Concrete Inputs"] = concrete;
  json event = json::object();
  event["ph"] = "X";
  event["name"] = name;
  event["pid"] = event["tid"] = event["ts"] = event["dur"] = 1;
  event["args"] = args;
  json trace = json::object();
  trace["traceEvents"] = json::array({event});
  return trace.dump();
}

}  // namespace

TEST(Import, TraceBetaAndMissingArguments) {
  const json f2 = {"float", "float", "float", "Scalar", "Scalar"};
  auto addmm = [&](const json& concrete) {
    const Imported r = import_text(one_event("aten::addmm", json::parse("[[8], [4, 6], [6, 8], [], []]"), f2, nullptr, concrete),
                                   Format::TorchTrace);
    EXPECT_EQ(r.workload.entries().size(), 1u) << r.report.summary();
    return r.workload.entries().at(0).problem.gemm();
  };
  EXPECT_TRUE(addmm(json{"", "", "", "0", "1"}).beta_zero) << "beta 0: C is not read";
  EXPECT_FALSE(addmm(json{"", "", "", "0.5", "1"}).beta_zero);
  EXPECT_FALSE(addmm(nullptr).beta_zero) << "not recorded: addmm's default beta, 1";
  const Imported b = import_text(one_event("aten::baddbmm", json::parse("[[3, 4, 8], [3, 4, 6], [3, 6, 8], [], []]"), f2,
                                           nullptr, json{"", "", "", "0", "1"}),
                                 Format::TorchTrace);
  ASSERT_EQ(b.workload.entries().size(), 1u) << b.report.summary();
  EXPECT_EQ(b.workload.entries()[0].problem.key(),
            Problem(batched(gemm(DataType::F32, false, false, 8, 4, 6, 8, 6, 8), 3)).key());
  // Without strides, tensors are contiguous (and noted so).
  const Imported r = import_text(one_event("aten::mm", {{4, 6}, {6, 8}}, {"float", "float"}, nullptr, nullptr),
                                 Format::TorchTrace);
  EXPECT_EQ(r.workload.entries().at(0).problem.key(), Problem(gemm(DataType::F32, false, false, 8, 4, 6, 8, 6, 8)).key());
  EXPECT_EQ(r.report.notes.size(), 1u);

  // A convolution without Concrete Inputs: stride 1, padding 0, dilation 1 assumed and noted;
  // groups follow from the weight's channels.
  const Imported c = import_text(one_event("aten::convolution", {{1, 6, 9, 9}, {6, 2, 3, 3}, json::array()},
                                           {"c10::BFloat16", "c10::BFloat16", ""}, nullptr, nullptr),
                                 Format::TorchTrace);
  const ConvProblem p = c.workload.entries().at(0).problem.conv();
  EXPECT_EQ(p.groups, 3);
  EXPECT_EQ(p.stride_h, 1);
  EXPECT_EQ(p.pad_h, 0);
  EXPECT_EQ(p.in_type, DataType::BF16);
  EXPECT_EQ(p.layout, ConvLayout::NCHW);
  EXPECT_EQ(c.report.notes.size(), 4u) << "strides, stride, padding, dilation";
}

// ---- the conventions, computed -----------------------------------------------------------------

namespace {

// Row-major PyTorch operand: sizes and strides (elements) over a buffer of small integers.
struct Operand {
  std::vector<std::int64_t> dims, strides;
  std::vector<double> data;
  double at(std::int64_t b, std::int64_t i, std::int64_t j) const {
    const std::size_t r = dims.size();
    return data[(r == 3 ? b * strides[0] : 0) + i * strides[r - 2] + j * strides[r - 1]];
  }
};

// (batch?) rows x cols, row-major or column-major, its leading stride padded by `pad`.
Operand operand(std::int64_t batch, std::int64_t rows, std::int64_t cols, bool column_major, std::int64_t pad,
                std::mt19937_64& rng) {
  Operand o;
  const std::int64_t ld = (column_major ? rows : cols) + pad, matrix = ld * (column_major ? cols : rows);
  o.dims = {rows, cols};
  o.strides = column_major ? std::vector<std::int64_t>{1, ld} : std::vector<std::int64_t>{ld, 1};
  if (batch > 0) {
    o.dims.insert(o.dims.begin(), batch);
    o.strides.insert(o.strides.begin(), matrix);
  }
  o.data.resize(std::max<std::int64_t>(batch, 1) * matrix);
  for (double& v : o.data) v = double(std::int64_t(rng() % 7) - 3);
  return o;
}

// tiletune's problem on the buffers PyTorch holds (A = b's, B = a's, as torch_trace.cpp says),
// computed as column-major BLAS: element (i, j) of a stored matrix X is X[i + j * ldx].
std::vector<double> blas_product(const GemmProblem& p, const Operand& a, const Operand& b) {
  const GemmProblem c = p.canonical();
  std::vector<double> out(c.batch * c.ldc * c.n, 0);
  for (std::int64_t q = 0; q < c.batch; ++q)
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = 0; j < c.n; ++j) {
        double s = 0;
        for (std::int64_t l = 0; l < c.k; ++l) {
          const double x = b.data[q * c.stride_a + (c.trans_a ? l + i * c.lda : i + l * c.lda)];
          const double y = a.data[q * c.stride_b + (c.trans_b ? j + l * c.ldb : l + j * c.ldb)];
          s += x * y;
        }
        out[q * c.stride_c + i + j * c.ldc] = s;
      }
  return out;
}

}  // namespace

// out = a @ b of row-major tensors with any mix of row- and column-major operands, padded leading
// strides and batches: the imported problem, computed column-major on the same memory, writes
// out's row-major elements. This is the mapping the BLAS formats' fixtures follow too: PyTorch
// hands the BLAS exactly this problem.
TEST(Import, TraceGemmMappingComputesTheTorchProduct) {
  std::mt19937_64 rng(tiletune::testing::rng()());
  for (int trial = 0; trial < 200; ++trial) {
    const bool batched_op = trial % 2 == 1;
    const std::int64_t batch = batched_op ? 1 + std::int64_t(rng() % 3) : 0;
    const std::int64_t m = 1 + rng() % 9, n = 1 + rng() % 9, k = 1 + rng() % 9;
    const Operand a = operand(batch, m, k, rng() % 2, rng() % 3, rng);
    const Operand b = operand(batch, k, n, rng() % 2, rng() % 3, rng);
    const Imported r = import_text(one_event(batched_op ? "aten::bmm" : "aten::mm", {a.dims, b.dims}, {"float", "float"},
                                             {a.strides, b.strides}, nullptr),
                                   Format::TorchTrace);
    const std::string what = "trial " + std::to_string(trial) + ": a " + json(a.dims).dump() + json(a.strides).dump() +
                             " b " + json(b.dims).dump() + json(b.strides).dump();
    ASSERT_EQ(r.workload.entries().size(), 1u) << what << "\n" << r.report.summary();
    const GemmProblem p = r.workload.entries()[0].problem.gemm();
    ASSERT_EQ(p.m, n) << what;
    ASSERT_EQ(p.n, m) << what;
    const std::vector<double> out = blas_product(p, a, b);
    for (std::int64_t q = 0; q < std::max<std::int64_t>(batch, 1); ++q)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (std::int64_t l = 0; l < k; ++l) want += a.at(q, i, l) * b.at(q, l, j);
          // out (m x n) row-major is tiletune's C (n x m column-major, ldc n): element (j, i).
          ASSERT_EQ(out[q * p.canonical().stride_c + j + i * p.canonical().ldc], want) << what << " at " << i << "," << j;
        }
  }
}

// The same nn.Linear call, non-square and transposed, as every format logs it: one tiletune problem.
TEST(Import, OneLinearLayerFromEveryFormatIsOneProblem) {
  for (const char* fixture : {"rocblas_bench.log", "hipblaslt_bench.log", "tunableop_results0.csv",
                              "tunableop_untuned0.csv", "torch_trace.json"}) {
    const Imported r = import_fixture(fixture);
    EXPECT_TRUE(r.calls.count(kLinear.key())) << fixture << " lacks " << kLinear.key();
  }
  EXPECT_EQ(kLinear.key(), "gemm|bf16>bf16|acc_f32|TN|m160|n96|k64|b1|lda64|ldb64|ldc160|sa0|sb0|sc0|beta0");
}

TEST(Import, BenchLinesOfWhatTiletuneDoesNotCompute) {
  auto kind = [](const std::string& line, Format f) {
    const Imported r = import_text(line, f);
    EXPECT_EQ(r.report.skipped_count(), 1u) << line;
    return r.report.skipped.empty() ? SkipKind::Invalid : r.report.skipped.begin()->first;
  };
  const std::string h = "hipblaslt-bench -m 8 -n 8 -k 8 ";
  EXPECT_EQ(kind(h + "--a_type bf16_r --b_type f16_r --c_type bf16_r", Format::HipBlasLt), SkipKind::Unsupported);
  EXPECT_EQ(kind(h + "--a_type bf16_r --b_type bf16_r --c_type bf16_r --d_type f32_r", Format::HipBlasLt),
            SkipKind::Unsupported);
  EXPECT_EQ(kind(h + "--a_type bf16_r --b_type bf16_r --c_type bf16_r --compute_type c_xf32_r", Format::HipBlasLt),
            SkipKind::Unsupported) << "tf32 from bf16";
  EXPECT_EQ(kind(h + "--compute_type c_f32_fast_f16_r", Format::HipBlasLt), SkipKind::Unsupported);
  EXPECT_EQ(kind(h + "--ldc 8 --ldd 16 --beta 1", Format::HipBlasLt), SkipKind::Unsupported) << "C read apart from D";
  EXPECT_EQ(kind(h + "--transA X", Format::HipBlasLt), SkipKind::Unparseable);
  EXPECT_EQ(kind("hipblaslt-bench -n 8 -k 8", Format::HipBlasLt), SkipKind::Unparseable) << "no -m";
  EXPECT_EQ(kind("./rocblas-bench -f gemm_ext2 -m 8 -n 8 -k 8", Format::RocBlas), SkipKind::Unsupported);
  EXPECT_EQ(kind("./rocblas-bench -f gemm -r c -m 8 -n 8 -k 8", Format::RocBlas), SkipKind::Unsupported) << "complex";
  EXPECT_EQ(kind("./rocblas-bench -f gemm -r s -m 8 -n 8 -k 8 --batch_count 70000", Format::RocBlas), SkipKind::Invalid);
  // ldd where C is not read (beta 0): the output's layout.
  const Imported r = import_text(h + "--ldc 8 --ldd 16 --beta 0", Format::HipBlasLt);
  EXPECT_EQ(r.workload.entries().at(0).problem.gemm().ldc, 16);
  // A rocBLAS "C" (conjugate) transpose of a real matrix is its transpose.
  const Imported c = import_text("./rocblas-bench -f gemm -r s --transposeA C -m 8 -n 4 -k 2 --lda 2", Format::RocBlas);
  EXPECT_TRUE(c.workload.entries().at(0).problem.gemm().trans_a);
}

// ---- detection, merging, the written config -----------------------------------------------------

TEST(Import, DetectsEachFormatFromItsContent) {
  auto detect = [](const std::string& fixture) {
    std::ifstream in(kFixtures + fixture);
    return detect_format(std::string(std::istreambuf_iterator<char>(in), {}), fixture);
  };
  EXPECT_EQ(detect("rocblas_bench.log"), Format::RocBlas);
  EXPECT_EQ(detect("hipblaslt_bench.log"), Format::HipBlasLt);
  EXPECT_EQ(detect("tunableop_results0.csv"), Format::TunableOp);
  EXPECT_EQ(detect("tunableop_untuned0.csv"), Format::TunableOp);
  EXPECT_EQ(detect("torch_trace.json"), Format::TorchTrace);
  EXPECT_EQ(detect_format("[{\"ph\": \"X\"}]", "t"), Format::TorchTrace) << "a bare array of events";
  EXPECT_EQ(detect_format("[12:00:01] hipblaslt-bench -m 1 -n 1 -k 1\n", "l"), Format::HipBlasLt)
      << "a log line starting with '[' is no JSON array";
  const std::string e = error_of([] { detect_format("step 1 loss 2.3\nstep 2 loss 2.1\n", "train.log"); });
  EXPECT_NE(e.find("train.log"), std::string::npos) << e;
  EXPECT_NE(e.find("--format"), std::string::npos) << e;
  EXPECT_NE(error_of([] { detect_format("\x1f\x8b\x08", "trace.json.gz"); }).find("gunzip"), std::string::npos);
  EXPECT_EQ(format_from_string("torch-trace"), Format::TorchTrace);
  EXPECT_NE(error_of([] { format_from_string("csv"); }).find("tunableop"), std::string::npos);
}

TEST(Import, NothingImportableIsAnErrorNamingTheFile) {
  TempDir dir("tiletune_import_");
  const std::string path = (dir.path() / "axpy.log").string();
  std::ofstream(path) << "./rocblas-bench -f axpy -r s -n 10\n./rocblas-bench -f scal -r s -n 10\n";
  Workload w;
  const std::string e = error_of([&] { import_file(path, nullptr, {}, w); });
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("2 not a GEMM"), std::string::npos) << e;
  const std::string empty = (dir.path() / "empty.csv").string();
  std::ofstream(empty) << "Validator,PT_VERSION,2.6.0\n";
  EXPECT_NE(error_of([&] { import_file(empty, nullptr, {}, w); }).find("no GEMM or convolution"), std::string::npos);
  EXPECT_NE(error_of([&] { import_file((dir.path() / "missing.log").string(), nullptr, {}, w); }).find("cannot read"),
            std::string::npos);
  const Format trace = Format::TorchTrace;
  EXPECT_NE(error_of([&] { import_file(path, &trace, {}, w); }).find("not valid JSON"), std::string::npos);
}

TEST(Import, ConfigMergesFilesMostCalledFirstAndLoads) {
  Workload w;
  std::vector<std::string> files;
  for (const char* f : {"tunableop_untuned0.csv", "rocblas_bench.log", "hipblaslt_bench.log", "tunableop_results0.csv",
                        "torch_trace.json"}) {
    import_file(kFixtures + f, nullptr, {}, w);
    files.push_back(f);
  }
  ConfigMeta meta;
  meta.name = "workload";
  meta.files = files;
  const json config = json::parse(config_text(w, meta));
  EXPECT_EQ(config["name"], "workload");
  EXPECT_FALSE(config.contains("templates")) << "every builtin template";
  const json& problems = config["problems"];
  ASSERT_EQ(problems.size(), w.entries().size());
  // The linear layer: 1 + 3 + 2 + 1 + 2 calls over the five files, first seen in the first file.
  EXPECT_EQ(problems[0]["calls"], 9);
  EXPECT_EQ(problems[0].get<Problem>().key(), kLinear.key());
  EXPECT_EQ(problems[0]["name"], kFixtures + "tunableop_untuned0.csv:1");
  std::int64_t total = 0;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    total += problems[i]["calls"].get<std::int64_t>();
    if (i > 0) {
      EXPECT_LE(problems[i]["calls"], problems[i - 1]["calls"]);
    }
  }
  EXPECT_EQ(total, w.calls());
  EXPECT_EQ(total, 4 + 6 + 5 + 4 + 11);

  const tuner::TuningConfig parsed = tuner::parse_config(config.dump(), ".");
  EXPECT_EQ(parsed.problems.size(), problems.size());
  EXPECT_EQ(parsed.duplicates_dropped, 0u);

  meta.templates = {"host_gemm", "host_conv"};
  const tuner::TuningConfig narrowed = tuner::parse_config(config_text(w, meta), ".");
  ASSERT_EQ(narrowed.templates.size(), 2u);
  meta.templates = {"no_such_template"};
  EXPECT_NE(error_of([&] { config_text(w, meta); }).find("no_such_template"), std::string::npos);
}

// ---- the program -------------------------------------------------------------------------------

TEST(ImportProgram, WritesAConfigTuneLoadsAndReportsSkips) {
  TempDir dir("tiletune_import_");
  const std::string out = (dir.path() / "workload.json").string();
  const ProgramOutput r = run_tiletune({"import", kFixtures + "rocblas_bench.log", kFixtures + "torch_trace.json", "-o", out});
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("2 unparseable; the first, line 11: -n is not an integer: '6x4'"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("1 unparseable; the first, event 20: no \"Input Dims\""), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("wrote " + out + ": 13 problems (9 GEMMs, 4 convolutions) from 17 calls"), std::string::npos) << r.text;
  const tuner::TuningConfig config = tuner::load_config(out);
  EXPECT_EQ(config.problems.size(), 13u);

  // An existing output is kept unless --force.
  const ProgramOutput again = run_tiletune({"import", kFixtures + "tunableop_untuned0.csv", "-o", out});
  EXPECT_EQ(again.status, 1) << again.text;
  EXPECT_NE(again.text.find("--force"), std::string::npos) << again.text;
  EXPECT_EQ(tuner::load_config(out).problems.size(), 13u);
  EXPECT_EQ(run_tiletune({"import", kFixtures + "tunableop_untuned0.csv", "-o", out, "--force"}).status, 0);
  EXPECT_EQ(tuner::load_config(out).problems.size(), 4u);

  // --strict: a skipped line fails the import, and nothing is written.
  const std::string strict = (dir.path() / "strict.json").string();
  const ProgramOutput s = run_tiletune({"import", kFixtures + "tunableop_untuned0.csv", "-o", strict, "--strict"});
  EXPECT_EQ(s.status, 1) << s.text;
  EXPECT_FALSE(fs::exists(strict));

  // A file of nothing importable, named; a format the program does not know: a usage error.
  const std::string nothing = (dir.path() / "nothing.log").string();
  std::ofstream(nothing) << "./rocblas-bench -f axpy -r s -n 10\n";
  const ProgramOutput n = run_tiletune({"import", nothing, "-o", (dir.path() / "n.json").string()});
  EXPECT_EQ(n.status, 1) << n.text;
  EXPECT_NE(n.text.find(nothing + ": nothing to import"), std::string::npos) << n.text;
  EXPECT_EQ(run_tiletune({"import", nothing, "-o", out, "--format", "csv"}).status, 64);
}

// An imported workload of small shapes, tuned on the host: the config is one `tiletune tune` runs.
TEST(ImportProgram, TheImportedConfigTunesOnTheHost) {
  TempDir dir("tiletune_import_");
  const std::string log = (dir.path() / "rocblas.log").string();
  std::ofstream(log) << "./rocblas-bench -f gemm -r s --transposeA T --transposeB N -m 24 -n 16 -k 8 --lda 8 --ldb 8 "
                        "--beta 0 --ldc 24\n";
  const std::string config = (dir.path() / "small.json").string();
  ASSERT_EQ(run_tiletune({"import", log, "-o", config, "--template", "host_gemm"}).status, 0);
  const ProgramOutput t = run_tiletune({"tune", config, "--backend", "host", "--isolation", "none", "--no-vendor", "--search",
                                        "random", "--budget", "1", "--db", (dir.path() / "t.db").string()});
  EXPECT_EQ(t.status, 0) << t.text;
  EXPECT_NE(t.text.find("f32>f32 TN 24x16x8"), std::string::npos) << "its winner\n" << t.text;
}
