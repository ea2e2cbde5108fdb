#include "db/integrity.h"

#include <map>

#include "common/error.h"
#include "db/database.h"
#include "solutions/kernel_template.h"

namespace tiletune::db {

std::vector<std::string> verify_code_objects(Database& db) {
  std::vector<std::string> faults;
  std::map<std::int64_t, std::string> compiled_from;
  db.for_each_code_object([&](const CodeObjectRecord& c) {
    if (std::string why = c.integrity_problem(); !why.empty())
      faults.push_back("code object " + std::to_string(c.id) + ": " + why);
    compiled_from[c.id] = c.compiled_from;
  });
  std::map<std::int64_t, Solution> solutions;
  for (auto& s : db.solutions()) solutions[s.id] = s.solution;
  std::map<std::int64_t, Problem> problems;
  for (auto& p : db.problem_specs()) problems.emplace(p.id, p.problem);
  for (const auto& m : db.all_measurements()) {
    if (!m.code_object_id) continue;
    auto from = compiled_from.find(m.code_object_id);
    if (from == compiled_from.end()) {
      faults.push_back("measurement " + std::to_string(m.id) + " names code object " + std::to_string(m.code_object_id) +
                       ", which is not in the file");
      continue;
    }
    if (from->second.empty()) continue;  // before schema 5: not recorded
    auto sol = solutions.find(m.solution_id);
    auto prob = problems.find(m.problem_id);
    if (sol == solutions.end() || prob == problems.end()) {
      faults.push_back("measurement " + std::to_string(m.id) + " names a solution or problem that is not in the file");
      continue;
    }
    const Solution& s = sol->second;
    const KernelTemplate* t = nullptr;
    for (const auto& c : builtin_templates())
      if (c.name() == s.template_name) t = &c;
    if (!t) continue;  // a template this build does not have: the runtime skips such winners anyway
    if (!t->compiled_as(from->second, s, prob->second))
      faults.push_back("measurement " + std::to_string(m.id) + " (" + s.kernel_name() + "): its code object " +
                       std::to_string(m.code_object_id) + " was compiled as " + from->second +
                       ", the solution's parameters say " + t->name_expression(s, prob->second));
  }
  return faults;
}

}  // namespace tiletune::db
