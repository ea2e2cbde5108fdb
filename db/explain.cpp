#include "db/explain.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "vendors/vendor.h"

namespace tiletune::db {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A code object's static figures (records.h, kFiguresMetaPrefix) in one line.
std::string figures_text(const std::string& json) {
  if (json.empty()) return "none recorded";
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return "unreadable: " + json;
  auto n = [&](const char* k) { return j.contains(k) ? j[k].dump() : std::string("?"); };
  return "VGPR " + n("vgpr") + ", AGPR " + n("agpr") + ", SGPR " + n("sgpr") + ", LDS " + n("lds_bytes") +
         " bytes, scratch " + n("scratch_bytes") + " bytes, spills " + n("vgpr_spills") + " VGPR / " +
         n("sgpr_spills") + " SGPR, " + n("mfma_instructions") +
         " v_mfma (the compiler's own allocation; another compiler's may differ)";
}

}  // namespace

Problem parse_problem_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("bad problem JSON (not valid JSON): " + std::string(e.what()));
  }
  if (!j.is_object()) throw Error("bad problem JSON: expected an object such as {\"dtype\": \"f32\", \"m\": 512, \"n\": 512, \"k\": 512}, got " + j.dump());
  const bool conv = j.contains("kind") && j["kind"] == "conv";
  static const std::set<std::string> gemm_fields = {"kind", "dtype", "a_type", "b_type", "c_type", "compute", "transA",
                                                    "transB",
                                                    "m", "n", "k", "batch", "lda", "ldb", "ldc",
                                                    "stride_a", "stride_b", "stride_c", "beta_zero"};
  static const std::set<std::string> conv_fields = {"kind", "direction", "layout", "dtype", "in_type", "out_type",
                                                    "n", "c", "h", "w", "k", "r", "s", "stride", "pad", "dilation",
                                                    "groups"};
  const std::set<std::string>& fields = conv ? conv_fields : gemm_fields;
  for (const auto& [name, value] : j.items())
    if (!fields.count(name)) {
      std::string known;
      for (const auto& f : fields) known += (known.empty() ? "" : ", ") + f;
      throw Error("bad problem JSON: unknown field '" + name + "' (known: " + known + ")");
    }
  Problem p;
  try {
    from_json(j, p);
    p.validate();
  } catch (const Error& e) {
    throw Error(std::string("bad problem JSON: ") + e.what());
  } catch (const std::exception& e) {
    throw Error(std::string("bad problem JSON: ") + e.what());
  }
  return p.canonical();
}

gpu::DeviceInfo device_for_arch(const std::string& arch, const std::optional<DeviceRecord>& measured_on) {
  gpu::DeviceInfo d;
  d.arch = arch;
  if (measured_on) {
    d.name = measured_on->name;
    d.multiprocessors = int(std::max<std::int64_t>(1, measured_on->multiprocessors));
    d.driver_version = measured_on->driver_version;
  }
  const gpu::BackendTraits& t = measured_on && !measured_on->backend.empty() ? gpu::traits_named(measured_on->backend)
                                                                           : gpu::traits_for_arch(arch);
  d.backend = t.kind;
  t.assume_from_arch(d, measured_on.has_value());
  if (d.name.empty()) d.name = "(not in the database; assumed from the arch)";
  return d;
}



std::optional<std::string> winner_unusable(const WinnerRecord& w, const gpu::DeviceInfo& dev) {
  if (w.solution.template_name == kVendorTemplate) {  // the runtime calls the library, where it is
    const std::string why = gpu::vendor_scope(dev.backend, w.problem.canonical());
    if (why.empty()) return std::nullopt;
    return "the vendor library won it, and " + why;
  }
  const KernelTemplate* t = nullptr;
  for (const auto& candidate : builtin_templates())
    if (candidate.name() == w.solution.template_name) t = &candidate;
  if (!t) return "its template " + w.solution.template_name + " is unknown to this build";
  if (auto why = t->violation(t->variables(w.solution, w.problem.canonical(), dev)))
    return "it breaks a constraint on this device: " + *why;
  return std::nullopt;
}

std::string resolve_arch(Database& db, const std::string& given) {
  std::vector<std::string> arches = db.arches();
  for (const auto& a : db.compiled_arches())
    if (std::find(arches.begin(), arches.end(), a) == arches.end()) arches.push_back(a);
  std::sort(arches.begin(), arches.end());
  if (!given.empty()) {
    if (std::find(arches.begin(), arches.end(), given) == arches.end())
      throw Error(db.path() + ": unknown arch '" + given + "': the database has measurements or compiled candidates for " +
                  join(arches));
    return given;
  }
  if (arches.size() == 1) return arches[0];
  if (arches.empty())
    throw Error(db.path() + ": the database has no measurements and no compiled candidates, so no arch to explain");
  throw Error(db.path() + ": the database holds several arches (" + join(arches) + "); pick one with --arch");
}

