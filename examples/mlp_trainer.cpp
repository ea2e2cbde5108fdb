// mlp_trainer: trains a multi-layer perceptron on a synthetic classification task with every matrix
// product issued as a GEMM through the tiletune runtime (or, for comparison, cuBLAS), and prints the
// loss falling, the step time and the runtime's tuned / fallback counts.
//
// Convention (BLAS column-major, see mlp.h): activations are [features, batch] with one token per
// column, weights are stored [in, out] (ld = in). Per layer:
//   forward          Z  = W^T X   TN  m = out, n = batch, k = in
//   input gradient   dX = W dZ    NN  m = in,  n = batch, k = out
//   weight gradient  dW = X dZ^T  NT  m = in,  n = out,   k = batch
// all packed, alpha 1, beta 0, fp32 output (bf16 inputs with --dtype bf16). Bias, ReLU/GELU, softmax
// cross-entropy and Adam run on the host: in place on the host backend, on copies of the device
// buffers on a GPU (slow; the GEMM time is printed apart for that reason).
//
//   tiletune tune examples/configs/mlp_host.json --db mlp.db --backend host
//   mlp_trainer --db mlp.db --backend host                 # every GEMM tuned
//   mlp_trainer --db empty.db --create-db --backend host   # fallback kernels only
//   mlp_trainer --db tuned.db --gemm cublas                # the same loop on cuBLAS (CUDA builds)
//   mlp_trainer --batch 4096 --hidden 4096 --print-config  # the tuning config for that size
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "mlp.h"

#ifdef TILETUNE_EXAMPLE_CUBLAS
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

// Only for --create-db: a trainer needs nothing but tiletune.h(pp) (the db library comes in with the
// runtime target's link interface).
#include "db/database.h"

using namespace tiletune::examples;

#ifdef TILETUNE_EXAMPLE_CUBLAS
namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

