#include "tools/import/workload.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "common/error.h"

namespace tiletune::imports {

const char* to_string(SkipKind k) {
  switch (k) {
    case SkipKind::Unparseable: return "unparseable";
    case SkipKind::NotGemm: return "not a GEMM or convolution";
    case SkipKind::Unsupported: return "not computed by tiletune";
    case SkipKind::Invalid: return "invalid";
  }
  return "?";
}

std::size_t FileReport::skipped_count() const {
  std::size_t n = 0;
  for (const auto& [kind, s] : skipped) n += s.count;
  return n;
}

namespace {

// Long log lines would drown the report: the first example is cut to this many characters.
constexpr std::size_t kExampleChars = 160;

std::string shortened(const std::string& s) {
  return s.size() <= kExampleChars ? s : s.substr(0, kExampleChars) + "...";
}

}  // namespace

std::string FileReport::summary() const {
  std::string s = file + ": " + std::to_string(calls) + " calls imported";
  if (!skipped.empty()) s += ", " + std::to_string(skipped_count()) + " " + unit + "s skipped";
  return s + "\n" + details();
}

std::string FileReport::details() const {
  std::string s;
  for (const auto& [kind, k] : skipped)
    s += "  " + std::to_string(k.count) + " " + to_string(kind) + "; the first, " + unit + " " +
         std::to_string(k.first_where) + ": " + k.first_detail + ": " + shortened(k.first_text) + "\n";
  for (const auto& [what, count] : notes) s += "  note: " + std::to_string(count) + " " + what + "\n";
  return s;
}

void Workload::add(const Problem& problem, std::int64_t calls, const std::string& where) {
  const Problem p = problem.canonical();
  const auto [it, added] = index_.emplace(p.key(), entries_.size());
  if (added) entries_.push_back({p, 0, where});
  entries_[it->second].calls += calls;
}

std::int64_t Workload::calls() const {
  std::int64_t n = 0;
  for (const Entry& e : entries_) n += e.calls;
  return n;
}

void Sink::take(std::size_t where, const std::string& text, const std::function<std::vector<Problem>()>& read) {
  auto skip = [&](SkipKind kind, const std::string& detail) {
    FileReport::Skipped& s = report_.skipped[kind];
    if (s.count++ == 0) {
      s.first_where = where;
      s.first_detail = detail;
      s.first_text = text;
    }
  };
  std::vector<Problem> problems;
  try {
    problems = read();
    for (const Problem& p : problems) p.validate();
  } catch (const Skip& s) {
    return skip(s.kind, s.detail);
  } catch (const Error& e) {
    return skip(SkipKind::Invalid, e.what());
  }
  const std::string place = report_.file + ":" + (report_.unit == "line" ? "" : report_.unit + " ") + std::to_string(where);
  for (const Problem& p : problems) {
    workload_.add(p, 1, place);
    ++report_.calls;
  }
}

void for_each_line(const std::string& text, Sink& sink, const std::function<std::vector<Problem>(const std::string&)>& read) {
  std::size_t number = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    sink.take(number, line, [&] { return read(line); });
  }
}

std::int64_t parse_int(const std::string& s, const std::string& what) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw Skip{SkipKind::Unparseable, what + " is not an integer: '" + s + "'"};
  return v;
}

double parse_number(const std::string& s, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
    throw Skip{SkipKind::Unparseable, what + " is not a number: '" + s + "'"};
  return v;
}

}  // namespace tiletune::imports
