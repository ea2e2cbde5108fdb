#include "common/temp_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "common/error.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;

struct Live {
  std::mutex mu;
  std::set<std::string> dirs;
  std::set<pid_t> children;
};

Live& live() {
  static Live* l = new Live;  // never destroyed: the stop watcher may use it while statics go
  return *l;
}

int stop_pipe[2] = {-1, -1};

// Only what is async-signal-safe: the work is done by the watcher thread.
void on_stop_signal(int sig) {
  const int saved = errno;
  const unsigned char s = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = ::write(stop_pipe[1], &s, 1);
  errno = saved;
}

void remove_all_live(Live& l) {
  for (pid_t pid : l.children) {
    ::kill(-pid, SIGKILL);  // its process group, when it leads one (a compiler and what it started)
    ::kill(pid, SIGKILL);
  }
  for (const auto& dir : l.dirs) {
    // A child killed a moment ago may still be writing: try again briefly.
    for (int attempt = 0; attempt < 20; ++attempt) {
      std::error_code ec;
      fs::remove_all(dir, ec);
      if (!ec && !fs::exists(dir, ec)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

void watch_stop_signals() {
  unsigned char sig = 0;
  while (::read(stop_pipe[0], &sig, 1) != 1) {
    if (errno != EINTR) return;
  }
  // A process too broken to clean up (a candidate that wrecked the heap) still dies of SIGALRM.
  ::alarm(5);
  Live& l = live();
  std::lock_guard<std::mutex> lock(l.mu);  // held to the end: no new directory while we go
  remove_all_live(l);
  ::signal(sig, SIG_DFL);
  ::kill(::getpid(), sig);
  // Blocked or ignored in every thread is not how a stop signal reaches this program; whatever
  // happens, do not return into a program that was told to stop.
  ::_exit(128 + sig);
}

fs::path make_dir(const std::string& prefix) {
  std::error_code ec;
  const fs::path base = fs::temp_directory_path(ec);
  if (ec) throw Error("no temporary directory: " + ec.message() + " (check TMPDIR)");
  std::string pattern = (base / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw Error("cannot create a temporary directory in " + base.string() + ": " + std::strerror(errno));
  return pattern;
}

}  // namespace

TempDir::TempDir(const std::string& prefix) {
  Live& l = live();
  std::lock_guard<std::mutex> lock(l.mu);
  path_ = make_dir(prefix);
  l.dirs.insert(path_.string());
}

TempDir::~TempDir() {
  Live& l = live();
  std::lock_guard<std::mutex> lock(l.mu);
  std::error_code ec;
  fs::remove_all(path_, ec);
  l.dirs.erase(path_.string());
}

void track_child(pid_t pid) {
  Live& l = live();
  std::lock_guard<std::mutex> lock(l.mu);
  l.children.insert(pid);
}

void untrack_child(pid_t pid) {
  Live& l = live();
  std::lock_guard<std::mutex> lock(l.mu);
  l.children.erase(pid);
}

void remove_temp_dirs_on_stop_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (::pipe2(stop_pipe, O_CLOEXEC) != 0) throw Error(std::string("cannot watch for stop signals: pipe: ") + std::strerror(errno));
    std::thread(watch_stop_signals).detach();
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    // A signal the program was started with ignored (nohup's SIGHUP, SIGINT of a background job
    // in a script) stays ignored: the program was not meant to stop on it.
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

}  // namespace tiletune
