#include "tools/json_output.h"

#include <cmath>
#include <cstdio>

namespace tiletune::tools {
namespace {

// The subcommands the command line named, outermost first ("db", "winners").
std::vector<const CLI::App*> chain(const CLI::App& app) {
  std::vector<const CLI::App*> out;
  for (const CLI::App* at = &app;;) {
    const auto subs = at->get_subcommands();
    if (subs.empty()) return out;
    at = subs.front();
    out.push_back(at);
  }
}

std::string command_name(const CLI::App& cmd) {
  std::string name;
  for (const CLI::App* at = &cmd; at && at->get_parent(); at = at->get_parent())
    name = at->get_name() + (name.empty() ? "" : " " + name);
  return name;
}

}  // namespace

void add_json_flag(CLI::App* cmd, bool& json) {
  cmd->add_flag("--json", json,
                "print one JSON document on stdout instead of text (docs/cli-json.md); progress and diagnostics "
                "stay on stderr");
}

Json json_document(const CLI::App& cmd, int exit_code) {
  Json doc;
  doc["command"] = command_name(cmd);
  doc["schema"] = kJsonSchema;
  doc["exit_code"] = exit_code;
  return doc;
}

void print_json(const Json& doc) {
  // Replacing invalid UTF-8 (a compiler's log may carry any bytes) instead of throwing.
  const std::string text = doc.dump(2, ' ', false, Json::error_handler_t::replace);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

Json number_or_null(double v) {
  if (!std::isfinite(v) || v < 0) return nullptr;
  return v;
}

int report_failure(const CLI::App& app, const char* what, const std::string& message, int exit_code) {
  std::fprintf(stderr, "tiletune: %s: %s\n", what, message.c_str());
  const std::vector<const CLI::App*> named = chain(app);
  for (const CLI::App* cmd : named) {
    const CLI::Option* json = cmd->get_option_no_throw("--json");
    if (json && json->count() > 0) {
      Json doc = json_document(*named.back(), exit_code);
      doc["error"] = message;
      print_json(doc);
      break;
    }
  }
  return exit_code;
}

}  // namespace tiletune::tools
