// The formats `tiletune import` reads, one reader each (a file of its own), and how a file's format
// is told from its content.
#pragma once
#include <string>
#include <vector>

#include "tools/import/workload.h"

namespace tiletune::imports {

enum class Format { RocBlas, HipBlasLt, TunableOp, TorchTrace };

const char* to_string(Format f);  // "rocblas", "hipblaslt", "tunableop", "torch-trace"
Format format_from_string(const std::string& name);  // Error listing the names otherwise
std::vector<std::string> format_names();

// The format of a file's text, from its first lines (or its JSON); Error naming `file` and what
// was looked for when none fits.
Format detect_format(const std::string& text, const std::string& file);

// Each reads a whole file's text into `sink`: one call per logged line or traced event.
void read_rocblas_log(const std::string& text, Sink& sink);
void read_hipblaslt_log(const std::string& text, Sink& sink);
void read_tunableop_csv(const std::string& text, Sink& sink);
void read_torch_trace(const std::string& text, Sink& sink);

// Reads the file at `path` (its format detected unless given) into `workload`. Error when the file
// cannot be read, its format cannot be told, or it gives no problem at all (the report then says
// why in its skips).
FileReport import_file(const std::string& path, const Format* format, const ImportOptions& options, Workload& workload);

}  // namespace tiletune::imports