Explanation explain(Database& db, const Problem& problem, const std::string& arch_given) {
  Explanation e;
  e.arch = resolve_arch(db, arch_given);
  e.problem = problem.canonical();
  e.key = e.problem.key();
  e.winner = db.find_winner(e.arch, e.key);

  // The device the constraints are checked against: the one the winner (or any measurement of
  // this arch) was measured on.
  std::optional<DeviceRecord> dev_row;
  std::int64_t dev_id = 0;
  if (e.winner) {
    e.measurement = db.measurement(e.winner->measurement_id);
    if (e.measurement) {
      dev_id = e.measurement->device_id;
      e.provenance = db.provenance(e.measurement->id);
    }
    if (e.winner->code_object_id) e.code_object = db.code_object(e.winner->code_object_id);
  }
  const auto devices = db.devices();
  for (const auto& d : devices)
    if ((dev_id && d.id == dev_id) || (!dev_id && d.arch == e.arch)) dev_row = d;
  e.device = device_for_arch(e.arch, dev_row);
  const std::vector<std::string> measured = db.arches();
  e.measured = std::find(measured.begin(), measured.end(), e.arch) != measured.end();
  std::vector<CompiledRecord> compiled;
  for (auto& c : db.compiled(e.arch))
    if (c.problem_key == e.key) compiled.push_back(std::move(c));
  e.compiled = rank_compiled(compiled, e.device);

  if (e.winner) {
    if (auto why = winner_unusable(*e.winner, e.device))
      e.untuned_reason = "the winner " + e.winner->solution.kernel_name() + " is skipped by the runtime: " + *why;
    else
      e.choice = Explanation::Choice::Tuned;
  } else {
    e.untuned_reason = "no winner for this exact problem key on " + e.arch;
  }
  if (e.choice == Explanation::Choice::Tuned) {
    e.vendor_ratio = e.winner->vendor_ratio();
    return e;
  }

  // The runtime's rules (solutions/selection.h): a pool kernel, the vendor library, a default.
  std::vector<WinnerRecord> usable;
  std::vector<TunedEntry> tuned;
  auto add = [&](WinnerRecord& w, bool generic) {
    if (winner_unusable(w, e.device)) return;
    TunedEntry t{w.problem.canonical(),
                 w.solution.template_name == kVendorTemplate ? nullptr : &find_template(w.solution.template_name),
                 w.solution, w.vendor_ratio(), w.median_ms};
    t.generic = generic;
    tuned.push_back(std::move(t));
    usable.push_back(std::move(w));
  };
  for (auto& w : db.winners(e.arch)) add(w, false);
  for (auto& w : db.pool_kernels(e.arch)) add(w, true);
  const UntunedChoice c = choose_untuned(tuned, e.problem, e.device, gpu::vendor_scope(e.device.backend, e.problem),
                                         fallback_templates(e.device.backend, e.problem.kind()));
  e.rule = c.why;
  if (c.nearest) {
    e.neighbour = usable[c.nearest->index];
    e.distance = c.nearest->distance;
    e.generic = tuned[c.nearest->index].generic;
  }
  e.rejected = c.fallback.rejected;
  if (c.rung == Rung::Pool) {
    e.choice = Explanation::Choice::Nearest;
    return e;
  }
  if (c.rung == Rung::Vendor) {
    e.choice = Explanation::Choice::Vendor;
    return e;
  }
  if (c.fallback.tmpl) {
    e.choice = Explanation::Choice::Fallback;
    e.fallback = c.fallback.tmpl->default_solution();
  }
  // The closest tuned problems of the same types and layout, though too far to be used.
  std::vector<std::pair<double, std::string>> near;
  for (const auto& t : tuned)
    if (double d = problem_distance(t.problem, e.problem); std::isfinite(d)) near.emplace_back(d, t.problem.key());
  std::sort(near.begin(), near.end());
  for (std::size_t i = 0; i < near.size() && i < 3; ++i) e.tuned_neighbours.push_back(near[i].second);
  return e;
}

