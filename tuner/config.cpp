#include "tuner/config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "solutions/json_fields.h"

namespace tiletune::tuner {
namespace {

using nlohmann::json;

void only_keys(const json& j, const std::set<std::string>& allowed, const std::string& where) {
  if (!j.is_object()) throw Error(where + " must be a JSON object");
  for (const auto& [key, value] : j.items())
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw Error("unknown key '" + key + "' in " + where + " (allowed: " + list + ")");
    }
}

// A config expands to at most this many problems: more is a typo in a range, not a sweep.
constexpr std::size_t kMaxProblems = 100000;
// Sizes: positive, and small enough that no product of them overflows on the way.
constexpr std::int64_t kMaxSize = std::int64_t(1) << 40;

// A size is a number or an inclusive range [start, stop, step], checked before it is expanded.
std::vector<std::int64_t> sizes(const json& j, const std::string& what) {
  if (j.is_number()) return {json_integer(j, what)};
  if (j.is_array() && j.size() == 3) {
    const std::int64_t a = json_integer(j[0], what + " start"), b = json_integer(j[1], what + " stop"),
                       s = json_integer(j[2], what + " step");
    if (s <= 0 || a > b) throw Error(what + ": range " + j.dump() + " must be [start, stop, step] with step > 0");
    if (a < 1 || b > kMaxSize)
      throw Error(what + ": range " + j.dump() + " must stay within 1.." + std::to_string(kMaxSize));
    const std::int64_t count = (b - a) / s + 1;
    if (count > 100000) throw Error(what + ": range " + j.dump() + " expands to more than 100000 sizes");
    std::vector<std::int64_t> out;
    for (std::int64_t i = 0; i < count; ++i) out.push_back(a + i * s);
    return out;
  }
  throw Error(what + " must be an integer or a range [start, stop, step], got " + j.dump());
}

// A convolution: its fields as ConvProblem's JSON; "n" may be a range (batch sizes). Here and in a
// GEMM, "name" and "calls" (how often a trainer ran it untuned: tiletune_record) are for people.
void add_conv_problems(const json& spec, std::vector<Problem>& out) {
  only_keys(spec, {"kind", "direction", "layout", "dtype", "in_type", "out_type", "n", "c", "h", "w", "k", "r", "s",
                   "stride", "pad", "dilation", "groups", "name", "calls"},
            "convolution problem " + spec.dump());
  if (!spec.contains("n")) throw Error("convolution problem " + spec.dump() + " has no 'n'");
  const auto batches = sizes(spec["n"], "n");
  if (batches.size() + out.size() > kMaxProblems)
    throw Error("convolution problem " + spec.dump() + ": a config holds at most " + std::to_string(kMaxProblems) + " problems");
  for (auto n : batches) {
    json one = spec;
    one["n"] = n;
    one.erase("name");
    ConvProblem p;
    from_json(one, p);
    p.validate();
    out.push_back(p.canonical());
  }
}

void add_problems(const json& spec, std::vector<Problem>& out) {
  if (spec.is_object() && spec.contains("kind") && spec["kind"] != "gemm") return add_conv_problems(spec, out);
  only_keys(spec, {"kind", "dtype", "a_type", "b_type", "c_type", "compute", "transA", "transB", "m", "n", "k", "batch", "lda", "ldb", "ldc",
                   "stride_a", "stride_b", "stride_c", "beta_zero", "name", "calls"},
            "problem " + spec.dump());
  for (const char* f : {"m", "n", "k"})
    if (!spec.contains(f)) throw Error(std::string("problem ") + spec.dump() + " has no '" + f + "'");
  const auto ms = sizes(spec["m"], "m"), ns = sizes(spec["n"], "n"), ks = sizes(spec["k"], "k");
  if (double(ms.size()) * double(ns.size()) * double(ks.size()) + double(out.size()) > double(kMaxProblems))
    throw Error("problem " + spec.dump() + " expands to " + std::to_string(ms.size() * ns.size() * ks.size()) +
                " problems: a config holds at most " + std::to_string(kMaxProblems) + " (narrow its ranges)");
  for (auto m : ms)
    for (auto n : ns)
      for (auto k : ks) {
        json one = spec;
        one["m"] = m;
        one["n"] = n;
        one["k"] = k;
        one.erase("name");
        one.erase("kind");
        GemmProblem p = one.get<GemmProblem>();
        p.validate();
        out.push_back(p.canonical());
      }
}

// A convolution shapes file (configs/shapes/conv_resnet50.json): "layers" with c, k, h, w, r, s,
// stride, pad, and the batch "n". The config picks dtypes, directions (default fwd), layout
// (default NHWC) and may override the batch (CI tunes small ones).
void add_conv_shapes(const json& spec, const json& shapes, const std::string& file, std::vector<Problem>& out) {
  only_keys(spec, {"file", "names", "dtypes", "directions", "layout", "batch"}, "\"shapes\" (convolution layers)");
  std::set<std::string> wanted;
  if (spec.contains("names")) wanted = spec["names"].get<std::set<std::string>>();
  const auto dtypes = spec.value("dtypes", std::vector<std::string>{"f32"});
  const auto directions = spec.value("directions", std::vector<std::string>{"fwd"});
  const json batch = spec.contains("batch") ? spec["batch"] : shapes.at("n");
  std::set<std::string> found;
  for (const auto& l : shapes.at("layers")) {
    std::string name = l.at("name").get<std::string>();
    if (!wanted.empty() && !wanted.count(name)) continue;
    found.insert(name);
    for (const auto& dt : dtypes)
      for (const auto& dir : directions) {
        json p = {{"kind", "conv"}, {"direction", dir}, {"layout", spec.value("layout", "NHWC")}, {"dtype", dt},
                  {"n", batch}, {"c", l.at("c")}, {"h", l.at("h")}, {"w", l.at("w")}, {"k", l.at("k")},
                  {"r", l.at("r")}, {"s", l.at("s")}, {"stride", l.value("stride", json(1))},
                  {"pad", l.value("pad", json(0))}, {"dilation", l.value("dilation", json(1))},
                  {"groups", l.value("groups", json(1))}};
        try {
          add_conv_problems(p, out);
        } catch (const Error& e) {
          throw Error("layer '" + name + "' of " + file + ": " + e.what());
        }
      }
  }
  for (const auto& w : wanted)
    if (!found.count(w)) throw Error("layer '" + w + "' is not in " + file);
}

void add_shapes(const json& spec, const std::string& base_dir, std::vector<Problem>& out) {
  if (!spec.is_object()) throw Error("\"shapes\" must be an object or an array of objects");
  if (!spec.contains("file")) throw Error("\"shapes\" has no \"file\"");
  std::filesystem::path file = spec.at("file").get<std::string>();
  if (file.is_relative()) file = std::filesystem::path(base_dir) / file;
  // TILETUNE_SHAPES_DIR lets a config travel without the tree beside it (e.g. to a GPU machine).
  const char* dir = std::getenv("TILETUNE_SHAPES_DIR");
  std::error_code ec;  // a name the file system refuses (too long, ...) is a missing file, not a throw
  if (!std::filesystem::exists(file, ec) && dir && *dir) file = std::filesystem::path(dir) / file.filename();
  std::ifstream in;
  if (std::filesystem::is_regular_file(file, ec)) in.open(file);
  if (!in) throw Error("cannot open shapes file " + file.string() + " (not a readable file; relative paths start at "
                       "the config's folder; TILETUNE_SHAPES_DIR names a fallback folder)");
  const json shapes = parse_json(std::string(std::istreambuf_iterator<char>(in), {}), "shapes file " + file.string());
  if (shapes.contains("layers")) return add_conv_shapes(spec, shapes, file.string(), out);
  only_keys(spec, {"file", "names", "dtypes", "beta_zero"}, "\"shapes\"");
  std::set<std::string> wanted;
  if (spec.contains("names")) wanted = spec["names"].get<std::set<std::string>>();
  std::vector<std::string> dtypes = spec.value("dtypes", std::vector<std::string>{"f32"});
  std::set<std::string> found;
  for (const auto& s : shapes.at("shapes")) {
    std::string name = s.at("name").get<std::string>();
    if (!wanted.empty() && !wanted.count(name)) continue;
    found.insert(name);
    for (const auto& dt : dtypes) {
      json p = {{"dtype", dt}, {"transA", s.at("transA")}, {"transB", s.at("transB")},
                {"m", s.at("m")}, {"n", s.at("n")}, {"k", s.at("k")}, {"beta_zero", spec.value("beta_zero", true)}};
      add_problems(p, out);
    }
  }
  for (const auto& w : wanted)
    if (!found.count(w)) throw Error("shape '" + w + "' is not in " + file.string());
}

}  // namespace

