// One problem of any kind (GEMM or convolution): the type the tuner, the database and the
// selection rules pass around. It offers the calls that do not depend on the kind under the same
// names as GemmProblem's, so that kind-neutral code reads the same for both; kind-specific code
// asks gemm() / conv().
#pragma once
#include <string>
#include <variant>

#include <nlohmann/json_fwd.hpp>

#include "solutions/conv_gemm.h"
#include "solutions/conv_problem.h"
#include "solutions/gemm_problem.h"

namespace tiletune {

enum class ProblemKind { Gemm, Conv };
const char* to_string(ProblemKind k);  // "gemm", "conv": the database's problems.kind

class Problem {
 public:
  Problem() = default;
  Problem(const GemmProblem& p) : v_(p) {}  // implicit: a GemmProblem is a Problem
  // A convolution's GEMM (solutions/conv_gemm.h) is computed here, once, for the templates that
  // run it on a GEMM kernel ("conv_as_gemm_tma"): their variables, instance, model and arguments.
  Problem(const ConvProblem& p);

  ProblemKind kind() const { return is_conv() ? ProblemKind::Conv : ProblemKind::Gemm; }
  bool is_conv() const { return v_.index() == 1; }
  const GemmProblem& gemm() const;  // throws Error for the other kind
  const ConvProblem& conv() const;
  const ConvGemm& conv_gemm() const;  // a convolution's conv_as_gemm; throws Error for a GEMM

  Problem canonical() const;
  void validate() const;
  std::string key() const;
  double flops() const;
  // GEMM: itself; convolution: its implicit GEMM (per group, batch = groups), with the
  // convolution's input and output types. For models and tables that think in m, n, k.
  GemmProblem gemm_view() const;
  std::string describe() const;  // short, for tables: "f32>f32 NN 64x64x64", "conv fwd bf16 NHWC n2 c64 ..."

 private:
  std::variant<GemmProblem, ConvProblem> v_;
  ConvGemm conv_gemm_;  // a convolution's; unused for a GEMM
};

void to_json(nlohmann::json& j, const Problem& p);
// A spec with "kind": "conv" is a convolution, anything else a GEMM. Throws Error on bad fields.
void from_json(const nlohmann::json& j, Problem& p);

}  // namespace tiletune
