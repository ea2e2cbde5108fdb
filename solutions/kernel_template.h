// A kernel template as the tuner and the runtime see it: its source, its parameter space, its
// constraints and its launch geometry, all read from kernel_templates/<name>.json beside the
// source. Nothing about a particular template is written in C++: a kernel author adds a template
// by adding two files.
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpu/backend.h"
#include "solutions/expression.h"
#include "solutions/problem.h"
#include "solutions/solution.h"

namespace tiletune {

// Every file of kernel_templates/, embedded at build time (name -> text).
const std::map<std::string, std::string>& embedded_kernel_sources();

// What the analytical search model (tuner/model.h) needs of a candidate, evaluated from the
// optional "model" section of a template's JSON: expressions over the template's variables.
//   "model": {"tile_m": "BM", "tile_n": "BN", "tile_k": "BK", "threads": "THREADS",
//             "shared_bytes": "SMEM_BYTES", "split_k": "SPLITK", "stages": "STAGES", ...}
// Required: tile_m/tile_n (the block tile of C), tile_k (K per main-loop step), threads (per
// block). Optional, with their defaults:
//   shared_bytes        shared memory per block, static + dynamic (0)
//   split_k             blocks sharing one C tile along K (1)
//   registers           per thread, for occupancy (0: registers never limit it)
//   stages              main-loop steps of loads in flight + 1, i.e. pipeline depth (2)
//   operand_bytes       shared-memory bytes the math reads per main-loop step per block (0)
//   math_percent        share of the device's peak its math instructions can reach (100)
//   saturating_threads  resident threads per multiprocessor that math needs to hide its own
//                       latency; fewer get a proportional share of the rate (0: any)
//   epilogue_overlap    1 when a tile's epilogue overlaps the next tile's main loop (0)
//   stream_k_tiles      tiles of the last partial wave spread along K over every block (0)
//   about               free text: why the expressions are what they are
//   prefer              a list of expressions: among candidates the model scores equal, larger
//                       values rank first, compared in order ([])
struct ModelShape {
  std::int64_t tile_m = 1, tile_n = 1, tile_k = 1, threads = 1, shared_bytes = 0, split_k = 1;
  std::int64_t registers = 0, stages = 2, operand_bytes = 0, math_percent = 100, saturating_threads = 0,
               epilogue_overlap = 0;
  // The matrix instruction's M (= N) and K where the model prices instructions by shape (AMD's
  // MFMA); 0: the device's peak for the input type.
  std::int64_t instruction_m = 0, instruction_k = 0;
  // Bytes a block loads from L2 per K step where they are not the A and B panels, (tile_m +
  // tile_n) * tile_k elements (0: those).
  std::int64_t load_bytes = 0;
  // Tiles of the last partial wave a stream-K schedule spreads along K over every block (0: none,
  // every tile whole).
  std::int64_t stream_k_tiles = 0;
  std::vector<std::int64_t> prefer;
};

class KernelTemplate {
 public:
  // Ordered JSON: constraints are checked in the order written, so a pruned candidate is blamed
  // on the first rule it breaks as the author listed them. Throws Error naming the field.
  // `sources` (name -> text) are the files the template's source and #includes resolve against;
  // it must outlive the template (nullptr: embedded_kernel_sources()).
  static KernelTemplate from_json(const nlohmann::ordered_json& spec,
                                  const std::map<std::string, std::string>* sources = nullptr);

  const std::string& name() const { return name_; }
  const std::string& source_file() const { return source_; }
  bool supports(gpu::BackendKind backend) const;
  // The kind of problem the template computes ("problem" in the JSON: "gemm", the default, or
  // "conv"); a template is only ever paired with problems of its kind.
  ProblemKind problem_kind() const { return kind_; }
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& parameters() const { return params_; }
  const std::map<std::string, std::int64_t>& defaults() const { return defaults_; }
  Solution default_solution() const { return Solution{name_, defaults_}; }
  // A tuning config narrows or widens the space: replace a parameter's values (Error if the
  // template has no such parameter) or add a named constraint.
  void set_values(const std::string& param, const std::vector<std::int64_t>& values);
  void add_constraint(const std::string& name, const std::string& expression);

