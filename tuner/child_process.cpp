#include "tuner/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "common/error.h"

namespace tiletune::tuner {
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

}  // namespace

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return "killed by " + signal_name(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

bool write_all(int fd, const std::string& text) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  bool ok = true;
  for (std::size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += std::size_t(n);
  }
  if (!ok && errno == EPIPE) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

ChildProcess::ChildProcess(std::string what, std::vector<std::string> argv, bool with_thread)
    : what_(std::move(what)), argv_(std::move(argv)), with_thread_(with_thread) {}

void ChildProcess::start() {
  // Everything the child needs is prepared before fork: between fork and exec only
  // async-signal-safe calls are allowed (the parent has threads and, on GPUs, a driver).
  std::vector<std::string> args = argv_;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int in[2], out[2];  // in: parent -> child stdin; out: child stdout -> parent
  if (::pipe2(in, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const bool with_thread = with_thread_;
  const int max_fd = int(std::min(::sysconf(_SC_OPEN_MAX), 65536L));
  pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    throw Error("cannot start a " + what_ + " process: fork: " + std::strerror(errno));
  }
  if (pid == 0) {
    if (with_thread) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);
    }
    if (::dup2(in[0], 0) < 0 || ::dup2(out[1], 1) < 0) ::_exit(126);
    // The parent's database and driver handles stay in the parent.
    if (::syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
      for (int fd = 3; fd < max_fd; ++fd) ::close(fd);
    ::execv(argv[0], argv.data());
    const char msg[] = "tiletune: cannot exec a helper process\n";
    [[maybe_unused]] ssize_t n = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  buffer_.clear();
}

std::string ChildProcess::stop(bool kill) {
  if (pid_ < 0) return "no " + what_;
  if (to_child_ >= 0) ::close(to_child_);  // a healthy child exits on end of input
  to_child_ = -1;
  if (kill) ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t got = 0;
  // Poll, never block: a process stuck in the GPU driver can outlive SIGKILL for a long time, and
  // the sweep must go on (it is reaped later by init once this process exits).
  auto reap = [&](int tries) {
    for (int i = 0; i < tries; ++i) {
      got = ::waitpid(pid_, &status, WNOHANG);
      if (got != 0 && !(got < 0 && errno == EINTR)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  reap(500);  // up to 5 s to exit on its own
  if (got == 0) {
    ::kill(pid_, SIGKILL);
    reap(3000);  // up to 30 s to die
    if (got == 0)
      std::fprintf(stderr, "tiletune: %s %d did not die after SIGKILL within 30 s; going on without it\n",
                   what_.c_str(), int(pid_));
  }
  if (from_child_ >= 0) ::close(from_child_);
  from_child_ = -1;
  pid_ = -1;
  buffer_.clear();
  return got > 0 ? what_ + " " + describe_exit(status) : what_ + " lost";
}

bool ChildProcess::send(const std::string& line) { return to_child_ >= 0 && write_all(to_child_, line + "\n"); }

ChildProcess::Read ChildProcess::read_line(std::string& line, Clock::time_point deadline) {
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return Read::Line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Read::Timeout;
    struct pollfd p = {from_child_, POLLIN, 0};
    int n = ::poll(&p, 1, int(std::min<long long>(left, 1000 * 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("poll on the " + what_ + "'s output: " + std::strerror(errno));
    if (n == 0) continue;  // the deadline is checked above
    char buf[65536];
    ssize_t got = ::read(from_child_, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return Read::Eof;
    buffer_.append(buf, std::size_t(got));
  }
}

}  // namespace tiletune::tuner
