// rocBLAS as the HIP backend's vendor GEMM, with its Tensile solutions as the other algorithms a
// sweep times (as PyTorch's TunableOp does on ROCm). Loaded with dlopen and declared here from
// rocBLAS's published C API, so that it builds where no ROCm is installed (Debian 12 packages no
// rocBLAS). Compile-verified only: no AMD GPU has run it.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/error.h"
#include "gpu/hip/hip_api.h"
#include "gpu/hip/hip_backend.h"
#include "vendors/libraries.h"
#include "vendors/shared_library.h"
#include "vendors/vendor_gemm.h"

namespace tiletune::gpu::hip {
namespace {

// rocBLAS's C API (rocblas-types.h, rocblas-functions.h): LP64 integers, int64 strides.
using rb_handle = struct rocblas_handle_opaque*;
using rb_int = std::int32_t;
using rb_stride = std::int64_t;
using rb_status = int;
constexpr rb_status kSuccess = 0;
constexpr int kOpNone = 111, kOpTranspose = 112;
constexpr int kF16 = 150, kF32 = 151, kBF16 = 168;
constexpr int kAlgoStandard = 0, kAlgoSolutionIndex = 1;
constexpr std::uint32_t kFlagsNone = 0, kFlagCheckSolutionIndex = 0x8;

using GemmEx = rb_status (*)(rb_handle, int, int, rb_int, rb_int, rb_int, const void*, const void*, int, rb_int,
                             rb_stride, const void*, int, rb_int, rb_stride, const void*, const void*, int, rb_int,
                             rb_stride, void*, int, rb_int, rb_stride, rb_int, int, int, std::int32_t, std::uint32_t);
using GetSolutions = rb_status (*)(rb_handle, int, int, rb_int, rb_int, rb_int, const void*, const void*, int, rb_int,
                                   rb_stride, const void*, int, rb_int, rb_stride, const void*, const void*, int,
                                   rb_int, rb_stride, void*, int, rb_int, rb_stride, rb_int, int, int, std::uint32_t,
                                   rb_int*, rb_int*);

struct Rocblas {
  rb_status (*create)(rb_handle*) = nullptr;
  rb_status (*destroy)(rb_handle) = nullptr;
  rb_status (*set_stream)(rb_handle, void*) = nullptr;
  rb_status (*version)(char*, std::size_t) = nullptr;
  GemmEx gemm = nullptr;
  GetSolutions solutions = nullptr;  // absent before ROCm 5.0: no alternatives then
  bool ok = false;
};

const Rocblas& lib() {
  static const Rocblas r = [] {
    Rocblas r;
    void* h = open_library({"librocblas.so.4", "librocblas.so.3", "librocblas.so.0", "librocblas.so"});
    if (!h) return r;
    auto load = [&](auto& f, const char* name) { return bind_symbol(h, f, name); };
    r.ok = load(r.create, "rocblas_create_handle") && load(r.destroy, "rocblas_destroy_handle") &&
           load(r.set_stream, "rocblas_set_stream") && load(r.gemm, "rocblas_gemm_strided_batched_ex");
    load(r.version, "rocblas_get_version_string");
    load(r.solutions, "rocblas_gemm_strided_batched_ex_get_solutions");
    return r;
  }();
  return r;
}

int rb_type(DataType t) {
  switch (t) {
    case DataType::F16: return kF16;
    case DataType::BF16: return kBF16;
    case DataType::F32: return kF32;
    case DataType::E4M3:
    case DataType::E5M2:
    case DataType::S8:
    case DataType::S32: break;  // declined by unsupported()
  }
  return kF32;
}

class RocblasGemm final : public VendorGemm {
 public:
  // A rocBLAS handle belongs to the HIP device current when it is made, and runs on the one
  // current at each call: both are set to the device's.
  explicit RocblasGemm(int device) : device_(device) {
    bind();
    if (lib().create(&handle_) != kSuccess) throw Error("rocblas_create_handle failed");
  }
  ~RocblasGemm() override { lib().destroy(handle_); }
  std::string name() const override { return "rocBLAS"; }
  std::string choice_source() const override {
    char v[64] = {};
    if (lib().version && lib().version(v, sizeof v) == kSuccess) return std::string("rocBLAS ") + v;
    return "rocBLAS";
  }
  std::string unsupported(const GemmProblem& p) const override {
    if (p.compute_tf32) return "rocBLAS has no tf32 GEMM";
    if (size_of(p.a_type) == 1) return "the rocBLAS rung is not wired for fp8 or int8 GEMMs (hipBLASLt's)";
    const std::int64_t most = std::max({p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.batch});
    if (most > INT32_MAX) return "rocBLAS takes 32-bit sizes and leading dimensions";
    return "";
  }

