// cuBLAS as the yardstick. Loaded with dlopen so that the tuner runs where cuBLAS is absent.
#include <cublas_api.h>
#include <dlfcn.h>

#include <map>
#include <mutex>

#include "common/error.h"
#include "gpu/cuda/cuda_backend.h"
#include "gpu/vendor_gemm.h"

namespace tiletune::gpu::cuda {
namespace {

struct Cublas {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  // Spelled out: the C++ header overloads this name, so decltype cannot pick it.
  using Gemm = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                  const void*, cudaDataType, int, long long, const void*, cudaDataType, int, long long,
                                  const void*, void*, cudaDataType, int, long long, int, cublasComputeType_t,
                                  cublasGemmAlgo_t);
  Gemm gemm = nullptr;
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetWorkspace_v2) set_workspace = nullptr;
  bool ok = false;
};

const Cublas& lib() {
  static const Cublas c = [] {
    Cublas c;
    void* h = ::dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = ::dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return c;
    c.create = reinterpret_cast<decltype(c.create)>(::dlsym(h, "cublasCreate_v2"));
    c.destroy = reinterpret_cast<decltype(c.destroy)>(::dlsym(h, "cublasDestroy_v2"));
    c.gemm = reinterpret_cast<decltype(c.gemm)>(::dlsym(h, "cublasGemmStridedBatchedEx"));
    c.set_math_mode = reinterpret_cast<decltype(c.set_math_mode)>(::dlsym(h, "cublasSetMathMode"));
    c.set_stream = reinterpret_cast<decltype(c.set_stream)>(::dlsym(h, "cublasSetStream_v2"));
    c.set_workspace = reinterpret_cast<decltype(c.set_workspace)>(::dlsym(h, "cublasSetWorkspace_v2"));
    c.ok = c.create && c.destroy && c.gemm && c.set_math_mode && c.set_stream && c.set_workspace;
    return c;
  }();
  return c;
}

cudaDataType cuda_type(DataType t) {
  switch (t) {
    case DataType::F32: return CUDA_R_32F;
    case DataType::F16: return CUDA_R_16F;
    case DataType::BF16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

class CublasGemm final : public VendorGemm {
 public:
  explicit CublasGemm(Device& dev) : dev_(dev) {
    if (lib().create(&handle_) != CUBLAS_STATUS_SUCCESS) throw Error("cublasCreate failed");
    // Plain fp32 math for fp32 problems: the SIMT templates are compared with SGEMM, not TF32.
    lib().set_math_mode(handle_, CUBLAS_DEFAULT_MATH);
  }
  ~CublasGemm() override { lib().destroy(handle_); }
  std::string name() const override { return "cuBLAS"; }
  std::string unsupported(const GemmProblem&) const override { return ""; }
  void run(const GemmProblem& p, const TtGemmParams& a, Stream stream) override {
    // One handle: its stream and workspace are set for each call under the lock.
    std::lock_guard<std::mutex> lock(mu_);
    auto& ws = workspaces_[stream];
    if (!ws.get()) ws = DeviceBuffer(dev_, kWorkspaceBytes);
    if (lib().set_stream(handle_, static_cast<cudaStream_t>(stream)) != CUBLAS_STATUS_SUCCESS ||
        lib().set_workspace(handle_, ws.get(), ws.size()) != CUBLAS_STATUS_SUCCESS)
      throw Error("cublasSetStream / cublasSetWorkspace failed");
    cublasStatus_t s = lib().gemm(handle_, p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  a.m, a.n, a.k, &a.alpha, a.a, cuda_type(p.a_type), int(a.lda), a.stride_a, a.b,
                                  cuda_type(p.a_type), int(a.ldb), a.stride_b, &a.beta, a.c, cuda_type(p.c_type),
                                  int(a.ldc), a.stride_c, a.batch,
                                  p.compute_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) throw Error("cublasGemmStridedBatchedEx failed with status " + std::to_string(int(s)));
  }

 private:
  // As PyTorch gives cuBLAS on Hopper (CUBLAS_WORKSPACE_CONFIG :4096:8), one per stream: kernels
  // of two streams may run at once and must not share scratch.
  static constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;
  Device& dev_;
  std::mutex mu_;
  std::map<Stream, DeviceBuffer> workspaces_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace

std::unique_ptr<VendorGemm> make_cublas_gemm(Device& dev) {
  if (!lib().ok) return nullptr;
  return std::make_unique<CublasGemm>(dev);
}

}  // namespace tiletune::gpu::cuda
