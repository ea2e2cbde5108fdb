// The runtime's engine behind the C API: winners of one arch in memory, kernels loaded lazily, and
// one dispatch ladder for every kind of problem (solutions/selection.h states its rules).
#pragma once
#include <atomic>
#include <map>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "db/database.h"
#include "db/signing.h"
#include "gpu/backend.h"
#include "gpu/stream_buffers.h"
#include "ops/launch.h"
#include "vendors/vendor.h"
#include "runtime/online_tuner.h"
#include "kernel_templates/conv_params.h"
#include "kernel_templates/gemm_params.h"
#include "solutions/kernel_template.h"
#include "solutions/gemm_problem.h"
#include "solutions/selection.h"

namespace tiletune::runtime {

// Zeroed scratch for split-K kernels, one buffer per stream (gpu::StreamBuffers: kernels on two
// streams may overlap and must not share partial sums), for a bounded number of streams.
class Workspaces {
 public:
  // Runs `launch` with `bytes` of zeroed scratch for `stream` (nullptr when none is needed). The
  // launch is enqueued under the lock, so that no other stream takes the buffer over between.
  template <class Launch>
  void with(gpu::Device& dev, std::int64_t bytes, gpu::Stream stream, Launch&& launch) {
    if (bytes <= 0) return launch(nullptr);
    std::lock_guard<std::mutex> lock(mu_);
    launch(get(dev, bytes, stream));
  }

 private:
  void* get(gpu::Device& dev, std::int64_t bytes, gpu::Stream stream);  // under mu_
  std::mutex mu_;
  gpu::StreamBuffers buffers_;
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
  std::atomic<std::uint64_t> calls{0}, tuned{0}, nearest{0}, fallbacks{0}, jit_compiles{0}, vendor{0}, user_tuned{0};
  std::atomic<std::uint64_t> online{0}, online_tuned{0};  // calls served by online winners; problems tuned online
  // Problems whose online winner another process (or handle) sharing the user database had tuned:
  // adopted, not tuned again.
  std::atomic<std::uint64_t> online_adopted{0};
};

// The databases a Runtime serves from. Both are opened read-only; either may be absent.
struct Databases {
  std::string shipped;  // "" : none (every problem is untuned)
  // Winners here take precedence over the shipped ones (online tuning writes here). "" : the
  // environment's TILETUNE_USER_DB, if set; a path that does not exist yet is skipped.
  std::string user;
  // An Ed25519 public key (PEM): no code object without a valid signature by it is loaded, from
  // either database (db/signing.h). "" : the environment's TILETUNE_TRUSTED_KEY, if set.
  std::string trusted_key;
};

class Runtime {
 public:
  Runtime(std::unique_ptr<gpu::Device> device, const std::string& db_path);
  Runtime(std::unique_ptr<gpu::Device> device, const Databases& dbs);
  ~Runtime();  // records the untuned problems (record()) when TILETUNE_RECORD_UNTUNED names a file
  // Runs the problem; pointers are the device's. Throws Error on any failure.
  void gemm(const GemmProblem& problem, float alpha, const void* a, const void* b, float beta, void* c,
            gpu::Stream stream);
  // Runs the convolution; pointers are the device's, named as in solutions/conv_problem.h (the
  // direction says which one is written). Convolution kernels take element-aligned pointers.
  void conv(const ConvProblem& problem, void* x, void* wt, void* y, gpu::Stream stream);

  // The first step of every gemm(): check the problem, canonicalise it, look up its exact winner.
  // Exposed for the dispatch-cost benchmark; true when a winner exists.
  bool has_exact_winner(const GemmProblem& problem) const;
  // Merges the problems served without an exact winner, with the calls served so since this
  // handle's last record into `path`, into the tuning config there (tiletune_record in
  // runtime/tiletune.h). Throws Error, leaving the file as it was.
  void record(const std::string& path);

  // Which rung gemm() or conv() would serve this problem from, and why, in one line
  // ("tuned: ...", "pool: ...", "vendor: ...", "default: ..."; `tiletune db explain` says more).
  std::string explain(const Problem& problem);

