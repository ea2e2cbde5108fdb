#include "solutions/problem.h"

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace tiletune {

const char* to_string(ProblemKind k) { return k == ProblemKind::Conv ? "conv" : "gemm"; }

const GemmProblem& Problem::gemm() const {
  if (is_conv()) throw Error("a GEMM problem was expected, got " + key());
  return std::get<0>(v_);
}

const ConvProblem& Problem::conv() const {
  if (!is_conv()) throw Error("a convolution problem was expected, got " + key());
  return std::get<1>(v_);
}

Problem::Problem(const ConvProblem& p) : v_(p) {
  // Not for a problem whose sizes would divide by zero (validate() refuses it, naming the field).
  if (p.groups >= 1 && p.stride_h >= 1 && p.stride_w >= 1) conv_gemm_ = conv_as_gemm(p);
}

const ConvGemm& Problem::conv_gemm() const {
  conv();  // throws for a GEMM
  return conv_gemm_;
}

Problem Problem::canonical() const {
  return std::visit([](const auto& p) { return Problem(p.canonical()); }, v_);
}

void Problem::validate() const {
  std::visit([](const auto& p) { p.validate(); }, v_);
}

std::string Problem::key() const {
  return std::visit([](const auto& p) { return p.key(); }, v_);
}

double Problem::flops() const {
  return std::visit([](const auto& p) { return p.flops(); }, v_);
}

GemmProblem Problem::gemm_view() const {
  if (!is_conv()) return std::get<0>(v_);
  const ConvProblem& c = std::get<1>(v_);
  ImplicitGemm g = c.implicit_gemm();
  GemmProblem p;
  p.a_type = c.in_type;
  p.c_type = c.out_type;
  p.m = g.m, p.n = g.n, p.k = g.k, p.batch = g.batch;
  return p.canonical();
}

std::string Problem::describe() const {
  if (is_conv()) {
    const ConvProblem& c = std::get<1>(v_);
    auto pair = [](std::int64_t a, std::int64_t b) {
      return a == b ? std::to_string(a) : std::to_string(a) + "x" + std::to_string(b);
    };
    std::string s = std::string("conv ") + to_string(c.direction) + " " + to_string(c.in_type) + ">" +
                    to_string(c.out_type) + " " + to_string(c.layout) + " n" + std::to_string(c.n) + " c" +
                    std::to_string(c.c) + " " + std::to_string(c.h) + "x" + std::to_string(c.w) + " k" +
                    std::to_string(c.k) + " " + std::to_string(c.r) + "x" + std::to_string(c.s);
    if (c.stride_h != 1 || c.stride_w != 1) s += " u" + pair(c.stride_h, c.stride_w);
    if (c.pad_h || c.pad_w) s += " pad" + pair(c.pad_h, c.pad_w);
    if (c.dil_h != 1 || c.dil_w != 1) s += " dil" + pair(c.dil_h, c.dil_w);
    if (c.groups != 1) s += " g" + std::to_string(c.groups);
    return s;
  }
  const GemmProblem& p = std::get<0>(v_);
  return p.input_types() + ">" + to_string(p.c_type) + " " + (p.trans_a ? "T" : "N") +
         (p.trans_b ? "T" : "N") + " " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) +
         (p.batch > 1 ? " b" + std::to_string(p.batch) : "");
}

void to_json(nlohmann::json& j, const Problem& p) {
  if (p.is_conv()) to_json(j, p.conv());
  else to_json(j, p.gemm());
}

void from_json(const nlohmann::json& j, Problem& p) {
  if (j.is_object() && j.contains("kind") && j.at("kind").is_string() && j.at("kind").get<std::string>() == "conv") {
    ConvProblem c;
    from_json(j, c);
    p = c;
    return;
  }
  if (j.is_object() && j.contains("kind") && (!j.at("kind").is_string() || j.at("kind").get<std::string>() != "gemm"))
    throw Error("unknown problem kind " + j.at("kind").dump() + " (expected \"gemm\" or \"conv\")");
  GemmProblem g;
  from_json(j, g);
  p = g;
}

}  // namespace tiletune
