// `tiletune report`: what it reads out of a database (speedups, convergence, spread, peaks), that
// its page is well-formed with every plot and escapes whatever the database holds, the program's
// errors, a page of a real host sweep, and the page as headless Chromium renders it (skipped where
// there is no Chromium; scripts/install-deps.sh installs it).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "db/database.h"
#include "db/ship.h"
#include "solutions/kernel_template.h"
#include "tests/process_util.h"
#include "tests/report/xml_check.h"
#include "tests/test_util.h"
#include "tests/tiny_sweep.h"
#include "tools/report/page.h"

namespace fs = std::filesystem;
using namespace tiletune;
using tiletune::testing::parse_xml;
using tiletune::testing::read_file;
using tiletune::testing::run_tiletune;

namespace {

const std::string kHost = "x86_64-avx2";
const std::string kCuda = "sm_90a";
// A device name with markup in it; it still names an H200 for the peak table.
const std::string kCudaName = "NVIDIA H200 <i>&amp;</i>";

Solution kernel(std::int64_t mt0) {
  Solution s = find_template("host_gemm").default_solution();
  s.params["MT0"] = mt0;
  return s;
}

ConvProblem conv() {
  ConvProblem c;
  c.n = 2, c.c = 16, c.h = 8, c.w = 8, c.k = 32, c.r = 3, c.s = 3, c.pad_h = 1, c.pad_w = 1;
  return c;
}

const GemmProblem P1 = tiletune::testing::gemm(DataType::F32, DataType::F32, false, false, 256, 256, 256);
const GemmProblem P2 = tiletune::testing::gemm(DataType::BF16, DataType::BF16, false, false, 1024, 1024, 1024);
const GemmProblem P3 = tiletune::testing::gemm(DataType::F32, DataType::F32, false, false, 64, 64, 64);

// The fixture's script: per arch, problem and sweep, candidates in measuring order.
//   sm_90a P1: sweep ex measures 3.0, (fails), 2.0, 2.5; sweep "rnd" 1.5, 4.0; vendor 3.0 -> 2x
//   sm_90a P2: ex 1.0, 0.8; vendor 0.4 -> the vendor wins, 0.5x
//   sm_90a P3: ex 0.1; no vendor
//   host   P1: ex 1.0; vendor 2.0 -> 2x;  host conv: ex 5.0; vendor 10.0 -> 2x
const std::string kRnd = "rnd</title>&";  // a sweep name with markup
class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = (dir_.path() / "t.db").string(); }
  std::string file(const std::string& name) const { return (dir_.path() / name).string(); }

  void build() {
    db::Database d = db::Database::open(path_, db::Mode::ReadWrite);
    const std::int64_t host = d.upsert_device({"host", kHost, "host x86_64", 4, ""});
    const std::int64_t cuda = d.upsert_device({"cuda", kCuda, kCudaName, 132, "560"});
    auto put = [&](const std::string& arch, const Problem& p, const Solution& s, const std::string& sweep, double ms) {
      db::MeasurementRecord m;
      m.problem_id = d.upsert_problem(p);
      m.solution_id = d.upsert_solution(s, "hash");
      m.device_id = arch == kHost ? host : cuda;
      m.arch = arch;
      m.sweep = sweep;
      if (ms > 0) m.median_ms = m.min_ms = m.max_ms = ms;
      else m.status = db::Status::CompileFailed, m.reason = "test";
      d.put_measurement(m);
    };
    const Solution vendor{kVendorTemplate, {}};
    put(kCuda, P1, kernel(16), "ex", 3.0);
    put(kCuda, P1, kernel(32), "ex", 0);
    put(kCuda, P1, kernel(48), "ex", 2.0);
    put(kCuda, P1, kernel(64), "ex", 2.5);
    put(kCuda, P1, kernel(80), kRnd, 1.5);
    put(kCuda, P1, kernel(96), kRnd, 4.0);
    put(kCuda, P1, vendor, "ex", 3.0);
    put(kCuda, P2, kernel(16), "ex", 1.0);
    put(kCuda, P2, kernel(32), "ex", 0.8);
    put(kCuda, P2, vendor, "ex", 0.4);
    put(kCuda, P3, kernel(16), "ex", 0.1);
    put(kHost, P1, kernel(16), "ex", 1.0);
    put(kHost, P1, vendor, "ex", 2.0);
    put(kHost, conv(), kernel(16), "ex", 5.0);
    put(kHost, conv(), vendor, "ex", 10.0);
    d.set_meta(std::string(db::kSearchMetaPrefix) + "ex", R"({"strategy":"exhaustive","budget":0,"budget_seconds":0,"seed":0})");
    d.set_meta(std::string(db::kSearchMetaPrefix) + kRnd, R"({"strategy":"random","budget":2,"budget_seconds":0,"seed":7})");
    // Markup and bytes that are not UTF-8 where the database holds free text: the winner of sm_90a
    // P1 gets a hostile template name, P1 a hostile key.
    const std::string sql =
        "UPDATE problems SET key = key || '<script>alert(1)</script>]]>' || X'FF' WHERE key = '" + Problem(P1).key() +
        "'; UPDATE solutions SET template = 'evil</svg><b>', kernel_name = 'evil</svg><b>\"' WHERE kernel_name = '" +
        kernel(80).kernel_name() + "';";
    ASSERT_EQ(sqlite3_exec(d.native_handle(), sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  }

  report::ReportData gathered() {
    db::Database d = db::Database::open(path_, db::Mode::ReadOnly);
    return report::gather(d);
  }

  TempDir dir_{"tiletune_report_test_"};
  std::string path_;
};

const report::ProblemResult& find(const report::ArchResult& a, const std::string& key_start) {
  for (const auto& p : a.problems)
    if (p.key.rfind(key_start, 0) == 0) return p;
  throw Error("no problem " + key_start);
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (std::size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

}  // namespace

TEST_F(ReportTest, GathersSpeedupsConvergenceAndSpread) {
  build();
  const report::ReportData r = gathered();
  ASSERT_EQ(r.arches.size(), 2u);
  const report::ArchResult& cuda = r.arches[0];
  ASSERT_EQ(cuda.arch, kCuda);
  EXPECT_EQ(cuda.devices, std::vector<std::string>{kCudaName});
  ASSERT_TRUE(cuda.peaks);
  EXPECT_DOUBLE_EQ(cuda.peaks->f16, 989e12);
  EXPECT_DOUBLE_EQ(cuda.peaks->bytes_per_s, 4.8e12);
  ASSERT_EQ(cuda.problems.size(), 3u);

  const report::ProblemResult& p1 = find(cuda, Problem(P1).key());
  EXPECT_DOUBLE_EQ(p1.kernel_ms, 1.5);
  EXPECT_DOUBLE_EQ(p1.vendor_ms, 3.0);
  EXPECT_DOUBLE_EQ(p1.speedup(), 2.0);
  EXPECT_EQ(p1.candidate_ms, (std::vector<double>{1.5, 2.0, 2.5, 3.0, 4.0}));
  EXPECT_EQ(p1.failed, 1u);
  EXPECT_FALSE(p1.vendor_wins);
  EXPECT_EQ(p1.winner_kernel.rfind("evil</svg><b>_", 0), 0u) << p1.winner_kernel;
  ASSERT_EQ(p1.convergence.size(), 2u);  // by sweep name: "ex" < "rnd..."
  EXPECT_EQ(p1.convergence[0].sweep, "ex");
  EXPECT_EQ(p1.convergence[0].measured, 4u);  // the failure counts
  EXPECT_EQ(p1.convergence[0].steps, (std::vector<std::pair<std::size_t, double>>{{1, 3.0}, {3, 2.0}}));
  EXPECT_EQ(p1.convergence[1].steps, (std::vector<std::pair<std::size_t, double>>{{1, 1.5}}));
  EXPECT_EQ(p1.convergence[1].measured, 2u);
  EXPECT_EQ(p1.flops, 2.0 * 256 * 256 * 256);
  EXPECT_EQ(p1.bytes, 3.0 * 256 * 256 * 4);
  EXPECT_EQ(p1.arithmetic, report::Arithmetic::F32);

  const report::ProblemResult& p2 = find(cuda, Problem(P2).key());
  EXPECT_TRUE(p2.vendor_wins);
  EXPECT_EQ(p2.winner_kernel, "vendor");
  EXPECT_DOUBLE_EQ(p2.speedup(), 0.5);  // against the best kernel, not the winner
  EXPECT_EQ(p2.arithmetic, report::Arithmetic::F16);
  EXPECT_FALSE(find(cuda, Problem(P3).key()).has_speedup());
  EXPECT_NEAR(cuda.geomean_speedup(), 1.0, 1e-12);  // sqrt(2 * 0.5); P3 has no vendor

  const report::ArchResult& host = r.arches[1];
  EXPECT_EQ(host.arch, kHost);
  ASSERT_TRUE(host.peaks);
  EXPECT_TRUE(std::isnan(host.peaks->bytes_per_s));
  EXPECT_GT(host.peaks->f32, 0);
  EXPECT_NEAR(host.geomean_speedup(), 2.0, 1e-12);
  const report::ProblemResult& c = find(host, Problem(conv()).key());
  EXPECT_EQ(c.bytes, double(conv().elements_x() + conv().elements_w() + conv().elements_y()) * 4);

  EXPECT_EQ(r.searches.at("ex"), "exhaustive");
  EXPECT_EQ(r.searches.at(kRnd), "random, budget 2 candidates, seed 7");

  db::Database d = db::Database::open(path_, db::Mode::ReadOnly);
  EXPECT_EQ(report::gather(d, {kHost}).arches.size(), 1u);
  EXPECT_NE(tiletune::testing::error_of([&] { report::gather(d, {"gfx942"}); }).find("no measurements of arch 'gfx942'"),
            std::string::npos);
}

TEST_F(ReportTest, PageIsWellFormedWithEveryPlotAndEscapesTheDatabase) {
  build();
  const std::string html = report::render_html(gathered());
  const auto x = parse_xml(html);
  ASSERT_EQ(x.error, "") << html;
  EXPECT_EQ(x.elements.at("svg"), 8) << "four plots per arch";
  EXPECT_EQ(x.elements.at("polyline"), 6) << "a line per problem and sweep: sm_90a 4 (P1 twice), host 2";
  EXPECT_GT(x.elements.at("circle"), 10);
  EXPECT_EQ(x.elements.count("script"), 0u);
  EXPECT_EQ(count(html, "<script"), 0);
  EXPECT_EQ(count(html, "<b>"), 0);
  EXPECT_EQ(count(html, "<i>"), 0);
  EXPECT_GT(count(html, "&lt;script&gt;alert(1)&lt;/script&gt;]]&gt;\xEF\xBF\xBD"), 0);
  EXPECT_GT(count(html, "evil&lt;/svg&gt;&lt;b&gt;"), 0);
  EXPECT_GT(count(html, "rnd&lt;/title&gt;&amp; (random, budget 2 candidates, seed 7)"), 0) << "the legend";
  EXPECT_GT(count(html, "f16/bf16 peak 989"), 0) << "the H200's roof";
  EXPECT_GT(count(html, "datasheet figures for H200"), 0);
  EXPECT_GT(count(html, "analytical model"), 0) << "the host's roof says where it comes from";
  EXPECT_EQ(count(html, "http://") + count(html, "https://"),
            count(html, "xmlns=\"http://www.w3.org/")) << "nothing fetched: the only URLs are namespaces";
}

TEST_F(ReportTest, AnEmptyDatabaseGetsAPageSayingSo) {
  db::Database::open(path_, db::Mode::ReadWrite);
  const std::string html = report::render_html(gathered());
  EXPECT_EQ(parse_xml(html).error, "");
  EXPECT_GT(count(html, "holds no measurements"), 0);
}

// db merge brings each source sweep's search settings along, keeping the destination's own.
TEST_F(ReportTest, MergedSweepsKeepTheirSearchSettings) {
  build();
  const std::string other = file("other.db"), merged = file("merged.db");
  {
    db::Database d = db::Database::open(other, db::Mode::ReadWrite);
    db::MeasurementRecord m;
    m.problem_id = d.upsert_problem(P3);
    m.solution_id = d.upsert_solution(kernel(16), "hash");
    m.arch = kHost;
    m.sweep = "halved";
    m.median_ms = 1;
    d.put_measurement(m);
    d.set_meta(std::string(db::kSearchMetaPrefix) + "halved", R"({"strategy":"halving","budget":5})");
    d.set_meta(std::string(db::kSearchMetaPrefix) + "ex", R"({"strategy":"model"})");  // no measurement of "ex" here
  }
  db::merge(merged, {path_, other});
  db::Database d = db::Database::open(merged, db::Mode::ReadOnly);
  const report::ReportData r = report::gather(d);
  EXPECT_EQ(r.searches.at("halved"), "halving, budget 5 candidates");
  EXPECT_EQ(r.searches.at("ex"), "exhaustive");
  EXPECT_EQ(r.searches.at(kRnd), "random, budget 2 candidates, seed 7");
}

TEST_F(ReportTest, TheProgramWritesThePageAndNamesBadInput) {
  build();
  const std::string out = file("r.html");
  auto r = run_tiletune({"report", path_, "--html", out});
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_EQ(parse_xml(read_file(out)).error, "");
  EXPECT_FALSE(fs::exists(out + ".tmp." + std::to_string(::getpid())));
  r = run_tiletune({"report", path_, "--html", out, "--arch", kHost});
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_EQ(parse_xml(read_file(out)).elements.at("svg"), 4);

  r = run_tiletune({"report", file("missing.db"), "--html", out});
  EXPECT_EQ(r.status, 1) << r.text;
  EXPECT_NE(r.text.find("missing.db"), std::string::npos) << r.text;
  r = run_tiletune({"report", path_, "--html", file("no/such/dir/r.html")});
  EXPECT_EQ(r.status, 1) << r.text;
  EXPECT_NE(r.text.find("cannot write the report"), std::string::npos) << r.text;
  r = run_tiletune({"report", path_, "--html", out, "--arch", "gfx942"});
  EXPECT_EQ(r.status, 1) << r.text;
  EXPECT_NE(r.text.find("gfx942"), std::string::npos) << r.text;
  r = run_tiletune({"report", path_});
  EXPECT_EQ(r.status, 64) << r.text;  // --html is required
  std::ofstream(file("junk.db")) << "not a database";
  r = run_tiletune({"report", file("junk.db"), "--html", out});
  EXPECT_EQ(r.status, 1) << r.text;
}

// A real sweep records its search settings, and its page labels the sweep with them.
TEST_F(ReportTest, ASweepsPageNamesItsSearch) {
  tiletune::testing::tune_tiny_host_database(path_, dir_.path().string());
  const report::ReportData r = gathered();
  ASSERT_EQ(r.arches.size(), 1u);
  ASSERT_EQ(r.arches[0].problems.size(), 1u);
  EXPECT_GT(r.arches[0].problems[0].kernel_ms, 0);
  EXPECT_EQ(r.searches.at("tiny"), "exhaustive");
  const std::string html = report::render_html(r);
  const auto x = parse_xml(html);
  ASSERT_EQ(x.error, "");
  EXPECT_EQ(x.elements.at("svg"), 3) << "no vendor measured: no speedup plot";
  EXPECT_GT(count(html, "No problem of this arch has both a kernel and a vendor measurement"), 0);
  EXPECT_GT(count(html, "<td>tiny</td><td>exhaustive</td>"), 0);
}

// ---- headless Chromium --------------------------------------------------------------------------

namespace {

std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser"})
    if (std::string p = find_program(name); !p.empty()) return p;
  return "";
}

// Runs the browser headless on `url` ("": none) with `args`, stdout to out_path, killed after two
// minutes; its exit status.
int run_browser(const std::string& browser, const std::string& profile, const std::vector<std::string>& args,
                const std::string& url, const std::string& out_path, const std::string& err_path) {
  std::vector<std::string> argv = {"timeout", "120", browser, "--headless", "--no-sandbox", "--disable-gpu",
                                   "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=" + profile};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!url.empty()) argv.push_back(url);
  SpawnOptions o;
  o.out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  o.err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = spawn_process(argv, o);
  ::close(o.out), ::close(o.err);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_F(ReportTest, ChromiumRendersThePlots) {
  const std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "no chromium on PATH (scripts/install-deps.sh installs it)";
  const std::string profile = file("profile"), err = file("chromium.err");
  if (run_browser(browser, profile, {"--version"}, "", file("version"), err) != 0)  // e.g. a snap stub
    GTEST_SKIP() << browser << " does not run here: " << read_file(err);
  build();
  const std::string page = file("r.html");
  report::write_report(path_, page);
  const std::string url = "file://" + page;

  // The DOM Chromium built from the page: every plot with its marks.
  const std::string dom = file("dom.html");
  ASSERT_EQ(run_browser(browser, profile, {"--dump-dom"}, url, dom, err), 0) << read_file(err);
  const std::string d = read_file(dom);
  EXPECT_EQ(count(d, "<svg"), 8) << d.substr(0, 2000) << read_file(err);
  EXPECT_GT(count(d, "<circle"), 10);
  EXPECT_GT(count(d, "<polyline"), 0);
  EXPECT_EQ(count(d, "<script"), 0);
  EXPECT_GT(count(d, "tiletune report"), 0);

  // Pixels: a screenshot of the page against one of an empty page in the same window. Blank pixels
  // compress to almost nothing in a PNG; drawn plots do not.
  const std::string shot = file("shot.png"), blank = file("blank.png"), empty = file("empty.html");
  std::ofstream(empty) << "<!DOCTYPE html><html><body></body></html>";
  const std::vector<std::string> size = {"--window-size=1000,1400", "--hide-scrollbars"};
  auto with = [&](std::vector<std::string> a, const std::string& to) {
    a.push_back("--screenshot=" + to);
    return a;
  };
  ASSERT_EQ(run_browser(browser, profile, with(size, shot), url, file("o"), err), 0) << read_file(err);
  ASSERT_EQ(run_browser(browser, profile, with(size, blank), "file://" + empty, file("o"), err), 0) << read_file(err);
  const auto shot_bytes = fs::file_size(shot), blank_bytes = fs::file_size(blank);
  EXPECT_GT(shot_bytes, 10 * blank_bytes) << shot_bytes << " vs an empty page's " << blank_bytes;
}
