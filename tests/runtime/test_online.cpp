// Online tuning on the host backend: an untuned problem served a few times is tuned by a `tiletune
// tune` child process into the user database while calls go on (on the vendor rung), one candidate
// segfaulting and one hanging (tests/templates/crashy_gemm) without touching this process; later
// calls run the online winner. Handles sharing a user database tune a problem once. Every call is
// checked against fp64.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "db/database.h"
#include "gpu/backend.h"
#include "runtime/online_tuner.h"
#include "tests/process_util.h"
#include "tests/runtime_test_util.h"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

// Before anything loads templates: this process must know crashy_gemm to run its winner.
const bool kTemplatePathSet = ::setenv("TILETUNE_TEMPLATE_PATH", TILETUNE_SOURCE_DIR "/tests/templates", 1) == 0;

// Online tuning over crashy_gemm alone (MODE 0 right, 1 segfaults, 2 hangs, 3 wrong), every mode
// measured, a hang killed after `timeout`, tuned after `after` untuned calls; no vendor, so that
// MODE 0 is the only correct candidate. Returns a fresh folder for the user database.
fs::path online_setup(const char* name, const char* timeout, const char* after) {
  const fs::path dir = fs::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ::setenv("TILETUNE_EXE", TILETUNE_EXE, 1);
  ::setenv("TILETUNE_ONLINE_TEMPLATES", "crashy_gemm", 1);
  ::setenv("TILETUNE_ONLINE_SEARCH", "exhaustive", 1);
  ::setenv("TILETUNE_ONLINE_TIMEOUT", timeout, 1);
  ::setenv("TILETUNE_ONLINE_AFTER", after, 1);
  ::setenv("TILETUNE_VENDOR", "off", 1);
  return dir;
}

