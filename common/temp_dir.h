// Private temporary directories: made with mkdtemp (mode 0700, so no other user can read or swap
// what is written there), removed with what they hold when their owner lets go of them, and also
// when a tiletune program is stopped by SIGINT, SIGTERM or SIGHUP.
#pragma once
#include <sys/types.h>

#include <filesystem>
#include <string>

namespace tiletune {

class TempDir {
 public:
  // "<temp_directory_path>/<prefix>XXXXXX"; throws Error naming the place when it cannot be made.
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// For a program's main() (never the runtime library, which leaves a host program's signals
// alone): on SIGINT, SIGTERM or SIGHUP the children named by track_child are killed, every live
// TempDir is removed, and the process then dies of that signal as it would have without this.
void remove_temp_dirs_on_stop_signals();

// A child that writes into a TempDir (a compiler): killed, with its process group when it leads
// one, before the directories are removed, so that nothing it started writes into one again.
void track_child(pid_t pid);
void untrack_child(pid_t pid);

}  // namespace tiletune
