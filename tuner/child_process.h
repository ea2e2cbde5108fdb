// A helper program behind two pipes, one message per line: the measuring workers (worker.h) and
// the compile servers (compile_process.h) of a sweep. Started with fork + exec; it sees end of
// input when the sweep ends, however it ends, and a child made `with_thread` is also killed when
// the thread that started it exits (PR_SET_PDEATHSIG: a worker stuck in a driver call never reads
// its input). Stopping it closes its input (a healthy child exits on end of input), with SIGKILL
// when asked or when it lingers.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/process.h"  // describe_exit

namespace tiletune::tuner {

// Writes all of `text` to `fd`; false when the reader is gone. SIGPIPE is held back meanwhile so
// that a dead child never kills the sweep.
bool write_all(int fd, const std::string& text);

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Read { Line, Eof, Timeout };

  // `what` names the child in messages ("worker", "compile server"); `argv[0]` is the program.
  ChildProcess(std::string what, std::vector<std::string> argv, bool with_thread = true);
  ~ChildProcess() { stop(false); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Throws Error when the pipes or the process cannot be made. The child's stderr is the parent's.
  void start();
  bool running() const { return pid_ >= 0; }
  bool send(const std::string& line);  // false when the child is gone
  Read read_line(std::string& line, Clock::time_point deadline);
  // Closes the pipes and reaps the child (SIGKILL first when `kill`); returns why it ended,
  // "<what> killed by SIGSEGV (...)". Never blocks on a child stuck in a driver for long.
  std::string stop(bool kill);

 private:
  std::string what_;
  std::vector<std::string> argv_;
  bool with_thread_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string buffer_;  // bytes read past the last line
};

}  // namespace tiletune::tuner
