// Online tuning on the host backend: an untuned problem served a few times is tuned by a `tiletune
// tune` child process into the user database while calls go on (on the vendor rung), one candidate
// segfaulting and one hanging (tests/templates/crashy_gemm) without touching this process; later
// calls run the online winner. Every call is checked against fp64.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "db/database.h"
#include "gpu/backend.h"
#include "runtime_test_util.h"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

// Before anything loads templates: this process must know crashy_gemm to run its winner.
const bool kTemplatePathSet = ::setenv("TILETUNE_TEMPLATE_PATH", TILETUNE_SOURCE_DIR "/tests/templates", 1) == 0;

TEST(Online, AProblemServedUntunedIsTunedInTheBackgroundDespiteCrashingCandidates) {
  ASSERT_TRUE(kTemplatePathSet);
  const fs::path dir = fs::temp_directory_path() / ("tiletune-online-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string user = (dir / "user.db").string();
  ::setenv("TILETUNE_EXE", TILETUNE_EXE, 1);
  ::setenv("TILETUNE_ONLINE_TEMPLATES", "crashy_gemm", 1);  // MODE 0 right, 1 segfaults, 2 hangs, 3 wrong
  ::setenv("TILETUNE_ONLINE_SEARCH", "exhaustive", 1);
  ::setenv("TILETUNE_ONLINE_TIMEOUT", "2", 1);
  ::setenv("TILETUNE_ONLINE_AFTER", "2", 1);
  ::setenv("TILETUNE_VENDOR", "off", 1);  // so that crashy_gemm's MODE 0 is the only correct candidate

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
  for (const auto& m : d.measurements(*id)) status[m.kernel_name] = m.status;
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

}  // namespace