  // The same decision as data, for a framework deciding whether to call this runtime at all
  // (tiletune_gemm_choice): the rung, whether a generated kernel runs, and what that choice
  // measured against the vendor library's default on the problem it was tuned on (1 for the
  // vendor's default itself; 0 where nothing was measured: a template default).
  struct Choice {
    Rung rung = Rung::Default;
    bool kernel = false;
    double vendor_ratio = 0;
    double vendor_default_lead = 0;  // the vendor's fastest algorithm over its default (NaN: unknown)
  };
  Choice choice(const Problem& problem);

  // Online tuning (runtime/online_tuner.h), also switched on by TILETUNE_ONLINE=1. Throws Error
  // naming what is missing (a user database, the tiletune program).
  void set_online(bool on);
  // Waits until online tuning has nothing queued or running, at most `seconds`; true when idle.
  bool wait_online(double seconds);

  gpu::Device& device() { return *dev_; }
  const Stats& stats() const { return stats_; }
  std::size_t tuned_problems() const { return winners_.size(); }

 private:
  // How a problem is served, fixed once a winner is loaded or a plan is made (a winner serves one
  // exact problem, a plan one untuned problem). tmpl == nullptr: the vendor library.
  struct Launchable {
    Rung rung = Rung::Default;
    const KernelTemplate* tmpl = nullptr;
    Solution solution;
    ops::KernelLaunch launcher;  // the kernel set up for the problem (tmpl != nullptr)
    Workspaces workspaces;
    ops::ArgumentCache arguments;
    std::atomic<bool> vendor_failed{false};  // the vendor threw on this problem: not asked again
    gpu::VendorChoice vendor_choice;          // the vendor's algorithm for it ({}: its default)
    // The library, with its version, that timed vendor_choice ("": not recorded). Under another
    // version the choice is dropped and the default serves (vendor_choice_checked, once).
    std::string vendor_choice_source;
    std::once_flag vendor_choice_checked;
    std::string vendor_choice_dropped;  // why, once dropped
    // A winner's speed over the vendor library's default when tuned (its fastest algorithm where the
    // default was not measured; NaN: neither was).
    double vendor_ratio = 0;
    double vendor_default_lead = 0;  // the vendor's fastest algorithm over its default (NaN: unknown)
  };

  struct Loaded : Launchable {
    Problem problem;  // canonical
    double online_seconds = -1;  // >= 0: tuned online, in this many seconds
    bool tuned_elsewhere = false;  // ... by another tuner of the user database, found after that long
    // A kernel winner whose lead over the vendor was under kKernelMargin: the vendor serves it
    // while it computes the problem (kernel_serves); `note` says why.
    bool vendor_first = false;
    std::string note;
    db::Database* db = nullptr;  // where its code object is
    bool user = false;           // from the user database
    std::int64_t code_object_id = 0;
    std::once_flag once;
    std::shared_ptr<gpu::Kernel> kernel;
    std::string error;  // why loading failed; then a lower rung serves
  };

  // The decision for a problem without an exact winner, made once and cached.
  struct Plan : Launchable {
    Loaded* neighbour = nullptr;  // Pool: run this winner's kernel
    std::shared_ptr<gpu::Kernel> kernel;  // Default: the template default's
    std::string why;
    std::atomic<std::uint64_t> calls{0};
    Problem problem;
    std::atomic<Loaded*> online{nullptr};  // the winner online tuning found, once it has
    std::atomic<bool> submitted{false};    // handed to online tuning
  };

  // One call on its way down the ladder: the problem (canonical), its kernel arguments, and the
  // caller's pointers, whose alignment decides which kernels may take them.
  struct Call {
    Problem problem;
    ops::CallParams params;
    ops::Pointers ptr{};
  };

  void load(db::Database& db, bool user);
  // A winner row as the ladder serves it; nullptr (with a warning) for a row this runtime cannot use.
  std::unique_ptr<Loaded> make_loaded(const db::WinnerRecord& w, db::Database& db, bool user);
  void adopt_online(const Problem& p, OnlineTuner::Outcome outcome, double seconds, const std::string& log);
  // Under db_mu_: the user database, opened on first need once its file exists; nullptr before.
  db::Database* user_database();
  bool has_user_winner(const Problem& p);  // the online tuner's AlreadyTuned
  static void prefer_vendor_unless_faster(Loaded& w, const TunedEntry& e);
  void submit_online(const Problem& p);
  void dispatch(Call& call, gpu::Stream stream);
  // Runs the call as `how` says, if `how` can take it (the vendor computes it, the kernel admits
  // the pointers and loaded); false otherwise, with nothing launched.
  bool serve(Launchable& how, const std::shared_ptr<gpu::Kernel>& kernel, Call& call, gpu::Stream stream);
  bool admits(const Launchable& how, const Call& call) const;
  // An exact (or online) winner: its kernel, or the vendor where the kernel's lead was too small.
  bool serve_winner(Loaded& w, Call& call, gpu::Stream stream);
  // The vendor library on `call`, for `how`'s rung: false, with nothing launched, where it does not
  // compute the problem or has failed on it before (remembered in `how`, with one warning).
  bool run_vendor(Launchable& how, Call& call, gpu::Stream stream);
  void count(Rung rung, bool user);

