#include "tuner/progress.h"

#include <unistd.h>

namespace tiletune::tuner {

Progress::Progress(std::FILE* out)
    : out_(out), tty_(::isatty(::fileno(out))), start_(Clock::now()), last_print_(start_) {}

std::size_t Progress::add_stage(std::string name, std::size_t total) {
  std::lock_guard<std::mutex> lock(mu_);
  stages_.push_back({std::move(name), total, 0, start_});
  return stages_.size() - 1;
}

void Progress::step(std::size_t stage, const std::string& note) {
  std::lock_guard<std::mutex> lock(mu_);
  Stage& s = stages_.at(stage);
  ++s.done;
  auto now = Clock::now();
  s.last_step = now;
  if (!note.empty()) note_ = note;
  if (s.done == s.total && stage + 1 < stages_.size()) {  // the last stage's comes with finish()
    message_locked(stage_text(s, now, true));
    return;
  }
  // A terminal gets every step (at most 20 a second); a log a line every 10 seconds at most.
  auto gap = std::chrono::duration<double>(now - last_print_).count();
  if (tty_ ? gap > 0.05 : gap > 10.0) print_locked(false);
}

void Progress::finish(const std::string& summary) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!summary.empty()) note_ = summary;
  print_locked(true);
}

void Progress::message(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  message_locked(line);
}

void Progress::message_locked(const std::string& line) {
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s\n", line.c_str());
    print_locked(false);
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
  }
}

std::string Progress::stage_text(const Stage& s, Clock::time_point now, bool final) const {
  // Rates count from the sweep's start, since the stages overlap: compiled per second and
  // measured per second are then directly comparable.
  const bool complete = s.done >= s.total;
  double seconds = std::chrono::duration<double>((complete ? s.last_step : now) - start_).count();
  double rate = seconds > 0 ? double(s.done) / seconds : 0;
  char text[200];
  if (final || complete)
    std::snprintf(text, sizeof text, "[%s] %zu/%zu  %.1f/s  took %.0fs", s.name.c_str(), s.done, s.total, rate, seconds);
  else
    std::snprintf(text, sizeof text, "[%s] %zu/%zu  %.1f/s  eta %.0fs", s.name.c_str(), s.done, s.total, rate,
                  rate > 0 ? double(s.total - s.done) / rate : 0.0);
  return text;
}

void Progress::print_locked(bool final) {
  auto now = Clock::now();
  last_print_ = now;
  std::string line;
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const Stage& s = stages_[i];
    if (!final && s.total > 0 && s.done >= s.total) continue;  // said when it completed
    if (final && i + 1 != stages_.size()) continue;            // the last stage's summary only
    line += stage_text(s, now, final) + "  ";
  }
  line += note_;
  if (tty_) std::fprintf(out_, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
  else std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

}  // namespace tiletune::tuner
