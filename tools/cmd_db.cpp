#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>

#include "common/error.h"
#include "db/database.h"
#include "db/explain.h"
#include "db/integrity.h"
#include "db/ship.h"
#include "db/signing.h"
#include "tools/commands.h"
#include "tools/json_output.h"

namespace tiletune::tools {
namespace {

struct Args {
  std::string db, arch, problem;
  std::string src, dst;
  std::vector<std::string> arches, srcs;
  std::string sign_key, trusted_key, private_key, public_key;
  bool force = false, json = false;
  int generic = db::kGenericPerClass;
};

// A measurement's fields in every document that lists measurements.
Json measurement_json(const db::MeasurementRow& m) {
  return {{"id", m.id},
          {"arch", m.arch},
          {"status", db::to_string(m.status)},
          {"kernel", m.kernel_name},
          {"median_ms", number_or_null(m.median_ms)},
          {"min_ms", number_or_null(m.min_ms)},
          {"max_ms", number_or_null(m.max_ms)},
          {"tflops", number_or_null(m.tflops)},
          {"rel_error", number_or_null(m.rel_error)},
          {"reason", m.reason},
          {"sweep", m.sweep},
          {"created_at", m.created_at}};
}

std::string human_bytes(std::uintmax_t n) {
  char buf[64];
  if (n >= (std::uintmax_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(1 << 30));
  else if (n >= (std::uintmax_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(n) / double(1 << 20));
  else if (n >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(n) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)n);
  return buf;
}

int pack(const CLI::App& cmd, const Args& a) {
  std::optional<db::Key> key;
  if (!a.sign_key.empty()) key = db::Key::load_private(a.sign_key);
  db::PackResult r = db::pack(a.src, a.dst, a.arches, a.force, key ? &*key : nullptr, a.generic);
  if (a.json) {
    Json doc = json_document(cmd, kExitOk);
    doc["source"] = a.src;
    doc["destination"] = a.dst;
    doc["arches"] = r.arches;
    doc["winners"] = r.winners;
    doc["generic"] = r.generic;
    doc["compiled_unmeasured"] = r.compiled;
    doc["code_objects"] = r.code_objects;
    doc["source_measurements"] = r.source_measurements;
    doc["source_bytes"] = r.source_bytes;
    doc["packed_bytes"] = r.packed_bytes;
    doc["signing_key"] = key ? Json(key->id()) : Json(nullptr);
    doc["signed_objects"] = r.signed_objects;
    doc["unsigned_objects"] = r.unsigned_objects;
    print_json(doc);
    return kExitOk;
  }
  std::string arches;
  for (const auto& x : r.arches) arches += (arches.empty() ? "" : ", ") + x;
  std::printf("packed %zu winners and %zu generic kernels (%zu with code objects) of %s\n", r.winners, r.generic,
              r.code_objects - r.compiled, arches.c_str());
  if (r.compiled)
    std::printf("  and %zu compile-only candidates (the model's first per problem without a winner), UNMEASURED: "
                "compiled, never run or timed; the runtime does not serve them (see db explain)\n",
                r.compiled);
  std::printf("  %-40s %12s  (%zu measurements)\n", a.src.c_str(), human_bytes(r.source_bytes).c_str(), r.source_measurements);
  std::printf("  %-40s %12s  (%.1f%% of the source; opens read-only)\n", a.dst.c_str(), human_bytes(r.packed_bytes).c_str(),
              r.source_bytes ? 100.0 * double(r.packed_bytes) / double(r.source_bytes) : 0.0);
  if (key) std::printf("  %zu code objects signed by key %s\n", r.signed_objects, key->id().c_str());
  if (r.unsigned_objects)
    std::printf("  %zu code objects not signed: they do not record what they were compiled as (tuned before schema "
                "5); a runtime trusting the key builds them from source\n",
                r.unsigned_objects);
  return kExitOk;
}

int keygen(const CLI::App& cmd, const Args& a) {
  db::write_key_pair(a.private_key, a.public_key);
  if (a.json) {
    Json doc = json_document(cmd, kExitOk);
    doc["key_id"] = db::Key::load_public(a.public_key).id();
    doc["private_key"] = a.private_key;
    doc["public_key"] = a.public_key;
    print_json(doc);
    return kExitOk;
  }
  std::printf("wrote the Ed25519 key %s: private %s (keep it; it signs what `db pack --sign` ships), public %s "
              "(hand it to the runtimes: TILETUNE_TRUSTED_KEY)\n",
              db::Key::load_public(a.public_key).id().c_str(), a.private_key.c_str(), a.public_key.c_str());
  return kExitOk;
}

int merge(const CLI::App& cmd, const Args& a) {
  const std::vector<db::MergeResult> results = db::merge(a.dst, a.srcs);
  db::Database d = db::Database::open(a.dst, db::Mode::ReadOnly);
  if (a.json) {
    Json doc = json_document(cmd, kExitOk);
    doc["destination"] = a.dst;
    Json sources = Json::array();
    for (const auto& r : results)
      sources.push_back({{"source", r.source}, {"measurements", r.measurements}, {"added", r.added},
                         {"replaced", r.replaced}, {"kept", r.kept}, {"code_objects", r.code_objects}});
    doc["sources"] = sources;
    doc["problems"] = d.problems().size();
    doc["winners"] = d.winners("").size();
    print_json(doc);
    return kExitOk;
  }
  for (const auto& r : results)
    std::printf("%s: %zu measurements: %zu added, %zu replaced (better), %zu kept; %zu code objects\n", r.source.c_str(),
                r.measurements, r.added, r.replaced, r.kept, r.code_objects);
  std::printf("%s: %zu problems, %zu winners\n", a.dst.c_str(), d.problems().size(), d.winners("").size());
  return kExitOk;
}

int explain(const CLI::App& cmd, const Args& a) {
  std::string text = a.problem;
  if (!text.empty() && text[0] == '@') {  // --problem @file.json
    std::ifstream in(text.substr(1));
    if (!in) throw Error("cannot read the problem file " + text.substr(1));
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  Problem p = db::parse_problem_json(text);
  db::Database d = db::Database::open(a.db, db::Mode::ReadOnly);  // as the runtime opens it
  db::Explanation e = db::explain(d, p, a.arch);
  if (a.json) {
    Json doc = json_document(cmd, kExitOk);
    doc["database"] = a.db;
    doc.update(db::to_json(e));
    print_json(doc);
    return kExitOk;
  }
  std::fputs(db::format(e).c_str(), stdout);
  return kExitOk;
}

int list_problems(const CLI::App& cmd, const Args& a, db::Database& d) {
  if (a.json) {
    Json doc = json_document(cmd, kExitOk);
    doc["database"] = a.db;
    Json rows = Json::array();
    for (const auto& p : d.problems())
      rows.push_back({{"id", p.id}, {"key", p.key}, {"m", p.m}, {"n", p.n}, {"k", p.k}, {"batch", p.batch},
                      {"measurements", p.measurements}});
    doc["problems"] = rows;
    print_json(doc);
    return kExitOk;
  }
  std::printf("%6s %8s %8s %8s %6s %6s  %s\n", "id", "m", "n", "k", "batch", "meas", "key");
  for (const auto& p : d.problems())
    std::printf("%6lld %8lld %8lld %8lld %6lld %6lld  %s\n", (long long)p.id, (long long)p.m, (long long)p.n,
                (long long)p.k, (long long)p.batch, (long long)p.measurements, p.key.c_str());
  return kExitOk;
}

int list_winners(const CLI::App& cmd, const Args& a, db::Database& d) {
  const std::string& arch = a.arch;
  if (a.json) {
    Json doc = json_document(cmd, kExitOk);
    doc["database"] = a.db;
    doc["arch"] = arch.empty() ? Json(nullptr) : Json(arch);
    Json rows = Json::array();
    for (const auto& w : d.winners(arch))
      rows.push_back({{"arch", w.arch},
                      {"problem_id", w.problem_id},
                      {"problem", w.problem_key},
                      {"kernel", w.solution.kernel_name()},
                      {"template", w.solution.template_name},
                      {"params", w.solution.params},
                      {"ms", number_or_null(w.median_ms)},
                      {"tflops", number_or_null(w.tflops)},
                      {"vendor_ms", number_or_null(w.vendor_ms)},
                      {"vendor_default_ms", number_or_null(w.vendor_default_ms)},
                      {"speedup", number_or_null(w.vendor_ratio())},
                      {"measurement_id", w.measurement_id},
                      {"code_object_id", w.code_object_id ? Json(w.code_object_id) : Json(nullptr)}});
    doc["winners"] = rows;
    print_json(doc);
    return kExitOk;
  }
  std::printf("%-12s %10s %10s  %-60s %s\n", "arch", "ms", "TFLOP/s", "problem", "kernel");
  for (const auto& w : d.winners(arch))
    std::printf("%-12s %10.4f %10.3f  %-60s %s\n", w.arch.c_str(), w.median_ms, w.tflops, w.problem_key.c_str(),
                w.solution.kernel_name().c_str());
  return kExitOk;
}

int show_problem(const CLI::App& cmd, const Args& a, db::Database& d) {
  const std::string& which = a.problem;
  std::optional<std::int64_t> id = d.find_problem(which);
  if (!id) {
    try {
      id = std::stoll(which);
    } catch (const std::exception&) {
      throw Error("no problem with key or id '" + which + "' in " + d.path());
    }
  }
  auto rows = d.measurements(*id);
  if (rows.empty()) throw Error("problem " + which + " has no measurements in " + d.path());
  if (a.json) {
    Json doc = json_document(cmd, kExitOk);
    doc["database"] = a.db;
    doc["problem_id"] = *id;
    Json list = Json::array();
    for (const auto& m : rows) list.push_back(measurement_json(m));
    doc["measurements"] = list;
    print_json(doc);
    return kExitOk;
  }
  std::printf("problem %lld\n", (long long)*id);
  std::printf("%-12s %-14s %10s %10s %10s %10s %10s  %s\n", "arch", "status", "median ms", "min ms", "max ms",
              "TFLOP/s", "rel err", "kernel / reason");
  for (const auto& m : rows) {
    std::printf("%-12s %-14s %10.4f %10.4f %10.4f %10.3f %10.2e  %s", m.arch.c_str(), db::to_string(m.status), m.median_ms,
                m.min_ms, m.max_ms, m.tflops, m.rel_error, m.kernel_name.c_str());
    if (!m.reason.empty()) std::printf("  [%s]", m.reason.substr(0, 160).c_str());
    std::printf("\n");
  }
  return kExitOk;
}

// Exits kExitError when the file or any code object is not sound: a script can gate on it.
int check_database(const CLI::App& cmd, const Args& a, db::Database& d) {
  const std::string result = d.integrity_check();
  std::vector<std::string> faults = db::verify_code_objects(d);
  if (!a.trusted_key.empty()) {
    const std::vector<std::string> unsigned_ = db::verify_signatures(d, db::Key::load_public(a.trusted_key));
    faults.insert(faults.end(), unsigned_.begin(), unsigned_.end());
  }
  const int code = result == "ok" && faults.empty() ? kExitOk : kExitError;
  if (a.json) {
    Json doc = json_document(cmd, code);
    doc["database"] = a.db;
    doc["schema_version"] = d.schema_version();
    doc["integrity"] = result;
    doc["faults"] = faults;
    doc["ok"] = code == kExitOk;
    print_json(doc);
    return code;
  }
  std::printf("%s: schema version %d, integrity %s, code objects %s\n", a.db.c_str(), d.schema_version(), result.c_str(),
              faults.empty() ? "ok" : (std::to_string(faults.size()) + " faults").c_str());
  for (const auto& f : faults) std::printf("  %s\n", f.c_str());
  return code;
}

}  // namespace

Run add_db(CLI::App& app) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("db", "inspect, pack, merge or explain solution databases");
  cmd->require_subcommand(1);
  auto* problems = cmd->add_subcommand("problems", "list the problems with their measurement counts");
  auto* winners = cmd->add_subcommand("winners", "list the winner of every problem and arch");
  auto* show = cmd->add_subcommand("show", "every measurement of one problem, fastest first");
  auto* check = cmd->add_subcommand("check", "schema version, PRAGMA integrity_check, and every code object's SHA-256 and "
                                              "the instantiation it was compiled as against its solution");
  for (auto* sub : {problems, winners, show, check}) sub->add_option("db", a->db, "database file")->required();
  winners->add_option("--arch", a->arch, "only this arch (e.g. sm_90a)");
  show->add_option("problem", a->problem, "problem id or key (see `db problems`)")->required();

  auto* pack_cmd = cmd->add_subcommand("pack", "write a small read-only database of the winners, to ship with a trainer");
  pack_cmd->add_option("src", a->src, "tuning database")->required();
  pack_cmd->add_option("dst", a->dst, "database to write")->required();
  pack_cmd->add_option("--arch", a->arches,
                       "only the winners (and compile-only candidates) of this arch (repeatable; default: all)");
  pack_cmd->add_flag("--force", a->force, "overwrite dst if it exists");
  pack_cmd->add_option("--sign", a->sign_key, "sign every code object shipped with this Ed25519 private key (PEM)");
  pack_cmd->add_option("--generic", a->generic,
                       "pool up to this many generic kernels per class of problems (types, layout) and arch: those "
                       "nearest the best over the class's measured problems, ranked by the runtime's model for "
                       "problems far from any tuned one where no vendor library serves them; 0: none")
      ->check(CLI::NonNegativeNumber);
  check->add_option("--trusted-key", a->trusted_key,
                    "also check that every code object is signed by this Ed25519 public key (PEM), as a runtime "
                    "given TILETUNE_TRUSTED_KEY does");

  auto* keygen_cmd = cmd->add_subcommand("keygen", "make an Ed25519 key pair for signed databases (db pack --sign)");
  keygen_cmd->add_option("private", a->private_key, "private key file to write (mode 0600)")->required();
  keygen_cmd->add_option("public", a->public_key, "public key file to write")->required();

  auto* merge_cmd = cmd->add_subcommand("merge", "merge the sweeps of other databases into dst (created if missing)");
  merge_cmd->add_option("dst", a->dst, "database to merge into")->required();
  merge_cmd->add_option("src", a->srcs, "databases to merge from")->required();

  auto* explain_cmd = cmd->add_subcommand("explain", "which kernel the runtime would run for a problem, and why");
  explain_cmd->add_option("db", a->db, "database file")->required();
  explain_cmd->add_option("--problem", a->problem,
                          "the problem as JSON (fields of a tuning config's problem), or @FILE")->required();
  explain_cmd->add_option("--arch", a->arch, "arch (default: the database's only arch)");

  for (auto* sub : {problems, winners, show, check, pack_cmd, keygen_cmd, merge_cmd, explain_cmd})
    add_json_flag(sub, a->json);

  return [a, problems, winners, show, check, pack_cmd, merge_cmd, explain_cmd, keygen_cmd] {
    if (*pack_cmd) return pack(*pack_cmd, *a);
    if (*keygen_cmd) return keygen(*keygen_cmd, *a);
    if (*merge_cmd) return merge(*merge_cmd, *a);
    if (*explain_cmd) return explain(*explain_cmd, *a);
    db::Database d = db::Database::open(a->db, db::Mode::ReadOnly);
    if (*problems) return list_problems(*problems, *a, d);
    if (*winners) return list_winners(*winners, *a, d);
    if (*show) return show_problem(*show, *a, d);
    if (*check) return check_database(*check, *a, d);
    return kExitInternal;  // require_subcommand(1) lets no other case through
  };
}

}  // namespace tiletune::tools
