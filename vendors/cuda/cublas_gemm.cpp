// cuBLAS as the yardstick, and cuBLASLt's other algorithms as candidates of a sweep. Loaded with
// dlopen so that the tuner runs where they are absent.
#include <cublasLt.h>
#include <cublas_api.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include "common/error.h"
#include "gpu/cuda/cuda_backend.h"
#include "gpu/stream_buffers.h"
#include "vendors/libraries.h"
#include "vendors/shared_library.h"
#include "vendors/vendor_gemm.h"

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
  // The non-batched call, which torch.matmul makes for 2-D operands: cuBLAS's heuristic may pick
  // another kernel for it than for a strided batch of one.
  using Gemm1 = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                   const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                   cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  Gemm1 gemm1 = nullptr;
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetWorkspace_v2) set_workspace = nullptr;
  bool ok = false;
};

const Cublas& lib() {
  static const Cublas c = [] {
    Cublas c;
    void* h = open_library({"libcublas.so.13", "libcublas.so"});
    c.ok = h && bind_symbol(h, c.create, "cublasCreate_v2") && bind_symbol(h, c.destroy, "cublasDestroy_v2") &&
           bind_symbol(h, c.gemm, "cublasGemmStridedBatchedEx") && bind_symbol(h, c.gemm1, "cublasGemmEx") &&
           bind_symbol(h, c.set_math_mode, "cublasSetMathMode") &&
           bind_symbol(h, c.set_stream, "cublasSetStream_v2") && bind_symbol(h, c.set_workspace, "cublasSetWorkspace_v2");
    return c;
  }();
  return c;
}

// cuBLASLt: the algorithms behind cuBLAS's calls, each named by its configuration.
struct CublasLt {
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtGetVersion) version = nullptr;
  decltype(&::cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&::cublasLtMatmulAlgoInit) algo_init = nullptr;
  decltype(&::cublasLtMatmulAlgoCheck) algo_check = nullptr;
  decltype(&::cublasLtMatmulAlgoConfigSetAttribute) config_set = nullptr;
  decltype(&::cublasLtMatmulAlgoConfigGetAttribute) config_get = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
  decltype(&::cublasLtMatmulAlgoCapGetAttribute) cap_get = nullptr;  // optional: alignment needs
  bool ok = false;
};

const CublasLt& lt() {
  static const CublasLt c = [] {
    CublasLt c;
    void* h = open_library({"libcublasLt.so.13", "libcublasLt.so"});
    if (!h) return c;
    auto load = [&](auto& f, const char* name) { return bind_symbol(h, f, name); };
    c.ok = load(c.create, "cublasLtCreate") && load(c.destroy, "cublasLtDestroy") &&
           load(c.version, "cublasLtGetVersion") && load(c.desc_create, "cublasLtMatmulDescCreate") &&
           load(c.desc_destroy, "cublasLtMatmulDescDestroy") && load(c.desc_set, "cublasLtMatmulDescSetAttribute") &&
           load(c.layout_create, "cublasLtMatrixLayoutCreate") &&
           load(c.layout_destroy, "cublasLtMatrixLayoutDestroy") &&
           load(c.layout_set, "cublasLtMatrixLayoutSetAttribute") &&
           load(c.pref_create, "cublasLtMatmulPreferenceCreate") &&
           load(c.pref_destroy, "cublasLtMatmulPreferenceDestroy") &&
           load(c.pref_set, "cublasLtMatmulPreferenceSetAttribute") &&
           load(c.heuristic, "cublasLtMatmulAlgoGetHeuristic") && load(c.algo_init, "cublasLtMatmulAlgoInit") &&
           load(c.algo_check, "cublasLtMatmulAlgoCheck") &&
           load(c.config_set, "cublasLtMatmulAlgoConfigSetAttribute") &&
           load(c.config_get, "cublasLtMatmulAlgoConfigGetAttribute") && load(c.matmul, "cublasLtMatmul");
    load(c.cap_get, "cublasLtMatmulAlgoCapGetAttribute");
    return c;
  }();
  return c;
}