std::string format(const Explanation& e) {
  std::string s;
  s += "problem  " + e.key + "\n";
  s += "arch     " + e.arch + " (" + gpu::to_string(e.device.backend) + ", device: " + e.device.name + ")\n";
  switch (e.choice) {
    case Explanation::Choice::Tuned: {
      const WinnerRecord& w = *e.winner;
      s += "choice   TUNED: exact match of the problem key among the winners of " + e.arch + "\n";
      s += "kernel   " + w.solution.kernel_name() + "\n";
      s += "template " + w.solution.template_name + " " + w.solution.params_json() + "\n";
      if (e.measurement) {
        const MeasurementRow& m = *e.measurement;
        s += "measured median " + fmt("%.4f", m.median_ms) + " ms (min " + fmt("%.4f", m.min_ms) + ", max " +
             fmt("%.4f", m.max_ms) + "), " + fmt("%.3f", m.tflops) + " TFLOP/s, rel error " + fmt("%.2e", m.rel_error) +
             ", sweep '" + m.sweep + "', " + m.created_at + "\n";
      }
      if (e.provenance)
        s += "from     " + (e.provenance->source.empty() ? std::string("measured into this database")
                                                         : e.provenance->source + " (measurement " +
                                                               std::to_string(e.provenance->source_measurement_id) + ")") +
             "\n";
      if (w.solution.template_name == kVendorTemplate)
        s += w.solution.params.empty()
                 ? "code     none: the runtime calls the vendor library (its own choice of kernel)\n"
                 : "code     none: the runtime calls the vendor library with the algorithm " + w.solution.params_json() +
                       " (its default where these pointers cannot take it)\n";
      else if (e.code_object && e.code_object->ok && e.code_object->arch == e.arch)
        s += "code     stored code object " + std::to_string(e.code_object->id) + " (" +
             std::to_string(e.code_object->bytes.size()) + " bytes, " + e.code_object->compiler_version +
             "): loaded on first call, no compile\n";
      else
        s += "code     no usable stored code object: compiled from the template source on first call\n";
      if (w.solution.template_name != kVendorTemplate &&
          !kernel_serves(TunedEntry{e.problem, nullptr, w.solution, e.vendor_ratio},
                         gpu::vendor_scope(e.device.backend, e.problem).empty()))
        s += "runtime  the vendor library serves it: the kernel beat it only " + fmt("%.2f", e.vendor_ratio) +
             "x when tuned (" + fmt("%.2f", kKernelMargin) + "x needed)\n";
      s += "note     pointers less aligned than the leading dimensions imply are checked against the winner's\n"
           "         constraints at each call and may run the fallback instead\n";
      break;
    }
    case Explanation::Choice::Nearest:
      s += "choice   NEAREST (untuned, the pool): " + e.untuned_reason + "; " + e.rule +
           (e.generic ? "; a generic kernel db pack pooled (distance " + fmt("%.2f", e.distance) + ")\n"
                      : "; the nearest tuned problem " + e.neighbour->problem_key + " (distance " +
                            fmt("%.2f", e.distance) + " <= " + fmt("%.1f", kMaxNearestDistance) +
                            ") has a winner that admits this problem\n");
      s += "kernel   " + e.neighbour->solution.kernel_name() + " (its code object, no compile)\n";
      break;
    case Explanation::Choice::Vendor:
      s += "choice   VENDOR (untuned): " + e.untuned_reason + "; " + e.rule + "\n";
      s += "kernel   the vendor library's own choice (cuBLAS / cuDNN on CUDA, OpenBLAS on the host), if it loads at run time\n";
      break;
    case Explanation::Choice::Fallback:
      s += "choice   FALLBACK (untuned): " + e.untuned_reason + "; " + e.rule + "\n";
      s += "kernel   " + e.fallback.kernel_name() + " (default of " + e.fallback.template_name +
           ", compiled once per data type and layout on first use)\n";
      break;
    case Explanation::Choice::NoKernel:
      s += "choice   NONE: " + e.untuned_reason + ", and no fallback template's default fits: the runtime returns an error\n";
      break;
  }
  for (const auto& [name, why] : e.rejected) s += "skipped  fallback " + name + ": breaks " + why + "\n";
  if (e.choice != Explanation::Choice::Tuned)
    for (const auto& k : e.tuned_neighbours) s += "nearby   tuned: " + k + "\n";
  if (!e.measured)
    s += "measured nothing: the database holds no measurement of " + e.arch +
         " (a compile-only sweep): no kernel of it has run or been timed\n";
  for (std::size_t i = 0; i < e.compiled.size(); ++i) {
    const CompiledRecord& c = e.compiled[i].record;
    s += "compiled " + c.solution.kernel_name() + ": UNMEASURED, compiled for " + c.arch + " and never run or timed; " +
         "the runtime does not serve it\n";
    s += "         model rank " + std::to_string(i + 1) + " of " + std::to_string(e.compiled.size()) +
         (e.compiled[i].estimate.has_model ? ", estimate " + fmt("%.4f", e.compiled[i].estimate.seconds * 1e3) + " ms"
                                           : std::string(", no model estimate")) +
         "; code object " + std::to_string(c.code_object_id) + " (" + std::to_string(c.code_bytes) + " bytes, " +
         c.compiler_version + ")\n";
    s += "figures  " + figures_text(c.figures) + "\n";
  }
  return s;
}

