#include "runtime/runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <functional>
#include <map>
#include <filesystem>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <cstdio>

#include "common/error.h"
#include "db/integrity.h"
#include "gpu/compile_cache.h"
#include "runtime/file_lock.h"
#include "ops/arguments.h"
#include "kernel_templates/gemm_params.h"

namespace tiletune::runtime {

ProblemKey::ProblemKey(const GemmProblem& p)
    : v{0, std::int64_t(p.a_type), std::int64_t(p.c_type), p.trans_a, p.trans_b, p.m, p.n, p.k, p.batch, p.lda, p.ldb,
        p.ldc, p.stride_a, p.stride_b, p.stride_c, p.beta_zero, p.compute_tf32, std::int64_t(p.type_b()), 0, 0} {}

ProblemKey::ProblemKey(const ConvProblem& p)
    : v{1, std::int64_t(p.direction) | std::int64_t(p.layout) << 2 | std::int64_t(p.in_type) << 4 |
               std::int64_t(p.out_type) << 6,
        p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dil_h, p.dil_w, p.groups,
        0, 0, 0, 0} {}

static ProblemKey key_of(const Problem& p) { return p.is_conv() ? ProblemKey(p.conv()) : ProblemKey(p.gemm()); }

ProblemKey::ProblemKey(const Problem& p) : ProblemKey(key_of(p)) {}

bool ProblemKey::operator==(const ProblemKey& o) const {
  for (int i = 0; i < 20; ++i)
    if (v[i] != o.v[i]) return false;
  return true;
}

std::size_t ProblemKeyHash::operator()(const ProblemKey& k) const {
  std::uint64_t h = 1469598103934665603ull;
  for (auto x : k.v) h = (h ^ std::uint64_t(x)) * 1099511628211ull;
  return std::size_t(h ^ (h >> 29));
}

void* Workspaces::get(gpu::Device& dev, std::int64_t bytes, gpu::Stream stream) {
  bool fresh = false;
  gpu::DeviceBuffer& buf = buffers_.get(dev, stream, std::size_t(bytes), &fresh);
  if (fresh) {
    dev.fill_bytes(buf.get(), 0, buf.size());
    dev.synchronize();  // the fill is on the default stream, which `stream` may not wait for
  }
  return buf.get();
}

Runtime::Runtime(std::unique_ptr<gpu::Device> device, const std::string& db_path)
    : Runtime(std::move(device), Databases{db_path, ""}) {}

Runtime::Runtime(std::unique_ptr<gpu::Device> device, const Databases& dbs) : dev_(std::move(device)) {
  const gpu::DeviceInfo& info = dev_->info();
  for (ProblemKind kind : {ProblemKind::Gemm, ProblemKind::Conv})
    fallback_templates_[kind] = fallback_templates(info.backend, kind);
  if (fallback_templates_[ProblemKind::Gemm].empty())  // convolutions may have none
    throw Error(std::string("no kernel template offers a fallback for backend ") + gpu::to_string(info.backend));
  // Before any database is read: a key that cannot be read refuses the handle, it is never ignored.
  std::string key = dbs.trusted_key;
  if (const char* env = std::getenv("TILETUNE_TRUSTED_KEY"); key.empty() && env && *env) key = env;
  if (!key.empty()) trusted_key_ = db::Key::load_public(key);
  gpu::vendor_disabled();  // a TILETUNE_VENDOR it does not take refuses the handle, not each call
  user_db_path_ = dbs.user;
  if (user_db_path_.empty())
    if (const char* env = std::getenv("TILETUNE_USER_DB")) user_db_path_ = env;
  // Online tuning writes where it reads: a process that tunes into the default serves from it too.
  const bool online = online_requested_by_environment();
  if (user_db_path_.empty() && online) user_db_path_ = default_user_db();
  // The user database first: its winners take precedence over the shipped ones for the same key.
  if (!user_db_path_.empty() && std::ifstream(user_db_path_).good()) {
    dbs_.push_back(std::make_unique<db::Database>(db::Database::open(user_db_path_, db::Mode::ReadOnly)));
    user_db_ = dbs_.back().get();
    load(*user_db_, true);
  }
  if (!dbs.shipped.empty()) {
    dbs_.push_back(std::make_unique<db::Database>(db::Database::open(dbs.shipped, db::Mode::ReadOnly)));
    load(*dbs_.back(), false);
  }
  if (online) {
    try {
      set_online(true);
    } catch (const Error& e) {  // the environment asked for it: a warning, not a handle refused
      std::fprintf(stderr, "tiletune: warning: TILETUNE_ONLINE is set but online tuning cannot start: %s\n", e.what());
    }
  }
}

std::unique_ptr<Runtime::Loaded> Runtime::make_loaded(const db::WinnerRecord& w, db::Database& db, bool user) {
  const gpu::DeviceInfo& info = dev_->info();
  const Problem p = w.problem.canonical();
  const KernelTemplate* t = nullptr;
  for (const auto& candidate : builtin_templates())
    if (candidate.name() == w.solution.template_name) t = &candidate;
  if (!t && w.solution.template_name != kVendorTemplate) {
    std::fprintf(stderr, "tiletune: %s: skipping winner of %s: template %s is unknown to this runtime\n",
                 db.path().c_str(), w.problem_key.c_str(), w.solution.template_name.c_str());
    return nullptr;
  }
  auto loaded = std::make_unique<Loaded>();
  loaded->rung = Rung::Tuned;
  loaded->tmpl = t;
  loaded->solution = w.solution;
  loaded->problem = p;
  loaded->db = &db;
  loaded->user = user;
  // The vendor's algorithm: the winner's own when the vendor won, else its fastest when tuned
  // (run where the kernel's lead was too small, vendor_first).
  loaded->vendor_choice = t ? w.vendor_choice : w.solution.params;
  loaded->vendor_choice_source = t ? w.vendor_choice_source : w.source_hash;
  loaded->vendor_ratio = std::isnan(w.vendor_default_ms) ? w.vendor_ratio() : w.vendor_default_ratio();
  loaded->vendor_default_lead = w.vendor_default_ms / w.vendor_ms;  // NaN unless both were measured
  if (!t) return loaded;  // the vendor library won
  // A code object built from other template sources may not match today's kernel ABI: such a
  // winner keeps its parameters but is compiled from the current source on first use.
  loaded->code_object_id = w.source_hash == t->source_hash() ? w.code_object_id : 0;
  try {
    Variables vars = t->variables(w.solution, p, info);
    if (auto why = t->violation(vars)) throw Error(*why);
    loaded->launcher = ops::KernelLaunch(*t, std::move(vars), p);
  } catch (const Error& e) {  // one bad row (e.g. parameters of an older template) skips only itself
    std::fprintf(stderr, "tiletune: skipping winner %s of %s: %s\n", w.solution.kernel_name().c_str(),
                 w.problem_key.c_str(), e.what());
    return nullptr;
  }
  return loaded;
}

void Runtime::prefer_vendor_unless_faster(Loaded& w, const TunedEntry& e) {
  if (!w.tmpl || kernel_serves(e, true)) return;
  w.vendor_first = true;
  char note[160];
  std::snprintf(note, sizeof note, "; the vendor library serves it: the kernel beat it only %.2fx when tuned (%.2fx needed)",
                e.vendor_ratio, kKernelMargin);
  w.note = note;
}

void Runtime::load(db::Database& db, bool user) {
  const gpu::DeviceInfo& info = dev_->info();
  // Only this arch's winners: a code object built for one arch is never loaded on another.
  const std::vector<db::WinnerRecord> winners = db.winners(info.arch);
  if (winners.empty()) {
    std::string arches;
    for (const auto& a : db.arches()) arches += (arches.empty() ? "" : ", ") + a;
    // Compile-only candidates (schema 8) were never run or timed: they are not served, only named.
    const std::size_t compiled = db.compiled(info.arch).size();
    const std::string unmeasured =
        compiled ? "; its " + std::to_string(compiled) + " compile-only candidates for " + info.arch +
                       " were never run or timed and are not served (tune on this device to measure them)"
                 : "";
    std::fprintf(stderr, "tiletune: warning: %s holds no winners for %s (it has measurements for: %s)%s; "
                 "problems it should serve run untuned\n", db.path().c_str(), info.arch.c_str(),
                 arches.empty() ? "none" : arches.c_str(), unmeasured.c_str());
    return;
  }
  for (const auto& w : winners) {
    const Problem p = w.problem.canonical();
    if (winners_.count(ProblemKey(p))) continue;  // the user database's winner stands
    std::unique_ptr<Loaded> loaded = make_loaded(w, db, user);
    if (!loaded) continue;
    TunedEntry entry{p, loaded->tmpl, w.solution, w.vendor_ratio(), w.median_ms};
    prefer_vendor_unless_faster(*loaded, entry);
    tuned_.push_back(std::move(entry));
    tuned_loaded_.push_back(loaded.get());
    winners_.emplace(ProblemKey(p), std::move(loaded));
  }
  // The generic kernels db pack shipped: the pool ranks them beside the winners, never as one.
  for (const auto& g : db.pool_kernels(info.arch)) {
    std::unique_ptr<Loaded> loaded = make_loaded(g, db, user);
    if (!loaded || !loaded->tmpl) continue;
    loaded->rung = Rung::Pool;
    TunedEntry entry{loaded->problem, loaded->tmpl, g.solution, g.vendor_ratio(), g.median_ms};
    entry.generic = true;
    tuned_.push_back(std::move(entry));
    tuned_loaded_.push_back(loaded.get());
    generic_.push_back(std::move(loaded));
  }
}

void Runtime::set_online(bool on) {
  std::unique_lock<std::mutex> lock(online_mu_);
  if (!on) {
    online_after_ = 0;
    std::shared_ptr<OnlineTuner> stopping = std::move(online_);
    lock.unlock();  // its thread may be finishing a problem, which takes the lock
    return;
  }
  if (online_) return;
  if (user_db_path_.empty()) {
    user_db_path_ = default_user_db();
    std::filesystem::create_directories(std::filesystem::path(user_db_path_).parent_path());
  }
  std::string why;
  const gpu::DeviceInfo& info = dev_->info();
  OnlineSettings s = online_settings_from_environment(gpu::to_string(info.backend), info.index, user_db_path_, &why);
  if (s.exe.empty()) throw Error(why);
  s.arch = info.arch;
  online_after_ = s.after_calls;
  online_ = std::make_shared<OnlineTuner>(
      std::move(s),
      [this](const Problem& p, OnlineTuner::Outcome outcome, double sec, const std::string& log) {
        adopt_online(p, outcome, sec, log);
      },
      [this](const Problem& p) { return has_user_winner(p); });
}

bool Runtime::wait_online(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) throw Error("online wait: seconds must be between 0 and 1e7");
  std::shared_ptr<OnlineTuner> t;  // a copy: set_online(false) on another thread cannot free it under us
  {
    std::lock_guard<std::mutex> lock(online_mu_);
    t = online_;
  }
  return !t || t->wait_idle(seconds);
}

