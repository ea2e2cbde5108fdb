#include "common/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

#include "common/error.h"
#include "common/temp_dir.h"

extern char** environ;

namespace tiletune {
namespace {

std::string signal_name(int sig) {
  static const std::pair<int, const char*> names[] = {
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGILL, "SIGILL"},   {SIGFPE, "SIGFPE"},   {SIGABRT, "SIGABRT"},
      {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGPIPE, "SIGPIPE"}, {SIGTRAP, "SIGTRAP"},
      {SIGSYS, "SIGSYS"},   {SIGXCPU, "SIGXCPU"}, {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}};
  std::string name = "signal " + std::to_string(sig);
  for (const auto& [number, text] : names)
    if (number == sig) name = text;
  if (const char* text = ::strsignal(sig)) name += std::string(" (") + text + ")";
  return name;
}

// Closes the descriptors in [lo, hi] (async-signal-safe: used between fork and exec).
void close_range_of(int lo, int hi, int max_fd) {
  if (lo > hi) return;
  if (::syscall(SYS_close_range, unsigned(lo), unsigned(hi), 0u) == 0) return;
  for (int fd = lo; fd <= std::min(hi, max_fd); ++fd) ::close(fd);
}

std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return "killed by " + signal_name(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

std::string find_program(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string full = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(full.c_str(), X_OK) == 0) return full;
  }
  return "";
}

pid_t spawn_process(const std::vector<std::string>& argv_in, const SpawnOptions& o) {
  if (argv_in.empty()) throw Error("cannot start a process: no program given");
  const std::string program = find_program(argv_in[0]);
  if (program.empty()) throw Error("cannot start '" + argv_in[0] + "': not found on PATH");
  // Everything the child needs is made before fork: after it only async-signal-safe calls (the
  // parent has threads and, on GPUs, a driver).
  std::vector<char*> argv;
  for (const auto& a : argv_in) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const bool replaced = std::any_of(o.env.begin(), o.env.end(),
                                      [&](const std::string& x) { return env_name(x) == env_name(entry); });
    if (!replaced) env_strings.push_back(entry);
  }
  env_strings.insert(env_strings.end(), o.env.begin(), o.env.end());
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  // exec's failure comes back through this pipe (closed by a successful exec): the caller gets an
  // Error naming the reason, not a child that exits 127.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) throw Error(std::string("cannot start ") + program + ": pipe: " + std::strerror(errno));
  for (int& fd : report)  // above stdio, which the child's dup2s below must not overwrite
    if (fd < 3) {
      const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
      ::close(fd);
      fd = moved;
    }
  if (report[0] < 0 || report[1] < 0) {
    for (int fd : report)
      if (fd >= 0) ::close(fd);
    throw Error(std::string("cannot start ") + program + ": fcntl: " + std::strerror(errno));
  }
  const int max_fd = int(std::min(::sysconf(_SC_OPEN_MAX), 65536L));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(report[0]), ::close(report[1]);
    throw Error("cannot start " + program + ": fork: " + std::strerror(e));
  }
  if (pid == 0) {
    auto fail = [&](int e) {
      [[maybe_unused]] ssize_t n = ::write(report[1], &e, sizeof e);
      ::_exit(127);
    };
    if (o.death_signal) {
      ::prctl(PR_SET_PDEATHSIG, o.death_signal);
      if (::getppid() != parent) ::_exit(127);
    }
    if (o.own_group && ::setpgid(0, 0) != 0) fail(errno);
    // The parent's stop handler (common/temp_dir.h) is not the child's until exec resets it.
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) ::signal(sig, SIG_DFL);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Sources below 3 are moved up first, so that no dup2 overwrites one still to be copied (a
    // parent with closed stdio) and each target ends up without close-on-exec.
    int fds[3] = {o.in, o.out, o.err};
    for (int& fd : fds)
      if (fd >= 0 && fd < 3 && (fd = ::fcntl(fd, F_DUPFD, 3)) < 0) fail(errno);
    for (int i = 0; i < 3; ++i)
      if (fds[i] >= 0 && ::dup2(fds[i], i) < 0) fail(errno);
    close_range_of(3, report[1] - 1, max_fd);
    close_range_of(report[1] + 1, ~0u >> 1, max_fd);
    ::execve(program.c_str(), argv.data(), envp.data());
    fail(errno);
  }
  ::close(report[1]);
  int e = 0;
  ssize_t n;
  while ((n = ::read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n == ssize_t(sizeof e)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw Error("cannot start " + program + ": " + std::strerror(e));
  }
  return pid;
}

ProgramOutput run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(argv.at(0) + ": pipe: " + std::strerror(errno));
  SpawnOptions o;
  o.out = o.err = fds[1];
  o.death_signal = SIGKILL;
  o.own_group = true;
  o.env = env;
  pid_t pid;
  try {
    pid = spawn_process(argv, o);
  } catch (...) {
    ::close(fds[0]), ::close(fds[1]);
    throw;
  }
  track_child(pid);
  ::close(fds[1]);
  ProgramOutput out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) out.text.append(buf, std::size_t(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      untrack_child(pid);
      throw Error(argv.at(0) + ": waitpid: " + std::strerror(errno));
    }
  untrack_child(pid);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace tiletune