namespace {

const char* choice_name(Explanation::Choice c) {
  switch (c) {
    case Explanation::Choice::Tuned: return "tuned";
    case Explanation::Choice::Nearest: return "nearest";
    case Explanation::Choice::Vendor: return "vendor";
    case Explanation::Choice::Fallback: return "fallback";
    case Explanation::Choice::NoKernel: return "none";
  }
  return "none";
}

nlohmann::ordered_json measured(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr; }

nlohmann::ordered_json solution_json(const Solution& s) {
  return {{"kernel", s.kernel_name()}, {"template", s.template_name}, {"params", s.params}};
}

}  // namespace

nlohmann::ordered_json to_json(const Explanation& e) {
  nlohmann::ordered_json j;
  j["problem"] = e.key;
  j["arch"] = e.arch;
  j["backend"] = gpu::to_string(e.device.backend);
  j["device"] = e.device.name;
  j["choice"] = choice_name(e.choice);
  j["solution"] = nullptr;
  j["reason"] = e.choice == Explanation::Choice::Tuned ? "exact match of the problem key among the winners"
                                                       : e.untuned_reason + (e.rule.empty() ? "" : "; " + e.rule);
  if (e.choice == Explanation::Choice::Tuned) {
    const WinnerRecord& w = *e.winner;
    j["solution"] = solution_json(w.solution);
    if (e.measurement) {
      const MeasurementRow& m = *e.measurement;
      j["measurement"] = {{"median_ms", measured(m.median_ms)}, {"min_ms", measured(m.min_ms)},
                          {"max_ms", measured(m.max_ms)},       {"tflops", measured(m.tflops)},
                          {"rel_error", measured(m.rel_error)}, {"sweep", m.sweep},
                          {"created_at", m.created_at}};
    }
    if (e.provenance)
      j["source"] = e.provenance->source.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.provenance->source);
    const bool vendor = w.solution.template_name == kVendorTemplate;
    j["code_object"] = !vendor && e.code_object && e.code_object->ok && e.code_object->arch == e.arch
                           ? nlohmann::ordered_json(e.code_object->id)
                           : nullptr;
    j["vendor_ratio"] = measured(e.vendor_ratio);
    j["vendor_serves"] = !vendor && !kernel_serves(TunedEntry{e.problem, nullptr, w.solution, e.vendor_ratio},
                                                   gpu::vendor_scope(e.device.backend, e.problem).empty());
  } else if (e.choice == Explanation::Choice::Nearest) {
    j["solution"] = solution_json(e.neighbour->solution);
    j["neighbour"] = e.generic ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.neighbour->problem_key);
    j["generic"] = e.generic;
    j["distance"] = e.distance;
  } else if (e.choice == Explanation::Choice::Fallback) {
    j["solution"] = solution_json(e.fallback);
  }
  nlohmann::ordered_json rejected = nlohmann::ordered_json::array();
  for (const auto& [name, why] : e.rejected) rejected.push_back({{"template", name}, {"breaks", why}});
  j["rejected_fallbacks"] = rejected;
  j["tuned_neighbours"] = e.tuned_neighbours;
  j["measured"] = e.measured;
  nlohmann::ordered_json compiled = nlohmann::ordered_json::array();
  for (const auto& r : e.compiled) {
    const CompiledRecord& c = r.record;
    nlohmann::ordered_json figures = nullptr;
    if (!c.figures.empty()) figures = nlohmann::ordered_json::parse(c.figures, nullptr, false);
    if (figures.is_discarded()) figures = nullptr;
    compiled.push_back({{"kernel", c.solution.kernel_name()},
                        {"template", c.solution.template_name},
                        {"params", c.solution.params},
                        {"measured", false},
                        {"model_ms", r.estimate.has_model ? nlohmann::ordered_json(r.estimate.seconds * 1e3) : nullptr},
                        {"code_object", c.code_object_id},
                        {"code_bytes", c.code_bytes},
                        {"compiler", c.compiler_version},
                        {"figures", figures}});
  }
  j["compiled"] = compiled;
  return j;
}

}  // namespace tiletune::db