db::Database* Runtime::user_database() {
  if (!user_db_ && !user_db_path_.empty() && std::ifstream(user_db_path_).good()) {
    dbs_.push_back(std::make_unique<db::Database>(db::Database::open(user_db_path_, db::Mode::ReadOnly)));
    user_db_ = dbs_.back().get();
  }
  return user_db_;
}

bool Runtime::has_user_winner(const Problem& p) {
  std::lock_guard<std::mutex> lock(db_mu_);
  try {
    db::Database* db = user_database();
    return db && db->find_winner(dev_->info().arch, p.key()).has_value();
  } catch (const Error&) {
    return false;  // e.g. a database another process is still creating: tuning decides
  }
}

void Runtime::adopt_online(const Problem& p, OnlineTuner::Outcome outcome, double seconds, const std::string& log) {
  if (outcome == OnlineTuner::Outcome::Failed) {
    std::fprintf(stderr, "tiletune: online tuning of %s failed; it stays untuned:\n%s\n", p.key().c_str(), log.c_str());
    return;
  }
  std::unique_ptr<Loaded> loaded;
  {
    std::lock_guard<std::mutex> lock(db_mu_);
    db::Database* db = user_database();
    if (auto w = db ? db->find_winner(dev_->info().arch, p.key()) : std::nullopt) {
      loaded = make_loaded(*w, *db, true);
      if (loaded) prefer_vendor_unless_faster(*loaded, TunedEntry{loaded->problem, loaded->tmpl, loaded->solution, w->vendor_ratio()});
    }
  }
  if (!loaded) {
    std::fprintf(stderr, "tiletune: online tuning of %s recorded no usable winner; it stays untuned:\n%s\n",
                 p.key().c_str(), log.c_str());
    return;
  }
  loaded->online_seconds = seconds;
  loaded->tuned_elsewhere = outcome == OnlineTuner::Outcome::TunedElsewhere;
  Plan& plan = plan_for(p);
  std::lock_guard<std::mutex> lock(online_mu_);
  plan.online.store(loaded.get(), std::memory_order_release);
  online_winners_.push_back(std::move(loaded));
  ++(outcome == OnlineTuner::Outcome::TunedElsewhere ? stats_.online_adopted : stats_.online_tuned);
}

