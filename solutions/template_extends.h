// A template JSON's "extends": the template it builds on, named by file (docs/templates.md).
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace tiletune {

// `spec` (the JSON of the file `where`) with its "extends" chain resolved: the parent is the file
// of that name in `files` (the templates' folder: file name -> text), read the same way, and the
// result is the child's keys merged over the parent's (merge_template_json). Without "extends",
// `spec` as it is. Throws Error, naming `where`, for an absolute path or one leaving the folder, a
// missing or unreadable parent, a cycle, or a child without a name of its own.
nlohmann::ordered_json resolve_extends(const std::string& where, const nlohmann::ordered_json& spec,
                                       const std::map<std::string, std::string>& files);

// `child` over `parent`: two objects merge key by key, recursively; any other child value replaces
// the parent's, and a null removes the key. Keys only the child has come first, in its order;
// the parent's keys follow in theirs, each with the child's value where it gives one.
nlohmann::ordered_json merge_template_json(const nlohmann::ordered_json& parent, const nlohmann::ordered_json& child);

}  // namespace tiletune