  gpu::Vendor& vendor();
  // The vendor algorithm `how` runs on `p`: its stored choice while this process's library is
  // the one that timed it, else the library's default (an algorithm number means another kernel,
  // or none, in another version: as PyTorch's TunableOp drops results of other library versions).
  const gpu::VendorChoice& current_vendor_choice(Launchable& how, const Problem& p);
  // The database's winner for canonical problem p where it serves (nullptr: the plan decides), its
  // vendor algorithm checked as above where the vendor serves it; for explain() and choice().
  Loaded* exact_winner(const Problem& p);
  Plan& plan_for(const Problem& p);
  std::unique_ptr<Plan> make_plan(const Problem& p);
  // ptrs: the call's pointers, whose alignment the default must admit (nullptr: not checked).
  std::unique_ptr<Plan> fallback_plan(const Problem& p, const ops::Pointers* ptrs);
  Plan* last_resort(const Call& call);
  void record_untuned();  // TILETUNE_RECORD_UNTUNED

  std::shared_ptr<gpu::Kernel> load_winner(Loaded& w);
  std::shared_ptr<gpu::Kernel> compile(const KernelTemplate& t, const Solution& s, const Problem& p);
  std::shared_ptr<gpu::Kernel> fallback_kernel(const KernelTemplate& t, const Problem& p);
  void launch(gpu::Kernel& kernel, Launchable& how, Call& call, gpu::Stream stream);

  std::unique_ptr<gpu::Device> dev_;
  std::mutex db_mu_;  // the SQLite connections, used only for lazy code-object loads
  std::vector<std::unique_ptr<db::Database>> dbs_;  // user first, then shipped (then the user's, opened late)
  std::string user_db_path_;
  db::Database* user_db_ = nullptr;  // in dbs_, once open
  std::optional<db::Key> trusted_key_;
  std::unordered_map<ProblemKey, std::unique_ptr<Loaded>, ProblemKeyHash> winners_;
  std::vector<TunedEntry> tuned_;           // the winners again, for the pool; same order as
  std::vector<Loaded*> tuned_loaded_;       // these
  std::vector<std::unique_ptr<Loaded>> generic_;  // the pool's generic kernels (db pack), not winners
  std::map<ProblemKind, std::vector<const KernelTemplate*>> fallback_templates_;  // by fallback_rank, per kind
  std::once_flag vendor_once_;
  std::unique_ptr<gpu::Vendor> vendor_;
  std::mutex fallback_mu_;
  std::unordered_map<std::string, std::shared_ptr<gpu::Kernel>> fallbacks_;  // by name expression
  std::shared_mutex plans_mu_;
  std::unordered_map<ProblemKey, std::unique_ptr<Plan>, ProblemKeyHash> plans_;
  std::mutex record_mu_;
  // By recorded file (its canonical path): the calls of each problem record() has added there.
  std::unordered_map<std::string, std::unordered_map<ProblemKey, std::uint64_t, ProblemKeyHash>> recorded_;
  // The general default for calls that neither the plan nor the vendor can serve (pointers less
  // aligned than its kernel takes, a neighbour whose code object failed to load), by problem key
  // and pointer alignments: a slow path, but built once, not per call.
  std::unordered_map<std::string, std::unique_ptr<Plan>> last_resort_plans_;
  Stats stats_;
  std::mutex online_mu_;
  std::vector<std::unique_ptr<Loaded>> online_winners_;
  // Untuned calls of a problem after which it is tuned online; 0: online tuning is off.
  std::atomic<int> online_after_{0};
  std::shared_ptr<OnlineTuner> online_;  // last: its thread ends before the rest goes
};

}  // namespace tiletune::runtime
