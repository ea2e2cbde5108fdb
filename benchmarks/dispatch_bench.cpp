// The runtime's cost per GEMM call before the launch: problem check, canonical key, exact-match
// lookup among the winners (target: under 100 ns), the whole C API call on the host backend for a
// tiny problem (lookup + argument packing + a host "launch" of one tile), and the untuned path.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "db/database.h"
#include "gpu/backend.h"
#include "vendors/vendor_gemm.h"
#include "runtime/runtime.h"
#include "runtime/tiletune.h"

using namespace tiletune;

namespace {

// A database with `count` tuned problems (host arch), made once per process.
std::string make_database(int count) {
  namespace fs = std::filesystem;
  std::string path = (fs::temp_directory_path() / ("tiletune-dispatch-" + std::to_string(count) + ".db")).string();
  fs::remove(path);
  fs::remove(path + "-wal");
  fs::remove(path + "-shm");
  db::Database d = db::Database::open(path, db::Mode::ReadWrite);
  const std::string arch = gpu::list_devices(gpu::BackendKind::Host)[0].arch;
  Solution s = find_template("host_gemm").default_solution();
  std::int64_t sid = d.upsert_solution(s, find_template("host_gemm").source_hash());
  for (int i = 0; i < count; ++i) {
    GemmProblem p;
    p.m = 64 + i;
    p.n = 32 + (i % 7);
    p.k = 16 + (i % 5);
    db::MeasurementRecord m;
    m.problem_id = d.upsert_problem(p.canonical());
    m.solution_id = sid;
    m.arch = arch;
    m.min_ms = m.median_ms = m.max_ms = 1.0;
    m.tflops = 1.0;
    d.put_measurement(m);
  }
  return path;
}

GemmProblem tuned_problem(int i) {
  GemmProblem p;
  p.m = 64 + i;
  p.n = 32 + (i % 7);
  p.k = 16 + (i % 5);
  return p;
}

void BM_ExactMatchLookup(benchmark::State& state) {
  const int tuned = int(state.range(0));
  runtime::Runtime rt(gpu::open_device(gpu::BackendKind::Host, 0), make_database(tuned));
  std::vector<GemmProblem> problems;
  for (int i = 0; i < 64; ++i) problems.push_back(tuned_problem(i * 37 % tuned));
  std::size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(rt.has_exact_winner(problems[i++ & 63]));
  state.SetLabel(std::to_string(rt.tuned_problems()) + " winners loaded");
}
BENCHMARK(BM_ExactMatchLookup)->Arg(10)->Arg(1000)->Arg(10000);

// One problem called again and again through the C API on a database of 100 tuned problems; the
// label counts the calls the stats put on `rung`'s field.
void repeat_gemm(benchmark::State& state, const GemmProblem& p, std::uint64_t tiletune_stats_t::*rung, const char* what) {
  std::string db = make_database(100);
  tiletune_handle_t h = nullptr;
  if (tiletune_create(&h, db.c_str(), "host", 0) != TILETUNE_SUCCESS) return state.SkipWithError(tiletune_last_error());
  std::vector<float> a(p.m * p.k, 0.5f), b(p.k * p.n, 0.25f), c(p.m * p.n);
  for (auto _ : state)
    tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, p.m, p.n, p.k, 1.f, a.data(), TILETUNE_R_32F, p.lda, b.data(), p.ldb,
                  0.f, c.data(), TILETUNE_R_32F, p.ldc, nullptr);
  tiletune_stats_t s{};
  tiletune_get_stats(h, &s);
  state.SetLabel(std::to_string(s.*rung) + " " + what);
  tiletune_destroy(h);
}

void BM_CApiGemmTinyHost(benchmark::State& state) {
  repeat_gemm(state, tuned_problem(5).canonical(), &tiletune_stats_t::tuned, "tuned calls");
}
BENCHMARK(BM_CApiGemmTinyHost);

// The ladder's cost for a problem nobody tuned, on the host backend's vendor rung (OpenBLAS): the
// first call of each problem (the decision: pool search among 100 winners, vendor scope, plan), a
// later call of the same problem (the cached plan), and OpenBLAS called directly on the same data.
GemmProblem untuned_problem(int i) {
  GemmProblem p;
  p.m = 200 + i;
  p.n = 8;
  p.k = 8;
  return p.canonical();
}

void BM_CApiGemmUntunedFirstCall(benchmark::State& state) {
  std::string db = make_database(100);
  tiletune_handle_t h = nullptr;
  if (tiletune_create(&h, db.c_str(), "host", 0) != TILETUNE_SUCCESS) return state.SkipWithError(tiletune_last_error());
  std::vector<float> a(20200 * 8, 0.5f), b(8 * 8, 0.25f), c(20200 * 8);  // m up to 20199
  int i = 0;
  for (auto _ : state) {
    const GemmProblem p = untuned_problem(i++);
    tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, p.m, p.n, p.k, 1.f, a.data(), TILETUNE_R_32F, p.lda, b.data(),
                  p.ldb, 0.f, c.data(), TILETUNE_R_32F, p.ldc, nullptr);
  }
  tiletune_stats_t s{};
  tiletune_get_stats(h, &s);
  state.SetLabel(std::to_string(s.vendor) + " vendor calls");
  tiletune_destroy(h);
}
BENCHMARK(BM_CApiGemmUntunedFirstCall)->Iterations(20000);

void BM_CApiGemmUntunedCachedCall(benchmark::State& state) {
  repeat_gemm(state, untuned_problem(0), &tiletune_stats_t::vendor, "vendor calls");
}
BENCHMARK(BM_CApiGemmUntunedCachedCall);

void BM_OpenblasDirect(benchmark::State& state) {
  auto dev = gpu::open_device(gpu::BackendKind::Host, 0);
  auto blas = gpu::make_vendor_gemm(*dev);
  if (!blas) return state.SkipWithError("OpenBLAS is not installed");
  const GemmProblem p = untuned_problem(0);
  std::vector<float> a(p.m * p.k, 0.5f), b(p.k * p.n, 0.25f), c(p.m * p.n);
  TtGemmParams args{a.data(), b.data(), c.data(), p.lda, p.ldb, p.ldc, 0, 0, 0, int(p.m), int(p.n), int(p.k), 1, 1.f, 0.f,
                    nullptr};
  for (auto _ : state) blas->run(p, args);
}
BENCHMARK(BM_OpenblasDirect);

}  // namespace

BENCHMARK_MAIN();
