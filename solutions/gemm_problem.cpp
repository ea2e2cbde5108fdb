#include "solutions/gemm_problem.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "solutions/json_fields.h"

namespace tiletune {

const char* to_string(DataType t) {
  switch (t) {
    case DataType::F32: return "f32";
    case DataType::F16: return "f16";
    case DataType::BF16: return "bf16";
    case DataType::E4M3: return "e4m3";
    case DataType::E5M2: return "e5m2";
    case DataType::S8: return "s8";
    case DataType::S32: return "s32";
  }
  return "?";
}

DataType dtype_from_string(const std::string& s) {
  if (s == "f32" || s == "fp32" || s == "float") return DataType::F32;
  if (s == "f16" || s == "fp16" || s == "half") return DataType::F16;
  if (s == "bf16") return DataType::BF16;
  if (s == "e4m3" || s == "fp8" || s == "fp8_e4m3") return DataType::E4M3;
  if (s == "e5m2" || s == "fp8_e5m2") return DataType::E5M2;
  if (s == "s8" || s == "int8") return DataType::S8;
  if (s == "s32" || s == "int32") return DataType::S32;
  throw Error("unknown data type '" + s + "' (expected f32, f16, bf16, e4m3, e5m2, s8 or s32)");
}

int size_of(DataType t) {
  switch (t) {
    case DataType::F32:
    case DataType::S32: return 4;
    case DataType::F16:
    case DataType::BF16: return 2;
    case DataType::E4M3:
    case DataType::E5M2:
    case DataType::S8: return 1;
  }
  return 4;
}

const char* device_type_name(DataType t) {
  switch (t) {
    case DataType::F32: return "float";
    case DataType::F16: return "tt_half";
    case DataType::BF16: return "tt_bf16";
    case DataType::E4M3: return "tt_e4m3";
    case DataType::E5M2: return "tt_e5m2";
    case DataType::S8: return "signed char";
    case DataType::S32: return "int";
  }
  return "?";
}

bool is_integer(DataType t) { return t == DataType::S8 || t == DataType::S32; }
bool is_fp8(DataType t) { return t == DataType::E4M3 || t == DataType::E5M2; }

GemmProblem GemmProblem::canonical() const {
  GemmProblem p = *this;
  if (p.b_type == p.a_type) p.b_type.reset();
  if (p.lda == 0) p.lda = p.rows_a();
  if (p.ldb == 0) p.ldb = p.rows_b();
  if (p.ldc == 0) p.ldc = p.m;
  if (p.batch == 1) {
    p.stride_a = p.stride_b = p.stride_c = 0;
  } else {
    if (p.stride_a == 0) p.stride_a = p.lda * p.cols_a();
    if (p.stride_b == 0) p.stride_b = p.ldb * p.cols_b();
    if (p.stride_c == 0) p.stride_c = p.ldc * p.n;
  }
  return p;
}

void GemmProblem::validate() const {
  // On the runtime's hot path: messages are only built for a problem that fails.
  auto fail = [](const std::string& what) { throw Error("invalid GEMM problem: " + what); };
  if (compute_tf32 && a_type != DataType::F32) fail("tf32 compute needs f32 inputs");
  if (a_type == DataType::S32) fail("s32 is an output type only (int8 GEMMs read s8)");
  if (is_fp8(c_type) || c_type == DataType::S8)
    fail(std::string(to_string(c_type)) + " is an input type only (outputs are f32, f16, bf16 or s32)");
  if (mixed_inputs() && !(is_fp8(a_type) && is_fp8(type_b())))
    fail(std::string("A and B may differ in type only as two fp8 types (got ") + to_string(a_type) + " x " +
         to_string(type_b()) + ")");
  if ((a_type == DataType::S8) != (c_type == DataType::S32))
    fail(std::string("int8 GEMMs take s8 inputs and write s32 (got ") + to_string(a_type) + " > " + to_string(c_type) + ")");
  if (m < 1 || n < 1 || k < 1)
    fail("m, n and k must be >= 1 (got m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" +
         std::to_string(k) + ")");
  if (batch < 1) fail("batch must be >= 1");
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batch > 65535)
    fail("m, n, k must fit in 32 bits and batch be at most 65535");
  GemmProblem c = canonical();
  if (c.lda < rows_a()) fail("lda=" + std::to_string(c.lda) + " is smaller than " + std::to_string(rows_a()));
  if (c.ldb < rows_b()) fail("ldb=" + std::to_string(c.ldb) + " is smaller than " + std::to_string(rows_b()));
  if (c.ldc < m) fail("ldc=" + std::to_string(c.ldc) + " is smaller than m=" + std::to_string(m));
  if (batch > 1) {
    if (c.stride_c < c.ldc * n) fail("stride_c overlaps batches of C");
    if (c.stride_a < 0 || c.stride_b < 0) fail("batch strides must be >= 0");
  }
}

