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
  if (a.a_type != b.a_type || a.type_b() != b.type_b() || a.c_type != b.c_type || a.trans_a != b.trans_a ||
      a.trans_b != b.trans_b || a.compute_tf32 != b.compute_tf32)
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

static std::string fixed3(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

// The entry's kernel on `p`: its measured time on its own problem times the model's ratio of the
// two (NaN without a model or a measurement).
static double calibrated_ms(const TunedEntry& e, const Problem& p, const gpu::DeviceInfo& dev) {
  if (!e.tmpl || !(e.median_ms > 0)) return std::numeric_limits<double>::quiet_NaN();
  const ModelEstimate own = model_estimate(*e.tmpl, e.solution, e.problem, dev);
  const ModelEstimate here = model_estimate(*e.tmpl, e.solution, p, dev);
  if (!own.has_model || !here.has_model || !(own.seconds > 0)) return std::numeric_limits<double>::quiet_NaN();
  return e.median_ms * here.seconds / own.seconds;
}

PoolRanking rank_pool(const std::vector<TunedEntry>& tuned, const Problem& p, const gpu::DeviceInfo& dev,
                      bool vendor_available) {
  PoolRanking r;
  // The vendor's time here: its time on the nearest problem it was timed on, scaled by the flops.
  std::optional<std::pair<double, std::size_t>> vendor_ref;
  std::vector<NearestChoice> eligible;
  std::string nearest_why;  // why the nearest considered kernel does not qualify
  for (std::size_t i = 0; i < tuned.size(); ++i) {
    const TunedEntry& e = tuned[i];
    const double d = problem_distance(p, e.problem);
    const bool near = d <= kMaxNearestDistance;
    // A generic kernel serves far from its problem only where no vendor does: there is no measured
    // vendor time near enough to hold the model's estimate against.
    if (!near && !(e.generic && std::isfinite(d) && !vendor_available)) continue;
    const bool vendor_timed = e.median_ms > 0 && (!e.tmpl || !std::isnan(e.vendor_ratio));
    if (near && vendor_timed && (!vendor_ref || d < vendor_ref->first)) vendor_ref = {d, i};
    if (!e.tmpl && !vendor_available) continue;  // the vendor won there, and it is not here
    const bool nearest = near && (!r.nearest || d < r.nearest->distance);
    if (nearest) r.nearest = NearestChoice{i, d};
    if (!e.tmpl) {
      if (nearest) nearest_why = "the nearest tuned problem " + e.problem.key() + " was won by the vendor library";
      continue;
    }
    try {
      if (auto why = e.tmpl->violation(e.tmpl->variables(e.solution, p, dev))) {
        if (nearest) nearest_why = "the nearest tuned problem's winner " + e.solution.kernel_name() + " does not admit it";
        continue;
      }
    } catch (const Error&) {  // parameters that no longer fit the template's expressions
      if (nearest) nearest_why = "the nearest tuned problem's winner " + e.solution.kernel_name() + " does not fit its template";
      continue;
    }
    if (vendor_available && !(e.vendor_ratio >= kKernelMargin)) {
      if (nearest)
        nearest_why = "the nearest tuned problem " + e.problem.key() + "'s winner " + e.solution.kernel_name() +
                      (std::isnan(e.vendor_ratio) ? std::string(" was never measured against the vendor")
                                                  : " beat the vendor only " + fixed(e.vendor_ratio) + "x there") +
                      " (the pool needs " + fixed(kKernelMargin) + "x)";
      continue;
    }
    const double estimate = calibrated_ms(e, p, dev);
    if (!near && std::isnan(estimate)) continue;  // far away, only the model can rank it
    eligible.push_back(NearestChoice{i, d, estimate});
  }
  // Near ones first (a far generic kernel only where none is near), estimated ones first, fastest
  // first; then by distance.
  std::stable_sort(eligible.begin(), eligible.end(), [](const NearestChoice& a, const NearestChoice& b) {
    const bool na = a.distance <= kMaxNearestDistance, nb = b.distance <= kMaxNearestDistance;
    if (na != nb) return na;
    const bool ea = !std::isnan(a.estimate_ms), eb = !std::isnan(b.estimate_ms);
    if (ea != eb) return ea;
    return ea ? a.estimate_ms < b.estimate_ms : a.distance < b.distance;
  });
  if (eligible.empty()) {
    r.why_not = !nearest_why.empty() ? nearest_why
                                     : "no tuned problem of the same types and layout within distance " +
                                           fixed(kMaxNearestDistance) + " whose winner admits it";
    return r;
  }
  NearestChoice best = eligible.front();
  if (vendor_available && vendor_ref) {
    const TunedEntry& v = tuned[vendor_ref->second];
    const double vendor_ms = (v.tmpl ? v.median_ms * v.vendor_ratio : v.median_ms) * p.flops() / v.problem.flops();
    best.vendor_estimate_ms = vendor_ms;
    // Without a model estimate the kernel's own time is scaled by the flops too.
    const TunedEntry& k = tuned[best.index];
    const double kernel_ms = !std::isnan(best.estimate_ms) ? best.estimate_ms
                             : k.median_ms > 0          ? k.median_ms * p.flops() / k.problem.flops()
                                                        : std::numeric_limits<double>::quiet_NaN();
    if (!std::isnan(kernel_ms) && vendor_ms < kKernelMargin * kernel_ms) {
      r.why_not = "the best pool kernel " + k.solution.kernel_name() + " of " + k.problem.key() +
                  " is expected at only " + fixed(vendor_ms / kernel_ms) + "x the vendor here (" +
                  (std::isnan(best.estimate_ms) ? "flops-scaled " : "model ") + fixed3(kernel_ms) +
                  " ms, vendor about " + fixed3(vendor_ms) + " ms; the pool needs " + fixed(kKernelMargin) + "x)";
      return r;
    }
  }
  r.best = best;
  return r;
}

UntunedChoice choose_untuned(const std::vector<TunedEntry>& tuned, const Problem& p, const gpu::DeviceInfo& dev,
                             const std::string& vendor_unsupported,
                             const std::vector<const KernelTemplate*>& fallbacks) {
  UntunedChoice c;
  const bool vendor = vendor_unsupported.empty();
  const PoolRanking r = rank_pool(tuned, p, dev, vendor);
  if (r.best) {
    const TunedEntry& e = tuned[r.best->index];
    c.nearest = r.best;
    c.rung = Rung::Pool;
    c.why = (e.generic ? "the generic kernel " : "the winner ") + e.solution.kernel_name() +
            (e.generic ? " (measured on " : " of the tuned problem ") + e.problem.key() + (e.generic ? ")" : "") +
            " (distance " +
            fixed(r.best->distance) + (std::isnan(r.best->estimate_ms)
                                           ? std::string(", no model estimate: the nearest")
                                           : ", model estimate " + fixed3(r.best->estimate_ms) + " ms") +
            ")" +
            (vendor ? ", " + fixed(e.vendor_ratio) + "x the vendor there" +
                          (std::isnan(r.best->vendor_estimate_ms)
                               ? std::string()
                               : ", the vendor about " + fixed3(r.best->vendor_estimate_ms) + " ms here")
                    : " (no vendor: " + vendor_unsupported + ")");
    return c;
  }
  c.nearest = r.nearest;
  if (vendor) {
    c.rung = Rung::Vendor;
    c.why = r.why_not;
    return c;
  }
  c.rung = Rung::Default;
  c.fallback = choose_fallback(fallbacks, p, dev);
  c.why = "no tuned kernel near enough admits it and there is no vendor library (" + vendor_unsupported + ")";
  return c;
}

}  // namespace tiletune
