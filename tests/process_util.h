// Running the tiletune program from tests: start, kill, wait, capture output (to the end and
// captured in memory: common/process.h's run_program).
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstdio>
#include <filesystem>
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

// Runs this test program's `test` ("Suite.DISABLED_Name": it runs only when asked for) in a fresh
// process with `env` added, for what a process does once (open a library). True when it ran and
// passed; its output is in `log_path` either way.
inline bool run_own_test(const std::string& test, const std::vector<std::string>& env, const std::string& log_path) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const int rc = wait_for(spawn({self, "--gtest_also_run_disabled_tests", "--gtest_filter=" + test}, log_path, env));
  // A filter that matches nothing passes too: the one test must have run.
  return rc == 0 && read_file(log_path).find("[  PASSED  ] 1 test.") != std::string::npos;
}

#ifdef TILETUNE_EXE
// Runs the tiletune program with `args` to its end (tiletune::run_program): its exit status and
// its stdout and stderr together.
inline ProgramOutput run_tiletune(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TILETUNE_EXE};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv);
}
#endif

// What a run of a program left: its exit status and its stdout and stderr apart (a --json
// document is on stdout alone).
struct Output {
  int code = -1;
  std::string out, err;
};

// Runs `argv` to its end, its stdout and stderr written to `dir`/stdout and `dir`/stderr.
inline Output run_to_end(const std::vector<std::string>& argv, const std::string& dir,
                         const std::vector<std::string>& env = {}) {
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SpawnOptions o;
  o.out = out;
  o.err = err;
  o.env = env;
  Output r;
  r.code = wait_for(Child{spawn_process(argv, o)});
  ::close(out), ::close(err);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

}  // namespace tiletune::testing