namespace {

// "problems" and "shapes", each problem once: a problem named twice would be measured twice and,
// under halving, its short timings would overwrite the full ones (the first mention is kept).
void parse_problems(const json& j, const std::string& base_dir, TuningConfig& c) {
  for (const auto& p : j.value("problems", json::array())) add_problems(p, c.problems);
  if (j.contains("shapes")) {
    if (j["shapes"].is_array())
      for (const auto& s : j["shapes"]) add_shapes(s, base_dir, c.problems);
    else
      add_shapes(j["shapes"], base_dir, c.problems);
  }
  if (c.problems.empty()) throw Error("the config names no problems (give \"problems\" or \"shapes\")");
  std::set<std::string> seen;
  std::vector<Problem> unique;
  for (auto& p : c.problems)
    if (seen.insert(p.canonical().key()).second) unique.push_back(std::move(p));
  c.duplicates_dropped = c.problems.size() - unique.size();
  c.problems = std::move(unique);
}

// "templates": each named template with its space narrowed or widened (default: every builtin one).
void parse_templates(const json& j, TuningConfig& c) {
  if (!j.contains("templates")) {
    c.templates = builtin_templates();
    return;
  }
  for (const auto& [name, spec] : j["templates"].items()) {
    only_keys(spec, {"parameters", "constraints", "repack", "column_phases"}, "template \"" + name + "\"");
    KernelTemplate t = find_template(name);
    auto flag = [&](const char* key) -> std::optional<bool> {
      if (!spec.contains(key)) return std::nullopt;
      if (!spec[key].is_boolean()) throw Error("template \"" + name + "\": \"" + key + "\" must be true or false");
      return spec[key].get<bool>();
    };
    if (const auto on = flag("repack")) t.set_offers_repack(*on);
    if (const auto on = flag("column_phases")) t.set_offers_column_phases(*on);
    const json params = spec.value("parameters", json::object()), constraints = spec.value("constraints", json::object());
    for (const auto& [param, values] : params.items()) {
      if (!values.is_array()) throw Error("template \"" + name + "\": parameter " + param + " needs a list of values");
      std::vector<std::int64_t> ints;
      for (const auto& v : values) ints.push_back(json_integer(v, "template \"" + name + "\": a value of " + param));
      t.set_values(param, ints);
    }
    for (const auto& [cname, expr] : constraints.items()) t.add_constraint(cname, expr.get<std::string>());
    c.templates.push_back(std::move(t));
  }
}

// "benchmark": integers where counts are meant, and every setting within what a sweep can use.
void parse_benchmark(const json& b, BenchmarkOptions& o) {
  only_keys(b, {"warmup", "min_iterations", "max_iterations", "target_ms", "timeout_s", "prepare_timeout_s",
                "flush_l2", "final_ms"},
            "\"benchmark\"");
  o.flush_l2 = b.value("flush_l2", o.flush_l2);
  auto count = [&](const char* name, int fallback, int lo, int hi) {
    const std::int64_t v = json_integer_or(b, name, fallback);
    if (v < lo || v > hi)
      throw Error("benchmark: " + std::string(name) + " must be between " + std::to_string(lo) + " and " +
                  std::to_string(hi) + ", got " + std::to_string(v));
    return int(v);
  };
  auto positive = [&](const char* name, double fallback, double hi) {
    if (!b.contains(name)) return fallback;
    if (!b[name].is_number()) throw Error(std::string("benchmark: ") + name + " must be a number");
    const double v = b[name].get<double>();
    if (!(v > 0 && v <= hi))
      throw Error("benchmark: " + std::string(name) + " must be > 0 and at most " + std::to_string(hi) + ", got " +
                  b[name].dump());
    return v;
  };
  o.warmup = count("warmup", o.warmup, 0, 10000);
  o.min_iterations = count("min_iterations", o.min_iterations, 1, 1000000);
  o.max_iterations = count("max_iterations", o.max_iterations, 1, 1000000);
  o.target_ms = positive("target_ms", o.target_ms, 600000);
  if (b.contains("final_ms")) {
    if (!b["final_ms"].is_number()) throw Error("benchmark: final_ms must be a number");
    o.final_ms = b["final_ms"].get<double>();
    if (!(o.final_ms >= 0 && o.final_ms <= 60000)) throw Error("benchmark: final_ms must be between 0 and 60000 milliseconds");
  }
  o.timeout_s = positive("timeout_s", o.timeout_s, 86400);
  o.prepare_timeout_s = positive("prepare_timeout_s", o.prepare_timeout_s, 86400);
  if (o.min_iterations < 1 || o.max_iterations < o.min_iterations)
    throw Error("benchmark: need 1 <= min_iterations <= max_iterations");
}

void parse_search(const json& s, SearchOptions& o) {
  only_keys(s, {"strategy", "budget", "budget_seconds", "seed"}, "\"search\"");
  o.strategy = s.value("strategy", o.strategy);
  if (s.contains("budget")) {
    if (!s["budget"].is_number_integer() || s["budget"].get<std::int64_t>() < 0)
      throw Error("search: budget must be an integer >= 0 (candidates per problem; 0 = all)");
    o.budget = s["budget"].get<std::size_t>();
  }
  o.budget_seconds = s.value("budget_seconds", o.budget_seconds);
  o.seed = s.value("seed", o.seed);
  validate(o);
}

}  // namespace

TuningConfig parse_config(const std::string& text, const std::string& base_dir) {
  const json j = parse_json(text, "the config");
  only_keys(j, {"name", "problems", "shapes", "templates", "benchmark", "search", "about"}, "the config");
  TuningConfig c;
  try {
    c.name = j.value("name", c.name);
    parse_problems(j, base_dir, c);
    parse_templates(j, c);
    if (j.contains("benchmark")) parse_benchmark(j["benchmark"], c.benchmark);
    if (j.contains("search")) parse_search(j["search"], c.search);
  } catch (const json::exception& e) {
    throw Error(std::string("config: ") + e.what());
  }
  return c;
}

TuningConfig load_config(const std::string& path) {
  std::error_code ec;
  std::ifstream in;
  if (std::filesystem::is_regular_file(path, ec)) in.open(path);
  // A stream never opened is not in a failed state: is_open, not !in.
  if (!in.is_open() || !in) throw Error("cannot open config file " + path + " (not a readable file)");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return parse_config(ss.str(), std::filesystem::path(path).parent_path().string());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace tiletune::tuner