TEST(Online, AProblemServedUntunedIsTunedInTheBackgroundDespiteCrashingCandidates) {
  ASSERT_TRUE(kTemplatePathSet);
  const fs::path dir = online_setup("tiletune-online-test", "2", "2");
  const std::string user = (dir / "user.db").string();

  tiletune_handle_t h = nullptr;
  ASSERT_EQ(tiletune_create_ex(&h, nullptr, user.c_str(), "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
  ASSERT_EQ(tiletune_set_online(h, 1), TILETUNE_SUCCESS) << tiletune_last_error();
  GemmProblem p;
  p.m = 40, p.n = 24, p.k = 16;
  for (int i = 0; i < 3; ++i) {  // the second call hands it to the tuner; none of them waits
    auto r = testing_util::dispatch_host(h, p);
    EXPECT_TRUE(r.ok) << r.reason;
  }
  int idle = 0;
  ASSERT_EQ(tiletune_online_wait(h, 120, &idle), TILETUNE_SUCCESS);
  ASSERT_TRUE(idle) << "online tuning did not finish in 120 s";
  tiletune_stats_t s{};
  ASSERT_EQ(tiletune_get_stats(h, &s), TILETUNE_SUCCESS);
  EXPECT_EQ(s.online_tuned, 1u);
  EXPECT_EQ(s.online, 0u);

  auto r = testing_util::dispatch_host(h, p);
  EXPECT_TRUE(r.ok) << r.reason;
  ASSERT_EQ(tiletune_get_stats(h, &s), TILETUNE_SUCCESS);
  EXPECT_EQ(s.online, 1u);
  EXPECT_EQ(s.user_tuned, 1u);
  char why[512];
  const GemmProblem c = p.canonical();
  ASSERT_EQ(tiletune_explain(h, TILETUNE_OP_N, TILETUNE_OP_N, c.m, c.n, c.k, TILETUNE_R_32F, c.lda, c.ldb, TILETUNE_R_32F,
                             c.ldc, 1, 1, TILETUNE_COMPUTE_32F, why, sizeof why),
            TILETUNE_SUCCESS);
  EXPECT_NE(std::string(why).find("crashy_gemm_MODE-0"), std::string::npos) << why;
  EXPECT_NE(std::string(why).find("tuned online in"), std::string::npos) << why;
  tiletune_destroy(h);

  // The user database holds the verdicts: the crash and the hang recorded against their candidates.
  db::Database d = db::Database::open(user, db::Mode::ReadOnly);
  const auto id = d.find_problem(c.key());
  ASSERT_TRUE(id.has_value());
  std::map<std::string, std::string> status;
  for (const auto& m : d.measurements(*id)) status[m.kernel_name] = db::to_string(m.status);
  EXPECT_EQ(status["crashy_gemm_MODE-0"], "ok");
  EXPECT_EQ(status["crashy_gemm_MODE-1"], "crashed");
  EXPECT_EQ(status["crashy_gemm_MODE-2"], "timeout");
  EXPECT_EQ(status["crashy_gemm_MODE-3"], "invalid");

  // A new handle on the same user database serves the winner from the start.
  ASSERT_EQ(tiletune_create_ex(&h, nullptr, user.c_str(), "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
  r = testing_util::dispatch_host(h, p);
  EXPECT_TRUE(r.ok) << r.reason;
  ASSERT_EQ(tiletune_get_stats(h, &s), TILETUNE_SUCCESS);
  EXPECT_EQ(s.user_tuned, 1u);
  tiletune_destroy(h);
  fs::remove_all(dir);
}

// A TILETUNE_EXE that notes each run in `dir`/runs, then is tiletune.
std::string counting_exe(const fs::path& dir) {
  const fs::path exe = dir / "tiletune-counted";
  std::ofstream(exe) << "#!/bin/sh\necho run >> '" << (dir / "runs").string() << "'\nexec '" << TILETUNE_EXE
                     << "' \"$@\"\n";
  fs::permissions(exe, fs::perms::owner_all);
  return exe.string();
}

int runs(const fs::path& dir) {
  const std::string text = tiletune::testing::read_file((dir / "runs").string());
  return int(std::count(text.begin(), text.end(), '\n'));
}

std::string explain(tiletune_handle_t h, const GemmProblem& p) {
  const GemmProblem c = p.canonical();
  char why[512] = "";
  EXPECT_EQ(tiletune_explain(h, TILETUNE_OP_N, TILETUNE_OP_N, c.m, c.n, c.k, TILETUNE_R_32F, c.lda, c.ldb,
                             TILETUNE_R_32F, c.ldc, 1, 1, TILETUNE_COMPUTE_32F, why, sizeof why),
            TILETUNE_SUCCESS);
  return why;
}

// Two handles on one user database (each its own tuner, as two ranks of a data-parallel job would
// have; their lock files are open file descriptions of their own, so they exclude each other as
// processes do): the problem both hand to online tuning at once is tuned by one `tiletune tune`,
// and the other handle adopts its winner from the database.
TEST(Online, HandlesSharingAUserDatabaseTuneAProblemOnceAndBothServeItsWinner) {
  ASSERT_TRUE(kTemplatePathSet);
  const fs::path dir = online_setup("tiletune-online-shared", "2", "1");
  ::setenv("TILETUNE_EXE", counting_exe(dir).c_str(), 1);
  const std::string user = (dir / "user.db").string();
  tiletune_handle_t h[2] = {nullptr, nullptr};
  for (auto& x : h) {
    ASSERT_EQ(tiletune_create_ex(&x, nullptr, user.c_str(), "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
    ASSERT_EQ(tiletune_set_online(x, 1), TILETUNE_SUCCESS) << tiletune_last_error();
  }
  GemmProblem p;
  p.m = 40, p.n = 24, p.k = 16;
  for (auto x : h) {  // each hands it to its tuner on its first call
    auto r = testing_util::dispatch_host(x, p);
    EXPECT_TRUE(r.ok) << r.reason;
  }
  for (auto x : h) {
    int idle = 0;
    ASSERT_EQ(tiletune_online_wait(x, 120, &idle), TILETUNE_SUCCESS);
    ASSERT_TRUE(idle) << "online tuning did not finish in 120 s";
  }
  EXPECT_EQ(runs(dir), 1) << "one tune for the problem, whichever handle took its lock first";
  std::uint64_t tuned = 0;
  int adopted = 0;
  for (auto x : h) {
    auto r = testing_util::dispatch_host(x, p);
    EXPECT_TRUE(r.ok) << r.reason;
    tiletune_stats_t s{};
    ASSERT_EQ(tiletune_get_stats(x, &s), TILETUNE_SUCCESS);
    EXPECT_EQ(s.online, 1u) << "each handle serves the one winner from the user database";
    EXPECT_EQ(s.user_tuned, 1u);
    tuned += s.online_tuned;
    const std::string why = explain(x, p);
    EXPECT_NE(why.find("crashy_gemm_MODE-0"), std::string::npos) << why;
    adopted += why.find("by another process or handle") != std::string::npos;
  }
  EXPECT_EQ(tuned, 1u);
  EXPECT_EQ(adopted, 1);
  for (auto x : h) tiletune_destroy(x);
  fs::remove_all(dir);
}

// A tuner waiting for a problem's lock that another process holds tunes nothing meanwhile, and
// switching it off does not wait for that process.
TEST(Online, ATunerWaitingForAnotherProcesssLockStaysStoppable) {
  ASSERT_TRUE(kTemplatePathSet);
  const fs::path dir = online_setup("tiletune-online-locked", "2", "1");
  ::setenv("TILETUNE_EXE", counting_exe(dir).c_str(), 1);
  const std::string user = (dir / "user.db").string();
  tiletune_handle_t h = nullptr;
  ASSERT_EQ(tiletune_create_ex(&h, nullptr, user.c_str(), "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
  ASSERT_EQ(tiletune_set_online(h, 1), TILETUNE_SUCCESS) << tiletune_last_error();
  char arch[64];
  ASSERT_EQ(tiletune_get_arch(h, arch, sizeof arch, nullptr), TILETUNE_SUCCESS);
  GemmProblem p;
  p.m = 40, p.n = 24, p.k = 16;
  const std::string lock = runtime::online_lock_path(user, arch, p);
  fs::create_directories(fs::path(lock).parent_path());
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  auto r = testing_util::dispatch_host(h, p);
  EXPECT_TRUE(r.ok) << r.reason;
  int idle = 1;
  ASSERT_EQ(tiletune_online_wait(h, 0.5, &idle), TILETUNE_SUCCESS);
  EXPECT_FALSE(idle) << "the tuner waits for the lock";
  EXPECT_EQ(runs(dir), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(tiletune_set_online(h, 0), TILETUNE_SUCCESS);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  tiletune_destroy(h);
  EXPECT_EQ(runs(dir), 0);
  ::close(fd);
  fs::remove_all(dir);
}

// Whether the user database holds an 'ok' measurement of `kernel` for `p` yet.
bool measured_ok(const std::string& user, const GemmProblem& p, const std::string& kernel) {
  if (!fs::exists(user)) return false;
  try {
    db::Database d = db::Database::open(user, db::Mode::ReadOnly);
    const auto id = d.find_problem(p.canonical().key());
    if (!id) return false;
    for (const auto& m : d.measurements(*id))
      if (m.kernel_name == kernel && m.status == db::Status::Ok) return true;
  } catch (const Error&) {
    // not yet made by the tune
  }
  return false;
}

TEST(Online, SwitchingOffOrDestroyingDuringATuneEndsItAndLosesNothingFinished) {
  ASSERT_TRUE(kTemplatePathSet);
  const fs::path dir = online_setup("tiletune-online-off", "60", "1");  // MODE 2's hang outlasts the test
  const std::string user = (dir / "user.db").string();
  GemmProblem p;
  p.m = 40, p.n = 24, p.k = 16;
  for (int round = 0; round < 2; ++round) {
    p.n = 24 + round;  // a problem of its own each round
    tiletune_handle_t h = nullptr;
    ASSERT_EQ(tiletune_create_ex(&h, nullptr, user.c_str(), "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
    ASSERT_EQ(tiletune_set_online(h, 1), TILETUNE_SUCCESS) << tiletune_last_error();
    auto r = testing_util::dispatch_host(h, p);
    EXPECT_TRUE(r.ok) << r.reason;
    // Wait for the tune to finish MODE 0; it is then stuck in MODE 2's hang.
    for (int i = 0; i < 600 && !measured_ok(user, p, "crashy_gemm_MODE-0"); ++i) ::usleep(100000);
    ASSERT_TRUE(measured_ok(user, p, "crashy_gemm_MODE-0"));
    int idle = 1;
    ASSERT_EQ(tiletune_online_wait(h, 0.2, &idle), TILETUNE_SUCCESS);
    EXPECT_FALSE(idle) << "the hanging candidate keeps the tune busy";
    EXPECT_EQ(tiletune_online_wait(h, -1, &idle), TILETUNE_ERROR_INTERNAL) << "a negative wait is refused";
    if (round == 0) {
      EXPECT_EQ(tiletune_set_online(h, 0), TILETUNE_SUCCESS);  // kills the tune and waits for its thread
      ASSERT_EQ(tiletune_online_wait(h, 0, &idle), TILETUNE_SUCCESS);
      EXPECT_TRUE(idle);
    }
    r = testing_util::dispatch_host(h, p);
    EXPECT_TRUE(r.ok) << r.reason;
    tiletune_destroy(h);  // round 1: the destructor kills the tune
  }
  // What the killed tunes finished stays: a new handle serves both problems from the user database.
  ::unsetenv("TILETUNE_ONLINE_AFTER");
  tiletune_handle_t h = nullptr;
  ASSERT_EQ(tiletune_create_ex(&h, nullptr, user.c_str(), "host", 0), TILETUNE_SUCCESS) << tiletune_last_error();
  for (int n : {24, 25}) {
    p.n = n;
    auto r = testing_util::dispatch_host(h, p);
    EXPECT_TRUE(r.ok) << r.reason;
  }
  tiletune_stats_t st{};
  ASSERT_EQ(tiletune_get_stats(h, &st), TILETUNE_SUCCESS);
  EXPECT_EQ(st.user_tuned, 2u);
  tiletune_destroy(h);
  fs::remove_all(dir);
}

// A sweep started for online tuning dies with the program it tunes for, even one killed outright
// (no destructor runs): here an intermediate process starts `tune --die-with-parent` on a hanging
// candidate and is SIGKILLed; the sweep must end within seconds, not at its candidate time-out.
TEST(Online, ASweepStartedToDieWithItsParentEndsWhenTheParentIsKilled) {
  ASSERT_TRUE(kTemplatePathSet);
  const fs::path dir = fs::temp_directory_path() / ("tiletune-online-orphan-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string cfg = (dir / "hang.json").string();
  {
    std::FILE* f = std::fopen(cfg.c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs(R"({"problems": [{"dtype": "f32", "transA": "N", "transB": "N", "m": 16, "n": 16, "k": 16}],
                   "templates": {"crashy_gemm": {"parameters": {"MODE": [2]}}}})",
               f);
    std::fclose(f);
  }
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // Everything the children need is made before fork: after it only async-signal-safe calls (the
  // intermediate writes its own pid out by hand).
  const std::string db = (dir / "hang.db").string();
  const pid_t middle = ::fork();
  if (middle == 0) {  // the intermediate: start the sweep, report its pid, wait to be killed
    const pid_t self = ::getpid();
    char self_text[24];
    int n = 0;
    for (pid_t v = self; v > 0; v /= 10) ++n;
    self_text[n] = '\0';
    for (pid_t v = self; v > 0; v /= 10) self_text[--n] = char('0' + v % 10);
    const pid_t sweep = ::fork();
    if (sweep == 0) {
      ::execl(TILETUNE_EXE, TILETUNE_EXE, "tune", cfg.c_str(), "--backend", "host", "--db", db.c_str(), "--no-vendor",
              "--timeout", "600", "--die-with-parent", self_text, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    (void)!::write(fds[1], &sweep, sizeof sweep);
    for (;;) ::pause();
  }
  pid_t sweep = -1;
  ASSERT_EQ(::read(fds[0], &sweep, sizeof sweep), ssize_t(sizeof sweep));
  ::close(fds[0]), ::close(fds[1]);
  ::sleep(2);  // into its hanging candidate
  auto alive = [](pid_t pid) {  // neither gone nor a zombie waiting for its new parent to reap it
    std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (!f) return false;
    char state = 'X';
    const int n = std::fscanf(f, "%*d (%*[^)]) %c", &state);
    std::fclose(f);
    return n == 1 && state != 'Z' && state != 'X';
  };
  EXPECT_TRUE(alive(sweep)) << "the sweep should still be in its hanging candidate";
  ::kill(middle, SIGKILL);
  ::waitpid(middle, nullptr, 0);
  bool ended = false;
  for (int i = 0; i < 100 && !(ended = !alive(sweep)); ++i) ::usleep(100 * 1000);
  EXPECT_TRUE(ended) << "tune --die-with-parent outlived its parent by 10 s";
  if (!ended) ::kill(sweep, SIGKILL);
  // A wrong parent pid: nothing is tuned.
  EXPECT_NE(std::system((std::string(TILETUNE_EXE) + " tune " + cfg + " --backend host --db " + (dir / "x.db").string() +
                         " --die-with-parent 1 >/dev/null 2>&1").c_str()),
            0);
  EXPECT_FALSE(fs::exists(dir / "x.db"));
  fs::remove_all(dir);
}

}  // namespace