  std::vector<VendorChoice> alternatives(const GemmProblem& p, const TtGemmParams& a, int limit) override {
    if (!lib().solutions) return {};
    std::lock_guard<std::mutex> lock(mu_);
    bind();
    rb_int count = 0;
    if (call_solutions(p, a, nullptr, &count) != kSuccess || count <= 0) return {};
    std::vector<rb_int> ids(static_cast<std::size_t>(count));
    if (call_solutions(p, a, ids.data(), &count) != kSuccess) return {};
    std::vector<VendorChoice> out;
    for (rb_int i = 0; i < count && int(out.size()) < limit; ++i) out.push_back(VendorChoice{{"SOLUTION", std::int64_t(ids[std::size_t(i)])}});
    return out;
  }

  void run(const GemmProblem& p, const TtGemmParams& a, Stream stream, const VendorChoice& choice) override {
    std::lock_guard<std::mutex> lock(mu_);
    bind();
    if (lib().set_stream(handle_, stream) != kSuccess) throw Error("rocblas_set_stream failed");
    // A solution index this rocBLAS refuses for the problem runs the default instead.
    if (auto it = choice.find("SOLUTION"); it != choice.end()) {
      const rb_status s = call_gemm(p, a, kAlgoSolutionIndex, std::int32_t(it->second), kFlagCheckSolutionIndex);
      if (s == kSuccess) return;
      if (strict_) throw Error("rocBLAS refuses solution " + std::to_string(it->second) + " here (status " + std::to_string(s) + ")");
    }
    if (rb_status s = call_gemm(p, a, kAlgoStandard, 0, kFlagsNone); s != kSuccess)
      throw Error("rocblas_gemm_strided_batched_ex failed with status " + std::to_string(s));
  }

 private:
  void bind() const {
    if (runtime().hipSetDevice(device_) != hipSuccess) throw Error("hipSetDevice(" + std::to_string(device_) + ") failed");
  }
  // D = C in place; compute in fp32 for every input type.
  rb_status call_gemm(const GemmProblem& p, const TtGemmParams& a, int algo, std::int32_t index, std::uint32_t flags) {
    return lib().gemm(handle_, p.trans_a ? kOpTranspose : kOpNone, p.trans_b ? kOpTranspose : kOpNone, rb_int(a.m),
                      rb_int(a.n), rb_int(a.k), &a.alpha, a.a, rb_type(p.a_type), rb_int(a.lda), a.stride_a, a.b,
                      rb_type(p.a_type), rb_int(a.ldb), a.stride_b, &a.beta, a.c, rb_type(p.c_type), rb_int(a.ldc),
                      a.stride_c, a.c, rb_type(p.c_type), rb_int(a.ldc), a.stride_c, rb_int(a.batch), kF32, algo,
                      index, flags);
  }
  rb_status call_solutions(const GemmProblem& p, const TtGemmParams& a, rb_int* ids, rb_int* count) {
    return lib().solutions(handle_, p.trans_a ? kOpTranspose : kOpNone, p.trans_b ? kOpTranspose : kOpNone,
                           rb_int(a.m), rb_int(a.n), rb_int(a.k), &a.alpha, a.a, rb_type(p.a_type), rb_int(a.lda),
                           a.stride_a, a.b, rb_type(p.a_type), rb_int(a.ldb), a.stride_b, &a.beta, a.c,
                           rb_type(p.c_type), rb_int(a.ldc), a.stride_c, a.c, rb_type(p.c_type), rb_int(a.ldc),
                           a.stride_c, rb_int(a.batch), kF32, kAlgoSolutionIndex, kFlagsNone, ids, count);
  }

  std::mutex mu_;  // one handle: its stream is set for each call
  int device_;
  rb_handle handle_ = nullptr;
};

}  // namespace

std::unique_ptr<VendorGemm> make_rocblas_gemm(Device& dev, std::string* why_not) {
  if (!lib().ok) {
    if (why_not) *why_not = "rocBLAS (librocblas.so.4, .so.3 or .so.0) cannot be loaded";
    return nullptr;
  }
  return std::make_unique<RocblasGemm>(dev.info().index);
}

}  // namespace tiletune::gpu::hip
