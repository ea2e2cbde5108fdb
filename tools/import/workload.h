// `tiletune import`: the problems read from a workload's logs, each once with how often the
// workload ran it, and per file what was left out and why.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "solutions/problem.h"

namespace tiletune::imports {

// Settings that fill in what a format does not record.
struct ImportOptions {
  // f32 GEMMs whose source does not name a compute type (PyTorch traces, TunableOp files) are taken
  // as computed on tf32 tensor cores, as PyTorch runs them under allow_tf32: the key differs.
  bool tf32 = false;
};

// Why a line or event gave no problem.
enum class SkipKind {
  Unparseable,  // not in the format, or a field that does not read
  NotGemm,      // in the format, but neither a GEMM nor a convolution (axpy, the bias gradient alone)
  Unsupported,  // a GEMM or convolution tiletune does not compute (f64, fp8, broadcast batches, ...)
  Invalid,      // read, but the problem fails validation (an ld smaller than its matrix, ...)
};
const char* to_string(SkipKind k);

// Thrown by a format's reader for the line or event at hand; the caller records it and goes on.
struct Skip {
  SkipKind kind;
  std::string detail;
};

struct FileReport {
  struct Skipped {
    std::size_t count = 0;
    std::size_t first_where = 0;  // line or event number of the first one
    std::string first_detail, first_text;
  };
  std::string file;
  std::string unit = "line";  // what `where` counts: "line" or "event"
  std::size_t calls = 0;      // imported
  std::map<SkipKind, Skipped> skipped;
  std::map<std::string, std::size_t> notes;  // assumptions made, with how often

  std::size_t skipped_count() const;
  // A few lines for stderr: what was imported, each kind of skip with its first example, the notes.
  std::string summary() const;
  std::string details() const;  // the summary's lines after the first
};

class Workload {
 public:
  struct Entry {
    Problem problem;  // canonical
    std::int64_t calls = 0;
    std::string first_seen;  // "file:line" or "file:event N"
  };
  void add(const Problem& problem, std::int64_t calls, const std::string& where);
  const std::vector<Entry>& entries() const { return entries_; }
  std::int64_t calls() const;

 private:
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> index_;  // problem key -> entry
};

// What a format's reader writes to: the file's report and the workload.
class Sink {
 public:
  Sink(Workload& workload, FileReport& report, const ImportOptions& options)
      : workload_(workload), report_(report), options_(options) {}
  const ImportOptions& options() const { return options_; }
  FileReport& report() { return report_; }

  // Runs `read` for the line or event number `where` (its text for the report): the problems it
  // returns are validated and added, one call each; a Skip it throws, or a problem that fails
  // validation, is counted instead.
  void take(std::size_t where, const std::string& text, const std::function<std::vector<Problem>()>& read);
  void note(const std::string& assumption) { ++report_.notes[assumption]; }

 private:
  Workload& workload_;
  FileReport& report_;
  const ImportOptions& options_;
};

// take() for each non-blank line of `text` (line numbers from 1, '\r' dropped).
void for_each_line(const std::string& text, Sink& sink, const std::function<std::vector<Problem>(const std::string&)>& read);

// Strict integer and number readers for fields of logs: Skip (Unparseable) naming `what` otherwise.
std::int64_t parse_int(const std::string& s, const std::string& what);
double parse_number(const std::string& s, const std::string& what);

}  // namespace tiletune::imports
