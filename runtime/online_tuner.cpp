#include "runtime/online_tuner.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/env.h"
#include "common/error.h"
#include "common/process.h"
#include "db/integrity.h"
#include "runtime/file_lock.h"

namespace tiletune::runtime {
namespace fs = std::filesystem;

namespace {

// The tiletune program beside this library (a build tree, an install's bin/ next to lib/).
std::string find_exe() {
  if (const char* e = std::getenv("TILETUNE_EXE"); e && *e) return e;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&find_exe), &info) && info.dli_fname) {
    const fs::path lib = fs::absolute(info.dli_fname).parent_path();
    for (const fs::path& p : {lib / "tiletune", lib.parent_path() / "bin" / "tiletune"})
      if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

std::string tail_of(const std::string& path, std::size_t bytes) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

}  // namespace

bool online_requested_by_environment() {
  return env_switch("TILETUNE_ONLINE", false);
}

std::string default_user_db() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string dir = cache && *cache ? std::string(cache) + "/tiletune"
                          : home && *home ? std::string(home) + "/.cache/tiletune"
                                          : std::string("/tmp/tiletune-") + std::to_string(::getuid());
  return dir + "/user.db";
}

OnlineSettings online_settings_from_environment(const std::string& backend, int device, const std::string& user_db,
                                                std::string* why) {
  OnlineSettings s;
  s.backend = backend;
  s.device = device;
  s.user_db = user_db;
  s.after_calls = int(env_integer("TILETUNE_ONLINE_AFTER", 3, 1, 1000000000));
  s.budget = int(env_integer("TILETUNE_ONLINE_BUDGET", 24, 1, 100000));
  s.seconds = env_number("TILETUNE_ONLINE_SECONDS", 30, 1, 86400);
  s.search = env_text("TILETUNE_ONLINE_SEARCH").value_or("model");
  s.templates = env_text("TILETUNE_ONLINE_TEMPLATES").value_or("");
  s.candidate_timeout_s = env_number("TILETUNE_ONLINE_TIMEOUT", 0, 0, 86400);
  if (user_db.empty()) {
    if (why) *why = "online tuning needs a user database (tiletune_create_ex's user_db_path or TILETUNE_USER_DB)";
    return s;
  }
  s.exe = find_exe();
  if (s.exe.empty() && why)
    *why = "online tuning needs the tiletune program: none beside the runtime library; set TILETUNE_EXE";
  return s;
}

std::string online_lock_path(const std::string& user_db, const std::string& arch, const Problem& p) {
  const std::string what = arch + "\n" + p.canonical().key();
  return user_db + ".locks/" + db::sha256_hex(what.data(), what.size()) + ".lock";
}

OnlineTuner::OnlineTuner(OnlineSettings settings, Done done, AlreadyTuned already_tuned)
    : s_(std::move(settings)), done_(std::move(done)), already_tuned_(std::move(already_tuned)) {
  thread_ = std::thread([this] { loop(); });
}

OnlineTuner::~OnlineTuner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
    if (child_ > 0) ::kill(-child_, SIGKILL);  // the tune and its workers
  }
  cv_.notify_all();
  thread_.join();
}

void OnlineTuner::submit(const Problem& p) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    queue_.push_back(p);
  }
  cv_.notify_all();
}

bool OnlineTuner::wait_idle(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return queue_.empty() && !busy_; });
}

void OnlineTuner::loop() {
  for (;;) {
    Problem p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      p = queue_.front();
      queue_.pop_front();
      busy_ = true;
    }
    const auto start = std::chrono::steady_clock::now();
    std::string log;
    Outcome outcome = Outcome::Failed;
    try {
      outcome = tune(p, log);
    } catch (const std::exception& e) {
      log = e.what();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bool stopping;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping = stop_;
    }
    if (!stopping) {
      try {
        done_(p, outcome, s, log);
      } catch (...) {
        // the runtime's bookkeeping must not end the tuner
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

OnlineTuner::Outcome OnlineTuner::tune(const Problem& p, std::string& log) {
  const std::string lock_path = online_lock_path(s_.user_db, s_.arch, p);
  std::error_code ec;
  fs::create_directories(fs::path(lock_path).parent_path(), ec);
  if (ec) throw Error("cannot make " + fs::path(lock_path).parent_path().string() + ": " + ec.message());
  // Held until the tune's child has exited, so its winner is in the database when the next
  // process gets the lock; polled, so that switching off never waits for another process.
  const FileLock lock(lock_path, [this] {
    std::lock_guard<std::mutex> guard(mu_);
    return stop_;
  });
  if (!lock.held()) {
    log = "switched off";
    return Outcome::Failed;
  }
  if (already_tuned_ && already_tuned_(p)) return Outcome::TunedElsewhere;
  return run_tune(p, log) ? Outcome::Tuned : Outcome::Failed;
}

bool OnlineTuner::run_tune(const Problem& p, std::string& log) {
  const std::string stem = (dir_.path() / ("problem-" + std::to_string(++tuned_))).string();
  nlohmann::json problem = p;
  nlohmann::json config = {{"name", "online"}, {"problems", nlohmann::json::array()}};
  config["problems"].push_back(problem);
  if (!s_.templates.empty()) {
    nlohmann::json t = nlohmann::json::object();
    std::stringstream ss(s_.templates);
    for (std::string name; std::getline(ss, name, ',');)
      if (!name.empty()) t[name] = nlohmann::json::object();
    config["templates"] = t;
  }
  {
    std::ofstream out(stem + ".json");
    out << config.dump(1) << "\n";
    if (!out) throw Error("cannot write " + stem + ".json");
  }
  std::vector<std::string> args = {s_.exe, "tune", stem + ".json", "--db", s_.user_db, "--backend", s_.backend,
                                   "--device", std::to_string(s_.device), "--search", s_.search,
                                   "--budget", std::to_string(s_.budget), "--budget-seconds", std::to_string(s_.seconds),
                                   "--die-with-parent", std::to_string(::getpid())};
  if (s_.candidate_timeout_s > 0) args.insert(args.end(), {"--timeout", std::to_string(s_.candidate_timeout_s)});
  // No shell: argv as is; output to a log; its own process group, so that it and its workers can
  // be killed together; killed with this tuner's thread, so a host program that dies leaves no tune.
  const std::string log_path = stem + ".log";
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SpawnOptions o;
  o.in = null_fd;
  o.out = o.err = log_fd;
  o.own_group = true;
  o.death_signal = SIGTERM;  // tiletune tune: its workers go with it
  pid_t pid = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (null_fd < 0 || log_fd < 0) log = "cannot open " + log_path + ": " + std::strerror(errno);
    else if (stop_) log = "switched off";
    else {
      try {
        pid = spawn_process(args, o);
        child_ = pid;
      } catch (const Error& e) {
        log = e.what();
      }
    }
  }
  for (int fd : {null_fd, log_fd})
    if (fd >= 0) ::close(fd);
  if (pid < 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(s_.limit_s);
  int status = -1;  // not an exit status: a child never reaped counts as failed
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      log = std::string("waitpid: ") + std::strerror(errno) + "\n";
      status = -1;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      log = "killed after " + std::to_string(int(s_.limit_s)) + " s\n";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    child_ = -1;
  }
  // 0: done; 3: incomplete (a problem could not be prepared in time); 4: no generated candidate
  // admits the problem (the vendor was still timed) - whatever it recorded stands.
  const bool ok = status != -1 && WIFEXITED(status) &&
                  (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 4);
  log += tail_of(log_path, 2000);
  return ok;
}

}  // namespace tiletune::runtime
