#include "solutions/kernel_template.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "solutions/conv_gemm.h"
#include "solutions/template_extends.h"

namespace tiletune {

std::string content_hash(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// The scalar keys of a "model" section and the value of each one left out (see ModelShape).
static const std::map<std::string, std::int64_t>& model_defaults() {
  static const std::map<std::string, std::int64_t> d = {
      {"tile_m", 1},    {"tile_n", 1},        {"tile_k", 1},          {"threads", 1},
      {"shared_bytes", 0}, {"split_k", 1},    {"registers", 0},       {"stages", 2},
      {"operand_bytes", 0}, {"math_percent", 100}, {"saturating_threads", 0}, {"epilogue_overlap", 0},
      {"instruction_m", 0}, {"instruction_k", 0}, {"load_bytes", 0}, {"stream_k_tiles", 0}};
  return d;
}

KernelTemplate KernelTemplate::from_json(const nlohmann::ordered_json& j,
                                        const std::map<std::string, std::string>* sources) {
  KernelTemplate t;
  t.sources_ = sources ? sources : &embedded_kernel_sources();
  std::string where = "template spec";
  try {
    t.name_ = j.at("name").get<std::string>();
    where = "template " + t.name_;
    t.source_ = j.at("source").get<std::string>();
    t.instance_ = j.at("instance").get<std::string>();
    for (const auto& b : j.at("backends")) t.backends_.push_back(gpu::backend_from_string(b.get<std::string>()));
    for (const auto& [name, values] : j.at("parameters").items())
      t.params_.emplace_back(name, values.get<std::vector<std::int64_t>>());
    t.defaults_ = j.at("default").get<std::map<std::string, std::int64_t>>();
    const nlohmann::ordered_json derived = j.value("derived", nlohmann::ordered_json::array());
    for (const auto& d : derived)
      t.derived_.emplace_back(d.at(0).get<std::string>(), Expression::parse(d.at(1).get<std::string>()));
    const nlohmann::ordered_json constraints = j.value("constraints", nlohmann::ordered_json::object());  // items() needs an lvalue
    for (const auto& [name, text] : constraints.items())
      t.constraints_.emplace_back(name, Expression::parse(text.get<std::string>()));
    const auto& l = j.at("launch");
    t.block_ = Expression::parse(l.at("block").get<std::string>());
    t.grid_x_ = Expression::parse(l.at("grid_x").get<std::string>());
    t.grid_y_ = Expression::parse(l.at("grid_y").get<std::string>());
    t.grid_z_ = Expression::parse(l.at("grid_z").get<std::string>());
    t.shared_bytes_ = Expression::parse(l.at("shared_bytes").get<std::string>());
    t.cluster_x_ = Expression::parse(l.value("cluster_x", std::string("1")));
    t.cluster_y_ = Expression::parse(l.value("cluster_y", std::string("1")));
    t.persistent_ = l.value("persistent", false);
    t.workspace_ = Expression::parse(j.value("workspace_bytes", std::string("0")));
    const std::string arguments = j.value("arguments", std::string("gemm"));
    t.fallback_rank_ = j.value("fallback_rank", -1);
    t.repack_ = j.value("repack", false);
    t.column_phases_ = j.value("column_phases", false);
    // A template that does not say it reads A and B of two types (TA then names tt_ab<A's, B's>:
    // gemm_problem.h, input_type_name) never sees such a problem.
    if (!j.value("mixed_inputs", false))
      t.constraints_.emplace(t.constraints_.begin(), "one_input_type", Expression::parse("MIXED_AB == 0"));
    const std::string kind = j.value("problem", std::string("gemm"));
    if (kind != "gemm" && kind != "conv") throw Error(where + ": unknown \"problem\" kind '" + kind + "' (gemm or conv)");
    t.kind_ = kind == "conv" ? ProblemKind::Conv : ProblemKind::Gemm;
    if (j.contains("model")) {
      const auto& m = j.at("model");
      if (!m.is_object()) throw Error(where + ": \"model\" must be an object");
      for (const auto& [key, value] : m.items()) {
        if (key == "about") continue;  // the author's notes
        if (key == "prefer") {
          for (const auto& e : value) t.model_prefer_.push_back(Expression::parse(e.get<std::string>()));
          continue;
        }
        if (!model_defaults().count(key)) {
          std::string allowed = "prefer";
          for (const auto& [k, d] : model_defaults()) allowed += ", " + k;
          throw Error(where + ": unknown key '" + key + "' in \"model\" (allowed: " + allowed + ")");
        }
        t.model_[key] = Expression::parse(value.get<std::string>());
      }
      for (const char* key : {"tile_m", "tile_n", "tile_k", "threads"})
        if (!t.model_.count(key)) throw Error(where + ": \"model\" needs '" + key + "'");
      t.has_model_ = true;
    }
    if (arguments != "gemm" && arguments != "gemm_tma" && arguments != "conv" && arguments != "conv_tma" &&
        arguments != "conv_as_gemm_tma" && arguments != "conv_rows_tma")
      throw Error(where + ": unknown \"arguments\" kind '" + arguments +
                  "' (gemm, gemm_tma, conv, conv_tma, conv_as_gemm_tma or conv_rows_tma)");
    const bool conv_arguments = arguments == "conv" || arguments == "conv_tma" || arguments == "conv_as_gemm_tma" ||
                                arguments == "conv_rows_tma";
    if (conv_arguments != (t.kind_ == ProblemKind::Conv))
      throw Error(where + ": \"arguments\" conv, conv_tma, conv_as_gemm_tma and conv_rows_tma go with \"problem\" conv, "
                  "and only with it");
    t.arguments_ = arguments == "conv_as_gemm_tma"                          ? Arguments::ConvAsGemmWithTma
                   : arguments == "conv_rows_tma"                       ? Arguments::ConvRowsWithTma
                   : arguments == "gemm_tma" || arguments == "conv_tma" ? Arguments::ParamsWithTma
                                                                        : Arguments::Params;
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": " + e.what());
  }
  for (const auto& [name, values] : t.params_) {
    if (!t.defaults_.count(name)) throw Error(where + ": parameter " + name + " has no default");
    if (values.empty()) throw Error(where + ": parameter " + name + " has no values");
  }
  if (!t.sources_->count(t.source_))
    throw Error(where + ": source file " + t.source_ + " is not in kernel_templates/" +
                (t.sources_ == &embedded_kernel_sources() ? "" : " nor beside the template"));
  return t;
}

bool KernelTemplate::supports(gpu::BackendKind backend) const {
  for (auto b : backends_)
    if (b == backend) return true;
  return false;
}

void KernelTemplate::set_values(const std::string& param, const std::vector<std::int64_t>& values) {
  for (auto& [name, v] : params_)
    if (name == param) {
      if (values.empty()) throw Error("template " + name_ + ": parameter " + param + " given no values");
      v = values;
      return;
    }
  std::string known;
  for (const auto& [name, v] : params_) known += (known.empty() ? "" : ", ") + name;
  throw Error("template " + name_ + " has no parameter '" + param + "' (its parameters: " + known + ")");
}

void KernelTemplate::add_constraint(const std::string& name, const std::string& expression) {
  constraints_.emplace_back(name, Expression::parse(expression));
}

// A convolution's names: its implicit GEMM's sizes as M, N, K, BATCH, and its own.
static void conv_variables(const ConvProblem& c, Variables& v) {
  const ImplicitGemm g = c.implicit_gemm();
  v["M"] = g.m;
  v["N"] = g.n;
  v["K"] = g.k;
  v["BATCH"] = g.batch;
  v["A_BYTES"] = size_of(c.in_type);
  v["C_BYTES"] = size_of(c.out_type);
  v["CONV_N"] = c.n, v["CONV_C"] = c.c, v["CONV_H"] = c.h, v["CONV_W"] = c.w, v["CONV_K"] = c.k;
  v["CONV_R"] = c.r, v["CONV_S"] = c.s, v["CONV_P"] = c.p(), v["CONV_Q"] = c.q();
  v["STRIDE_H"] = c.stride_h, v["STRIDE_W"] = c.stride_w, v["PAD_H"] = c.pad_h, v["PAD_W"] = c.pad_w;
  v["DIL_H"] = c.dil_h, v["DIL_W"] = c.dil_w, v["GROUPS"] = c.groups;
  v["DIRECTION"] = std::int64_t(c.direction);
  v["LAYOUT_NCHW"] = c.layout == ConvLayout::NCHW;
}

static void device_variables(const gpu::DeviceInfo& dev, Variables& v) {
  v["DEV_MAX_THREADS"] = dev.max_threads_per_block;
  v["DEV_LDS_BYTES"] = dev.shared_bytes_per_block;
  v["DEV_WARP"] = dev.warp_size;
  v["DEV_MULTIPROCESSORS"] = dev.multiprocessors;
  v["DEV_LDS_OPTIN_BYTES"] = dev.shared_bytes_optin;
  v["DEV_CC"] = dev.compute_capability;
  v["DEV_MFMA_K16"] = dev.mfma_k16;
  v["DEV_MFMA_K_FP8"] = dev.mfma_k_fp8;
  v["DEV_MFMA_K_INT8"] = dev.mfma_k_int8;
}

// A GEMM's names: sizes, layout, leading dimensions and the alignment they allow, tf32, int8.
static void gemm_variables(const GemmProblem& problem, Variables& v) {
  const GemmProblem p = problem.canonical();
  v["M"] = p.m;
  v["N"] = p.n;
  v["K"] = p.k;
  v["BATCH"] = p.batch;
  v["TRANSA"] = p.trans_a;
  v["TRANSB"] = p.trans_b;
  v["A_BYTES"] = size_of(p.a_type);
  v["C_BYTES"] = size_of(p.c_type);
  v["LDA"] = p.lda;
  v["LDB"] = p.ldb;
  v["LDC"] = p.ldc;
  v["ALIGN_A"] = alignment_elements(p.lda, p.stride_a, p.batch, size_of(p.a_type));
  v["ALIGN_B"] = alignment_elements(p.ldb, p.stride_b, p.batch, size_of(p.type_b()));
  v["ALIGN_C"] = alignment_elements(p.ldc, p.stride_c, p.batch, size_of(p.c_type));
  v["COMPUTE_TF32"] = p.compute_tf32;
  v["INT8"] = p.a_type == DataType::S8;  // s8 x s8 -> s32: integer accumulators
  v["MIXED_AB"] = p.mixed_inputs();
}

Variables KernelTemplate::variables(const Solution& s, const Problem& problem, const gpu::DeviceInfo& dev) const {
  // A parameter the solution lacks (a database tuned before the template grew it) takes the
  // template's default, which is the value that reproduces the older kernel.
  Variables v(defaults_.begin(), defaults_.end());
  for (const auto& [name, value] : s.params) v[name] = value;
  const auto r = v.find("REPACK");
  add_fixed_variables(problem, r != v.end() ? int(r->second) : 0, dev, v);
  for (const auto& [name, expr] : derived_) v[name] = expr.eval(v);
  return v;
}

std::vector<int> KernelTemplate::repack_offers(const Problem& p) const {
  std::vector<int> offers;
  if (p.is_conv()) return offers;
  if (repack_ && repack_plan(p.gemm()).bytes > 0) offers.push_back(kRepackOperands);
  if (column_phases_ && column_phases(p.gemm()).phases > 0) offers.push_back(kRepackColumnPhases);
  return offers;
}

void KernelTemplate::add_fixed_variables(const Problem& problem, int repack, const gpu::DeviceInfo& dev,
                                         Variables& v) const {
  v["MIXED_AB"] = 0;  // convolutions read one input type
  v["COLUMN_PHASES"] = 1;  // C's column phases the kernel runs once each (REPACK 2)
  if (problem.is_conv()) {
    conv_variables(problem.conv(), v);
    // The GEMM's names (M, N, K in its order, TRANSA, LDA, ALIGN_A, ...) over the implicit GEMM's,
    // so that a GEMM template's expressions read the same here.
    if (arguments_ == Arguments::ConvAsGemmWithTma) gemm_variables(problem.conv_gemm().gemm, v);
  } else if (repack == kRepackColumnPhases) {
    // The kernel sees one phase of C's columns (solutions/gemm_problem.h, column_phases); the
    // edge rows' scratch is REPACK_BYTES at the end of the workspace.
    const ColumnPhases plan = column_phases(problem.gemm());
    if (!plan.phases) throw Error("REPACK 2 on " + problem.key() + ", whose C is not cut into column phases");
    gemm_variables(plan.kernel_problem, v);
    v["COLUMN_PHASES"] = plan.phases;
    v["REPACKED"] = 0;
    v["REPACK_BYTES"] = plan.bytes;
  } else if (repack) {
    // The kernel sees the copied operands (solutions/gemm_problem.h, repack_plan); REPACKED counts
    // them, REPACK_BYTES is the scratch they take at the end of the workspace.
    const RepackPlan plan = repack_plan(problem.gemm());
    gemm_variables(plan.kernel_problem, v);
    v["REPACKED"] = int(plan.a.copied) + int(plan.b.copied);
    v["REPACK_BYTES"] = plan.bytes;
  } else {
    gemm_variables(problem.gemm(), v);
    v["REPACKED"] = 0;
    v["REPACK_BYTES"] = 0;
  }
  device_variables(dev, v);
}

std::optional<std::string> KernelTemplate::violation(const Variables& vars) const {
  for (const auto& [name, expr] : constraints_)
    if (!expr.eval(vars)) return name + ": " + expr.text();
  return std::nullopt;
}

gpu::LaunchDims KernelTemplate::launch_dims(const Variables& vars) const {
  std::array<std::int64_t, kLaunchExpressions> values;
  const auto exprs = launch_expressions();
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = exprs[i]->eval(vars);
  return launch_dims(values);
}

gpu::LaunchDims KernelTemplate::launch_dims(const std::array<std::int64_t, kLaunchExpressions>& v) const {
  gpu::LaunchDims d;
  d.block[0] = static_cast<unsigned>(v[0]);
  d.grid[0] = static_cast<unsigned>(v[1]);
  d.grid[1] = static_cast<unsigned>(v[2]);
  d.grid[2] = static_cast<unsigned>(v[3]);
  d.shared_bytes = static_cast<unsigned>(v[4]);
  d.cluster[0] = static_cast<unsigned>(v[5]);
  d.cluster[1] = static_cast<unsigned>(v[6]);
  d.persistent = persistent_;
  return d;
}

std::optional<ModelShape> KernelTemplate::model_shape(const Variables& vars) const {
  if (!has_model_) return std::nullopt;
  auto value = [&](const char* key) {
    auto it = model_.find(key);
    return it == model_.end() ? model_defaults().at(key) : it->second.eval(vars);
  };
  ModelShape s;
  s.tile_m = std::max<std::int64_t>(1, value("tile_m"));
  s.tile_n = std::max<std::int64_t>(1, value("tile_n"));
  s.tile_k = std::max<std::int64_t>(1, value("tile_k"));
  s.threads = std::max<std::int64_t>(1, value("threads"));
  s.shared_bytes = std::max<std::int64_t>(0, value("shared_bytes"));
  s.split_k = std::max<std::int64_t>(1, value("split_k"));
  s.registers = std::max<std::int64_t>(0, value("registers"));
  s.stages = std::max<std::int64_t>(1, value("stages"));
  s.operand_bytes = std::max<std::int64_t>(0, value("operand_bytes"));
  s.load_bytes = std::max<std::int64_t>(0, value("load_bytes"));
  s.stream_k_tiles = std::max<std::int64_t>(0, value("stream_k_tiles"));
  s.math_percent = std::max<std::int64_t>(1, value("math_percent"));
  s.saturating_threads = std::max<std::int64_t>(0, value("saturating_threads"));
  s.epilogue_overlap = value("epilogue_overlap") != 0;
  s.instruction_m = std::max<std::int64_t>(0, value("instruction_m"));
  s.instruction_k = std::max<std::int64_t>(0, value("instruction_k"));
  for (const auto& e : model_prefer_) s.prefer.push_back(e.eval(vars));
  return s;
}

std::string KernelTemplate::name_expression(const Solution& s, const Problem& problem) const {
  // Types and layout tokens; the other kind's tokens stay as written (and fail to compile).
  std::string ta;
  DataType tc;
  bool trans_a = false, trans_b = false, nchw = false;
  int dir = 0;
  if (problem.is_conv()) {
    const ConvProblem& c = problem.conv();
    ta = device_type_name(c.in_type), tc = c.out_type, nchw = c.layout == ConvLayout::NCHW, dir = int(c.direction);
    if (arguments_ == Arguments::ConvAsGemmWithTma) {
      const GemmProblem& g = problem.conv_gemm().gemm;
      trans_a = g.trans_a, trans_b = g.trans_b;
    }
  } else {
    const GemmProblem& g = problem.gemm();
    ta = input_type_name(g), tc = g.c_type, trans_a = g.trans_a, trans_b = g.trans_b;
  }
  const bool conv = problem.is_conv();
  const bool gemm_layout = !conv || arguments_ == Arguments::ConvAsGemmWithTma;  // TRANSA, TRANSB
  std::string out;
  const std::string& in = instance_;
  for (size_t i = 0; i < in.size();) {
    if (std::isalpha(static_cast<unsigned char>(in[i])) || in[i] == '_') {
      size_t j = i;
      while (j < in.size() && (std::isalnum(static_cast<unsigned char>(in[j])) || in[j] == '_')) ++j;
      std::string id = in.substr(i, j - i);
      // The solution's value, else the template's default (as in variables()).
      std::optional<std::int64_t> value;
      if (auto it = s.params.find(id); it != s.params.end()) value = it->second;
      else if (auto d = defaults_.find(id); d != defaults_.end()) value = d->second;
      if (id == "TA") out += ta;
      else if (id == "TC") out += device_type_name(tc);
      else if (id == "TRANSA" && gemm_layout) out += trans_a ? "true" : "false";
      else if (id == "TRANSB" && gemm_layout) out += trans_b ? "true" : "false";
      else if (id == "DIR" && conv) out += std::to_string(dir);
      else if (id == "NCHW" && conv) out += nchw ? "true" : "false";
      else if (value) out += std::to_string(*value);
      else out += id;  // the template's own name
      i = j;
    } else {
      out += in[i++];
    }
  }
  return out;
}

bool KernelTemplate::compiled_as(const std::string& recorded, const Solution& s, const Problem& p) const {
  const std::string expected = name_expression(s, p);
  if (recorded == expected) return true;
  // The instance's arguments and the expression's, split at their top-level commas: one value each.
  auto commas = [](const std::string& text) {
    std::vector<size_t> at;
    int depth = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '<') ++depth;
      else if (text[i] == '>') --depth;
      else if (text[i] == ',' && depth == 1) at.push_back(i);
    }
    return at;
  };
  const std::vector<size_t> in_commas = commas(instance_), ex_commas = commas(expected);
  if (in_commas.size() != ex_commas.size() || expected.empty() || expected.back() != '>') return false;
  for (size_t k = in_commas.size(); k-- > 0;) {
    // Argument k + 1 of the instance: a parameter at its default, or stop.
    const size_t from = in_commas[k] + 1, to = k + 1 < in_commas.size() ? in_commas[k + 1] : instance_.rfind('>');
    std::string name = instance_.substr(from, to - from);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    const auto d = defaults_.find(name);
    if (d == defaults_.end()) return false;
    const auto v = s.params.find(name);
    if (v != s.params.end() && v->second != d->second) return false;
    if (recorded == expected.substr(0, ex_commas[k]) + ">") return true;
  }
  return false;
}

