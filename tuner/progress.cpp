#include "tuner/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace tiletune::tuner {

Progress::Progress(std::FILE* out)
    : out_(out), tty_(::isatty(::fileno(out))), start_(Clock::now()), last_print_(start_) {}

std::size_t Progress::add_stage(std::string name, std::size_t total, std::size_t feeder) {
  std::lock_guard<std::mutex> lock(mu_);
  Stage s;
  s.name = std::move(name);
  s.total = total;
  s.feeder = feeder;
  s.begin = s.last_step = start_;
  stages_.push_back(std::move(s));
  return stages_.size() - 1;
}

void Progress::begin(std::size_t stage) {
  std::lock_guard<std::mutex> lock(mu_);
  Stage& s = stages_.at(stage);
  s.begin = s.last_step = Clock::now();
  s.waited_s = 0;
}

void Progress::waited(std::size_t stage, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  stages_.at(stage).waited_s += seconds;
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

StageCounts Progress::counts(const Stage& s, Clock::time_point now) const {
  const bool complete = s.done >= s.total;
  const double wall = std::chrono::duration<double>((complete ? s.last_step : now) - s.begin).count();
  return {s.done, s.total, std::max(0.0, wall - s.waited_s)};
}

std::string Progress::stage_text(const Stage& s, Clock::time_point now, bool final) const {
  // The rate shown is over the stage's wall time (what a user can check against a clock); the
  // time left is over its active time (tuner/eta.h).
  const bool complete = s.done >= s.total;
  const double seconds = std::chrono::duration<double>((complete ? s.last_step : now) - s.begin).count();
  const double rate = seconds > 0 ? double(s.done) / seconds : 0;
  char text[200];
  if (final || complete) {
    std::snprintf(text, sizeof text, "[%s] %zu/%zu  %.1f/s  took %.0fs", s.name.c_str(), s.done, s.total, rate, seconds);
    return text;
  }
  const Stage* feeder = s.feeder < stages_.size() ? &stages_[s.feeder] : nullptr;
  const StageCounts feeder_counts = feeder ? counts(*feeder, now) : StageCounts{};
  const Eta eta = estimate_eta(counts(s, now), feeder ? &feeder_counts : nullptr);
  std::string left;
  if (eta.seconds >= 0) left = "eta " + std::to_string(std::llround(eta.seconds)) + "s";
  if (eta.feeder_bound) left += (left.empty() ? "waiting on " : " (waiting on ") + feeder->name + (left.empty() ? "" : ")");
  if (left.empty()) left = "eta ?";
  std::snprintf(text, sizeof text, "[%s] %zu/%zu  %.1f/s  %s", s.name.c_str(), s.done, s.total, rate, left.c_str());
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
