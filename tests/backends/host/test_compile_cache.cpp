// The compile cache on disk (gpu/compile_cache.h): a compile asked for again is read from the
// directory, whole and as it was, without running the compiler; failures are not kept; a damaged,
// foreign or group-writable file is compiled again; a directory others may write is refused with a
// warning naming TILETUNE_COMPILE_CACHE, and compiling goes on without it. The host backend's
// compiler, through make_compiler, for a kernel that runs.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "gpu/backend.h"
#include "gpu/compile_cache.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using namespace tiletune;
using namespace tiletune::gpu;

namespace {

// Counts its compiles; the code object names the request, so a wrong hit shows.
class CountingCompiler final : public Compiler {
 public:
  explicit CountingCompiler(std::atomic<int>& calls, bool ok = true) : calls_(calls), ok_(ok) {}
  std::string version() const override { return "counting-1"; }
  CompileResult compile(const CompileRequest& r) const override {
    ++calls_;
    CompileResult out;
    out.ok = ok_;
    out.log = ok_ ? "note: compiled " + r.name_expression : "error: refused";
    if (ok_) {
      const std::string text = r.name_expression + "|" + r.arch + "|" + r.source;
      out.code.bytes.assign(text.begin(), text.end());
      out.code.bytes.push_back(0);  // binary bytes survive too
      out.code.bytes.push_back(0xff);
      out.code.symbol = "_Z3k_" + r.name_expression;
    }
    out.cpu_s = 0.25;
    return out;
  }

 private:
  std::atomic<int>& calls_;
  bool ok_;
};

CompileRequest request(const std::string& name = "k<1>") {
  CompileRequest r;
  r.source = "template <int N> void k() {}\n";
  r.headers = {{"a.h", "#pragma once\n"}, {"b.h", "int b;\n"}};
  r.name_expression = name;
  r.options = {"-DX=1", "-O3"};
  r.arch = "x86_64";
  return r;
}

class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tiletune-compile-cache-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    const char* old = std::getenv("TILETUNE_COMPILE_CACHE");
    saved_ = old ? std::optional<std::string>(old) : std::nullopt;
    ::setenv("TILETUNE_COMPILE_CACHE", (dir_ / "cache").c_str(), 1);
  }
  void TearDown() override {
    saved_ ? (void)::setenv("TILETUNE_COMPILE_CACHE", saved_->c_str(), 1) : (void)::unsetenv("TILETUNE_COMPILE_CACHE");
    fs::remove_all(dir_);
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_ / "cache")) out.push_back(e.path());
    return out;
  }

  fs::path dir_;
  std::optional<std::string> saved_;
};

TEST(CompileKey, EveryInputChangesIt) {
  const CompileRequest base = request();
  const std::string key = compile_key(base, "v1");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, compile_key(request(), "v1"));
  std::vector<CompileRequest> changed(8, base);
  changed[0].source += " ";
  changed[1].headers["b.h"] = "int c;\n";
  changed[2].headers["c.h"] = "";
  changed[3].name_expression = "k<2>";
  changed[4].options = {"-O3", "-DX=1"};  // the order of options is the compiler's business
  changed[5].options.push_back("-g");
  changed[6].arch = "x86_64-avx2";
  changed[7].options = {"-DX=1-O3"};  // fields cannot run together
  for (std::size_t i = 0; i < changed.size(); ++i) EXPECT_NE(compile_key(changed[i], "v1"), key) << "change " << i;
  EXPECT_NE(compile_key(base, "v2"), key);
}

