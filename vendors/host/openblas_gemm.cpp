// OpenBLAS as the host backend's vendor GEMM, loaded with dlopen like the GPU vendors, so that a
// build without it still runs (the ladder then ends at the template default).
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>

#include "common/error.h"
#include "gpu/host/host_backend.h"
#include "vendors/libraries.h"
#include "vendors/shared_library.h"

namespace tiletune::gpu::host {
namespace {

// cblas.h's values (CBLAS_ORDER, CBLAS_TRANSPOSE); the header is not needed to build.
constexpr int kColMajor = 102, kNoTrans = 111, kTrans = 112;
using Sgemm = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                       const float* b, int ldb, float beta, float* c, int ldc);

struct Openblas {
  Sgemm sgemm = nullptr;
  // Its thread count is global to the process: changed only around a call under `threads_mu`,
  // shared by every OpenblasGemm, and put back to what it was just before.
  void (*set_threads)(int) = nullptr;
  int (*get_threads)() = nullptr;
  int default_threads = 0;  // when loaded (0: it cannot be changed)
  mutable std::mutex threads_mu;
};

const Openblas* load_openblas(std::string* why) {
  static std::string error;
  static Openblas lib;
  static std::once_flag once;
  std::call_once(once, [] {
    Openblas& o = lib;
    void* h = open_library({"libopenblas.so.0", "libopenblas.so"});
    if (!h) {
      error = "OpenBLAS not found (apt-get install libopenblas0)";
      return;
    }
    if (!bind_symbol(h, o.sgemm, "cblas_sgemm")) error = "libopenblas has no cblas_sgemm";
    if (bind_symbol(h, o.set_threads, "openblas_set_num_threads") && bind_symbol(h, o.get_threads, "openblas_get_num_threads"))
      o.default_threads = o.get_threads();
  });
  if (!lib.sgemm && why) *why = error;
  return lib.sgemm ? &lib : nullptr;
}

class OpenblasGemm final : public VendorGemm {
 public:
  explicit OpenblasGemm(const Openblas& lib) : lib_(lib) {}
  std::string name() const override { return "OpenBLAS"; }
  // A choice is a thread count around the same call: a source of its own, so that a database
  // tells its rows from the default's (as cuBLASLt's algorithms from cublasGemmEx's default).
  std::string choice_source() const override { return "OpenBLAS, threads set"; }
  std::string unsupported(const GemmProblem& p) const override {
    if (p.a_type != DataType::F32 || p.c_type != DataType::F32 || p.compute_tf32)
      return "OpenBLAS computes fp32 GEMMs only (cblas_sgemm); this problem is " + p.key();
    for (std::int64_t v : {p.m, p.n, p.k, p.lda, p.ldb, p.ldc})
      if (v > INT_MAX) return "OpenBLAS takes 32-bit sizes and leading dimensions; this problem is " + p.key();
    return "";
  }
  // Fewer threads than its default (every core): a small GEMM runs faster on one than spread
  // over all, and the sweep measures where that holds.
  std::vector<VendorChoice> alternatives(const GemmProblem&, const TtGemmParams&, int limit) override {
    std::vector<VendorChoice> out;
    for (int t = 1; t < lib_.default_threads && int(out.size()) < limit; t *= 2) out.push_back({{"THREADS", t}});
    return out;
  }
  // Host memory; the stream is ignored (every host launch is synchronous).
  void run(const GemmProblem& p, const TtGemmParams& a, Stream, const VendorChoice& choice) override {
    if (std::string why = unsupported(p); !why.empty()) throw Error(why);
    auto it = choice.find("THREADS");
    // Every call under the lock: one must not run while another has changed the thread count
    // (its threaded build runs one call at a time anyway).
    std::lock_guard<std::mutex> lock(lib_.threads_mu);
    if (it == choice.end() || lib_.default_threads == 0) return sgemm(p, a);
    const int before = lib_.get_threads();
    lib_.set_threads(int(std::clamp<std::int64_t>(it->second, 1, lib_.default_threads)));
    sgemm(p, a);
    lib_.set_threads(before);
  }

 private:
  void sgemm(const GemmProblem& p, const TtGemmParams& a) const {
    const auto* A = static_cast<const float*>(a.a);
    const auto* B = static_cast<const float*>(a.b);
    auto* C = static_cast<float*>(a.c);
    for (int i = 0; i < a.batch; ++i)
      lib_.sgemm(kColMajor, p.trans_a ? kTrans : kNoTrans, p.trans_b ? kTrans : kNoTrans, a.m, a.n, a.k, a.alpha,
                 A + i * a.stride_a, int(a.lda), B + i * a.stride_b, int(a.ldb), a.beta, C + i * a.stride_c,
                 int(a.ldc));
  }

  const Openblas& lib_;
};

}  // namespace

std::unique_ptr<VendorGemm> make_openblas_gemm(std::string* why_not) {
  const Openblas* lib = load_openblas(why_not);
  return lib ? std::make_unique<OpenblasGemm>(*lib) : nullptr;
}

}  // namespace tiletune::gpu::host