  // All the names an expression may use: parameters, problem, device, then derived values.
  // Every problem gives M, N, K, BATCH, A_BYTES, C_BYTES (a convolution: its implicit GEMM, and
  // its input / output element sizes); a GEMM adds TRANSA, TRANSB, ALIGN_A/B/C, COMPUTE_TF32; a
  // convolution CONV_N, CONV_C, CONV_H, CONV_W, CONV_K, CONV_R, CONV_S, CONV_P, CONV_Q,
  // STRIDE_H/W, PAD_H/W, DIL_H/W, GROUPS, DIRECTION (0 fwd, 1 dgrad, 2 wgrad) and LAYOUT_NCHW; a
  // convolution for a "conv_as_gemm_tma" template the GEMM's names besides (M, N, K and the rest
  // those of solutions/conv_gemm.h's GEMM, not the implicit GEMM's).
  Variables variables(const Solution& s, const Problem& p, const gpu::DeviceInfo& dev) const;
  // The problem's and the device's names of variables(), written over `v`: what variables() puts
  // over the solution's values before the derived ones. `repack`: the solution's REPACK (0 none,
  // kRepackOperands, kRepackColumnPhases): the names are those of the problem the kernel sees.
  void add_fixed_variables(const Problem& p, int repack, const gpu::DeviceInfo& dev, Variables& v) const;
  // Name and text of the first constraint the candidate breaks, or nullopt when it can run.
  std::optional<std::string> violation(const Variables& vars) const;
  gpu::LaunchDims launch_dims(const Variables& vars) const;
  // What variables() and violation() evaluate, in order, for evaluators of their own (the enumerator's).
  const std::vector<std::pair<std::string, Expression>>& derived() const { return derived_; }
  const std::vector<std::pair<std::string, Expression>>& constraints() const { return constraints_; }
  // launch_dims(vars) as the values of these expressions: block, grid x, y, z, shared bytes, cluster x, y.
  static constexpr std::size_t kLaunchExpressions = 7;
  std::array<const Expression*, kLaunchExpressions> launch_expressions() const {
    return {&block_, &grid_x_, &grid_y_, &grid_z_, &shared_bytes_, &cluster_x_, &cluster_y_};
  }
  gpu::LaunchDims launch_dims(const std::array<std::int64_t, kLaunchExpressions>& values) const;
  // Bytes of zeroed device scratch the kernel needs (TtGemmParams::workspace), 0 for most.
  // The template's own workspace, then (REPACK) the operand copies at repack_offset.
  std::int64_t workspace_bytes(const Variables& vars) const {
    auto r = vars.find("REPACK_BYTES");
    return r != vars.end() && r->second > 0 ? repack_offset(vars) + r->second : workspace_.eval(vars);
  }
  std::int64_t repack_offset(const Variables& vars) const { return (workspace_.eval(vars) + 255) / 256 * 256; }
  // How the kernel's single argument is built: the operation's params as they are (TtGemmParams,
  // TtConvParams), or those plus TMA descriptors built by the CUDA backend for the call's pointers
  // (kernel_templates/gemm_tma_params.h, conv_tma_params.h), or for a convolution that is a GEMM
  // the GEMM's params and TMA descriptors (solutions/conv_gemm.h: a GEMM template's kernel run on
  // the convolution's tensors), or a convolution's params with tiled TMA maps over rows of its
  // activations (conv_rows_tma: wgmma_tap_wgrad). The JSON says "gemm", "conv", "gemm_tma",
  // "conv_tma", "conv_as_gemm_tma" or "conv_rows_tma".
  enum class Arguments { Params, ParamsWithTma, ConvAsGemmWithTma, ConvRowsWithTma };
  Arguments arguments() const { return arguments_; }
  const char* arguments_name() const;  // as the JSON says it
  // The GEMM the kernel computes for `p`, as the model prices it: a GEMM itself, a convolution its
  // implicit GEMM (Problem::gemm_view) or, for "conv_as_gemm_tma", solutions/conv_gemm.h's GEMM.
  GemmProblem kernel_gemm(const Problem& p) const;
  // Preference of this template's default as the runtime's kernel for untuned problems: lower is
  // tried first; -1 (no "fallback_rank" in the JSON) means never. A template that declares a rank
  // promises its default is valid for every problem its constraints admit.
  int fallback_rank() const { return fallback_rank_; }
  // "repack": true: the enumerator also offers each solution with REPACK 1 for GEMMs whose A or B
  // is not 16-byte aligned (solutions/gemm_problem.h, repack_plan), which the launch code supports for
  // any template; a template declares it where copies help (TMA, 16-byte loads).
  bool offers_repack() const { return repack_; }
  void set_offers_repack(bool on) { repack_ = on; }  // a config's "repack" override
  // "column_phases": true: the enumerator also offers each solution with REPACK 2 for the GEMMs
  // solutions/gemm_problem.h's column_phases takes (C's columns off 16 bytes, run a phase at a time).
  bool offers_column_phases() const { return column_phases_; }
  void set_offers_column_phases(bool on) { column_phases_ = on; }  // a config's "column_phases" override
  // The REPACK values besides 0 the enumerator offers this template's solutions with on `p`.
  std::vector<int> repack_offers(const Problem& p) const;
  // Whether the JSON has a "model" section, and its values for one candidate (nullopt without one).
  bool has_model() const { return has_model_; }
  std::optional<ModelShape> model_shape(const Variables& vars) const;
  // "simt_gemm<float, float, false, false, 128, ...>": the instance pattern with values put in:
  // TA, TC (types), TRANSA, TRANSB (GEMM), DIR (0 fwd, 1 dgrad, 2 wgrad) and NCHW (convolution).
  std::string name_expression(const Solution& s, const Problem& p) const;
  // Whether a code object recorded as compiled from `recorded` is this solution's kernel: its name
  // expression, or that expression without trailing template arguments the solution leaves at the
  // template's defaults (a database compiled before the template grew them, whose kernel took the
  // C++ template's default for them: the templates keep a parameter at its default the old code).
  bool compiled_as(const std::string& recorded, const Solution& s, const Problem& p) const;
  // Translation unit and headers for a backend's compiler.
  gpu::CompileRequest compile_request(const Solution& s, const Problem& p, const gpu::DeviceInfo& dev) const;
  // The same without its headers, which are all the kernel sources: enough for its cache key
  // (source_hash() covers them); add_headers completes it for a compile.
  gpu::CompileRequest instantiation(const Solution& s, const Problem& p, const gpu::DeviceInfo& dev) const;
  void add_headers(gpu::CompileRequest& r) const;
  // Hash of the source and every header it can include: a changed kernel never reuses old objects.
  const std::string& source_hash() const;

