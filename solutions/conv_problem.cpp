#include "solutions/conv_problem.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "solutions/json_fields.h"

namespace tiletune {

const char* to_string(ConvDirection d) {
  switch (d) {
    case ConvDirection::Forward: return "fwd";
    case ConvDirection::BackwardData: return "dgrad";
    case ConvDirection::BackwardFilter: return "wgrad";
  }
  return "?";
}

ConvDirection conv_direction_from_string(const std::string& s) {
  if (s == "fwd" || s == "forward") return ConvDirection::Forward;
  if (s == "dgrad" || s == "backward_data") return ConvDirection::BackwardData;
  if (s == "wgrad" || s == "backward_filter") return ConvDirection::BackwardFilter;
  throw Error("unknown convolution direction '" + s + "' (expected fwd, dgrad or wgrad)");
}

const char* to_string(ConvLayout l) { return l == ConvLayout::NHWC ? "NHWC" : "NCHW"; }

ConvLayout conv_layout_from_string(const std::string& s) {
  if (s == "NHWC" || s == "nhwc") return ConvLayout::NHWC;
  if (s == "NCHW" || s == "nchw") return ConvLayout::NCHW;
  throw Error("unknown convolution layout '" + s + "' (expected NHWC or NCHW)");
}

static std::int64_t out_size(std::int64_t in, std::int64_t pad, std::int64_t dil, std::int64_t f, std::int64_t stride) {
  // Floor division of a possibly negative numerator: an output size <= 0 must stay <= 0.
  std::int64_t span = in + 2 * pad - dil * (f - 1) - 1;
  if (stride < 1) return 0;
  return (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
}

std::int64_t ConvProblem::p() const { return out_size(h, pad_h, dil_h, r, stride_h); }
std::int64_t ConvProblem::q() const { return out_size(w, pad_w, dil_w, s, stride_w); }

void ConvProblem::validate() const {
  auto fail = [](const std::string& what) { throw Error("invalid convolution problem: " + what); };
  auto positive = [&](const char* name, std::int64_t v) {
    if (v < 1) fail(std::string(name) + " must be >= 1 (got " + name + "=" + std::to_string(v) + ")");
  };
  positive("n", n), positive("c", c), positive("h", h), positive("w", w), positive("k", k), positive("r", r);
  positive("s", s), positive("stride_h", stride_h), positive("stride_w", stride_w), positive("dilation_h", dil_h);
  positive("dilation_w", dil_w), positive("groups", groups);
  for (DataType t : {in_type, out_type})
    if (size_of(t) == 1 || is_integer(t))
      fail(std::string("type ") + to_string(t) + " (convolutions take f32, f16 or bf16; fp8 and int8 are GEMM types)");
  if (pad_h < 0) fail("pad_h must be >= 0 (got pad_h=" + std::to_string(pad_h) + ")");
  if (pad_w < 0) fail("pad_w must be >= 0 (got pad_w=" + std::to_string(pad_w) + ")");
  // Every field reaches the kernels as a 32-bit int, and the size products below must not wrap:
  // bound each field before multiplying any.
  for (auto [name, v] : {std::pair<const char*, std::int64_t>{"n", n}, {"c", c}, {"h", h}, {"w", w}, {"k", k},
                         {"r", r}, {"s", s}, {"stride_h", stride_h}, {"stride_w", stride_w}, {"pad_h", pad_h},
                         {"pad_w", pad_w}, {"dilation_h", dil_h}, {"dilation_w", dil_w}})
    if (v > (1 << 20)) fail(std::string(name) + "=" + std::to_string(v) + " is larger than 2^20");
  if (c % groups != 0)
    fail("c=" + std::to_string(c) + " is not divisible by groups=" + std::to_string(groups));
  if (k % groups != 0)
    fail("k=" + std::to_string(k) + " is not divisible by groups=" + std::to_string(groups));
  if (p() < 1)
    fail("output height p = (h + 2*pad_h - dilation_h*(r-1) - 1)/stride_h + 1 = " + std::to_string(p()) +
         " must be >= 1 (h=" + std::to_string(h) + " r=" + std::to_string(r) + " pad_h=" + std::to_string(pad_h) +
         " dilation_h=" + std::to_string(dil_h) + ")");
  if (q() < 1)
    fail("output width q = (w + 2*pad_w - dilation_w*(s-1) - 1)/stride_w + 1 = " + std::to_string(q()) +
         " must be >= 1 (w=" + std::to_string(w) + " s=" + std::to_string(s) + " pad_w=" + std::to_string(pad_w) +
         " dilation_w=" + std::to_string(dil_w) + ")");
  // Kernels index tensors with 32-bit GEMM coordinates and 64-bit offsets.
  const ImplicitGemm g = implicit_gemm();
  // In doubles: with fields up to 2^20, a product of four can pass 2^63.
  const double ex = double(n) * double(c) * double(h) * double(w), ey = double(n) * double(k) * double(p()) * double(q()),
               ew = double(k) * double(c / groups) * double(r) * double(s);
  if (g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX || ex > INT32_MAX || ey > INT32_MAX || ew > INT32_MAX ||
      groups > 65535)
    fail("tensors must have fewer than 2^31 elements and groups be at most 65535");
}

std::string ConvProblem::key() const {
  std::string s = "conv|";
  s += to_string(direction);
  s += '|';
  s += to_string(in_type);
  s += '>';
  s += to_string(out_type);
  s += "|acc_f32|";
  s += to_string(layout);
  auto add = [&s](const char* name, std::int64_t v) {
    s += '|';
    s += name;
    s += std::to_string(v);
  };
  auto add2 = [&s](const char* name, std::int64_t a, std::int64_t b) {
    s += '|';
    s += name;
    s += std::to_string(a) + "x" + std::to_string(b);
  };
  add("n", n), add("c", c), add("h", h), add("w", w), add("k", k), add("r", r), add("s", this->s);
  add2("u", stride_h, stride_w), add2("pad", pad_h, pad_w), add2("dil", dil_h, dil_w);
  add("g", groups);
  return s;
}

double ConvProblem::flops() const {
  return 2.0 * double(n) * double(p()) * double(q()) * double(k) * double(c / groups) * double(r) * double(s);
}

ImplicitGemm ConvProblem::implicit_gemm() const {
  const std::int64_t cg = c / groups, kg = k / groups;
  switch (direction) {
    case ConvDirection::Forward: return {n * p() * q(), kg, cg * r * s, groups};
    case ConvDirection::BackwardData: return {n * h * w, cg, kg * r * s, groups};
    case ConvDirection::BackwardFilter: return {kg, cg * r * s, n * p() * q(), groups};
  }
  return {};
}

void to_json(nlohmann::json& j, const ConvProblem& p) {
  j = nlohmann::json{{"kind", "conv"},
                     {"direction", to_string(p.direction)},
                     {"layout", to_string(p.layout)},
                     {"in_type", to_string(p.in_type)},
                     {"out_type", to_string(p.out_type)},
                     {"n", p.n}, {"c", p.c}, {"h", p.h}, {"w", p.w}, {"k", p.k}, {"r", p.r}, {"s", p.s},
                     {"stride", {p.stride_h, p.stride_w}},
                     {"pad", {p.pad_h, p.pad_w}},
                     {"dilation", {p.dil_h, p.dil_w}},
                     {"groups", p.groups}};
}

// stride, pad and dilation: one integer for both dimensions, or [h, w].
static void pair_field(const nlohmann::json& j, const char* name, std::int64_t& h, std::int64_t& w) {
  if (!j.contains(name)) return;
  const auto& v = j.at(name);
  if (v.is_number_integer()) {
    h = w = v.get<std::int64_t>();
  } else if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer()) {
    h = v[0].get<std::int64_t>();
    w = v[1].get<std::int64_t>();
  } else {
    throw Error(std::string("'") + name + "' must be an integer or [h, w], got " + v.dump());
  }
}

void from_json(const nlohmann::json& j, ConvProblem& p) {
  try {
    p = ConvProblem{};
    if (j.contains("kind") && j.at("kind").get<std::string>() != "conv")
      throw Error("kind must be \"conv\", got " + j.at("kind").dump());
    if (j.contains("direction")) p.direction = conv_direction_from_string(j.at("direction").get<std::string>());
    if (j.contains("layout")) p.layout = conv_layout_from_string(j.at("layout").get<std::string>());
    if (j.contains("dtype")) p.in_type = p.out_type = dtype_from_string(j.at("dtype").get<std::string>());
    if (j.contains("in_type")) p.in_type = dtype_from_string(j.at("in_type").get<std::string>());
    if (j.contains("out_type")) p.out_type = dtype_from_string(j.at("out_type").get<std::string>());
    for (const char* f : {"n", "c", "h", "w", "k", "r", "s"})
      if (!j.contains(f)) throw Error(std::string("missing field '") + f + "'");
    p.n = json_integer(j.at("n"), "'n'");
    p.c = json_integer(j.at("c"), "'c'");
    p.h = json_integer(j.at("h"), "'h'");
    p.w = json_integer(j.at("w"), "'w'");
    p.k = json_integer(j.at("k"), "'k'");
    p.r = json_integer(j.at("r"), "'r'");
    p.s = json_integer(j.at("s"), "'s'");
    pair_field(j, "stride", p.stride_h, p.stride_w);
    pair_field(j, "pad", p.pad_h, p.pad_w);
    pair_field(j, "dilation", p.dil_h, p.dil_w);
    p.groups = json_integer_or(j, "groups", 1);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("bad convolution problem ") + j.dump() + ": " + e.what());
  } catch (const Error& e) {
    throw Error(std::string("bad convolution problem ") + j.dump() + ": " + e.what());
  }
}

}  // namespace tiletune
