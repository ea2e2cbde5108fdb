#include "tools/tune_json.h"

#include "tools/commands.h"
#include "tools/json_output.h"

namespace tiletune::tools {
namespace {

const char* status_name(int exit_code) {
  switch (exit_code) {
    case kExitOk: return "ok";
    case kExitIncomplete: return "incomplete";
    case kExitUncovered: return "uncovered";
    default: return "error";
  }
}

// The summary's per-problem notes are "key: why"; the why of `key`, if it has one.
const std::string* note_of(const std::vector<std::string>& notes, const std::string& key) {
  for (const auto& n : notes)
    if (n.size() > key.size() + 1 && n.compare(0, key.size(), key) == 0 && n.compare(key.size(), 2, ": ") == 0)
      return &n;
  return nullptr;
}

Json problem_json(const Problem& p, const tuner::SweepSummary& s) {
  const std::string key = p.key();
  Json j{{"key", key}, {"shape", p.describe()}, {"status", "tuned"}, {"note", nullptr}, {"winner", nullptr}};
  for (const auto& w : s.winners) {
    if (w.problem.key() != key) continue;
    const double speedup = w.vendor_ms > 0 && w.median_ms > 0 ? w.vendor_ms / w.median_ms : -1;
    j["winner"] = {{"kernel", w.kernel_name},           {"vendor", w.vendor},
                   {"ms", number_or_null(w.median_ms)}, {"tflops", number_or_null(w.tflops)},
                   {"vendor_ms", number_or_null(w.vendor_ms)}, {"speedup", number_or_null(speedup)}};
  }
  // Worst first: a problem can be both uncovered and without a winner.
  const std::pair<const std::vector<std::string>*, const char*> states[] = {
      {&s.unprepared, "unprepared"}, {&s.uncompiled, "uncompiled"}, {&s.no_candidate, "no_candidate"}};
  for (const auto& [notes, name] : states)
    if (const std::string* n = note_of(*notes, key)) {
      j["status"] = name;
      j["note"] = n->substr(key.size() + 2);
      return j;
    }
  if (j["winner"].is_null()) j["status"] = "no_winner";
  return j;
}

}  // namespace

Json tune_json(const CLI::App& cmd, int exit_code, const tuner::SweepSummary& s,
                         const tuner::TuningConfig& config, const tuner::SweepOptions& o) {
  Json doc = json_document(cmd, exit_code);
  doc["status"] = status_name(exit_code);
  doc["config"] = config.name;
  doc["database"] = o.db_path;
  doc["device"] = {{"backend", gpu::to_string(o.backend)}, {"arch", s.arch}, {"name", s.device_name}};
  doc["vendor"] = s.vendor.empty() ? Json(nullptr) : Json(s.vendor);
  doc["search"] = {{"strategy", config.search.strategy},
                   {"budget", config.search.budget},
                   {"budget_seconds", config.search.budget_seconds},
                   {"seed", config.search.seed}};
  doc["candidates"] = {
      {"enumerated", s.total},         {"pruned", s.pruned},
      {"not_selected", s.not_selected}, {"already_measured", s.already_done},
      {"retried", s.retried},           {"compiled", s.compiled},
      {"compile_cached", s.compile_cached}, {"compile_failed", s.compile_failed},
      {"recompiled", s.recompiled},     {"measured", s.benchmarked},
      {"invalid", s.invalid},           {"launch_failed", s.launch_failed},
      {"crashed", s.crashed},           {"timed_out", s.timed_out},
      {"over_budget", s.over_budget},   {"short_timed", s.short_timed},
      {"fully_timed", s.fully_timed},   {"promoted", s.promoted},
      {"remeasured", s.remeasured},
      {"head_to_head", s.head_to_head}};
  doc["pruned_by_reason"] = s.pruned_by_reason;
  doc["first_compile_error"] = s.first_compile_error.empty() ? Json(nullptr) : Json(s.first_compile_error);
  doc["seconds"] = {{"compile_wall", s.compile_wall_s}, {"compile_busy", s.compile_busy_s},
                    {"measure_wall", s.measure_wall_s}, {"prepare", s.prepare_s},
                    {"validate", s.validate_s},         {"timing", s.timing_s}};
  Json devices = Json::array();
  for (const auto& d : s.per_device)
    devices.push_back({{"device", d.device}, {"measured", d.measured}, {"worker_starts", d.worker_starts}});
  doc["per_device"] = devices;
  doc["devices_left_out"] = s.devices_left_out;
  Json problems = Json::array();
  for (const Problem& p : config.problems) problems.push_back(problem_json(p, s));
  doc["problems"] = problems;
  return doc;
}

}  // namespace tiletune::tools
