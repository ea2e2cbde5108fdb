#include "runtime/runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "common/error.h"
#include "gpu/arguments.h"
#include "kernel_templates/gemm_params.h"

namespace tiletune::runtime {

ProblemKey::ProblemKey(const GemmProblem& p)
    : v{std::int64_t(p.a_type), std::int64_t(p.c_type), p.trans_a, p.trans_b, p.m, p.n, p.k, p.batch, p.lda, p.ldb,
        p.ldc, p.stride_a, p.stride_b, p.stride_c, p.beta_zero, p.compute_tf32} {}

bool ProblemKey::operator==(const ProblemKey& o) const {
  for (int i = 0; i < 16; ++i)
    if (v[i] != o.v[i]) return false;
  return true;
}

std::size_t ProblemKeyHash::operator()(const ProblemKey& k) const {
  std::uint64_t h = 1469598103934665603ull;
  for (auto x : k.v) h = (h ^ std::uint64_t(x)) * 1099511628211ull;
  return std::size_t(h ^ (h >> 29));
}

Runtime::Runtime(std::unique_ptr<gpu::Device> device, const std::string& db_path)
    : dev_(std::move(device)), db_(db::Database::open(db_path, db::Mode::ReadOnly)) {
  const gpu::DeviceInfo& info = dev_->info();
  for (const auto& t : builtin_templates())
    if (t.supports(info.backend) && t.fallback_rank() >= 0) fallback_templates_.push_back(&t);
  std::stable_sort(fallback_templates_.begin(), fallback_templates_.end(),
                   [](const KernelTemplate* a, const KernelTemplate* b) { return a->fallback_rank() < b->fallback_rank(); });
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
    GemmProblem p = w.problem.canonical();
    auto loaded = std::make_unique<Loaded>();
    loaded->tmpl = t;
    loaded->solution = w.solution;
    loaded->problem = p;
    loaded->code_object_id = w.code_object_id;
    Variables vars = t->variables(w.solution, p, info);
    if (auto why = t->violation(vars)) {
      std::fprintf(stderr, "tiletune: skipping winner %s of %s: %s\n", w.solution.kernel_name().c_str(),
                   w.problem_key.c_str(), why->c_str());
      continue;
    }
    loaded->dims = t->launch_dims(vars);
    loaded->workspace_bytes = t->workspace_bytes(vars);
    loaded->vars = std::move(vars);
    winners_.emplace(ProblemKey(p), std::move(loaded));
  }
}

std::shared_ptr<gpu::Kernel> Runtime::compile(const KernelTemplate& t, const Solution& s, const GemmProblem& p) {
  gpu::CompileResult r = dev_->compiler().compile(t.compile_request(s, p, dev_->info()));
  if (!r.ok) throw Error("compiling " + s.kernel_name() + " failed: " + r.log.substr(0, 2000));
  ++stats_.jit_compiles;
  return dev_->load(r.code);
}

std::shared_ptr<gpu::Kernel> Runtime::load_winner(Loaded& w) {
  std::call_once(w.once, [&] {
    try {
      if (w.workspace_bytes > 0) {
        w.workspace = gpu::DeviceBuffer(*dev_, std::size_t(w.workspace_bytes));
        dev_->fill_bytes(w.workspace.get(), 0, std::size_t(w.workspace_bytes));
      }
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

std::shared_ptr<gpu::Kernel> Runtime::fallback_kernel(const KernelTemplate& t, const GemmProblem& p) {
  Solution s = t.default_solution();
  std::string key = t.name_expression(s, p);
  std::lock_guard<std::mutex> lock(fallback_mu_);
  auto& k = fallbacks_[key];
  if (!k) k = compile(t, s, p);
  return k;
}

void Runtime::launch(gpu::Kernel& kernel, const KernelTemplate& t, const gpu::LaunchDims& dims, const Variables& vars,
                     const GemmProblem& p, const TtGemmParams& args, gpu::Stream stream) {
  if (t.arguments() == "gemm") {  // the hot path: no allocation
    dev_->launch(kernel, dims, &args, sizeof args, stream);
    return;
  }
  std::vector<std::uint8_t> bytes = gpu::kernel_arguments(t, args, p, vars);
  dev_->launch(kernel, dims, bytes.data(), bytes.size(), stream);
}

static int pointer_alignment(const void* ptr, int elem_bytes) {
  auto addr = reinterpret_cast<std::uintptr_t>(ptr);
  int v = 1;
  while (v * elem_bytes < 16 && addr % (std::uintptr_t(v) * 2 * elem_bytes) == 0) v *= 2;
  return v;
}

bool Runtime::can_run(const KernelTemplate& t, const Solution& s, const GemmProblem& p, const void* a, const void* b,
                      const void* c) const {
  Variables vars = t.variables(s, p, dev_->info());
  int ab = size_of(p.a_type), cb = size_of(p.c_type);
  vars["ALIGN_A"] = std::min<std::int64_t>(vars["ALIGN_A"], pointer_alignment(a, ab));
  vars["ALIGN_B"] = std::min<std::int64_t>(vars["ALIGN_B"], pointer_alignment(b, ab));
  vars["ALIGN_C"] = std::min<std::int64_t>(vars["ALIGN_C"], pointer_alignment(c, cb));
  return !t.violation(vars);
}

void Runtime::gemm(const GemmProblem& problem, float alpha, const void* a, const void* b, float beta, void* c,
                   gpu::Stream stream) {
  problem.validate();
  if (!a || !b || !c) throw Error("a null matrix pointer was passed");
  GemmProblem p = problem.canonical();
  TtGemmParams args{a, b, c, p.lda, p.ldb, p.ldc, p.stride_a, p.stride_b, p.stride_c,
                    int(p.m), int(p.n), int(p.k), int(p.batch), alpha, beta, nullptr};

  auto it = winners_.find(ProblemKey(p));
  if (it != winners_.end()) {
    Loaded& w = *it->second;
    // Pointers aligned to 16 bytes satisfy any vector width the tuner allowed for these ld's.
    bool aligned = (reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b) |
                    reinterpret_cast<std::uintptr_t>(c)) % 16 == 0;
    if (aligned || can_run(*w.tmpl, w.solution, p, a, b, c)) {
      if (auto kernel = load_winner(w)) {
        args.workspace = w.workspace.get();
        launch(*kernel, *w.tmpl, w.dims, w.vars, p, args, stream);
        ++stats_.calls;
        ++stats_.tuned;
        return;
      }
    }
  }

  const KernelTemplate* chosen = nullptr;
  for (const KernelTemplate* t : fallback_templates_)
    if (can_run(*t, t->default_solution(), p, a, b, c)) {
      chosen = t;
      break;
    }
  if (!chosen) throw Error("no kernel can run " + p.key() + " on " + dev_->info().arch + ": no template's default fits");
  const KernelTemplate& t = *chosen;
  Solution s = t.default_solution();
  auto kernel = fallback_kernel(t, p);
  Variables vars = t.variables(s, p, dev_->info());
  if (t.workspace_bytes(vars) > 0) throw Error("the default kernel of " + t.name() + " must not need a workspace");
  launch(*kernel, t, t.launch_dims(vars), vars, p, args, stream);
  ++stats_.calls;
  ++stats_.fallbacks;
}

}  // namespace tiletune::runtime
