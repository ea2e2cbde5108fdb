// Progress of a sweep: a live line on a terminal, plain log lines otherwise (CI logs, pipes).
// Compiling and measuring run at the same time, so one line carries a counter per stage; any
// thread may step any stage. A stage's time left is tuner/eta.h's estimate.
#pragma once
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "tuner/eta.h"

namespace tiletune::tuner {

class Progress {
 public:
  explicit Progress(std::FILE* out = stderr);
  static constexpr std::size_t kNoFeeder = std::size_t(-1);
  // A counter shown on the line, e.g. "compile"; returns its id for step(). `feeder`: the stage
  // whose output it waits on (measure on compile), which bounds its time left.
  std::size_t add_stage(std::string name, std::size_t total, std::size_t feeder = kNoFeeder);
  // The stage's clock starts now (by default it runs from the Progress's construction): its rate
  // and time left count from here.
  void begin(std::size_t stage);
  // The stage spent `seconds` waiting on its feeder (per worker of the stage: a stage run by N
  // slots reports a slot's wait divided by N): not counted in its own pace.
  void waited(std::size_t stage, double seconds);
  // `note` replaces the line's trailing note, e.g. "best 41.2 TFLOP/s". A stage that reaches its
  // total gets a line of its own with how long it took.
  void step(std::size_t stage, const std::string& note = "");
  void finish(const std::string& summary = "");
  // A line of its own (e.g. a candidate that crashed), above the live line on a terminal.
  void message(const std::string& line);

 private:
  using Clock = std::chrono::steady_clock;
  struct Stage {
    std::string name;
    std::size_t total = 0, done = 0;
    std::size_t feeder = kNoFeeder;
    Clock::time_point begin, last_step;
    double waited_s = 0;
  };
  StageCounts counts(const Stage& s, Clock::time_point now) const;
  std::string stage_text(const Stage& s, Clock::time_point now, bool final) const;
  void print_locked(bool final);
  void message_locked(const std::string& line);

  std::mutex mu_;
  std::vector<Stage> stages_;
  std::string note_;
  std::FILE* out_;
  bool tty_;
  Clock::time_point start_, last_print_;
};

}  // namespace tiletune::tuner