gpu::Vendor& Runtime::vendor() {
  std::call_once(vendor_once_, [&] { vendor_ = std::make_unique<gpu::Vendor>(*dev_); });
  return *vendor_;
}

namespace {

// Kernels built from source, by everything that went into them (SHA-256: the parameters come from
// a database, and no crafted one may collide with another instantiation): another handle in the
// process (another device's, a trainer's per-thread one) loads them again instead of compiling.
struct JitCache {
  static constexpr std::size_t kEntries = 512;  // then new kernels are compiled, not kept
  std::mutex mu;
  std::unordered_map<std::string, gpu::CodeObject> objects;
};

JitCache& jit_cache() {
  static JitCache* c = new JitCache;  // never destroyed: handles may outlive static destruction
  return *c;
}

std::string jit_key(const gpu::CompileRequest& r, const std::string& compiler, gpu::BackendKind backend) {
  return std::string(gpu::to_string(backend)) + " " + gpu::compile_key(r, compiler);
}

}  // namespace

std::shared_ptr<gpu::Kernel> Runtime::compile(const KernelTemplate& t, const Solution& s, const Problem& p) {
  const gpu::CompileRequest req = t.compile_request(s, p, dev_->info());
  const std::string key = jit_key(req, dev_->compiler().version(), dev_->info().backend);
  JitCache& cache = jit_cache();
  std::optional<gpu::CodeObject> code;
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto it = cache.objects.find(key); it != cache.objects.end()) code = it->second;
  }
  if (!code) {
    gpu::CompileResult r = dev_->compiler().compile(req);
    if (!r.ok) throw Error("compiling " + s.kernel_name() + " failed: " + r.log.substr(0, 2000));
    code = std::move(r.code);
    std::lock_guard<std::mutex> lock(cache.mu);
    if (cache.objects.size() < JitCache::kEntries) cache.objects.emplace(key, *code);
  }
  ++stats_.jit_compiles;  // built from source for this handle, by the compiler or the cache
  return dev_->load(*code);
}

