#include "tuner/progress.h"

#include <unistd.h>

namespace tiletune::tuner {

Progress::Progress(std::string stage, std::size_t total, std::FILE* out)
    : stage_(std::move(stage)), total_(total), out_(out), tty_(::isatty(::fileno(out))),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

void Progress::step(const std::string& note) {
  ++done_;
  if (!note.empty()) note_ = note;
  auto now = std::chrono::steady_clock::now();
  // A terminal gets every step; a log gets a line every 10 seconds at most.
  auto gap = std::chrono::duration<double>(now - last_).count();
  if (tty_ ? gap > 0.05 : gap > 10.0 || done_ == total_) {
    last_ = now;
    print(false);
  }
}

void Progress::finish(const std::string& summary) {
  if (!summary.empty()) note_ = summary;
  print(true);
}

void Progress::message(const std::string& line) {
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s\n", line.c_str());
    print(false);
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
  }
}

void Progress::print(bool final) {
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = s > 0 ? double(done_) / s : 0;
  double eta = rate > 0 ? double(total_ - done_) / rate : 0;
  char line[512];
  std::snprintf(line, sizeof line, "[%s] %zu/%zu  %.1f/s  %s %.0fs  %s", stage_.c_str(), done_, total_, rate,
                final ? "took" : "eta", final ? s : eta, note_.c_str());
  if (tty_) std::fprintf(out_, "\r\033[K%s%s", line, final ? "\n" : "");
  else std::fprintf(out_, "%s\n", line);
  std::fflush(out_);
}

}  // namespace tiletune::tuner
