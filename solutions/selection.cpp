#include "solutions/selection.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/error.h"

namespace tiletune {

static double log_ratio(std::int64_t x, std::int64_t y) { return std::abs(std::log(double(x) / double(y))); }

static double conv_distance(const ConvProblem& a, const ConvProblem& b) {
  if (a.direction != b.direction || a.layout != b.layout || a.in_type != b.in_type || a.out_type != b.out_type ||
      a.r != b.r || a.s != b.s || a.stride_h != b.stride_h || a.stride_w != b.stride_w || a.pad_h != b.pad_h ||
      a.pad_w != b.pad_w || a.dil_h != b.dil_h || a.dil_w != b.dil_w || a.groups != b.groups)
    return std::numeric_limits<double>::infinity();
  return log_ratio(a.n, b.n) + log_ratio(a.c, b.c) + log_ratio(a.k, b.k) + log_ratio(a.h * a.w, b.h * b.w);
}

double problem_distance(const Problem& pa, const Problem& pb) {
  if (pa.kind() != pb.kind()) return std::numeric_limits<double>::infinity();
  if (pa.is_conv()) return conv_distance(pa.conv(), pb.conv());
  const GemmProblem& a = pa.gemm();
  const GemmProblem& b = pb.gemm();
  if (a.a_type != b.a_type || a.c_type != b.c_type || a.trans_a != b.trans_a || a.trans_b != b.trans_b ||
      a.compute_tf32 != b.compute_tf32)
    return std::numeric_limits<double>::infinity();
  return log_ratio(a.m, b.m) + log_ratio(a.n, b.n) + log_ratio(a.k, b.k) + log_ratio(a.batch, b.batch);
}

const char* to_string(Rung r) {
  switch (r) {
    case Rung::Tuned: return "tuned";
    case Rung::Pool: return "pool";
    case Rung::Vendor: return "vendor";
    case Rung::Default: return "default";
  }
  return "?";
}

std::optional<NearestChoice> nearest_tuned(const std::vector<TunedEntry>& tuned, const Problem& p,
                                           const gpu::DeviceInfo& dev, bool vendor_available) {
  std::optional<NearestChoice> best;
  for (std::size_t i = 0; i < tuned.size(); ++i) {
    double d = problem_distance(p, tuned[i].problem);
    if (d > kMaxNearestDistance || (best && d >= best->distance)) continue;
    if (!tuned[i].tmpl) {  // the vendor won there: it says nothing about kernels admitting p
      if (vendor_available) best = NearestChoice{i, d};
      continue;
    }
    try {
      if (tuned[i].tmpl->violation(tuned[i].tmpl->variables(tuned[i].solution, p, dev))) continue;
    } catch (const Error&) {
      continue;  // parameters that no longer fit the template's expressions
    }
    best = NearestChoice{i, d};
  }
  return best;
}

std::vector<const KernelTemplate*> fallback_templates(gpu::BackendKind backend, ProblemKind kind) {
  std::vector<const KernelTemplate*> out;
  for (const auto& t : builtin_templates())
    if (t.supports(backend) && t.fallback_rank() >= 0 && t.problem_kind() == kind) out.push_back(&t);
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelTemplate* a, const KernelTemplate* b) { return a->fallback_rank() < b->fallback_rank(); });
  return out;
}

FallbackChoice choose_fallback(const std::vector<const KernelTemplate*>& ranked, const Problem& p,
                               const gpu::DeviceInfo& dev, const std::function<void(Variables&)>& adjust) {
  FallbackChoice c;
  for (const KernelTemplate* t : ranked) {
    Variables vars = t->variables(t->default_solution(), p, dev);
    if (adjust) adjust(vars);
    if (auto why = t->violation(vars)) {
      c.rejected.emplace_back(t->name(), *why);
      continue;
    }
    c.tmpl = t;
    break;
  }
  return c;
}

bool kernel_serves(const TunedEntry& e, bool vendor_available) {
  return !vendor_available || std::isnan(e.vendor_ratio) || e.vendor_ratio >= kKernelMargin;
}

static std::string fixed(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

UntunedChoice choose_untuned(const std::vector<TunedEntry>& tuned, const Problem& p, const gpu::DeviceInfo& dev,
                             const std::string& vendor_unsupported,
                             const std::vector<const KernelTemplate*>& fallbacks) {
  UntunedChoice c;
  const bool vendor = vendor_unsupported.empty();
  c.nearest = nearest_tuned(tuned, p, dev, vendor);
  if (c.nearest) {
    const TunedEntry& e = tuned[c.nearest->index];
    const std::string near = "the nearest tuned problem " + e.problem.key() + " (distance " + fixed(c.nearest->distance) + ")";
    if (!e.tmpl) {  // only while the vendor is there (nearest_tuned)
      c.rung = Rung::Vendor;
      c.why = near + " was won by the vendor library";
      return c;
    }
    if (!vendor) {
      c.rung = Rung::Pool;
      c.why = near + ": its winner " + e.solution.kernel_name() + " (no vendor: " + vendor_unsupported + ")";
      return c;
    } else if (e.vendor_ratio >= kKernelMargin) {
      c.rung = Rung::Pool;
      c.why = near + ": its winner " + e.solution.kernel_name() + ", " + fixed(e.vendor_ratio) +
              "x the vendor there";
      return c;
    } else {
      c.rung = Rung::Vendor;
      c.why = near + "'s winner " + e.solution.kernel_name() +
              (std::isnan(e.vendor_ratio) ? std::string(" was never measured against the vendor")
                                          : " beat the vendor only " + fixed(e.vendor_ratio) + "x there") +
              " (the pool needs " + fixed(kKernelMargin) + "x)";
      return c;
    }
  }
  if (vendor) {
    c.rung = Rung::Vendor;
    c.why = "no tuned problem of the same types and layout within distance " + fixed(kMaxNearestDistance) +
            " whose winner admits it";
    return c;
  }
  c.rung = Rung::Default;
  c.fallback = choose_fallback(fallbacks, p, dev);
  c.why = "no tuned problem near enough and no vendor library (" + vendor_unsupported + ")";
  return c;
}

}  // namespace tiletune
