// The runtime's engine behind the C API: winners of one arch in memory, kernels loaded lazily,
// a default kernel for untuned problems.
#pragma once
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "db/database.h"
#include "gpu/backend.h"
#include "kernel_templates/conv_params.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/kernel_template.h"
#include "solutions/problem.h"
#include "solutions/selection.h"

namespace tiletune::runtime {

// Zeroed scratch for split-K kernels, one buffer per stream: kernels on one stream run in order,
// kernels on two streams may overlap and must not share partial sums.
class Workspaces {
 public:
  void* get(gpu::Device& dev, std::int64_t bytes, gpu::Stream stream);

 private:
  std::mutex mu_;
  std::unordered_map<gpu::Stream, gpu::DeviceBuffer> by_stream_;
};

// The argument bytes of a kernel's last launch, for templates whose argument is built from the
// caller's pointers (TMA descriptors: two driver encodes per call): rebuilt only when the
// parameters differ byte for byte from the previous call's, so that a trainer calling the same
// GEMM on the same buffers step after step encodes once. One per winner or plan (whose template
// and variables are fixed, and with them everything the bytes depend on besides `p`).
class ArgumentCache {
 public:
  template <class Params, class Encode, class Use>
  void use(const Params& p, Encode&& encode, Use&& launch) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto* key = reinterpret_cast<const std::uint8_t*>(&p);
    if (key_.size() != sizeof p || std::memcmp(key_.data(), key, sizeof p) != 0) {
      bytes_ = encode();
      key_.assign(key, key + sizeof p);
    }
    launch(bytes_);
  }

 private:
  std::mutex mu_;
  std::vector<std::uint8_t> key_, bytes_;
};

// The problem key as plain integers: hashing it is far cheaper than building the text key.
// v[0] is the kind, so that a GEMM and a convolution never share a key.
struct ProblemKey {
  std::int64_t v[20];
  explicit ProblemKey(const GemmProblem& canonical);
  explicit ProblemKey(const ConvProblem& canonical);
  explicit ProblemKey(const Problem& canonical);
  bool operator==(const ProblemKey& o) const;
};
struct ProblemKeyHash {
  std::size_t operator()(const ProblemKey& k) const;
};

struct Stats {
  std::atomic<std::uint64_t> calls{0}, tuned{0}, nearest{0}, fallbacks{0}, jit_compiles{0};
};


class Runtime {
 public:
  Runtime(std::unique_ptr<gpu::Device> device, const std::string& db_path);
  ~Runtime();  // writes the untuned problems when TILETUNE_RECORD_UNTUNED names a file
  // Runs the problem; pointers are the device's. Throws Error on any failure.
  void gemm(const GemmProblem& problem, float alpha, const void* a, const void* b, float beta, void* c,
            gpu::Stream stream);
  // Runs the convolution; pointers are the device's, named as in solutions/conv_problem.h (the
  // direction says which one is written). Same lookup and untuned rules as gemm(); convolution
  // kernels take element-aligned pointers, so there is no alignment check.
  void conv(const ConvProblem& problem, void* x, void* wt, void* y, gpu::Stream stream);

  // The first step of every gemm(): check the problem, canonicalise it, look up its exact winner.
  // Exposed for the dispatch-cost benchmark; true when a winner exists.
  bool has_exact_winner(const GemmProblem& problem) const;
  // What gemm() or conv() would run for this problem, and why, in one line (`tiletune db explain`).
  std::string explain(const Problem& problem);

  gpu::Device& device() { return *dev_; }
  const Stats& stats() const { return stats_; }
  std::size_t tuned_problems() const { return winners_.size(); }

 private:
  // How a kernel is launched, fixed once a winner is loaded or a plan is made (a winner serves one
  // exact problem, a plan one untuned problem).
  struct Launchable {
    const KernelTemplate* tmpl = nullptr;
    Solution solution;
    gpu::LaunchDims dims;
    Variables vars;  // for templates whose arguments are built per call (TMA descriptors)
    std::int64_t workspace_bytes = 0;
    Workspaces workspaces;
    ArgumentCache arguments;
  };

  struct Loaded : Launchable {
    Problem problem;  // canonical
    std::int64_t code_object_id = 0;
    std::once_flag once;
    std::shared_ptr<gpu::Kernel> kernel;
    std::string error;  // why loading failed; then the fallback runs
  };

  // The decision for a problem without an exact winner, made once and cached.
  struct Plan : Launchable {
    Loaded* neighbour = nullptr;  // set: run this winner's kernel (nearest); null: the fallback
    std::shared_ptr<gpu::Kernel> kernel;  // the fallback's; a neighbour's comes from load_winner
    std::string why;
    std::atomic<std::uint64_t> calls{0};
    Problem problem;
  };
  Plan& plan_for(const Problem& p);
  std::unique_ptr<Plan> make_plan(const Problem& p);
  // a, b, c: a GEMM's pointers, whose alignment the default must admit (nullptr: not checked).
  std::unique_ptr<Plan> fallback_plan(const Problem& p, const void* a, const void* b, const void* c);
  Plan* last_resort(const std::string& key, const Problem& p, const void* a, const void* b, const void* c);
  void record_untuned() const;  // TILETUNE_RECORD_UNTUNED

  std::shared_ptr<gpu::Kernel> load_winner(Loaded& w);
  std::shared_ptr<gpu::Kernel> compile(const KernelTemplate& t, const Solution& s, const Problem& p);
  std::shared_ptr<gpu::Kernel> fallback_kernel(const KernelTemplate& t, const Problem& p);
  // Runs `kernel` as `how` says on these arguments (workspace included).
  void launch(gpu::Kernel& kernel, Launchable& how, const GemmProblem& p, TtGemmParams args, gpu::Stream stream);
  void launch(gpu::Kernel& kernel, Launchable& how, const ConvProblem& p, TtConvParams args, gpu::Stream stream);
  // Whether `s` may run `p` with these pointers (their alignment may be below what ld implies).
  bool can_run(const KernelTemplate& t, const Solution& s, const GemmProblem& p, const void* a, const void* b,
               const void* c) const;
  static void lower_alignment(Variables& vars, const GemmProblem& p, const void* a, const void* b, const void* c);

  std::unique_ptr<gpu::Device> dev_;
  std::mutex db_mu_;  // one SQLite connection, used only for lazy code-object loads
  db::Database db_;
  std::unordered_map<ProblemKey, std::unique_ptr<Loaded>, ProblemKeyHash> winners_;
  std::vector<TunedEntry> tuned_;           // the winners again, for nearest_tuned(); same order as
  std::vector<Loaded*> tuned_loaded_;       // these
  std::vector<const KernelTemplate*> fallback_templates_;       // GEMM, by fallback_rank
  std::vector<const KernelTemplate*> conv_fallback_templates_;  // convolution (may be none)
  std::mutex fallback_mu_;
  std::unordered_map<std::string, std::shared_ptr<gpu::Kernel>> fallbacks_;  // by name expression
  std::shared_mutex plans_mu_;
  std::unordered_map<ProblemKey, std::unique_ptr<Plan>, ProblemKeyHash> plans_;
  // The general default for calls the plan cannot serve (pointers less aligned than its kernel
  // takes, a neighbour whose code object failed to load), by problem key and pointer alignments:
  // a slow path, but built once, not per call.
  std::unordered_map<std::string, std::unique_ptr<Plan>> last_resort_plans_;
  Stats stats_;
};

}  // namespace tiletune::runtime
