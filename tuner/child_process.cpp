#include "tuner/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "common/error.h"
#include "common/process.h"

namespace tiletune::tuner {
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
  int in[2], out[2];  // in: parent -> child stdin; out: child stdout -> parent
  if (::pipe2(in, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  SpawnOptions o;
  o.in = in[0];
  o.out = out[1];
  o.death_signal = with_thread_ ? SIGTERM : 0;  // tiletune worker or compile-server
  pid_t pid;
  try {
    pid = spawn_process(argv_, o);
  } catch (const Error& e) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    throw Error("cannot start a " + what_ + " process: " + e.what());
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
