// Progress of a sweep: a live line on a terminal, plain log lines otherwise (CI logs, pipes).
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

namespace tiletune::tuner {

class Progress {
 public:
  Progress(std::string stage, std::size_t total, std::FILE* out = stderr);
  // `note` is appended, e.g. "best 41.2 TFLOP/s".
  void step(const std::string& note = "");
  void finish(const std::string& summary = "");
  // A line of its own (e.g. a candidate that crashed), above the live line on a terminal.
  void message(const std::string& line);

 private:
  void print(bool final);
  std::string stage_, note_;
  std::size_t total_, done_ = 0;
  std::FILE* out_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace tiletune::tuner