std::string GemmProblem::input_types() const {
  return mixed_inputs() ? std::string(to_string(a_type)) + "." + to_string(type_b()) : to_string(a_type);
}

std::string GemmProblem::key() const {
  GemmProblem c = canonical();
  std::string s = "gemm|";
  s += c.input_types();
  s += ">";
  s += to_string(c.c_type);
  s += c.compute_tf32 ? "|tf32|" : is_integer(c.a_type) ? "|acc_s32|" : "|acc_f32|";
  s += c.trans_a ? 'T' : 'N';
  s += c.trans_b ? 'T' : 'N';
  auto add = [&s](const char* name, std::int64_t v) {
    s += '|';
    s += name;
    s += std::to_string(v);
  };
  add("m", c.m);
  add("n", c.n);
  add("k", c.k);
  add("b", c.batch);
  add("lda", c.lda);
  add("ldb", c.ldb);
  add("ldc", c.ldc);
  add("sa", c.stride_a);
  add("sb", c.stride_b);
  add("sc", c.stride_c);
  s += c.beta_zero ? "|beta0" : "|beta1";
  return s;
}

static std::int64_t span(std::int64_t ld, std::int64_t cols, std::int64_t stride, std::int64_t batch) {
  return (batch - 1) * stride + ld * (cols - 1) + ld;
}

std::int64_t GemmProblem::elements_a() const {
  GemmProblem c = canonical();
  return span(c.lda, c.cols_a(), c.stride_a, c.batch);
}
std::int64_t GemmProblem::elements_b() const {
  GemmProblem c = canonical();
  return span(c.ldb, c.cols_b(), c.stride_b, c.batch);
}
std::int64_t GemmProblem::elements_c() const {
  GemmProblem c = canonical();
  return span(c.ldc, c.n, c.stride_c, c.batch);
}

int alignment_elements(std::int64_t ld, std::int64_t stride, std::int64_t batch, int elem_bytes) {
  int best = 1;
  for (int v = 2; v * elem_bytes <= 16; v *= 2) {
    if (ld % v != 0) break;
    if (batch > 1 && stride % v != 0) break;
    best = v;
  }
  return best;
}

RepackPlan repack_plan(const GemmProblem& problem) {
  const GemmProblem p = problem.canonical();
  RepackPlan plan;
  plan.kernel_problem = p;
  const int bytes = size_of(p.a_type), per16 = 16 / bytes;
  auto round_up = [](std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; };
  auto operand = [&](std::int64_t rows, std::int64_t cols, std::int64_t& ld, std::int64_t& stride, RepackedOperand& r) {
    if (alignment_elements(ld, stride, p.batch, bytes) * bytes >= 16) return;
    ld = round_up(rows, per16);
    stride = p.batch > 1 ? ld * cols : 0;
    r.copied = true;
    r.offset = plan.bytes;
    plan.bytes += round_up(ld * cols * p.batch * bytes, 256);
  };
  GemmProblem& k = plan.kernel_problem;
  operand(p.rows_a(), p.cols_a(), k.lda, k.stride_a, plan.a);
  operand(p.rows_b(), p.cols_b(), k.ldb, k.stride_b, plan.b);
  return plan;
}

ColumnPhases column_phases(const GemmProblem& problem) {
  const GemmProblem p = problem.canonical();
  ColumnPhases plan;
  const int cb = size_of(p.c_type), ab = size_of(p.a_type), bb = size_of(p.type_b());
  const std::int64_t per16 = 16 / cb;  // elements of C in 16 bytes
  if (!p.trans_a || p.trans_b || p.batch != 1 || p.m < 64 || alignment_elements(p.ldc, 0, 1, cb) * cb >= 16 ||
      alignment_elements(p.lda, 0, 1, ab) * ab < 16 || alignment_elements(p.ldb, 0, 1, bb) * bb < 16)
    return plan;
  const std::int64_t stride_bytes = p.ldc * cb;
  std::int64_t g = 16;
  while (stride_bytes % g != 0) g /= 2;
  plan.phases = int(16 / g);
  if (p.n < plan.phases) return ColumnPhases{};
  GemmProblem& k = plan.kernel_problem;
  k = p;
  k.m = p.m / per16 * per16;  // phases starting on a 16-byte boundary have this many rows at most
  k.n = (p.n + plan.phases - 1) / plan.phases;
  k.ldb = p.ldb * plan.phases;
  k.ldc = p.ldc * plan.phases;
  plan.head_rows = per16;
  plan.tail_ld = 2 * per16;
  auto round256 = [](std::int64_t b) { return (b + 255) / 256 * 256; };
  plan.tail_offset = round256(plan.head_rows * p.n * cb);
  plan.bytes = plan.tail_offset + round256(plan.tail_ld * p.n * cb);
  return plan;
}

