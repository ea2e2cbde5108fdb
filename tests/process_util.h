// Running the tiletune program from tests: start, kill, wait, capture output.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <string>
#include <vector>

#include "common/process.h"

namespace tiletune::testing {

struct Child {
  pid_t pid = -1;
};

// Starts `argv` with stdout and stderr appended to `log_path`, `env` ("NAME=value") added to this
// process's environment.
inline Child spawn(const std::vector<std::string>& argv, const std::string& log_path,
                   const std::vector<std::string>& env = {}) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  SpawnOptions o;
  o.out = o.err = fd;
  o.env = env;
  Child c;
  c.pid = spawn_process(argv, o);
  if (fd >= 0) ::close(fd);
  return c;
}

// Exit status, or 128 + signal number.
inline int wait_for(Child c) {
  int status = 0;
  ::waitpid(c.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string read_file(const std::string& path) {
  std::string out;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
    std::fclose(f);
  }
  return out;
}

#ifdef TILETUNE_EXE
struct ProgramRun {
  int rc;           // exit status, or 128 + signal number
  std::string out;  // stdout and stderr
};

// Runs the tiletune program with `args` to its end; `log` (rewritten) holds what it printed.
inline ProgramRun run_tiletune(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {TILETUNE_EXE};
  argv.insert(argv.end(), args.begin(), args.end());
  ::unlink(log.c_str());
  const int rc = wait_for(spawn(argv, log));
  return {rc, read_file(log)};
}
#endif

}  // namespace tiletune::testing