const char* KernelTemplate::arguments_name() const {
  const bool conv = kind_ == ProblemKind::Conv;
  if (arguments_ == Arguments::Params) return conv ? "conv" : "gemm";
  if (arguments_ == Arguments::ConvAsGemmWithTma) return "conv_as_gemm_tma";
  if (arguments_ == Arguments::ConvRowsWithTma) return "conv_rows_tma";
  return conv ? "conv_tma" : "gemm_tma";
}

GemmProblem KernelTemplate::kernel_gemm(const Problem& p) const {
  if (p.is_conv() && arguments_ == Arguments::ConvAsGemmWithTma) return p.conv_gemm().gemm;
  return p.gemm_view();
}

gpu::CompileRequest KernelTemplate::compile_request(const Solution& s, const Problem& p,
                                                    const gpu::DeviceInfo& dev) const {
  gpu::CompileRequest r = instantiation(s, p, dev);
  add_headers(r);
  return r;
}

void KernelTemplate::add_headers(gpu::CompileRequest& r) const { r.headers = sources_ ? *sources_ : embedded_kernel_sources(); }

gpu::CompileRequest KernelTemplate::instantiation(const Solution& s, const Problem& p, const gpu::DeviceInfo& dev) const {
  gpu::CompileRequest r;
  if (const char* prelude = gpu::traits(dev.backend).prelude; *prelude) r.source = "#include \"" + std::string(prelude) + "\"\n";
  r.source += "#include \"" + source_ + "\"\n";
  r.name_expression = name_expression(s, p);
  r.arch = dev.arch;
  return r;
}