// cuBLAS (cublasGemmEx, fp32 accumulation, default math: no tf32) behind the same interface.
class CublasEngine : public GemmEngine {
 public:
  explicit CublasEngine(int device) {
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp p{};
    cuda_check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    name_ = std::string("cuBLAS (") + p.name + ")";
    cublas_check(cublasCreate(&h_), "cublasCreate");
  }
  ~CublasEngine() override { cublasDestroy(h_); }
  std::string name() const override { return name_; }
  bool host_memory() const override { return false; }
  void* alloc(std::size_t bytes) override {
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }
  void release(void* p) noexcept override { cudaFree(p); }
  void to_device(void* dst, const void* src, std::size_t bytes) override {
    cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  void to_host(void* dst, const void* src, std::size_t bytes) override {
    cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  void synchronize() override { cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }
  void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a, std::int64_t lda,
            const void* b, std::int64_t ldb, void* c, std::int64_t ldc, DType ab) override {
    const float one = 1.f, zero = 0.f;
    const cudaDataType_t t = ab == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
    cublas_check(cublasGemmEx(h_, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, int(m), int(n),
                              int(k), &one, a, t, int(lda), b, t, int(ldb), &zero, c, CUDA_R_32F, int(ldc),
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }

 private:
  cublasHandle_t h_ = nullptr;
  std::string name_;
};

}  // namespace
#endif

int main(int argc, char** argv) {
  CLI::App app{"Train an MLP with every matrix product on tiletune's tuned GEMMs"};
  std::string db, backend = "auto", gemm_impl = "tiletune", dtype = "f32", act = "relu";
  int steps = 200, log_every = 10, device = 0;
  bool create_db = false, print_config = false;
  MlpConfig c;
  app.add_option("--db", db, "tiletune solution database (`tiletune tune ... --db FILE` makes one)");
  app.add_flag("--create-db", create_db, "create an empty database at --db if it is missing (fallback kernels only)");
  app.add_option("--backend", backend, "tiletune backend")->check(CLI::IsMember({"auto", "host", "cuda", "hip"}));
  app.add_option("--device", device, "device index");
  app.add_option("--gemm", gemm_impl, "who runs the GEMMs")->check(CLI::IsMember({"tiletune", "cublas"}));
  app.add_option("--steps", steps, "training steps")->check(CLI::PositiveNumber);
  app.add_option("--batch", c.batch, "tokens per step (GEMM n / k)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--inputs", c.inputs, "input features")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--hidden", c.hidden, "hidden width")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--classes", c.classes, "output classes")->check(CLI::Range(2, 1 << 20))->capture_default_str();
  app.add_option("--layers", c.layers, "weight layers")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--dtype", dtype, "GEMM input type (output and master weights are fp32)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  app.add_option("--activation", act, "hidden activation")->check(CLI::IsMember({"relu", "gelu"}));
  app.add_option("--lr", c.lr, "Adam learning rate")->capture_default_str();
  app.add_option("--seed", c.seed, "seed of the task and the initial weights")->capture_default_str();
  app.add_option("--log-every", log_every, "print every N steps")->check(CLI::PositiveNumber);
  app.add_flag("--print-config", print_config, "print the tiletune tuning config of this size's GEMMs and exit");
  CLI11_PARSE(app, argc, argv);
  c.dtype = dtype == "bf16" ? DType::BF16 : DType::F32;
  c.activation = act == "gelu" ? Activation::Gelu : Activation::Relu;

  try {
    if (print_config) {
      std::fputs(tuning_config_json(c, "mlp").c_str(), stdout);
      return 0;
    }
    std::unique_ptr<GemmEngine> engine;
    TiletuneEngine* tt = nullptr;
    if (gemm_impl == "cublas") {
#ifdef TILETUNE_EXAMPLE_CUBLAS
      engine = std::make_unique<CublasEngine>(device);
#else
      std::fprintf(stderr, "mlp_trainer: built without CUDA: --gemm cublas is not available\n");
      return 2;
#endif
    } else {
      if (db.empty()) {
        std::fprintf(stderr,
                     "mlp_trainer: --db FILE is required: `tiletune tune examples/configs/mlp_host.json --db FILE` "
                     "makes a tuned one, --create-db an empty one (fallback kernels only)\n");
        return 2;
      }
      if (!std::filesystem::exists(db)) {
        if (create_db) {
          tiletune::db::Database::open(db, tiletune::db::Mode::ReadWrite);
          std::printf("created an empty database %s (every GEMM runs a fallback kernel)\n", db.c_str());
        }
        if (!std::filesystem::exists(db)) {
          std::fprintf(stderr, "mlp_trainer: %s does not exist (tune one with `tiletune tune`, or pass --create-db)\n",
                       db.c_str());
          return 2;
        }
      }
      auto e = std::make_unique<TiletuneEngine>(db, backend, device);
      tt = e.get();
      engine = std::move(e);
    }

    auto d = c.dims();
    std::printf("mlp: dims");
    for (auto x : d) std::printf(" %lld", (long long)x);
    std::printf(", batch %lld, %s GEMMs, %s, Adam lr %g, seed %llu\n", (long long)c.batch,
                c.dtype == DType::BF16 ? "bf16" : "f32", act.c_str(), double(c.lr), (unsigned long long)c.seed);
    std::printf("gemm engine: %s%s\n", engine->name().c_str(),
                engine->host_memory() ? "" : " (elementwise work on host copies)");
    std::printf("GEMM problems per step:\n");
    for (const auto& g : gemm_problems(c))
      std::printf("  %c%c m %-6lld n %-6lld k %-6lld  %s\n", g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N',
                  (long long)g.m, (long long)g.n, (long long)g.k, g.role.c_str());
    std::printf("%6s %10s %10s %10s\n", "step", "loss", "step ms", "gemm ms");
    std::fflush(stdout);

    auto log = train(*engine, c, steps, [&](const StepLog& s) {
      if (s.step % log_every == 0 || s.step + 1 == steps) {
        std::printf("%6d %10.4f %10.2f %10.2f\n", s.step, double(s.loss), s.step_ms, s.gemm_ms);
        std::fflush(stdout);
      }
    });

    // Step 0 includes any JIT compile and first loads; report the steady state without it.
    std::vector<double> step_ms, gemm_ms;
    for (std::size_t i = log.size() > 1 ? 1 : 0; i < log.size(); ++i) {
      step_ms.push_back(log[i].step_ms);
      gemm_ms.push_back(log[i].gemm_ms);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[v.size() / 2];
    };
    double flops = 0;
    for (int l = 0; l < c.layers; ++l)
      flops += 2.0 * double(d[std::size_t(l)] * d[std::size_t(l) + 1]) * double(c.batch) * (l == 0 ? 2 : 3);
    double gm = median(gemm_ms);
    std::printf("loss %.4f -> %.4f over %d steps\n", double(log.front().loss), double(log.back().loss), steps);
    const double gflops = gm > 0 ? flops / (gm * 1e-3) / 1e9 : 0.0;
    std::printf("median step %.3f ms, median GEMM time %.3f ms per step (%.1f %s in GEMMs), first step %.1f ms\n",
                median(step_ms), gm, gflops >= 1000 ? gflops / 1000 : gflops, gflops >= 1000 ? "TFLOP/s" : "GFLOP/s",
                log.front().step_ms);
    if (tt) std::printf("tiletune stats: %s\n", format_stats(tt->stats()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp_trainer: %s\n", e.what());
    return 1;
  }
  return 0;
}