// The configuration fields that name a cuBLASLt algorithm, with their storage sizes.
struct AlgoField {
  const char* name;
  cublasLtMatmulAlgoConfigAttributes_t attr;
  std::size_t bytes;
};
constexpr AlgoField kAlgoFields[] = {
    {"ALGO", CUBLASLT_ALGO_CONFIG_ID, 4},           {"TILE", CUBLASLT_ALGO_CONFIG_TILE_ID, 4},
    {"SPLITK", CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 4}, {"REDUCTION", CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, 4},
    {"SWIZZLE", CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, 4}, {"CUSTOM", CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, 4},
    {"STAGES", CUBLASLT_ALGO_CONFIG_STAGES_ID, 4},  {"INNER", CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, 2},
    {"CLUSTER", CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, 2}};

// The pointer alignment a stored algorithm choice needs where cuBLASLt does not say (VendorGemm::run).
constexpr std::uint32_t kChoiceAlignment = 16;

// The largest power of two up to 256 that divides the address (cuBLASLt's alignment classes).
std::uint32_t alignment_bytes(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t b = 256;
  while (b > 1 && a % b) b /= 2;
  return b;
}

cudaDataType cuda_type(DataType t) {
  switch (t) {
    case DataType::F32: return CUDA_R_32F;
    case DataType::F16: return CUDA_R_16F;
    case DataType::BF16: return CUDA_R_16BF;
    case DataType::E4M3: return CUDA_R_8F_E4M3;
    case DataType::E5M2: return CUDA_R_8F_E5M2;
    case DataType::S8: return CUDA_R_8I;
    case DataType::S32: return CUDA_R_32I;
  }
  return CUDA_R_32F;
}

// alpha and beta as cuBLASLt reads them: fp32, or int32 for the int8 GEMM (CUDA_R_32I scales,
// which the runtime only passes integers for).
struct Scalars {
  float f[2];
  std::int32_t i[2];
  bool integer;
  Scalars(const GemmProblem& p, const TtGemmParams& a)
      : f{a.alpha, a.beta}, i{std::int32_t(a.alpha), std::int32_t(a.beta)}, integer(is_integer(p.c_type)) {}
  const void* alpha() const { return integer ? static_cast<const void*>(&i[0]) : &f[0]; }
  const void* beta() const { return integer ? static_cast<const void*>(&i[1]) : &f[1]; }
};

class CublasGemm final : public VendorGemm {
 public:
  explicit CublasGemm(Device& dev) : dev_(dev) {
    if (lib().create(&handle_) != CUBLAS_STATUS_SUCCESS) throw Error("cublasCreate failed");
    // Plain fp32 math for fp32 problems: the SIMT templates are compared with SGEMM, not TF32.
    lib().set_math_mode(handle_, CUBLAS_DEFAULT_MATH);
    if (lt().ok && lt().create(&lt_) != CUBLAS_STATUS_SUCCESS) lt_ = nullptr;
  }
  ~CublasGemm() override {
    for (auto& [key, plan] : plans_) {
      for (auto layout : {plan.a, plan.b, plan.c})
        if (layout) lt().layout_destroy(layout);
      if (plan.op) lt().desc_destroy(plan.op);
    }
    if (lt_) lt().destroy(lt_);
    lib().destroy(handle_);
  }
  std::string name() const override { return "cuBLAS"; }
  std::string choice_source() const override {
    return lt().ok ? "cuBLASLt " + std::to_string(lt().version()) : "cuBLASLt";
  }
  // 8-bit GEMMs run through cuBLASLt only (cublasGemmEx has no fp8), as cuBLASLt takes them:
  // A transposed and B not, fp8 from sm_89 on, at least one fp8 operand e4m3.
  std::string unsupported(const GemmProblem& p) const override {
    if (size_of(p.a_type) != 1) return "";
    if (!lt_) return "cuBLASLt is not available (fp8 and int8 GEMMs need it)";
    if (!p.trans_a || p.trans_b) return "cuBLASLt's fp8 and int8 GEMMs take A transposed and B not (TN) only";
    if (is_fp8(p.a_type) && dev_.info().compute_capability < 89) return "fp8 GEMMs need sm_89 or newer";
    if (p.a_type == DataType::E5M2 && p.type_b() == DataType::E5M2)
      return "cuBLASLt has no e5m2 x e5m2 GEMM (e4m3 x e4m3, e4m3 x e5m2 and e5m2 x e4m3 only)";
    return "";
  }