const std::string& KernelTemplate::source_hash() const {
  if (source_hash_.empty()) {
    std::string all = instance_;
    for (const auto& [file, text] : sources_ ? *sources_ : embedded_kernel_sources()) {
      if (file.size() > 5 && file.compare(file.size() - 5, 5, ".json") == 0) continue;  // spaces do not change code
      all += "\n//@" + file + "\n" + text;
    }
    source_hash_ = content_hash(all);
  }
  return source_hash_;
}

namespace {

bool is_json(const std::string& file) { return file.size() >= 5 && file.compare(file.size() - 5, 5, ".json") == 0; }

KernelTemplate parse_template(const std::string& where, const std::string& text,
                              const std::map<std::string, std::string>* sources) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": " + e.what());
  }
  return KernelTemplate::from_json(resolve_extends(where, j, sources ? *sources : embedded_kernel_sources()), sources);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) throw Error("cannot read " + path.string());
  return text;
}

}  // namespace

// Templates come from two places:
//  - the embedded kernel_templates/*.json (compiled into the binary);
//  - extra directories named by the environment variable TILETUNE_TEMPLATE_PATH, colon-separated
//    like PATH (empty entries ignored). Every *.json file in such a directory is a template; every
//    regular file of these directories (sources, headers) is resolvable by name, alongside the
//    embedded kernel_templates/ files, from the extra templates' sources (#include "name"). An
//    extra file may not shadow an embedded file, nor an extra template a builtin one's name.
//    The tests use it for templates that crash or hang on purpose (tests/templates/); the worker
//    process of an isolated sweep inherits the environment and so sees the same templates.
// Read once, on first use: set the variable before anything asks for a template.
const std::vector<KernelTemplate>& builtin_templates() {
  static const std::vector<KernelTemplate> templates = [] {
    namespace fs = std::filesystem;
    std::vector<KernelTemplate> out;
    for (const auto& [file, text] : embedded_kernel_sources())
      if (is_json(file)) out.push_back(parse_template("kernel_templates/" + file, text, nullptr));
    // source_hash() fills a cache: do it here, once and single-threaded, so that later calls from
    // any thread only read it (copies made by configs carry it along).
    auto hash_all = [](std::vector<KernelTemplate>& ts) {
      for (const auto& t : ts) t.source_hash();
      return ts;
    };

    const char* env = std::getenv("TILETUNE_TEMPLATE_PATH");
    if (!env || !*env) return hash_all(out);
    // Static storage: templates keep a pointer to the files they resolve against.
    static std::map<std::string, std::string> sources = embedded_kernel_sources();
    std::vector<std::pair<std::string, std::string>> specs;  // where, text
    std::string path = env;
    for (std::size_t start = 0; start <= path.size();) {
      std::size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      const std::string dir = path.substr(start, end - start);
      start = end + 1;
      if (dir.empty()) continue;
      std::error_code ec;
      if (!fs::is_directory(dir, ec))
        throw Error("TILETUNE_TEMPLATE_PATH: " + dir + " is not a directory");
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file()) files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        const std::string name = f.filename().string();
        if (embedded_kernel_sources().count(name))
          throw Error("TILETUNE_TEMPLATE_PATH: " + f.string() + " shadows the embedded kernel_templates/" + name);
        std::string text = read_text(f);
        if (is_json(name)) specs.emplace_back(f.string(), text);
        sources.emplace(name, std::move(text));  // the first directory holding a name wins
      }
    }
    for (const auto& [where, text] : specs) {
      KernelTemplate t = parse_template(where, text, &sources);
      for (const auto& b : out)
        if (b.name() == t.name()) throw Error(where + ": a template named " + t.name() + " exists already");
      out.push_back(std::move(t));
    }
    return hash_all(out);
  }();
  return templates;
}

const KernelTemplate& find_template(const std::string& name) {
  std::string known;
  for (const auto& t : builtin_templates()) {
    if (t.name() == name) return t;
    known += (known.empty() ? "" : ", ") + t.name();
  }
  throw Error("unknown kernel template '" + name + "' (known: " + known + ")");
}

}  // namespace tiletune