 private:
  std::string name_, source_, instance_;
  Arguments arguments_ = Arguments::Params;
  std::vector<gpu::BackendKind> backends_;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> params_;
  std::map<std::string, std::int64_t> defaults_;
  std::vector<std::pair<std::string, Expression>> derived_;
  std::vector<std::pair<std::string, Expression>> constraints_;
  Expression block_, grid_x_, grid_y_, grid_z_, shared_bytes_, cluster_x_, cluster_y_, workspace_;
  bool persistent_ = false;  // launch "persistent": see gpu::LaunchDims::persistent
  int fallback_rank_ = -1;
  bool repack_ = false;
  bool column_phases_ = false;
  ProblemKind kind_ = ProblemKind::Gemm;
  bool has_model_ = false;
  std::map<std::string, Expression> model_;  // key of the "model" section -> expression
  std::vector<Expression> model_prefer_;
  const std::map<std::string, std::string>* sources_ = nullptr;  // static storage; nullptr: the embedded files
  mutable std::string source_hash_;
};

// The templates found in the embedded kernel_templates/*.json, then those of the directories
// in $TILETUNE_TEMPLATE_PATH (see kernel_template.cpp).
const std::vector<KernelTemplate>& builtin_templates();
const KernelTemplate& find_template(const std::string& name);  // throws Error listing known names

// 64-bit FNV-1a as 16 hex digits: stable across platforms and compilers, good enough for cache keys.
std::string content_hash(const std::string& text);

}  // namespace tiletune
