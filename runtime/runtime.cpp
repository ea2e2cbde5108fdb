#include "runtime/runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>
#include <cstdio>

#include "common/error.h"
#include "gpu/arguments.h"
#include "kernel_templates/gemm_params.h"

namespace tiletune::runtime {

ProblemKey::ProblemKey(const GemmProblem& p)
    : v{0, std::int64_t(p.a_type), std::int64_t(p.c_type), p.trans_a, p.trans_b, p.m, p.n, p.k, p.batch, p.lda, p.ldb,
        p.ldc, p.stride_a, p.stride_b, p.stride_c, p.beta_zero, p.compute_tf32, 0, 0, 0} {}

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
  if (bytes <= 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  gpu::DeviceBuffer& buf = by_stream_[stream];
  if (!buf.get()) {
    buf = gpu::DeviceBuffer(dev, std::size_t(bytes));
    dev.fill_bytes(buf.get(), 0, std::size_t(bytes));
  }
  return buf.get();
}

Runtime::Runtime(std::unique_ptr<gpu::Device> device, const std::string& db_path)
    : dev_(std::move(device)), db_(db::Database::open(db_path, db::Mode::ReadOnly)) {
  const gpu::DeviceInfo& info = dev_->info();
  fallback_templates_ = fallback_templates(info.backend);
  conv_fallback_templates_ = fallback_templates(info.backend, ProblemKind::Conv);
  if (fallback_templates_.empty())
    throw Error(std::string("no kernel template offers a fallback for backend ") + gpu::to_string(info.backend));

  // Only this arch's winners: a code object built for one arch is never loaded on another.
  for (const auto& w : db_.winners(info.arch)) {
    const KernelTemplate* t = nullptr;
    for (const auto& candidate : builtin_templates())
      if (candidate.name() == w.solution.template_name) t = &candidate;
    if (!t) {
      std::fprintf(stderr, "tiletune: %s: skipping winner of %s: template %s is unknown to this runtime\n",
                   db_path.c_str(), w.problem_key.c_str(), w.solution.template_name.c_str());
      continue;
    }
    const Problem p = w.problem.canonical();
    auto loaded = std::make_unique<Loaded>();
    loaded->tmpl = t;
    loaded->solution = w.solution;
    loaded->problem = p;
    // A code object built from other template sources may not match today's kernel ABI: such a
    // winner keeps its parameters but is compiled from the current source on first use.
    loaded->code_object_id = w.source_hash == t->source_hash() ? w.code_object_id : 0;
    Variables vars;
    try {
      vars = t->variables(w.solution, p, info);
      if (auto why = t->violation(vars)) throw Error(*why);
    } catch (const Error& e) {  // one bad row (e.g. parameters of an older template) skips only itself
      std::fprintf(stderr, "tiletune: skipping winner %s of %s: %s\n", w.solution.kernel_name().c_str(),
                   w.problem_key.c_str(), e.what());
      continue;
    }
    loaded->dims = t->launch_dims(vars);
    loaded->workspace_bytes = t->workspace_bytes(vars);
    loaded->vars = std::move(vars);
    tuned_.push_back({p, t, w.solution});
    tuned_loaded_.push_back(loaded.get());
    winners_.emplace(ProblemKey(p), std::move(loaded));
  }
}

std::shared_ptr<gpu::Kernel> Runtime::compile(const KernelTemplate& t, const Solution& s, const Problem& p) {
  gpu::CompileResult r = dev_->compiler().compile(t.compile_request(s, p, dev_->info()));
  if (!r.ok) throw Error("compiling " + s.kernel_name() + " failed: " + r.log.substr(0, 2000));
  ++stats_.jit_compiles;
  return dev_->load(r.code);
}

std::shared_ptr<gpu::Kernel> Runtime::load_winner(Loaded& w) {
  std::call_once(w.once, [&] {
    try {
      std::optional<db::CodeObjectRecord> code;
      if (w.code_object_id) {
        std::lock_guard<std::mutex> lock(db_mu_);
        code = db_.code_object(w.code_object_id);
      }
      if (code && code->ok && code->arch == dev_->info().arch) {
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

void Runtime::launch(gpu::Kernel& kernel, Launchable& how, const GemmProblem& p, TtGemmParams args,
                     gpu::Stream stream) {
  args.workspace = how.workspaces.get(*dev_, how.workspace_bytes, stream);
  if (how.tmpl->arguments() == "gemm") {  // the hot path: no allocation
    dev_->launch(kernel, how.dims, &args, sizeof args, stream);
    return;
  }
  how.arguments.use(
      args, [&] { return gpu::kernel_arguments(*how.tmpl, args, p, how.vars); },
      [&](const std::vector<std::uint8_t>& b) { dev_->launch(kernel, how.dims, b.data(), b.size(), stream); });
}

void Runtime::launch(gpu::Kernel& kernel, Launchable& how, const ConvProblem& p, TtConvParams args,
                     gpu::Stream stream) {
  args.workspace = how.workspaces.get(*dev_, how.workspace_bytes, stream);
  if (how.tmpl->arguments() == "conv") {  // the hot path: no allocation
    dev_->launch(kernel, how.dims, &args, sizeof args, stream);
    return;
  }
  how.arguments.use(  // TMA descriptors for these pointers
      args, [&] { return gpu::conv_kernel_arguments(*how.tmpl, args, p, how.vars); },
      [&](const std::vector<std::uint8_t>& b) { dev_->launch(kernel, how.dims, b.data(), b.size(), stream); });
}

static void check_element_aligned(const char* what, const void* ptr, int elem_bytes) {
  if (reinterpret_cast<std::uintptr_t>(ptr) % std::uintptr_t(elem_bytes) != 0)
    throw Error(std::string("pointer ") + what + " is not aligned to its element size (" + std::to_string(elem_bytes) +
                " bytes)");
}

static int pointer_alignment(const void* ptr, int elem_bytes) {
  auto addr = reinterpret_cast<std::uintptr_t>(ptr);
  int v = 1;
  while (v * elem_bytes < 16 && addr % (std::uintptr_t(v) * 2 * elem_bytes) == 0) v *= 2;
  return v;
}

void Runtime::lower_alignment(Variables& vars, const GemmProblem& p, const void* a, const void* b, const void* c) {
  int ab = size_of(p.a_type), cb = size_of(p.c_type);
  vars["ALIGN_A"] = std::min<std::int64_t>(vars["ALIGN_A"], pointer_alignment(a, ab));
  vars["ALIGN_B"] = std::min<std::int64_t>(vars["ALIGN_B"], pointer_alignment(b, ab));
  vars["ALIGN_C"] = std::min<std::int64_t>(vars["ALIGN_C"], pointer_alignment(c, cb));
}

bool Runtime::can_run(const KernelTemplate& t, const Solution& s, const GemmProblem& p, const void* a, const void* b,
                      const void* c) const {
  Variables vars = t.variables(s, p, dev_->info());
  lower_alignment(vars, p, a, b, c);
  return !t.violation(vars);
}

std::unique_ptr<Runtime::Plan> Runtime::fallback_plan(const Problem& p, const void* a, const void* b,
                                                      const void* c) {
  // With pointers, their alignment may be below what the leading dimensions imply.
  std::function<void(Variables&)> adjust;
  if (a && !p.is_conv()) adjust = [&](Variables& v) { lower_alignment(v, p.gemm(), a, b, c); };
  FallbackChoice choice =
      choose_fallback(p.is_conv() ? conv_fallback_templates_ : fallback_templates_, p, dev_->info(), adjust);
  if (!choice.tmpl) throw Error("no kernel can run " + p.key() + " on " + dev_->info().arch + ": no template's default fits");
  const KernelTemplate* t = choice.tmpl;
  auto plan = std::make_unique<Plan>();
  plan->tmpl = t;
  plan->solution = t->default_solution();
  plan->problem = p;
  plan->vars = t->variables(plan->solution, p, dev_->info());
  if (t->workspace_bytes(plan->vars) > 0) throw Error("the default kernel of " + t->name() + " must not need a workspace");
  plan->dims = t->launch_dims(plan->vars);
  plan->kernel = fallback_kernel(*t, p);
  plan->why = "untuned: the general default " + plan->solution.kernel_name();
  return plan;
}

std::unique_ptr<Runtime::Plan> Runtime::make_plan(const Problem& p) {
  std::optional<NearestChoice> near = nearest_tuned(tuned_, p, dev_->info());
  if (!near) {
    auto plan = fallback_plan(p, nullptr, nullptr, nullptr);
    plan->why += " (no tuned problem of the same types and layout within distance " +
                 std::to_string(kMaxNearestDistance) + " whose winner admits it)";
    return plan;
  }
  Loaded* best = tuned_loaded_[near->index];
  auto plan = std::make_unique<Plan>();
  plan->neighbour = best;
  plan->tmpl = best->tmpl;
  plan->solution = best->solution;
  plan->problem = p;
  plan->vars = best->tmpl->variables(best->solution, p, dev_->info());
  plan->dims = best->tmpl->launch_dims(plan->vars);
  plan->workspace_bytes = best->tmpl->workspace_bytes(plan->vars);
  char d[32];
  std::snprintf(d, sizeof d, "%.2f", near->distance);
  plan->why = "untuned: nearest tuned problem " + best->problem.key() + " (distance " + d + "), its winner " +
              best->solution.kernel_name();
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

Runtime::Plan* Runtime::last_resort(const std::string& key, const Problem& p, const void* a, const void* b,
                                    const void* c) {
  {
    std::shared_lock<std::shared_mutex> lock(plans_mu_);
    auto found = last_resort_plans_.find(key);
    if (found != last_resort_plans_.end()) return found->second.get();
  }
  auto made = fallback_plan(p, a, b, c);  // outside the lock: may compile
  std::unique_lock<std::shared_mutex> lock(plans_mu_);
  auto& slot = last_resort_plans_[key];
  if (!slot) slot = std::move(made);
  return slot.get();
}

bool Runtime::has_exact_winner(const GemmProblem& problem) const {
  problem.validate();
  return winners_.count(ProblemKey(problem.canonical())) != 0;
}

std::string Runtime::explain(const Problem& problem) {
  problem.validate();
  const Problem p = problem.canonical();
  auto it = winners_.find(ProblemKey(p));
  if (it != winners_.end())
    return "tuned: exact winner " + it->second->solution.kernel_name() + " of " + p.key();
  return plan_for(p).why;
}

void Runtime::gemm(const GemmProblem& problem, float alpha, const void* a, const void* b, float beta, void* c,
                   gpu::Stream stream) {
  problem.validate();
  if (!a || !b || !c) throw Error("a null matrix pointer was passed");
  // A pointer off its element boundary would fault on the device and take the context with it.
  check_element_aligned("A", a, size_of(problem.a_type));
  check_element_aligned("B", b, size_of(problem.a_type));
  check_element_aligned("C", c, size_of(problem.c_type));
  GemmProblem p = problem.canonical();
  TtGemmParams args{a, b, c, p.lda, p.ldb, p.ldc, p.stride_a, p.stride_b, p.stride_c,
                    int(p.m), int(p.n), int(p.k), int(p.batch), alpha, beta, nullptr};
  // Pointers aligned to 16 bytes satisfy any vector width the tuner allowed for these ld's.
  const bool aligned = (reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b) |
                        reinterpret_cast<std::uintptr_t>(c)) % 16 == 0;

  auto it = winners_.find(ProblemKey(p));
  if (it != winners_.end()) {
    Loaded& w = *it->second;
    if (aligned || can_run(*w.tmpl, w.solution, p, a, b, c)) {
      if (auto kernel = load_winner(w)) {
        launch(*kernel, w, p, args, stream);
        ++stats_.calls;
        ++stats_.tuned;
        return;
      }
    }
  }

  Plan& plan = plan_for(p);
  ++plan.calls;
  if (aligned || can_run(*plan.tmpl, plan.solution, p, a, b, c)) {
    std::shared_ptr<gpu::Kernel> kernel = plan.neighbour ? load_winner(*plan.neighbour) : plan.kernel;
    if (kernel) {
      launch(*kernel, plan, p, args, stream);
      ++stats_.calls;
      ++(plan.neighbour ? stats_.nearest : stats_.fallbacks);
      return;
    }
  }
  // Misaligned pointers the plan's kernel cannot take (or a neighbour that failed to load).
  const int ab = size_of(p.a_type), cb = size_of(p.c_type);
  Plan* fallback = last_resort(p.key() + "|ptr" + std::to_string(pointer_alignment(a, ab)) + "," +
                                   std::to_string(pointer_alignment(b, ab)) + "," +
                                   std::to_string(pointer_alignment(c, cb)),
                               p, a, b, c);
  launch(*fallback->kernel, *fallback, p, args, stream);
  ++stats_.calls;
  ++stats_.fallbacks;
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
  const ConvProblem p = problem.canonical();
  TtConvParams args = gpu::conv_arguments(p, x, wt, y);
  auto run = [&](gpu::Kernel& kernel, Launchable& how) {
    launch(kernel, how, p, args, stream);
    ++stats_.calls;
  };
  // TMA templates read x and the filters through descriptors that need 16-byte aligned bases.
  const bool tma_aligned = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && reinterpret_cast<std::uintptr_t>(wt) % 16 == 0;
  auto usable = [&](const KernelTemplate* t) { return t && (t->arguments() != "conv_tma" || tma_aligned); };
  auto it = winners_.find(ProblemKey(p));
  if (it != winners_.end() && usable(it->second->tmpl)) {
    Loaded& w = *it->second;
    if (auto kernel = load_winner(w)) {
      run(*kernel, w);
      ++stats_.tuned;
      return;
    }
  }
  Plan& plan = plan_for(p);
  ++plan.calls;
  if (usable(plan.tmpl))
    if (auto kernel = plan.neighbour ? load_winner(*plan.neighbour) : plan.kernel) {
      run(*kernel, plan);
      ++(plan.neighbour ? stats_.nearest : stats_.fallbacks);
      return;
    }
  // The neighbour failed to load, or a TMA kernel got unaligned tensors.
  Plan* fallback = last_resort(p.key() + (tma_aligned ? "" : "|unaligned"), p, nullptr, nullptr, nullptr);
  run(*fallback->kernel, *fallback);
  ++stats_.fallbacks;
}

void Runtime::record_untuned() const {
  const char* path = std::getenv("TILETUNE_RECORD_UNTUNED");
  if (!path || !*path || plans_.empty()) return;
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& [key, plan] : plans_) {
    if (plan->calls == 0) continue;  // made by explain() only
    nlohmann::json j = plan->problem;
    j["name"] = std::to_string(plan->calls.load()) + " calls, untuned on " + dev_->info().arch;
    problems.push_back(j);
  }
  nlohmann::json config = {{"name", "untuned-" + dev_->info().arch},
                           {"about", "Problems a trainer ran without an exact winner (TILETUNE_RECORD_UNTUNED); "
                                     "tune them with `tiletune tune` and add a \"templates\" section if needed."},
                           {"problems", problems}};
  if (problems.empty()) return;
  std::string tmp = std::string(path) + ".tmp";
  std::ofstream out(tmp);
  out << config.dump(2) << "\n";
  out.close();
  if (out) std::rename(tmp.c_str(), path);  // whole file or nothing
  else std::remove(tmp.c_str());
}

Runtime::~Runtime() {
  try {
    record_untuned();
  } catch (...) {
    // never let a destructor take the trainer down
  }
}

}  // namespace tiletune::runtime
