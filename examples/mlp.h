// tiletune example: a multi-layer perceptron trained with every matrix product going through a GEMM
// engine (the tiletune runtime, or cuBLAS in mlp_trainer for comparison).
//
// Layout convention (BLAS column-major throughout, as the runtime: C = op(A) * op(B)):
//   activations  A_l  [d_l, batch]      column b is token b, ld = d_l
//   weights      W_l  [d_l, d_{l+1}]    stored [in, out], ld = in, so W_l^T is [out, in]
//   bias         b_l  [d_{l+1}]
// and per layer l (in = d_l, out = d_{l+1}), with G_l = dLoss/dZ_l of shape [out, batch]:
//   forward          Z_l   = W_l^T * A_l   TN  m = out, n = batch, k = in    lda = in,  ldb = in,  ldc = out
//   weight gradient  dW_l  = A_l * G_l^T   NT  m = in,  n = out,   k = batch lda = in,  ldb = out, ldc = in
//   input gradient   dA_l  = W_l * G_l     NN  m = in,  n = batch, k = out   lda = in,  ldb = out, ldc = in
// (the input gradient is not computed for the first layer). Every leading dimension is packed,
// alpha = 1, beta = 0 and C is fp32; with DType::BF16 both inputs are bf16 copies of the fp32 master
// values. Bias, activation, softmax cross-entropy and Adam run on the host: directly on the
// engine's buffers when they are host memory (the host backend), otherwise on host mirrors copied
// to and from the device around every GEMM (slow but correct; the GEMM time is measured apart).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tiletune.hpp"

namespace tiletune::examples {

enum class DType { F32, BF16 };
enum class Activation { Relu, Gelu };

// C (fp32, [m, n], ldc) = op(A) * op(B); A and B of type `ab`. Column-major.
class GemmEngine {
 public:
  virtual ~GemmEngine() = default;
  virtual std::string name() const = 0;
  virtual bool host_memory() const = 0;  // the engine's pointers are plain host memory
  virtual void* alloc(std::size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  virtual void to_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  virtual void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                    std::int64_t lda, const void* b, std::int64_t ldb, void* c, std::int64_t ldc, DType ab) = 0;
};

// The tiletune runtime as a GemmEngine.
class TiletuneEngine : public GemmEngine {
 public:
  TiletuneEngine(const std::string& db_path, const std::string& backend, int device = 0);
  std::string name() const override;
  bool host_memory() const override { return host_memory_; }
  void* alloc(std::size_t bytes) override { return h_.malloc(bytes); }
  void release(void* p) noexcept override { tiletune_free(h_.get(), p); }
  void to_device(void* dst, const void* src, std::size_t bytes) override { h_.to_device(dst, src, bytes); }
  void to_host(void* dst, const void* src, std::size_t bytes) override { h_.to_host(dst, src, bytes); }
  void synchronize() override { h_.synchronize(); }
  void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
            std::int64_t lda, const void* b, std::int64_t ldb, void* c, std::int64_t ldc, DType ab) override;
  tiletune_stats_t stats() const { return h_.stats(); }
  std::string arch() const { return h_.arch(); }
  Handle& handle() { return h_; }

 private:
  Handle h_;
  bool host_memory_ = true;
};

// "calls 120, tuned 120, fallbacks 0, jit_compiles 0" (and nearest where the runtime counts it).
std::string format_stats(const tiletune_stats_t& s);

struct MlpConfig {
  std::int64_t inputs = 64;   // d_0
  std::int64_t hidden = 128;  // d_1 .. d_{layers-1}
  std::int64_t classes = 16;  // d_layers
  int layers = 3;             // weight layers (>= 1)
  std::int64_t batch = 256;
  DType dtype = DType::F32;
  Activation activation = Activation::Relu;
  float lr = 5e-3f;  // Adam
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  std::uint64_t seed = 1;

  std::vector<std::int64_t> dims() const;  // d_0 .. d_layers
};

// One GEMM the training step issues.
struct GemmShape {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  DType ab = DType::F32;
  std::string role;  // "forward L1", "weight grad L1", ...
  bool same_problem(const GemmShape& o) const {
    return trans_a == o.trans_a && trans_b == o.trans_b && m == o.m && n == o.n && k == o.k && ab == o.ab;
  }
};
// The distinct GEMM problems of one training step, in issue order (first occurrence).
std::vector<GemmShape> gemm_problems(const MlpConfig& c);
// A tiletune tuning config (JSON) naming exactly those problems; `templates_json` is the value of
// its "templates" key ("" leaves it out: every template of the backend), `benchmark_json` likewise.
std::string tuning_config_json(const MlpConfig& c, const std::string& name, const std::string& templates_json = "",
                               const std::string& benchmark_json = "");

// The synthetic task: x ~ N(0, 1)^inputs, label = argmax of a fixed random linear teacher T^T x
// (T [inputs, classes], N(0, 1)). Batches depend only on (seed, step).
struct Batch {
  std::int64_t size = 0;
  std::vector<float> x;  // [inputs, size] column-major
  std::vector<int> labels;
};
class TeacherTask {
 public:
  TeacherTask(std::int64_t inputs, std::int64_t classes, std::uint64_t seed);
  Batch sample(std::int64_t batch, std::uint64_t step) const;

 private:
  std::int64_t inputs_, classes_;
  std::uint64_t seed_;
  std::vector<float> teacher_;
};

class Mlp {
 public:
  Mlp(GemmEngine& engine, const MlpConfig& config);
  ~Mlp();
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  // Forward pass on `batch` (its size must be config.batch); returns the mean cross-entropy.
  float forward(const Batch& batch);
  // Gradients of the last forward's loss (host values readable through weight_grad / bias_grad).
  void backward();
  // One Adam step with the current gradients.
  void update();
  float train_step(const Batch& batch) {
    float loss = forward(batch);
    backward();
    update();
    return loss;
  }

  int layers() const { return int(layers_.size()); }
  // Host views of the parameters; call params_changed() after writing to them.
  float* weight(int l);
  float* bias(int l);
  void params_changed();
  const float* weight_grad(int l);
  const float* bias_grad(int l);

  double gemm_seconds() const { return gemm_seconds_; }  // GEMM calls incl. synchronisation, summed
  std::uint64_t gemm_calls() const { return gemm_calls_; }
  const MlpConfig& config() const { return c_; }

 private:
  struct Buf;
  struct Layer;
  void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, Buf& a, std::int64_t lda, Buf& b,
            std::int64_t ldb, Buf& c, std::int64_t ldc);
  const void* operand(Buf& b);
  void to_host(Buf& b);

  GemmEngine& e_;
  MlpConfig c_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::unique_ptr<Buf> input_;
  std::vector<int> labels_;
  std::vector<float> probs_;
  std::uint64_t adam_t_ = 0;
  double gemm_seconds_ = 0;
  std::uint64_t gemm_calls_ = 0;
};

struct StepLog {
  int step = 0;
  float loss = 0;
  double step_ms = 0, gemm_ms = 0;
};
// Trains `steps` steps on TeacherTask(config) and returns every step's loss and times; `on_step`
// (optional) sees each one as it finishes.
std::vector<StepLog> train(GemmEngine& engine, const MlpConfig& config, int steps,
                           const std::function<void(const StepLog&)>& on_step = {});

}  // namespace tiletune::examples
