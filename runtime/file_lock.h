// An exclusive flock(2) on a lock file: how processes sharing one file (a recorded config, a user
// database) take turns. flock belongs to an open file description, so two handles of one process
// exclude each other as two processes do; the lock goes with the process, however it ends.
#pragma once
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "common/error.h"

namespace tiletune::runtime {

class FileLock {
 public:
  // Creates `path` if missing and waits until the lock is held. With `give_up`, polls instead of
  // blocking, so that a lock another process keeps long cannot hold its caller hostage: returns
  // unheld (held() false) once give_up() says so. Throws Error when the file cannot be opened.
  explicit FileLock(const std::string& path, const std::function<bool()>& give_up = nullptr) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) throw Error("cannot open the lock file " + path + ": " + std::strerror(errno));
    for (;;) {
      if (::flock(fd_, give_up ? LOCK_EX | LOCK_NB : LOCK_EX) == 0) return;
      if (errno != EINTR && errno != EWOULDBLOCK) {
        const int e = errno;
        ::close(fd_);
        throw Error("cannot lock " + path + ": " + std::strerror(e));
      }
      if (give_up && errno == EWOULDBLOCK) {
        if (give_up()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    ::close(fd_);
    fd_ = -1;
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace tiletune::runtime
