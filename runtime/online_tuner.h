// Online tuning: a problem the runtime keeps serving untuned is tuned in the background by a
// `tiletune tune` child process (model search within a budget of candidates and seconds) that
// writes into the user database. The trainer's calls never wait for it, and a candidate that
// crashes or hangs takes down at most one of that child's own worker processes. Processes sharing
// one user database (a data-parallel trainer's ranks) tune each problem once: a lock file per
// problem and arch makes the others wait, and they then adopt the winner it wrote.
#pragma once
#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/temp_dir.h"

#include "solutions/problem.h"

namespace tiletune::runtime {

struct OnlineSettings {
  std::string exe;       // the tiletune program
  std::string user_db;   // where the winners go
  std::string backend;   // "cuda", "hip", "host"
  std::string arch;      // the device's: winners, and so the locks, are per arch
  int device = 0;
  int after_calls = 3;   // untuned calls of a problem before it is tuned (TILETUNE_ONLINE_AFTER)
  int budget = 24;       // candidates per problem (TILETUNE_ONLINE_BUDGET)
  double seconds = 30;   // seconds of measuring per problem (TILETUNE_ONLINE_SECONDS)
  std::string search = "model";  // TILETUNE_ONLINE_SEARCH
  std::string templates;  // comma-separated template names, "" for all (TILETUNE_ONLINE_TEMPLATES)
  double candidate_timeout_s = 0;  // 0: the tuner's default (TILETUNE_ONLINE_TIMEOUT)
  double limit_s = 900;  // a tune that runs longer than this is killed
};

// Whether TILETUNE_ONLINE asks for online tuning (set, and neither "0" nor "off").
bool online_requested_by_environment();
// Where online tuning keeps its winners when no user database is named:
// $XDG_CACHE_HOME/tiletune/user.db, else ~/.cache/tiletune/user.db.
std::string default_user_db();

// The settings the environment's TILETUNE_ONLINE_* give, for this device and user database; an
// empty `exe` when they cannot run, `why` then saying why not.
OnlineSettings online_settings_from_environment(const std::string& backend, int device, const std::string& user_db,
                                                std::string* why);

// The lock file that the processes sharing `user_db` take before tuning `p` for `arch`:
// <user_db>.locks/<sha256 of arch and key>.lock. Lock files stay: removing one would let a late
// process lock a file that the next one no longer sees.
std::string online_lock_path(const std::string& user_db, const std::string& arch, const Problem& p);

class OnlineTuner {
 public:
  enum class Outcome {
    Failed,
    Tuned,         // the tune finished: its winner, if any, is in the user database
    TunedElsewhere  // the user database had its winner already (another process tuned it): none ran
  };
  // Called on the tuner's thread after each problem: the outcome, its seconds, and the tail of
  // its log when it failed.
  using Done = std::function<void(const Problem&, Outcome, double seconds, const std::string& log)>;
  // Whether the user database holds a winner of the problem for this arch already; asked with the
  // problem's lock held, before a tune (nullptr: never).
  using AlreadyTuned = std::function<bool(const Problem&)>;
  OnlineTuner(OnlineSettings settings, Done done, AlreadyTuned already_tuned = nullptr);
  ~OnlineTuner();  // kills a tune in progress and waits for the thread
  OnlineTuner(const OnlineTuner&) = delete;
  OnlineTuner& operator=(const OnlineTuner&) = delete;

  void submit(const Problem& p);
  // Waits until nothing is queued or running, at most `seconds`; true when idle.
  bool wait_idle(double seconds);
  const OnlineSettings& settings() const { return s_; }

 private:
  TempDir dir_{"tiletune-online-"};  // configs and logs
  void loop();
  Outcome tune(const Problem& p, std::string& log);
  bool run_tune(const Problem& p, std::string& log);

  OnlineSettings s_;
  Done done_;
  AlreadyTuned already_tuned_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Problem> queue_;
  bool busy_ = false, stop_ = false;
  pid_t child_ = -1;  // the running tune's process group, under mu_
  int tuned_ = 0;     // problems handed to `tiletune tune` so far (names their files)
  std::thread thread_;
};

}  // namespace tiletune::runtime
