#include "solutions/template_extends.h"

#include <filesystem>
#include <vector>

#include "common/error.h"

namespace tiletune {

// New keys first: what a child adds (the constraints that narrow the parent to the child's
// problems) is checked, and reported as a candidate's reason, before what it inherits. Overridden
// keys keep the parent's place, so a child's parameters enumerate in the parent's order.
nlohmann::ordered_json merge_template_json(const nlohmann::ordered_json& parent, const nlohmann::ordered_json& child) {
  if (!child.is_object()) return child;
  const nlohmann::ordered_json base = parent.is_object() ? parent : nlohmann::ordered_json::object();
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [key, value] : child.items())
    if (!base.contains(key) && !value.is_null()) out[key] = merge_template_json(nullptr, value);
  for (const auto& [key, value] : base.items()) {
    const auto c = child.find(key);
    if (c == child.end()) out[key] = value;
    else if (!c->is_null()) out[key] = merge_template_json(value, *c);
  }
  return out;
}

namespace {

// `chain`: the files read so far, the child first, for the cycle's message.
nlohmann::ordered_json resolve_chain(const std::string& where, const nlohmann::ordered_json& spec,
                               const std::map<std::string, std::string>& files, std::vector<std::string>& chain) {
  if (!spec.is_object() || !spec.contains("extends")) return spec;
  const auto& named = spec.at("extends");
  if (!named.is_string()) throw Error(where + ": \"extends\" must be a file name (a string)");
  const std::filesystem::path path(named.get<std::string>());
  // The templates' folder is flat (kernel_templates/, or the TILETUNE_TEMPLATE_PATH folders whose
  // files resolve by name, as "source" does), so a parent is a file name, at most "./name".
  if (path.is_absolute())
    throw Error(where + ": \"extends\": " + path.string() + " is an absolute path; name a file beside this one");
  const std::filesystem::path normal = path.lexically_normal();
  if (normal.empty() || normal == "." || *normal.begin() == ".." || normal.has_parent_path())
    throw Error(where + ": \"extends\": " + path.string() + " is not a file of the templates' folder; name a file beside this one");
  const std::string name = normal.string();
  for (const std::string& seen : chain)
    if (seen == name) {
      std::string cycle;
      for (const std::string& f : chain) cycle += f + " -> ";
      throw Error(where + ": \"extends\" makes a cycle: " + cycle + name);
    }
  const auto parent_text = files.find(name);
  if (parent_text == files.end())
    throw Error(where + ": \"extends\": no template " + name + " in the templates' folder");
  if (!spec.contains("name")) throw Error(where + ": a template that extends " + name + " needs its own \"name\"");
  nlohmann::ordered_json parent;
  try {
    parent = nlohmann::ordered_json::parse(parent_text->second);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": \"extends\": " + name + ": " + e.what());
  }
  if (!parent.is_object()) throw Error(where + ": \"extends\": " + name + " is not a JSON object");
  chain.push_back(name);
  parent = resolve_chain(where + " (extends " + name + ")", parent, files, chain);
  if (parent.contains("name") && parent.at("name") == spec.at("name"))
    throw Error(where + ": has the name of the template it extends, " + name);
  nlohmann::ordered_json child = spec;
  child.erase("extends");
  return merge_template_json(parent, child);
}

}  // namespace

nlohmann::ordered_json resolve_extends(const std::string& where, const nlohmann::ordered_json& spec,
                                       const std::map<std::string, std::string>& files) {
  std::vector<std::string> chain{std::filesystem::path(where).filename().string()};
  return resolve_chain(where, spec, files, chain);
}

}  // namespace tiletune
