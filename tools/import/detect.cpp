// Format names, telling a file's format from its content, and reading one file.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/error.h"
#include "tools/import/formats.h"

namespace tiletune::imports {
namespace {

struct Named {
  Format format;
  const char* name;
};
constexpr Named kFormats[] = {{Format::RocBlas, "rocblas"},
                              {Format::HipBlasLt, "hipblaslt"},
                              {Format::TunableOp, "tunableop"},
                              {Format::TorchTrace, "torch-trace"}};

// A log holds other lines before its first GEMM (a program's own output, other functions' calls):
// detection reads this far before it gives up.
constexpr std::size_t kDetectLines = 1000;

}  // namespace

const char* to_string(Format f) {
  for (const Named& n : kFormats)
    if (n.format == f) return n.name;
  return "?";
}

std::vector<std::string> format_names() {
  std::vector<std::string> names;
  for (const Named& n : kFormats) names.push_back(n.name);
  return names;
}

Format format_from_string(const std::string& name) {
  for (const Named& n : kFormats)
    if (name == n.name) return n.format;
  std::string list;
  for (const Named& n : kFormats) list += std::string(list.empty() ? "" : ", ") + n.name;
  throw Error("unknown import format '" + name + "' (known: " + list + ")");
}

Format detect_format(const std::string& text, const std::string& file) {
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b)
    throw Error(file + " is gzip-compressed: decompress it first (gunzip)");
  // JSON: a trace object, or a bare array of events (a log line may also start with '[', a prefix).
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return Format::TorchTrace;
  if (first != std::string::npos && text[first] == '[') {
    const std::size_t next = text.find_first_not_of(" \t\r\n", first + 1);
    if (next == std::string::npos || text[next] == '{' || text[next] == ']') return Format::TorchTrace;
  }
  std::size_t start = 0;
  for (std::size_t line = 0; line < kDetectLines && start < text.size(); ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string l = text.substr(start, end - start);
    start = end + 1;
    if (l.find("hipblaslt-bench") != std::string::npos) return Format::HipBlasLt;
    if (l.find("rocblas-bench") != std::string::npos) return Format::RocBlas;
    if (l.rfind("Validator,", 0) == 0 || l.substr(0, l.find(',')).find("TunableOp_") != std::string::npos)
      return Format::TunableOp;
  }
  throw Error("cannot tell the format of " + file + ": it is not JSON (a PyTorch trace), and none of its first " +
              std::to_string(kDetectLines) +
              " lines is a rocblas-bench or hipblaslt-bench command line or a TunableOp row; name it with --format");
}

FileReport import_file(const std::string& path, const Format* format, const ImportOptions& options, Workload& workload) {
  std::error_code ec;
  std::ifstream in;
  if (std::filesystem::is_regular_file(path, ec)) in.open(path, std::ios::binary);
  if (!in.is_open() || !in) throw Error("cannot read " + path + " (not a readable file)");
  const std::string text(std::istreambuf_iterator<char>(in), {});
  const Format f = format ? *format : detect_format(text, path);
  FileReport report;
  report.file = path;
  Sink sink(workload, report, options);
  switch (f) {
    case Format::RocBlas: read_rocblas_log(text, sink); break;
    case Format::HipBlasLt: read_hipblaslt_log(text, sink); break;
    case Format::TunableOp: read_tunableop_csv(text, sink); break;
    case Format::TorchTrace: read_torch_trace(text, sink); break;
  }
  if (report.calls == 0) {
    std::string why = report.skipped.empty() ? " (no GEMM or convolution in it)" : ":\n" + report.details();
    if (!why.empty() && why.back() == '\n') why.pop_back();
    throw Error(path + ": nothing to import, read as " + to_string(f) + why);
  }
  return report;
}

}  // namespace tiletune::imports
