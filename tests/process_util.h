// Running the tiletune program from tests: start, kill, wait, capture output.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <string>
#include <vector>

namespace tiletune::testing {

struct Child {
  pid_t pid = -1;
};

// Starts `argv` with stdout and stderr appended to `log_path`.
inline Child spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  Child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
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

}  // namespace tiletune::testing