TEST_F(CompileCacheTest, ASecondCompileIsReadFromTheCacheWholeAndAsItWas) {
  std::atomic<int> calls{0};
  const auto cached = with_compile_cache(std::make_unique<CountingCompiler>(calls));
  EXPECT_EQ(cached->version(), "counting-1");
  const CompileResult first = cached->compile(request());
  ASSERT_TRUE(first.ok);
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(first.cpu_s, 0.25);
  // another process's compiler (a new wrapper over the same directory) finds it
  const auto again = with_compile_cache(std::make_unique<CountingCompiler>(calls));
  const CompileResult second = again->compile(request());
  EXPECT_EQ(calls, 1) << "the second compile ran the compiler";
  ASSERT_TRUE(second.ok);
  EXPECT_EQ(second.code.bytes, first.code.bytes);
  EXPECT_EQ(second.code.symbol, first.code.symbol);
  EXPECT_EQ(second.log, first.log);
  EXPECT_DOUBLE_EQ(second.cpu_s, 0.0);  // nothing compiled
  // another instantiation is another entry
  EXPECT_TRUE(again->compile(request("k<2>")).ok);
  EXPECT_EQ(calls, 2);
  const auto entries = files();
  EXPECT_EQ(entries.size(), 2u);
  for (const auto& f : entries) {
    EXPECT_EQ(f.extension(), ".kernel") << f;
    struct stat st {};
    ASSERT_EQ(::stat(f.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0077, 0u) << f << ": readable or writable by others";
  }
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "cache").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(CompileCacheTest, FailuresAreCompiledAgain) {
  std::atomic<int> calls{0};
  const auto cached = with_compile_cache(std::make_unique<CountingCompiler>(calls, false));
  EXPECT_FALSE(cached->compile(request()).ok);
  const CompileResult again = cached->compile(request());
  EXPECT_FALSE(again.ok);
  EXPECT_EQ(again.log, "error: refused");
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(files().empty());
}

TEST_F(CompileCacheTest, DamagedOrOpenFilesAreCompiledAgain) {
  std::atomic<int> calls{0};
  const auto cached = with_compile_cache(std::make_unique<CountingCompiler>(calls));
  const CompileResult good = cached->compile(request());
  const fs::path entry = files().at(0);
  const std::string whole = [&] {
    std::ifstream f(entry, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  const std::vector<std::string> damaged = {
      "",                                         // empty
      whole.substr(0, whole.size() / 2),          // torn
      whole.substr(0, whole.size() - 1) + (whole.back() == '0' ? "1" : "0"),  // checksum
      std::string(whole).replace(40, 1, "x"),     // a byte of the body
      whole + "more",                             // trailing bytes
  };
  int expected = 1;
  for (std::size_t i = 0; i < damaged.size(); ++i) {
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << damaged[i];
    fs::permissions(entry, fs::perms::owner_read | fs::perms::owner_write);
    const CompileResult r = cached->compile(request());
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.code.bytes, good.code.bytes) << "damage " << i;
    EXPECT_EQ(calls, ++expected) << "damage " << i << " was loaded";
    expected = calls;
  }
  // a whole file that others may write is not loaded either
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << whole;
  fs::permissions(entry, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write);
  EXPECT_TRUE(cached->compile(request()).ok);
  EXPECT_EQ(calls, ++expected);
  // and the compile replaced it with one of its own
  EXPECT_TRUE(cached->compile(request()).ok);
  EXPECT_EQ(calls, expected);
}

TEST_F(CompileCacheTest, ADirectoryOthersMayWriteIsRefusedAndCompilingGoesOn) {
  fs::create_directories(dir_ / "cache");
  fs::permissions(dir_ / "cache", fs::perms::all);
  const std::string why = tiletune::testing::error_of([&] { CompileCache cache(dir_ / "cache"); });
  EXPECT_NE(why.find("others may write"), std::string::npos) << why;
  EXPECT_NE(why.find((dir_ / "cache").string()), std::string::npos) << why;
  std::ofstream(dir_ / "file") << "x";
  EXPECT_NE(tiletune::testing::error_of([&] { CompileCache cache(dir_ / "file"); }).find("not a directory"), std::string::npos);
  EXPECT_NE(tiletune::testing::error_of([&] { CompileCache cache(dir_ / "file" / "below"); }).find("cannot make"), std::string::npos);

  std::atomic<int> calls{0};
  ::testing::internal::CaptureStderr();
  const auto plain = with_compile_cache(std::make_unique<CountingCompiler>(calls));
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(plain->compile(request()).ok);
  EXPECT_TRUE(plain->compile(request()).ok);
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(files().empty());
  // once per process: an earlier test of this executable may have drawn it already
  if (!warning.empty()) EXPECT_NE(warning.find("TILETUNE_COMPILE_CACHE"), std::string::npos) << warning;
}

TEST_F(CompileCacheTest, ThreadsCompilingTheSameKernelLeaveOneWholeFile) {
  std::atomic<int> calls{0};
  const auto cached = with_compile_cache(std::make_unique<CountingCompiler>(calls));
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i)
        if (cached->compile(request("k<" + std::to_string(i % 4) + ">")).ok) ++good;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(good, 160);
  EXPECT_GE(calls, 4);
  EXPECT_EQ(files().size(), 4u) << "temporary files left behind";
  std::atomic<int> after{0};
  const auto fresh = with_compile_cache(std::make_unique<CountingCompiler>(after));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(fresh->compile(request("k<" + std::to_string(i) + ">")).ok);
  EXPECT_EQ(after, 0);
}

// The host compiler through make_compiler: a real shared object, kept and loaded again.
TEST_F(CompileCacheTest, AHostKernelFromTheCacheLoads) {
  CompileRequest r;
  r.source = "template <int N> void add(const void* a, unsigned, unsigned, unsigned) {"
             " *static_cast<int*>(const_cast<void*>(a)) += N; }\n";
  r.name_expression = "add<5>";
  r.arch = "host";
  const auto compiler = make_compiler(BackendKind::Host);
  const CompileResult first = compiler->compile(r);
  ASSERT_TRUE(first.ok) << first.log;
  ASSERT_EQ(files().size(), 1u);
  const CompileResult second = make_compiler(BackendKind::Host)->compile(r);
  ASSERT_TRUE(second.ok);
  EXPECT_DOUBLE_EQ(second.cpu_s, 0.0);
  EXPECT_EQ(second.code.bytes, first.code.bytes);
  const auto dev = open_device(BackendKind::Host, 0);
  const auto kernel = dev->load(second.code);
  ASSERT_TRUE(kernel);
}

}  // namespace