std::string input_type_name(const GemmProblem& p) {
  if (!p.mixed_inputs()) return device_type_name(p.a_type);
  return std::string("tt_ab<") + device_type_name(p.a_type) + ", " + device_type_name(p.type_b()) + ">";
}

void to_json(nlohmann::json& j, const GemmProblem& p) {
  j = nlohmann::json{{"a_type", to_string(p.a_type)},
                     {"c_type", to_string(p.c_type)},
                     {"transA", p.trans_a ? "T" : "N"},
                     {"transB", p.trans_b ? "T" : "N"},
                     {"m", p.m}, {"n", p.n}, {"k", p.k}, {"batch", p.batch},
                     {"lda", p.lda}, {"ldb", p.ldb}, {"ldc", p.ldc},
                     {"stride_a", p.stride_a}, {"stride_b", p.stride_b}, {"stride_c", p.stride_c},
                     {"beta_zero", p.beta_zero}};
  if (p.compute_tf32) j["compute"] = "tf32";
  if (p.mixed_inputs()) j["b_type"] = to_string(p.type_b());
}

static bool parse_trans(const nlohmann::json& j, const char* name) {
  if (!j.contains(name)) return false;
  std::string t = j.at(name).get<std::string>();
  if (t == "N" || t == "n") return false;
  if (t == "T" || t == "t") return true;
  throw Error(std::string(name) + " must be \"N\" or \"T\", got \"" + t + "\"");
}

void from_json(const nlohmann::json& j, GemmProblem& p) {
  try {
    p = GemmProblem{};
    if (j.contains("dtype")) {
      std::string dt = j.at("dtype").get<std::string>();
      p.compute_tf32 = dt == "tf32";  // shapes files name fp32-through-tf32 problems "tf32"
      p.a_type = p.c_type = p.compute_tf32 ? DataType::F32 : dtype_from_string(dt);
      // An 8-bit dtype names the inputs; the output is the usual one (torch._scaled_mm's bf16, int32).
      if (is_fp8(p.a_type)) p.c_type = DataType::BF16;
      if (p.a_type == DataType::S8) p.c_type = DataType::S32;
    }
    if (j.contains("compute")) {
      std::string c = j.at("compute").get<std::string>();
      if (c != "f32" && c != "tf32") throw Error("compute must be \"f32\" or \"tf32\", got \"" + c + "\"");
      p.compute_tf32 = c == "tf32";
    }
    if (j.contains("a_type")) p.a_type = dtype_from_string(j.at("a_type").get<std::string>());
    if (j.contains("b_type")) p.b_type = dtype_from_string(j.at("b_type").get<std::string>());
    if (j.contains("c_type")) p.c_type = dtype_from_string(j.at("c_type").get<std::string>());
    p.trans_a = parse_trans(j, "transA");
    p.trans_b = parse_trans(j, "transB");
    for (const char* f : {"m", "n", "k"})
      if (!j.contains(f)) throw Error(std::string("missing field '") + f + "'");
    p.m = json_integer(j.at("m"), "'m'");
    p.n = json_integer(j.at("n"), "'n'");
    p.k = json_integer(j.at("k"), "'k'");
    p.batch = json_integer_or(j, "batch", 1);
    p.lda = json_integer_or(j, "lda", 0);
    p.ldb = json_integer_or(j, "ldb", 0);
    p.ldc = json_integer_or(j, "ldc", 0);
    p.stride_a = json_integer_or(j, "stride_a", 0);
    p.stride_b = json_integer_or(j, "stride_b", 0);
    p.stride_c = json_integer_or(j, "stride_c", 0);
    p.beta_zero = j.value("beta_zero", true);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("bad GEMM problem ") + j.dump() + ": " + e.what());
  } catch (const Error& e) {
    throw Error(std::string("bad GEMM problem ") + j.dump() + ": " + e.what());
  }
}

}  // namespace tiletune
