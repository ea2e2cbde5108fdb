#include "db/ship.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "common/error.h"
#include "db/compiled.h"
#include "db/database.h"
#include "db/shard_counts.h"
#include "db/signing.h"
#include "solutions/selection.h"

namespace tiletune::db {
namespace {

namespace fs = std::filesystem;

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

std::uintmax_t file_bytes(const std::string& path) {
  std::error_code ec;
  std::uintmax_t total = 0;
  for (const std::string& f : {path, path + "-wal"}) {
    auto n = fs::file_size(f, ec);
    if (!ec) total += n;
  }
  return total;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

void remove_with_sidecars(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

// Copies rows of one source database into another, remembering the new ids.
class Copier {
 public:
  Copier(Database& src, Database& dst) : src_(src), dst_(dst), source_path_(absolute_path(src.path())) {
    for (const auto& d : src_.devices()) src_devices_[d.id] = d;
    for (const auto& s : src_.solutions()) src_solutions_[s.id] = s;
  }

  std::int64_t device(std::int64_t src_id) {
    if (src_id == 0) return 0;
    if (auto it = devices_.find(src_id); it != devices_.end()) return it->second;
    auto it = src_devices_.find(src_id);
    if (it == src_devices_.end())
      throw Error(src_.path() + ": a measurement names device " + std::to_string(src_id) + ", which is not in the file");
    return devices_[src_id] = dst_.upsert_device(it->second);
  }
  std::int64_t solution(std::int64_t src_id) {
    if (auto it = solutions_.find(src_id); it != solutions_.end()) return it->second;
    auto it = src_solutions_.find(src_id);
    if (it == src_solutions_.end())
      throw Error(src_.path() + ": a row names solution " + std::to_string(src_id) + ", which is not in the file");
    return solutions_[src_id] = dst_.upsert_solution(it->second.solution, it->second.source_hash);
  }
  void problem(std::int64_t src_id, const Problem& p) { problems_[src_id] = dst_.upsert_problem(p); }
  std::int64_t problem(std::int64_t src_id) const {
    auto it = problems_.find(src_id);
    if (it == problems_.end())
      throw Error(src_.path() + ": a measurement names problem " + std::to_string(src_id) + ", which is not in the file");
    return it->second;
  }
  void code_object(const CodeObjectRecord& r) {
    CodeObjectRecord c = r;
    c.solution_id = solution(r.solution_id);
    code_objects_[r.id] = dst_.put_code_object(c);
  }
  std::int64_t code_object(std::int64_t src_id) {
    if (src_id == 0) return 0;
    if (auto it = code_objects_.find(src_id); it != code_objects_.end()) return it->second;
    auto rec = src_.code_object(src_id);
    if (!rec) throw Error(src_.path() + ": a measurement names code object " + std::to_string(src_id) + ", which is not in the file");
    code_object(*rec);
    return code_objects_.at(src_id);
  }

  // The measurement with this database's ids, and where it came from: kept from the source's
  // provenance when it was itself copied from elsewhere, else the source file.
  std::pair<MeasurementRecord, ProvenanceRecord> measurement(const MeasurementRow& row,
                                                             const std::optional<ProvenanceRecord>& prov) {
    MeasurementRecord m = row;
    m.problem_id = problem(row.problem_id);
    m.solution_id = solution(row.solution_id);
    m.device_id = device(row.device_id);
    m.code_object_id = code_object(row.code_object_id);
    ProvenanceRecord p;
    if (prov && !prov->source.empty()) {
      p = *prov;
      p.device_id = device(prov->device_id);
    } else {
      p.source = source_path_;
      p.source_measurement_id = row.id;
      p.sweep = row.sweep;
      p.device_id = m.device_id;
      p.recorded_at = row.created_at;
    }
    p.measurement_id = 0;
    return {m, p};
  }

 private:
  Database& src_;
  Database& dst_;
  std::string source_path_;
  std::map<std::int64_t, DeviceRow> src_devices_;
  std::map<std::int64_t, SolutionRow> src_solutions_;
  std::map<std::int64_t, std::int64_t> devices_, solutions_, problems_, code_objects_;
};

// The measurements (ids of `src`) of the generic kernels of `arch` (see pack).
std::vector<std::int64_t> generic_kernels(Database& src, const std::string& arch, int per_class,
                                          const std::set<std::int64_t>& vendor_solutions) {
  if (per_class <= 0) return {};
  std::map<std::int64_t, Problem> problems;
  for (auto& r : src.problem_specs()) problems[r.id] = r.problem.canonical();
  std::map<std::int64_t, double> best;                                   // problem -> fastest ok time
  std::map<std::int64_t, std::map<std::int64_t, MeasurementRow>> runs;  // solution -> problem -> its run
  for (auto& m : src.all_measurements()) {
    if (m.arch != arch || m.status != Status::Ok || !(m.median_ms > 0) || !problems.count(m.problem_id)) continue;
    auto [it, fresh] = best.emplace(m.problem_id, m.median_ms);
    if (!fresh) it->second = std::min(it->second, m.median_ms);
    if (!vendor_solutions.count(m.solution_id)) runs[m.solution_id][m.problem_id] = std::move(m);
  }
  // Classes: problems between which problem_distance is finite.
  std::vector<std::vector<std::int64_t>> classes;
  for (const auto& [id, ms] : best) {
    auto c = std::find_if(classes.begin(), classes.end(), [&](const std::vector<std::int64_t>& members) {
      return std::isfinite(problem_distance(problems.at(members.front()), problems.at(id)));
    });
    if (c == classes.end()) classes.push_back({id});
    else c->push_back(id);
  }
  std::vector<std::int64_t> out;
  for (const auto& members : classes) {
    std::vector<std::pair<double, std::int64_t>> scored;  // (mean efficiency, its best-fit measurement)
    for (const auto& [solution, by_problem] : runs) {
      double sum = 0, fit = -1;
      std::int64_t rep = 0;
      for (std::int64_t pid : members) {
        auto it = by_problem.find(pid);
        if (it == by_problem.end()) continue;
        const double efficiency = best.at(pid) / it->second.median_ms;
        sum += efficiency;
        if (efficiency > fit) fit = efficiency, rep = it->second.id;
      }
      if (rep) scored.emplace_back(sum / double(members.size()), rep);
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; i < scored.size() && i < std::size_t(per_class); ++i) out.push_back(scored[i].second);
  }
  return out;
}

}  // namespace

PackResult pack(const std::string& src_path, const std::string& dst_path, const std::vector<std::string>& arches,
                bool force, const Key* sign, int generic) {
  if (sign && !sign->can_sign()) throw Error("db pack --sign: key " + sign->id() + " is a public key; sign with the private one");
  if (dst_path.empty()) throw Error("db pack: empty destination path");
  Database src = Database::open(src_path, Mode::ReadOnlyAnyVersion);
  PackResult result;
  result.source_bytes = file_bytes(src_path);

  std::vector<std::string> known = src.arches();
  const std::vector<std::string> compiled_arches = src.compiled_arches();
  known.insert(known.end(), compiled_arches.begin(), compiled_arches.end());
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  std::vector<std::string> chosen = arches;
  if (chosen.empty()) chosen = known;
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  for (const auto& a : chosen)
    if (std::find(known.begin(), known.end(), a) == known.end())
      throw Error(src_path + ": unknown arch '" + a + "': the database has measurements or compiled candidates for " +
                  join(known));
  std::vector<WinnerRecord> winners;
  for (const auto& a : chosen) {
    auto w = src.winners(a);
    winners.insert(winners.end(), w.begin(), w.end());
  }
  // Problems without a winner on an arch keep the compiled candidate the model ranks first, as
  // what it is: compiled, never run (db/compiled.h).
  std::vector<CompiledRecord> compiled;
  for (const auto& a : chosen) {
    std::set<std::int64_t> won;
    for (const auto& w : winners)
      if (w.arch == a) won.insert(w.problem_id);
    std::map<std::int64_t, std::vector<CompiledRecord>> by_problem;
    for (auto& c : src.compiled(a))
      if (!won.count(c.problem_id)) by_problem[c.problem_id].push_back(std::move(c));
    const gpu::DeviceInfo dev = compiled_device(src, a);
    for (const auto& [problem, candidates] : by_problem) {
      const auto ranked = rank_compiled(candidates, dev);
      if (!ranked.empty()) compiled.push_back(ranked.front().record);
    }
  }
  if (winners.empty() && compiled.empty())
    throw Error(src_path + ": no winners for " + (arches.empty() ? "any arch" : "arch " + join(chosen)) +
                " (no 'ok' measurement) and no compiled candidate: nothing to pack");

  std::error_code ec;
  if (same_file(src_path, dst_path)) throw Error(dst_path + ": is the source database; pack into another file");
  if (fs::exists(dst_path, ec) && !force)
    throw Error(dst_path + ": already exists; pass --force to overwrite it");
  if (fs::is_directory(dst_path, ec)) throw Error(dst_path + ": is a directory");

  const std::string tmp = dst_path + ".packing-" + std::to_string(::getpid());
  remove_with_sidecars(tmp);
  try {
    Database out = Database::open(tmp, Mode::ReadWrite);
    // Beside each winner, the vendor's fastest measurement of its problem: the runtime serves a
    // kernel over the vendor only with a measured lead (solutions/selection.h), so a packed database
    // without it would serve every kernel winner as a database from before vendor timing does.
    std::set<std::int64_t> vendor_solutions, vendor_defaults;
    for (const auto& s : src.solutions())
      if (s.solution.template_name == kVendorTemplate) {
        vendor_solutions.insert(s.id);
        if (s.solution.params.empty()) vendor_defaults.insert(s.id);
      }
    out.transaction("pack", [&] {
      Copier copy(src, out);
      std::map<std::int64_t, bool> problems_done;
      for (const auto& w : winners) {
        if (!problems_done[w.problem_id]) {
          copy.problem(w.problem_id, w.problem);
          problems_done[w.problem_id] = true;
        }
        auto row = src.measurement(w.measurement_id);
        if (!row) throw Error(src_path + ": the winner of " + w.problem_key + " names a missing measurement");
        auto [m, prov] = copy.measurement(*row, src.provenance(row->id));
        out.put_measurement_if_better(m, row->created_at, prov);
        if (m.code_object_id) ++result.code_objects;
        std::optional<MeasurementRow> vendor;
        for (auto& v : src.measurements(w.problem_id))
          if (v.arch == w.arch && v.status == Status::Ok && vendor_solutions.count(v.solution_id) && v.id != row->id &&
              (!vendor || v.median_ms < vendor->median_ms))
            vendor = std::move(v);
        if (vendor) {
          auto [vm, vprov] = copy.measurement(*vendor, src.provenance(vendor->id));
          out.put_measurement_if_better(vm, vendor->created_at, vprov);
        }
        // ... and the vendor's default, what a framework's own call runs: a winner's lead over it
        // decides whether tiletune.torch hands the problem to tiletune at all.
        for (auto& v : src.measurements(w.problem_id))
          if (v.arch == w.arch && v.status == Status::Ok && vendor_defaults.count(v.solution_id) && v.id != row->id &&
              (!vendor || v.id != vendor->id)) {
            auto [dm, dprov] = copy.measurement(v, src.provenance(v.id));
            out.put_measurement_if_better(dm, v.created_at, dprov);
          }
      }
      std::map<std::int64_t, Problem> specs;
      if (generic > 0)
        for (auto& r : src.problem_specs()) specs[r.id] = r.problem;
      for (const std::string& arch : chosen)
        for (std::int64_t id : generic_kernels(src, arch, generic, vendor_solutions)) {
          auto row = src.measurement(id);
          if (!row) continue;
          if (!problems_done[row->problem_id]) {
            copy.problem(row->problem_id, specs.at(row->problem_id));
            problems_done[row->problem_id] = true;
          }
          auto [m, prov] = copy.measurement(*row, src.provenance(row->id));
          if (out.put_measurement_if_better(m, row->created_at, prov) && m.code_object_id) ++result.code_objects;
          out.add_pool_kernel(m.problem_id, m.solution_id, m.arch);
          ++result.generic;
        }
      for (const auto& c : compiled) {
        if (!problems_done[c.problem_id]) {
          copy.problem(c.problem_id, c.problem);
          problems_done[c.problem_id] = true;
        }
        for (const auto& d : src.devices())
          if (d.arch == c.arch) copy.device(d.id);
        out.add_compiled(c.arch, copy.problem(c.problem_id), copy.solution(c.solution_id),
                         copy.code_object(c.code_object_id));
        if (!c.figures.empty()) out.set_meta(kFiguresMetaPrefix + c.cache_key, c.figures);
        ++result.code_objects;
        ++result.compiled;
      }
      if (sign) {
        std::vector<std::int64_t> ids;
        out.for_each_code_object([&](const CodeObjectRecord& c) {
          if (c.ok && !c.compiled_from.empty()) ids.push_back(c.id);
          else if (c.ok) ++result.unsigned_objects;  // compiled before schema 5: retune to sign it
        });
        for (std::int64_t id : ids) {
          out.put_signature(sign->sign(*out.code_object(id)));
          ++result.signed_objects;
        }
        out.set_meta("signed_by", sign->id());
      }
      out.set_meta("packed_from", absolute_path(src_path));
      out.set_meta("packed_arches", join(chosen));
    });
    out.compact_for_shipping();
  } catch (...) {
    remove_with_sidecars(tmp);
    throw;
  }
  remove_with_sidecars(dst_path);  // a stale -wal of an old file must not be applied to the new one
  fs::rename(tmp, dst_path, ec);
  if (ec) {
    remove_with_sidecars(tmp);
    throw Error(dst_path + ": cannot move the packed database into place: " + ec.message());
  }
  {
    Database check = Database::open(dst_path, Mode::ReadOnly);  // what the runtime does
    if (check.winners("").size() != winners.size() || check.compiled("").size() != compiled.size())
      throw Error(dst_path + ": the packed database does not hold the expected winners and compiled candidates");
  }
  result.packed_bytes = file_bytes(dst_path);
  result.arches = chosen;
  result.winners = winners.size();
  result.source_measurements = 0;
  for (const auto& p : src.problems()) result.source_measurements += std::size_t(p.measurements);
  return result;
}

std::vector<MergeResult> merge(const std::string& dst_path, const std::vector<std::string>& srcs) {
  if (srcs.empty()) throw Error("db merge: no source database given");
  if (dst_path.empty()) throw Error("db merge: empty destination path");
  std::vector<Database> sources;
  for (const auto& s : srcs) {
    if (same_file(s, dst_path)) throw Error(s + ": is the destination database; merge other files into it");
    sources.push_back(Database::open(s, Mode::ReadOnlyAnyVersion));
  }
  Database dst = Database::open(dst_path, Mode::ReadWrite);
  std::vector<MergeResult> results;
  for (auto& src : sources) {
    MergeResult r;
    r.source = src.path();
    dst.transaction("merge", [&] {
      r = MergeResult{src.path()};
      Copier copy(src, dst);
      for (const auto& d : src.devices()) copy.device(d.id);
      for (const auto& p : src.problem_specs()) copy.problem(p.id, p.problem);
      for (const auto& so : src.solutions()) copy.solution(so.id);
      src.for_each_code_object([&](const CodeObjectRecord& c) {
        copy.code_object(c);
        ++r.code_objects;
      });
      for (const auto& c : src.compiled("")) {  // compile-only candidates, with their figures
        dst.add_compiled(c.arch, copy.problem(c.problem_id), copy.solution(c.solution_id),
                         copy.code_object(c.code_object_id));
        if (!c.figures.empty()) dst.set_meta(kFiguresMetaPrefix + c.cache_key, c.figures);
      }
      std::map<std::int64_t, ProvenanceRecord> prov;
      for (auto& p : src.all_provenance()) prov[p.measurement_id] = std::move(p);
      std::set<std::string> sweeps;
      for (const auto& row : src.all_measurements()) {
        ++r.measurements;
        sweeps.insert(row.sweep);
        auto it = prov.find(row.id);
        auto [m, p] = copy.measurement(row, it == prov.end() ? std::nullopt : std::optional(it->second));
        const bool existed = dst.find_measurement(m.problem_id, m.solution_id, m.arch).has_value();
        if (dst.put_measurement_if_better(m, row.created_at, p))
          ++(existed ? r.replaced : r.added);
        else
          ++r.kept;
      }
      // The sweeps' search settings (`tiletune report` labels them), unless this file has its own.
      for (const auto& sweep : sweeps) {
        const std::string key = kSearchMetaPrefix + sweep;
        if (auto v = src.meta(key); v && !dst.meta(key)) dst.set_meta(key, *v);
        add_shard_counts(dst, sweep, shard_counts(src, sweep));  // `tune --finish-shards` checks them
      }
    });
    results.push_back(r);
  }
  return results;
}

}  // namespace tiletune::db
