// OpenBLAS as the host backend's vendor GEMM, loaded with dlopen like the GPU vendors, so that a
// build without it still runs (the ladder then ends at the template default).
#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "gpu/host/host_backend.h"

namespace tiletune::gpu::host {
namespace {

// cblas.h's values (CBLAS_ORDER, CBLAS_TRANSPOSE); the header is not needed to build.
constexpr int kColMajor = 102, kNoTrans = 111, kTrans = 112;
using Sgemm = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                       const float* b, int ldb, float beta, float* c, int ldc);

Sgemm load_sgemm(std::string* why) {
  static std::string error;
  static const Sgemm fn = []() -> Sgemm {
    for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
      if (void* h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
        if (auto f = reinterpret_cast<Sgemm>(::dlsym(h, "cblas_sgemm"))) return f;
        error = std::string(name) + " has no cblas_sgemm";
        return nullptr;
      }
    }
    error = "OpenBLAS not found (apt-get install libopenblas0)";
    return nullptr;
  }();
  if (!fn && why) *why = error;
  return fn;
}

class OpenblasGemm final : public VendorGemm {
 public:
  explicit OpenblasGemm(Sgemm sgemm) : sgemm_(sgemm) {}
  std::string name() const override { return "OpenBLAS"; }
  std::string unsupported(const GemmProblem& p) const override {
    if (p.a_type != DataType::F32 || p.c_type != DataType::F32 || p.compute_tf32)
      return "OpenBLAS computes fp32 GEMMs only (cblas_sgemm); this problem is " + p.key();
    for (std::int64_t v : {p.m, p.n, p.k, p.lda, p.ldb, p.ldc})
      if (v > INT_MAX) return "OpenBLAS takes 32-bit sizes and leading dimensions; this problem is " + p.key();
    return "";
  }
  // Host memory; the stream is ignored (every host launch is synchronous).
  void run(const GemmProblem& p, const TtGemmParams& a, Stream) override {
    if (std::string why = unsupported(p); !why.empty()) throw Error(why);
    const auto* A = static_cast<const float*>(a.a);
    const auto* B = static_cast<const float*>(a.b);
    auto* C = static_cast<float*>(a.c);
    for (int i = 0; i < a.batch; ++i)
      sgemm_(kColMajor, p.trans_a ? kTrans : kNoTrans, p.trans_b ? kTrans : kNoTrans, a.m, a.n, a.k, a.alpha,
             A + i * a.stride_a, int(a.lda), B + i * a.stride_b, int(a.ldb), a.beta, C + i * a.stride_c, int(a.ldc));
  }

 private:
  Sgemm sgemm_;
};

}  // namespace

std::unique_ptr<VendorGemm> make_openblas_gemm(std::string* why_not) {
  Sgemm f = load_sgemm(why_not);
  return f ? std::make_unique<OpenblasGemm>(f) : nullptr;
}

}  // namespace tiletune::gpu::host
