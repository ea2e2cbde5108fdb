// An imported workload as a tuning config for `tiletune tune`, in the form the runtime's recorder
// writes (runtime/runtime.cpp, merged_config): one entry per problem with "calls", most called first.
#pragma once
#include <string>
#include <vector>

#include "tools/import/workload.h"

namespace tiletune::imports {

struct ConfigMeta {
  std::string name = "imported";
  std::vector<std::string> files;      // what was imported, for the "about" text
  std::vector<std::string> templates;  // a "templates" section naming these; none: every builtin one
};

// The config's JSON text. It is loaded back with the parser `tiletune tune` uses before it is
// returned: Error for an unknown template, std::logic_error should the import itself be wrong.
std::string config_text(const Workload& workload, const ConfigMeta& meta);

}  // namespace tiletune::imports