std::shared_ptr<gpu::Kernel> Runtime::load_winner(Loaded& w) {
  std::call_once(w.once, [&] {
    try {
      std::optional<db::CodeObjectRecord> code;
      if (w.code_object_id) {
        std::lock_guard<std::mutex> lock(db_mu_);
        code = w.db->code_object(w.code_object_id);
      }
      // Bytes that are not what was stored, or a code object built as another instantiation than
      // this winner's parameters say (an edited params row), never load: the kernel is built from
      // the template source this library carries instead, once, with a warning.
      std::string refused;
      if (code && code->ok) {
        refused = code->integrity_problem();
        if (refused.empty() && !code->compiled_from.empty() &&
            !w.tmpl->compiled_as(code->compiled_from, w.solution, w.problem))
          refused = "it was compiled as " + code->compiled_from + ", the winner's parameters say " +
                    w.tmpl->name_expression(w.solution, w.problem);
        if (refused.empty() && trusted_key_) {
          std::lock_guard<std::mutex> lock(db_mu_);
          refused = trusted_key_->check(*code, w.db->signature(code->id));
        }
      }
      if (!refused.empty())
        std::fprintf(stderr, "tiletune: warning: %s: not loading code object %lld of %s: %s; compiling it from source\n",
                     w.db->path().c_str(), static_cast<long long>(w.code_object_id), w.problem.key().c_str(),
                     refused.c_str());
      if (refused.empty() && code && code->ok && code->arch == dev_->info().arch) {
        try {
          w.kernel = dev_->load({code->bytes, code->symbol});
          return;
        } catch (const Error&) {
          // e.g. a newer driver or compiler ABI: rebuild from source below
        }
      }
      w.kernel = compile(*w.tmpl, w.solution, w.problem);
    } catch (const Error& e) {
      w.error = e.what();
    }
  });
  return w.kernel;
}

std::shared_ptr<gpu::Kernel> Runtime::fallback_kernel(const KernelTemplate& t, const Problem& p) {
  Solution s = t.default_solution();
  std::string key = t.name_expression(s, p);
  std::lock_guard<std::mutex> lock(fallback_mu_);
  auto& k = fallbacks_[key];
  if (!k) k = compile(t, s, p);
  return k;
}

void Runtime::launch(gpu::Kernel& kernel, Launchable& how, Call& call, gpu::Stream stream) {
  how.workspaces.with(*dev_, how.launcher.workspace_bytes(), stream, [&](void* workspace) {
    how.launcher.launch(*dev_, kernel, call.params, workspace, stream, &how.arguments);
  });
}

static void check_element_aligned(const char* what, const void* ptr, int elem_bytes) {
  if (reinterpret_cast<std::uintptr_t>(ptr) % std::uintptr_t(elem_bytes) != 0)
    throw Error(std::string("pointer ") + what + " is not aligned to its element size (" + std::to_string(elem_bytes) +
                " bytes)");
}