  std::vector<VendorChoice> alternatives(const GemmProblem& p, const TtGemmParams& a, int limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    Plan* plan = plan_for(p, a);
    if (!plan) return {};
    cublasLtMatmulPreference_t pref = nullptr;
    if (lt().pref_create(&pref) != CUBLAS_STATUS_SUCCESS) return {};
    const std::uint64_t ws = kWorkspaceBytes;
    lt().pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    const std::uint32_t align[] = {alignment_bytes(a.a), alignment_bytes(a.b), alignment_bytes(a.c)};
    lt().pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align[0], 4);
    lt().pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align[1], 4);
    lt().pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align[2], 4);
    lt().pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align[2], 4);
    // Ask for more than wanted: distinct results can share one configuration.
    std::vector<cublasLtMatmulHeuristicResult_t> found(std::size_t(2 * limit));
    int count = 0;
    const cublasStatus_t st = lt().heuristic(lt_, plan->op, plan->a, plan->b, plan->c, plan->c, pref,
                                             int(found.size()), found.data(), &count);
    lt().pref_destroy(pref);
    std::vector<VendorChoice> out;
    if (st != CUBLAS_STATUS_SUCCESS) return out;
    for (int i = 0; i < count && int(out.size()) < limit; ++i) {
      if (found[i].state != CUBLAS_STATUS_SUCCESS) continue;
      VendorChoice c = describe(found[i].algo);
      // Only what can be rebuilt from its published fields (the runtime has nothing else).
      if (c.empty() || std::find(out.begin(), out.end(), c) != out.end() || !algo_for(*plan, c)) continue;
      out.push_back(c);
    }
    return out;
  }

  void run(const GemmProblem& p, const TtGemmParams& a, Stream stream, const VendorChoice& choice) override {
    std::lock_guard<std::mutex> lock(mu_);
    DeviceBuffer& ws = workspace(stream);
    if (!choice.empty()) {
      Plan* plan = plan_for(p, a);
      const Algo* chosen = plan ? algo_for(*plan, choice) : nullptr;
      // A stored algorithm runs only on pointers aligned as it needs (cuBLASLt publishes that; a
      // sweep found it for cudaMalloc's 256-byte-aligned buffers, a trainer's view may be off).
      const bool aligned = chosen && alignment_bytes(a.a) >= chosen->align[0] && alignment_bytes(a.b) >= chosen->align[1] &&
                           alignment_bytes(a.c) >= std::max(chosen->align[2], chosen->align[3]);
      const cublasLtMatmulAlgo_t* algo = aligned ? &chosen->algo : nullptr;
      // An algorithm these pointers cannot take (cuBLASLt checks alignment here) runs the default.
      const Scalars ab(p, a);
      const cublasStatus_t st = algo ? lt().matmul(lt_, plan->op, ab.alpha(), a.a, plan->a, a.b, plan->b, ab.beta(), a.c,
                                                   plan->c, a.c, plan->c, algo, ws.get(), ws.size(),
                                                   static_cast<cudaStream_t>(stream))
                                     : CUBLAS_STATUS_NOT_SUPPORTED;
      if (st == CUBLAS_STATUS_SUCCESS) return;
      if (strict_) throw Error("cuBLASLt cannot run this algorithm on these arguments (status " + std::to_string(int(st)) + ")");
    }
    if (size_of(p.a_type) == 1) {
      // No cuBLAS call for these types: cuBLASLt with its own heuristic's first choice (a null algo).
      if (std::string why = unsupported(p); !why.empty()) throw Error(why);
      Plan* plan = plan_for(p, a);
      if (!plan) throw Error("cuBLASLt refused the descriptors of this fp8 / int8 GEMM");
      const Scalars ab(p, a);
      const cublasStatus_t st = lt().matmul(lt_, plan->op, ab.alpha(), a.a, plan->a, a.b, plan->b, ab.beta(), a.c,
                                            plan->c, a.c, plan->c, nullptr, ws.get(), ws.size(),
                                            static_cast<cudaStream_t>(stream));
      if (st != CUBLAS_STATUS_SUCCESS) throw Error("cublasLtMatmul failed with status " + std::to_string(int(st)));
      return;
    }
    // One handle: its stream and workspace are set for each call under the lock.
    if (lib().set_stream(handle_, static_cast<cudaStream_t>(stream)) != CUBLAS_STATUS_SUCCESS ||
        lib().set_workspace(handle_, ws.get(), ws.size()) != CUBLAS_STATUS_SUCCESS)
      throw Error("cublasSetStream / cublasSetWorkspace failed");
    const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    // As PyTorch calls cuBLAS: torch.matmul of 2-D operands cublasGemmEx, torch.bmm the strided batch.
    const cublasStatus_t s =
        a.batch == 1
            ? lib().gemm1(handle_, op_a, op_b, a.m, a.n, a.k, &a.alpha, a.a, cuda_type(p.a_type), int(a.lda), a.b,
                          cuda_type(p.a_type), int(a.ldb), &a.beta, a.c, cuda_type(p.c_type), int(a.ldc), compute(p),
                          CUBLAS_GEMM_DEFAULT)
            : lib().gemm(handle_, op_a, op_b, a.m, a.n, a.k, &a.alpha, a.a, cuda_type(p.a_type), int(a.lda), a.stride_a,
                         a.b, cuda_type(p.a_type), int(a.ldb), a.stride_b, &a.beta, a.c, cuda_type(p.c_type),
                         int(a.ldc), a.stride_c, a.batch, compute(p), CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
      throw Error(std::string(a.batch == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx") + " failed with status " +
                  std::to_string(int(s)));
  }

 private:
  // An algorithm and the pointer alignment it needs of A, B, C and D (bytes).
  struct Algo {
    cublasLtMatmulAlgo_t algo{};
    std::uint32_t align[4] = {kChoiceAlignment, kChoiceAlignment, kChoiceAlignment, kChoiceAlignment};
  };
  // One problem's cuBLASLt descriptors and the algorithms built for it (nullopt: cannot be built).
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cudaDataType in = CUDA_R_32F, in_b = CUDA_R_32F, out = CUDA_R_32F, scale = CUDA_R_32F;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    std::map<VendorChoice, std::optional<Algo>> algos;
  };
  // Everything a plan's descriptors say: the problem's fields and the call's batch strides, as
  // integers (no key text is built on a call).
  using PlanKey = std::array<std::int64_t, 17>;
  static PlanKey plan_key(const GemmProblem& problem, const TtGemmParams& a) {
    const GemmProblem p = problem.canonical();
    return {std::int64_t(p.a_type), std::int64_t(p.c_type), p.trans_a, p.trans_b, p.m, p.n, p.k, p.batch, p.lda,
            p.ldb, p.ldc, p.beta_zero, p.compute_tf32, a.stride_a, a.stride_b, a.stride_c, std::int64_t(p.type_b())};
  }

  static cublasComputeType_t compute(const GemmProblem& p) {
    if (is_integer(p.a_type)) return CUBLAS_COMPUTE_32I;
    return p.compute_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  }
  static cudaDataType scale_type(const GemmProblem& p) { return is_integer(p.a_type) ? CUDA_R_32I : CUDA_R_32F; }

  DeviceBuffer& workspace(Stream stream) {
    return workspaces_.get(dev_, stream, kWorkspaceBytes);
  }

  // Under mu_. nullptr when cuBLASLt is absent or refuses the problem.
  Plan* plan_for(const GemmProblem& p, const TtGemmParams& a) {
    if (!lt_) return nullptr;
    // The batch strides are in the key already; the problem key holds no pointers.
    const PlanKey key = plan_key(p, a);
    if (auto it = plans_.find(key); it != plans_.end()) return it->second.op ? &it->second : nullptr;
    Plan& plan = plans_[key];
    const cudaDataType in = cuda_type(p.a_type), in_b = cuda_type(p.type_b()), out = cuda_type(p.c_type);
    plan.in = in, plan.in_b = in_b, plan.out = out, plan.scale = scale_type(p), plan.compute = compute(p);
    auto layout = [&](cublasLtMatrixLayout_t* l, cudaDataType t, std::int64_t rows, std::int64_t cols,
                      std::int64_t ld, std::int64_t stride) {
      if (lt().layout_create(l, t, std::uint64_t(rows), std::uint64_t(cols), ld) != CUBLAS_STATUS_SUCCESS) return false;
      if (a.batch <= 1) return true;
      const std::int32_t batch = std::int32_t(a.batch);
      return lt().layout_set(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch) == CUBLAS_STATUS_SUCCESS &&
             lt().layout_set(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride) ==
                 CUBLAS_STATUS_SUCCESS;
    };
    const cublasOperation_t ta = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    bool ok = lt().desc_create(&plan.op, plan.compute, plan.scale) == CUBLAS_STATUS_SUCCESS &&
              lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) == CUBLAS_STATUS_SUCCESS &&
              lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) == CUBLAS_STATUS_SUCCESS &&
              layout(&plan.a, in, p.rows_a(), p.cols_a(), a.lda, a.stride_a) &&
              layout(&plan.b, in_b, p.rows_b(), p.cols_b(), a.ldb, a.stride_b) &&
              layout(&plan.c, out, a.m, a.n, a.ldc, a.stride_c);
    if (!ok && plan.op) {
      lt().desc_destroy(plan.op);
      plan.op = nullptr;
    }
    return ok ? &plan : nullptr;
  }

  static VendorChoice describe(const cublasLtMatmulAlgo_t& algo) {
    VendorChoice c;
    for (const AlgoField& f : kAlgoFields) {
      std::uint32_t v = 0;  // little-endian: a 2-byte field lands in the low half
      std::size_t written = 0;
      if (lt().config_get(&algo, f.attr, &v, f.bytes, &written) != CUBLAS_STATUS_SUCCESS) return {};
      c[f.name] = f.name == std::string("ALGO") || f.name == std::string("SPLITK") ? std::int64_t(std::int32_t(v))
                                                                                   : std::int64_t(v);
    }
    return c;
  }

  // Under mu_: the algorithm `choice` names, rebuilt from its fields and checked against the
  // plan's descriptors (nullptr when it cannot be, or needs more workspace than there is).
  const Algo* algo_for(Plan& plan, const VendorChoice& choice) {
    auto [it, fresh] = plan.algos.try_emplace(choice);
    if (fresh) {
      cublasLtMatmulAlgo_t algo{};
      auto field = [&](const char* name) {
        auto f = choice.find(name);
        return f == choice.end() ? std::int64_t{0} : f->second;
      };
      bool ok = lt().algo_init(lt_, plan.compute, plan.scale, plan.in, plan.in_b, plan.out, plan.out,
                               int(field("ALGO")), &algo) == CUBLAS_STATUS_SUCCESS;
      for (const AlgoField& f : kAlgoFields) {
        if (!ok || f.attr == CUBLASLT_ALGO_CONFIG_ID) continue;
        const std::uint32_t v = std::uint32_t(field(f.name));
        ok = lt().config_set(&algo, f.attr, &v, f.bytes) == CUBLAS_STATUS_SUCCESS;
      }
      cublasLtMatmulHeuristicResult_t check{};
      ok = ok && lt().algo_check(lt_, plan.op, plan.a, plan.b, plan.c, plan.c, &algo, &check) == CUBLAS_STATUS_SUCCESS &&
           check.workspaceSize <= kWorkspaceBytes;
      if (ok) {
        Algo a{algo};
        const cublasLtMatmulAlgoCapAttributes_t caps[4] = {
            CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES};
        for (int i = 0; i < 4 && lt().cap_get; ++i) {
          std::uint32_t v = 0;
          std::size_t written = 0;
          if (lt().cap_get(&algo, caps[i], &v, sizeof v, &written) == CUBLAS_STATUS_SUCCESS && v > 0) a.align[i] = v;
        }
        it->second = a;
      }
    }
    return it->second ? &*it->second : nullptr;
  }

  // As PyTorch gives cuBLAS on Hopper (CUBLAS_WORKSPACE_CONFIG :4096:8), one per stream: kernels
  // of two streams may run at once and must not share scratch.
  static constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;
  Device& dev_;
  std::mutex mu_;
  StreamBuffers workspaces_;
  std::map<PlanKey, Plan> plans_;
  cublasHandle_t handle_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
};

}  // namespace

std::unique_ptr<VendorGemm> make_cublas_gemm(Device& dev) {
  if (!lib().ok) return nullptr;
  return std::make_unique<CublasGemm>(dev);
}

}  // namespace tiletune::gpu::cuda