bool Runtime::admits(const Launchable& how, const Call& call) const {
  return ops::operation(call.problem).admits(*how.tmpl, how.solution, call.problem, call.ptr, dev_->info());
}

const gpu::VendorChoice& Runtime::current_vendor_choice(Launchable& how, const Problem& p) {
  std::call_once(how.vendor_choice_checked, [&] {
    if (how.vendor_choice.empty() || how.vendor_choice_source.empty()) return;
    const std::string here = vendor().source(p, how.vendor_choice);
    if (here == how.vendor_choice_source) return;
    how.vendor_choice_dropped = "; its algorithm was timed under " + how.vendor_choice_source + ", this process has " +
                                here + ": the library's default serves";
    std::fprintf(stderr, "tiletune: note: %s: %s\n", p.key().c_str(), how.vendor_choice_dropped.c_str() + 2);
    how.vendor_choice.clear();
  });
  return how.vendor_choice;
}

bool Runtime::run_vendor(Launchable& how, Call& call, gpu::Stream stream) {
  if (how.vendor_failed.load(std::memory_order_relaxed) || !vendor().unsupported(call.problem).empty()) return false;
  try {
    vendor().run(call.problem, call.params.data(), stream, current_vendor_choice(how, call.problem));
    return true;
  } catch (const Error& e) {
    if (!how.vendor_failed.exchange(true))
      std::fprintf(stderr, "tiletune: warning: the vendor library failed on %s (%s); a kernel serves it instead\n",
                   call.problem.key().c_str(), e.what());
    return false;
  }
}

bool Runtime::serve(Launchable& how, const std::shared_ptr<gpu::Kernel>& kernel, Call& call, gpu::Stream stream) {
  if (!how.tmpl) return run_vendor(how, call, stream);
  if (!kernel || !admits(how, call)) return false;
  launch(*kernel, how, call, stream);
  return true;
}

bool Runtime::serve_winner(Loaded& w, Call& call, gpu::Stream stream) {
  if (w.vendor_first && run_vendor(w, call, stream)) return true;
  return serve(w, w.tmpl ? load_winner(w) : nullptr, call, stream);
}

void Runtime::count(Rung rung, bool user) {
  ++stats_.calls;
  switch (rung) {
    case Rung::Tuned: ++stats_.tuned, stats_.user_tuned += user; break;
    case Rung::Pool: ++stats_.nearest; break;
    case Rung::Vendor: ++stats_.vendor; break;
    case Rung::Default: ++stats_.fallbacks; break;
  }
}

std::unique_ptr<Runtime::Plan> Runtime::fallback_plan(const Problem& p, const ops::Pointers* ptrs) {
  // With pointers, their alignment may be below what the leading dimensions imply.
  std::function<void(Variables&)> adjust;
  if (ptrs) adjust = [&](Variables& v) { ops::operation(p).fit_to_pointers(v, p, *ptrs); };
  FallbackChoice choice =
      choose_fallback(fallback_templates_.at(p.kind()), p, dev_->info(), adjust);
  if (!choice.tmpl) throw Error("no kernel can run " + p.key() + " on " + dev_->info().arch + ": no template's default fits");
  const KernelTemplate* t = choice.tmpl;
  // What the constraints cannot see (a TMA template's 16-byte bases): refused, never launched.
  if (ptrs && !ops::operation(p).admits(*t, t->default_solution(), p, *ptrs, dev_->info()))
    throw Error("no kernel can run " + p.key() + " on these pointers: the default " + t->name() + " does not take them");
  auto plan = std::make_unique<Plan>();
  plan->rung = Rung::Default;
  plan->tmpl = t;
  plan->solution = t->default_solution();
  plan->problem = p;
  plan->launcher = ops::KernelLaunch(*t, t->variables(plan->solution, p, dev_->info()), p);
  if (plan->launcher.workspace_bytes() > 0) throw Error("the default kernel of " + t->name() + " must not need a workspace");
  plan->kernel = fallback_kernel(*t, p);
  plan->why = "default: the general default " + plan->solution.kernel_name();
  return plan;
}

std::unique_ptr<Runtime::Plan> Runtime::make_plan(const Problem& p) {
  const UntunedChoice c = choose_untuned(tuned_, p, dev_->info(), vendor().unsupported(p),
                                         fallback_templates_.at(p.kind()));
  if (c.rung == Rung::Default) {
    auto plan = fallback_plan(p, nullptr);
    plan->why += " (" + c.why + ")";
    return plan;
  }
  auto plan = std::make_unique<Plan>();
  plan->rung = c.rung;
  plan->problem = p;
  if (c.rung == Rung::Vendor) {
    plan->why = "vendor: " + vendor().name(p.kind()) + " (" + c.why + ")";
    return plan;
  }
  Loaded* best = tuned_loaded_[c.nearest->index];
  plan->neighbour = best;
  plan->tmpl = best->tmpl;
  plan->solution = best->solution;
  plan->launcher = ops::KernelLaunch(*best->tmpl, best->tmpl->variables(best->solution, p, dev_->info()), p);
  plan->why = "pool: " + c.why + (best->rung == Rung::Pool ? " (untuned: a generic kernel)" : " (untuned: nearest winner)");
  return plan;
}

Runtime::Plan& Runtime::plan_for(const Problem& p) {
  ProblemKey key(p);
  {
    std::shared_lock<std::shared_mutex> lock(plans_mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
  }
  auto plan = make_plan(p);  // outside the lock: may compile
  std::unique_lock<std::shared_mutex> lock(plans_mu_);
  auto& slot = plans_[key];
  if (!slot) slot = std::move(plan);
  return *slot;
}

Runtime::Plan* Runtime::last_resort(const Call& call) {
  const Problem& p = call.problem;
  const std::string key = p.key() + ops::operation(p).pointer_class(p, call.ptr);
  {
    std::shared_lock<std::shared_mutex> lock(plans_mu_);
    auto found = last_resort_plans_.find(key);
    if (found != last_resort_plans_.end()) return found->second.get();
  }
  // Outside the lock: may compile.
  auto made = fallback_plan(p, &call.ptr);
  std::unique_lock<std::shared_mutex> lock(plans_mu_);
  auto& slot = last_resort_plans_[key];
  if (!slot) slot = std::move(made);
  return slot.get();
}

bool Runtime::has_exact_winner(const GemmProblem& problem) const {
  problem.validate();
  return winners_.count(ProblemKey(problem.canonical())) != 0;
}

Runtime::Loaded* Runtime::exact_winner(const Problem& p) {
  // A winner the vendor won serves only while the vendor computes the problem (else the plan does).
  auto it = winners_.find(ProblemKey(p));
  if (it == winners_.end() || (!it->second->tmpl && !vendor().unsupported(p).empty())) return nullptr;
  Loaded& w = *it->second;
  if (!w.tmpl || w.vendor_first) current_vendor_choice(w, p);  // the vendor serves: its algorithm, checked
  return &w;
}

std::string Runtime::explain(const Problem& problem) {
  problem.validate();
  const Problem p = problem.canonical();
  auto describe = [&](const Loaded& w) {
    const std::string vendor = "the vendor library" + (w.vendor_choice.empty() ? "" : " (" + w.solution.kernel_name() + ")");
    const int phases = w.tmpl ? w.launcher.column_phases() : 0;
    const std::string how = phases ? "; run once per phase of C's columns (" + std::to_string(phases) +
                                         "), each from its first 16-byte boundary, the edge rows through scratch"
                                   : "";
    std::string s = std::string("tuned: exact winner ") + (w.tmpl ? w.solution.kernel_name() : vendor) +
                    " of " + p.key() + how + w.note + w.vendor_choice_dropped + (w.user ? " (user database" : "");
    if (w.online_seconds >= 0)
      s += w.tuned_elsewhere ? std::string(", tuned online by another process or handle sharing it")
                             : ", tuned online in " + std::to_string(w.online_seconds) + " s";
    return w.user ? s + ")" : s;
  };
  if (Loaded* w = exact_winner(p)) return describe(*w);
  Plan& plan = plan_for(p);
  if (const Loaded* o = plan.online.load(std::memory_order_acquire)) return describe(*o);
  return plan.why;
}

Runtime::Choice Runtime::choice(const Problem& problem) {
  problem.validate();
  const Problem p = problem.canonical();
  auto finite = [](double r) { return std::isnan(r) ? 0.0 : r; };
  // As explain(): a winner whose kernel led by too little is served by the vendor, with the
  // algorithm it timed fastest (its lead over the default is then the vendor's own).
  auto of = [&](const Loaded& w) {
    if (w.tmpl && !w.vendor_first) return Choice{Rung::Tuned, true, finite(w.vendor_ratio)};
    if (w.tmpl) return Choice{Rung::Tuned, false, w.vendor_choice.empty() ? 1.0 : finite(w.vendor_default_lead)};
    return Choice{Rung::Tuned, false, w.vendor_choice.empty() ? 1.0 : finite(w.vendor_ratio)};
  };
  // An untuned rung: the pool runs its neighbour's kernel, with the lead it had on its own problem.
  auto untuned = [&](Rung rung, const Loaded* neighbour) {
    if (rung == Rung::Pool) return Choice{rung, true, neighbour ? finite(neighbour->vendor_ratio) : 0.0};
    return Choice{rung, rung != Rung::Vendor, rung == Rung::Vendor ? 1.0 : 0.0};
  };
  if (Loaded* w = exact_winner(p)) return of(*w);
  {
    std::shared_lock<std::shared_mutex> lock(plans_mu_);
    if (auto found = plans_.find(ProblemKey(p)); found != plans_.end()) {
      const Plan& plan = *found->second;
      if (const Loaded* o = plan.online.load(std::memory_order_acquire)) return of(*o);
      return untuned(plan.rung, plan.neighbour);
    }
  }
  // Not served yet: the same rule as make_plan(), without making the plan (which would compile a
  // default kernel for a problem the caller may never hand over).
  const UntunedChoice c = choose_untuned(tuned_, p, dev_->info(), vendor().unsupported(p), fallback_templates_.at(p.kind()));
  return untuned(c.rung, c.rung == Rung::Pool ? tuned_loaded_[c.nearest->index] : nullptr);
}

void Runtime::dispatch(Call& call, gpu::Stream stream) {
  auto it = winners_.find(ProblemKey(call.problem));
  if (it != winners_.end()) {
    Loaded& w = *it->second;
    if (serve_winner(w, call, stream)) return count(Rung::Tuned, w.user);
  }
  Plan& plan = plan_for(call.problem);
  if (Loaded* o = plan.online.load(std::memory_order_acquire))
    if (serve_winner(*o, call, stream)) {
      ++stats_.online;
      return count(Rung::Tuned, true);
    }
  const std::uint64_t calls = ++plan.calls;
  if (const int after = online_after_.load(std::memory_order_relaxed);
      after > 0 && calls >= std::uint64_t(after) && !plan.submitted.exchange(true))
    submit_online(call.problem);
  if (serve(plan, plan.neighbour ? load_winner(*plan.neighbour) : plan.kernel, call, stream)) return count(plan.rung, false);
  // The plan's kernel cannot take these pointers, or failed to load: the vendor, else a default
  // that admits them.
  if (plan.tmpl && run_vendor(plan, call, stream)) return count(Rung::Vendor, false);
  Plan* fallback = last_resort(call);
  launch(*fallback->kernel, *fallback, call, stream);
  count(Rung::Default, false);
}

void Runtime::submit_online(const Problem& p) {
  std::lock_guard<std::mutex> lock(online_mu_);
  if (online_) online_->submit(p);
}

void Runtime::gemm(const GemmProblem& problem, float alpha, const void* a, const void* b, float beta, void* c,
                   gpu::Stream stream) {
  problem.validate();
  if (!a || !b || !c) throw Error("a null matrix pointer was passed");
  // A pointer off its element boundary would fault on the device and take the context with it.
  check_element_aligned("A", a, size_of(problem.a_type));
  check_element_aligned("B", b, size_of(problem.type_b()));
  check_element_aligned("C", c, size_of(problem.c_type));
  Call call;
  const GemmProblem p = problem.canonical();
  call.problem = p;
  call.params = TtGemmParams{a, b, c, p.lda, p.ldb, p.ldc, p.stride_a, p.stride_b, p.stride_c,
                             int(p.m), int(p.n), int(p.k), int(p.batch), alpha, beta, nullptr};
  call.ptr = {a, b, c};
  dispatch(call, stream);
}

void Runtime::conv(const ConvProblem& problem, void* x, void* wt, void* y, gpu::Stream stream) {
  problem.validate();
  if (!x || !wt || !y) throw Error("a null tensor pointer was passed");
  {
    const ConvDirection d = problem.direction;
    auto bytes = [&](ConvDirection written) { return size_of(d == written ? problem.out_type : problem.in_type); };
    check_element_aligned("x", x, bytes(ConvDirection::BackwardData));
    check_element_aligned("w", wt, bytes(ConvDirection::BackwardFilter));
    check_element_aligned("y", y, bytes(ConvDirection::Forward));
  }
  Call call;
  const ConvProblem p = problem.canonical();
  call.problem = p;
  call.params = ops::conv_arguments(p, x, wt, y);
  call.ptr = {x, wt, y};
  dispatch(call, stream);
}

namespace {

// Calls of one problem to add to a recorded config.
struct Untuned {
  Problem problem;  // canonical
  ProblemKey key;
  std::uint64_t calls;
};

std::string untuned_name(std::int64_t calls, const std::string& arch) {
  return std::to_string(calls) + " calls, untuned on " + arch;
}

// The tuning config at `path` with `added` merged in: problems united by key, calls summed, all
// else kept as it was (a "templates" section someone added); a new config where there is none.
nlohmann::json merged_config(const std::string& path, const std::vector<Untuned>& added, const std::string& arch) {
  std::string text;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    std::ifstream in(path);
    if (!in) throw Error("cannot read " + path + "; it was left as it is");
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  nlohmann::json config;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {  // none yet, or an empty file made for it
    config = {{"name", "untuned-" + arch},
              {"about", "Problems trainers ran without an exact winner (tiletune_record, TILETUNE_RECORD_UNTUNED), "
                        "with the calls each served untuned, summed over every recording; tune them with "
                        "`tiletune tune` and add a \"templates\" section if needed."},
              {"problems", nlohmann::json::array()}};
  } else {
    config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!config.is_object() || !config.contains("problems") || !config["problems"].is_array())
      throw Error(path + " is not a tuning config (a JSON object with a \"problems\" array); it was left as it is");
  }
  nlohmann::json& problems = config["problems"];
  std::unordered_map<std::string, std::size_t> index;  // problem key -> its entry
  for (std::size_t i = 0; i < problems.size(); ++i) {
    try {
      index.emplace(problems[i].get<Problem>().canonical().key(), i);
      if (problems[i].value("calls", std::int64_t(0)) < 0) throw Error("negative \"calls\"");
    } catch (const std::exception& e) {
      throw Error(path + ": problem " + std::to_string(i + 1) + " is not one problem of a recorded config (" + e.what() +
                  "); the file was left as it is");
    }
  }
  for (const Untuned& u : added) {
    const std::int64_t calls = std::int64_t(u.calls);
    auto found = index.find(u.problem.key());
    if (found == index.end()) {
      nlohmann::json j = u.problem;
      j["name"] = untuned_name(calls, arch);
      j["calls"] = calls;
      index.emplace(u.problem.key(), problems.size());
      problems.push_back(std::move(j));
      continue;
    }
    nlohmann::json& j = problems[found->second];
    const std::int64_t before = j.value("calls", std::int64_t(0));
    j["calls"] = before + calls;
    if (!j.contains("name") || j["name"] == untuned_name(before, arch)) j["name"] = untuned_name(before + calls, arch);
  }
  return config;
}

}  // namespace

void Runtime::record(const std::string& path) {
  if (path.empty()) throw Error("recording untuned problems: no file named");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error("recording untuned problems: " + path + " is a directory");
  std::lock_guard<std::mutex> guard(record_mu_);
  const std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  auto& recorded = recorded_[ec ? path : canonical];
  std::vector<Untuned> added;
  {
    std::shared_lock<std::shared_mutex> lock(plans_mu_);
    for (const auto& [key, plan] : plans_) {
      // A plan of a problem with an exact winner serves only calls that winner could not take.
      if (winners_.count(key)) continue;
      auto before = recorded.find(key);
      const std::uint64_t calls = plan->calls.load(), done = before == recorded.end() ? 0 : before->second;
      if (calls > done) added.push_back({plan->problem, key, calls - done});
    }
  }
  if (added.empty()) return;
  // New entries most called first, for whoever reads the file.
  std::sort(added.begin(), added.end(), [](const Untuned& a, const Untuned& b) { return a.calls > b.calls; });
  {
    // Other processes recording into the same file wait here; each reads what the last one wrote.
    FileLock lock(path + ".lock");
    const std::string text = merged_config(path, added, dev_->info().arch).dump(2) + "\n";
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {  // whole file or nothing
      std::remove(tmp.c_str());
      throw Error("cannot write " + path + " (by way of " + tmp + ")");
    }
  }
  for (const Untuned& u : added) recorded[u.key] += u.calls;
}

void Runtime::record_untuned() {
  const char* path = std::getenv("TILETUNE_RECORD_UNTUNED");
  if (!path || !*path) return;
  try {
    record(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tiletune: warning: TILETUNE_RECORD_UNTUNED=%s: the untuned problems were not recorded: %s\n",
                 path, e.what());
  }
}

Runtime::~Runtime() {
  try {
    set_online(false);  // its thread adopts winners into plans_: stopped before anything goes
    record_untuned();
  } catch (...) {
    // never let a destructor take the trainer down
  }
}

}  // namespace tiletune::runtime
