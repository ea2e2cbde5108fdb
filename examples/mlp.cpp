// See mlp.h for the layout convention and what runs where.
#include "mlp.h"
#include "numeric.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>

namespace tiletune::examples {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
float gelu(float x) { return 0.5f * x * (1.f + std::tanh(kGeluC * (x + 0.044715f * x * x * x))); }
float gelu_grad(float x) {
  float u = kGeluC * (x + 0.044715f * x * x * x), t = std::tanh(u);
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * kGeluC * (1.f + 3.f * 0.044715f * x * x);
}

}  // namespace

// ---- TiletuneEngine -------------------------------------------------------------------------------

TiletuneEngine::TiletuneEngine(const std::string& db_path, const std::string& backend, int device)
    : h_(db_path, backend, device) {
  std::string a = h_.arch();
  host_memory_ = !(a.rfind("sm_", 0) == 0 || a.rfind("gfx", 0) == 0);  // a GPU arch: device memory
}

std::string TiletuneEngine::name() const { return "tiletune (" + h_.arch() + ")"; }

void TiletuneEngine::gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                          std::int64_t lda, const void* b, std::int64_t ldb, void* c, std::int64_t ldc, DType ab) {
  h_.gemm(trans_a ? TILETUNE_OP_T : TILETUNE_OP_N, trans_b ? TILETUNE_OP_T : TILETUNE_OP_N, m, n, k, 1.0f, a,
          ab == DType::BF16 ? TILETUNE_R_16BF : TILETUNE_R_32F, lda, b, ldb, 0.0f, c, TILETUNE_R_32F, ldc);
}

std::string format_stats(const tiletune_stats_t& s) {
  std::ostringstream o;
  o << "calls " << s.calls << ", tuned " << s.tuned;
  if constexpr (requires { s.nearest; }) o << ", nearest " << s.nearest;
  o << ", fallbacks " << s.fallbacks << ", jit_compiles " << s.jit_compiles;
  return o.str();
}

// ---- problems and configs -------------------------------------------------------------------------

std::vector<std::int64_t> MlpConfig::dims() const {
  if (layers < 1) throw std::invalid_argument("layers must be >= 1");
  if (inputs < 1 || hidden < 1 || classes < 2 || batch < 1)
    throw std::invalid_argument("inputs, hidden and batch must be >= 1 and classes >= 2");
  std::vector<std::int64_t> d(std::size_t(layers) + 1, hidden);
  d.front() = inputs;
  d.back() = classes;
  return d;
}

std::vector<GemmShape> gemm_problems(const MlpConfig& c) {
  auto d = c.dims();
  std::vector<GemmShape> all;
  const int L = c.layers;
  for (int l = 0; l < L; ++l)
    all.push_back({true, false, d[l + 1], c.batch, d[l], c.dtype, "forward L" + std::to_string(l)});
  for (int l = L - 1; l >= 0; --l) {
    all.push_back({false, true, d[l], d[l + 1], c.batch, c.dtype, "weight grad L" + std::to_string(l)});
    if (l > 0) all.push_back({false, false, d[l], c.batch, d[l + 1], c.dtype, "input grad L" + std::to_string(l)});
  }
  std::vector<GemmShape> unique;
  for (const auto& g : all) {
    auto it = std::find_if(unique.begin(), unique.end(), [&](const GemmShape& u) { return u.same_problem(g); });
    if (it == unique.end())
      unique.push_back(g);
    else
      it->role += ", " + g.role;
  }
  return unique;
}

std::string tuning_config_json(const MlpConfig& c, const std::string& name, const std::string& templates_json,
                               const std::string& benchmark_json) {
  std::ostringstream o;
  o << "{\n  \"name\": \"" << name << "\",\n  \"problems\": [\n";
  auto problems = gemm_problems(c);
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const auto& g = problems[i];
    o << "    {\"name\": \"" << g.role << "\", "
      << (g.ab == DType::BF16 ? "\"a_type\": \"bf16\", \"c_type\": \"f32\"" : "\"dtype\": \"f32\"")
      << ", \"transA\": \"" << (g.trans_a ? 'T' : 'N') << "\", \"transB\": \"" << (g.trans_b ? 'T' : 'N')
      << "\", \"m\": " << g.m << ", \"n\": " << g.n << ", \"k\": " << g.k << "}" << (i + 1 < problems.size() ? "," : "")
      << "\n";
  }
  o << "  ]";
  if (!templates_json.empty()) o << ",\n  \"templates\": " << templates_json;
  if (!benchmark_json.empty()) o << ",\n  \"benchmark\": " << benchmark_json;
  o << "\n}\n";
  return o.str();
}

// ---- the task -------------------------------------------------------------------------------------

TeacherTask::TeacherTask(std::int64_t inputs, std::int64_t classes, std::uint64_t seed)
    : inputs_(inputs), classes_(classes), seed_(seed) {
  Normal g(mix(seed, 0x7eac4e5));
  teacher_.resize(std::size_t(inputs_ * classes_));
  for (auto& v : teacher_) v = g();
}

Batch TeacherTask::sample(std::int64_t batch, std::uint64_t step) const {
  Batch b;
  b.size = batch;
  b.x.resize(std::size_t(inputs_ * batch));
  b.labels.resize(std::size_t(batch));
  Normal g(mix(seed_, step + 1));
  for (auto& v : b.x) v = g();
  for (std::int64_t j = 0; j < batch; ++j) {
    const float* x = &b.x[std::size_t(j * inputs_)];
    int best = 0;
    float best_v = -1e30f;
    for (std::int64_t c = 0; c < classes_; ++c) {
      float s = 0;
      for (std::int64_t i = 0; i < inputs_; ++i) s += teacher_[std::size_t(c * inputs_ + i)] * x[i];
      if (s > best_v) best_v = s, best = int(c);
    }
    b.labels[std::size_t(j)] = best;
  }
  return b;
}

// ---- the network ----------------------------------------------------------------------------------

// An fp32 matrix with a host view and an engine (device) copy. On a host-memory engine both are the
// same memory; otherwise `dev_stale` / `host_stale` say which side needs copying before use.
struct Mlp::Buf {
  GemmEngine* e = nullptr;
  std::size_t n = 0;
  float* host = nullptr;
  void* dev = nullptr;
  std::vector<float> mirror;  // the host side on a device-memory engine
  bool dev_stale = false, host_stale = false;
  // bf16 copy handed to bf16 GEMMs
  std::vector<std::uint16_t> bf16_mirror;
  std::uint16_t* bf16_host = nullptr;
  void* bf16_dev = nullptr;

  Buf(GemmEngine& engine, std::size_t count, bool with_bf16) : e(&engine), n(count) {
    dev = e->alloc(n * 4);
    if (e->host_memory()) {
      host = static_cast<float*>(dev);
    } else {
      mirror.resize(n);
      host = mirror.data();
    }
    std::fill(host, host + n, 0.f);
    dev_stale = true;
    if (with_bf16) {
      bf16_dev = e->alloc(n * 2);
      if (e->host_memory()) {
        bf16_host = static_cast<std::uint16_t*>(bf16_dev);
      } else {
        bf16_mirror.resize(n);
        bf16_host = bf16_mirror.data();
      }
    }
  }
  ~Buf() {
    e->release(dev);
    if (bf16_dev) e->release(bf16_dev);
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
};

struct Mlp::Layer {
  std::int64_t in = 0, out = 0;
  std::unique_ptr<Buf> w, z, a, g;  // weights [in,out]; pre-activation Z and output A [out,B]; G = dL/dZ [out,B]
  std::unique_ptr<Buf> dw;          // [in,out]
  std::vector<float> b, db, mw, vw, mb, vb;
};

Mlp::Mlp(GemmEngine& engine, const MlpConfig& config) : e_(engine), c_(config) {
  auto d = c_.dims();
  const bool bf16 = c_.dtype == DType::BF16;
  const auto B = std::size_t(c_.batch);
  input_ = std::make_unique<Buf>(e_, std::size_t(d[0]) * B, bf16);
  Normal g(mix(c_.seed, 0x1417));
  for (int l = 0; l < c_.layers; ++l) {
    auto L = std::make_unique<Layer>();
    L->in = d[std::size_t(l)];
    L->out = d[std::size_t(l) + 1];
    const auto wn = std::size_t(L->in * L->out), an = std::size_t(L->out) * B;
    L->w = std::make_unique<Buf>(e_, wn, bf16);
    L->dw = std::make_unique<Buf>(e_, wn, false);
    L->z = std::make_unique<Buf>(e_, an, false);
    L->a = std::make_unique<Buf>(e_, an, bf16);
    L->g = std::make_unique<Buf>(e_, an, bf16);
    // He initialisation for the ReLU/GELU layers; the logits layer 1/sqrt(in), so the initial loss is near ln(classes).
    const float scale = std::sqrt((l + 1 == c_.layers ? 1.f : 2.f) / float(L->in));
    for (std::size_t i = 0; i < wn; ++i) L->w->host[i] = g() * scale;
    L->w->dev_stale = true;
    L->b.assign(std::size_t(L->out), 0.f);
    L->db.assign(std::size_t(L->out), 0.f);
    L->mw.assign(wn, 0.f);
    L->vw.assign(wn, 0.f);
    L->mb.assign(std::size_t(L->out), 0.f);
    L->vb.assign(std::size_t(L->out), 0.f);
    layers_.push_back(std::move(L));
  }
}

Mlp::~Mlp() = default;

// The engine pointer of `b` in the GEMM input type, copied / converted as needed.
const void* Mlp::operand(Buf& b) {
  if (c_.dtype == DType::BF16) {
    for (std::size_t i = 0; i < b.n; ++i) b.bf16_host[i] = to_bf16(b.host[i]);
    if (!e_.host_memory()) e_.to_device(b.bf16_dev, b.bf16_host, b.n * 2);
    return b.bf16_dev;
  }
  if (b.dev_stale && !e_.host_memory()) e_.to_device(b.dev, b.host, b.n * 4);
  b.dev_stale = false;
  return b.dev;
}

void Mlp::to_host(Buf& b) {
  if (b.host_stale && !e_.host_memory()) e_.to_host(b.host, b.dev, b.n * 4);
  b.host_stale = false;
}

void Mlp::gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, Buf& a, std::int64_t lda, Buf& b,
               std::int64_t ldb, Buf& c, std::int64_t ldc) {
  const void* pa = operand(a);
  const void* pb = operand(b);
  auto t0 = Clock::now();
  e_.gemm(ta, tb, m, n, k, pa, lda, pb, ldb, c.dev, ldc, c_.dtype);
  e_.synchronize();
  gemm_seconds_ += seconds_since(t0);
  ++gemm_calls_;
  c.host_stale = true;
  c.dev_stale = false;
  to_host(c);  // the elementwise work that follows every GEMM here runs on the host
}

float Mlp::forward(const Batch& batch) {
  if (batch.size != c_.batch || std::int64_t(batch.x.size()) != c_.inputs * c_.batch)
    throw std::invalid_argument("batch does not match the network's batch size and inputs");
  const std::int64_t B = c_.batch;
  std::copy(batch.x.begin(), batch.x.end(), input_->host);
  input_->dev_stale = true;
  labels_ = batch.labels;

  Buf* x = input_.get();
  const int last = layers() - 1;
  for (int l = 0; l <= last; ++l) {
    Layer& L = *layers_[std::size_t(l)];
    gemm(true, false, L.out, B, L.in, *L.w, L.in, *x, L.in, *L.z, L.out);  // Z = W^T X   (TN)
    float* z = L.z->host;
    float* a = L.a->host;
    for (std::int64_t j = 0; j < B; ++j)
      for (std::int64_t o = 0; o < L.out; ++o) {
        float v = z[j * L.out + o] + L.b[std::size_t(o)];
        z[j * L.out + o] = v;
        a[j * L.out + o] = l == last ? v : c_.activation == Activation::Relu ? std::max(v, 0.f) : gelu(v);
      }
    L.a->dev_stale = true;
    x = L.a.get();
  }

  // Softmax cross-entropy over the logits (last layer's A), mean over the batch.
  Layer& top = *layers_.back();
  const std::int64_t C = top.out;
  probs_.resize(std::size_t(C * B));
  double loss = 0;
  for (std::int64_t j = 0; j < B; ++j) {
    const float* logit = top.a->host + j * C;
    float mx = *std::max_element(logit, logit + C);
    double sum = 0;
    for (std::int64_t c = 0; c < C; ++c) sum += std::exp(double(logit[c] - mx));
    for (std::int64_t c = 0; c < C; ++c) probs_[std::size_t(j * C + c)] = float(std::exp(double(logit[c] - mx)) / sum);
    loss += std::log(sum) + mx - logit[labels_[std::size_t(j)]];
  }
  return float(loss / double(B));
}

void Mlp::backward() {
  const std::int64_t B = c_.batch;
  const int last = layers() - 1;
  {
    Layer& top = *layers_.back();
    float* g = top.g->host;
    const float inv = 1.f / float(B);
    for (std::int64_t j = 0; j < B; ++j)
      for (std::int64_t c = 0; c < top.out; ++c)
        g[j * top.out + c] = (probs_[std::size_t(j * top.out + c)] - (labels_[std::size_t(j)] == c ? 1.f : 0.f)) * inv;
    top.g->dev_stale = true;
  }
  for (int l = last; l >= 0; --l) {
    Layer& L = *layers_[std::size_t(l)];
    Buf& x = l == 0 ? *input_ : *layers_[std::size_t(l) - 1]->a;
    gemm(false, true, L.in, L.out, B, x, L.in, *L.g, L.out, *L.dw, L.in);  // dW = X G^T   (NT)
    const float* g = L.g->host;
    for (std::int64_t o = 0; o < L.out; ++o) L.db[std::size_t(o)] = 0;
    for (std::int64_t j = 0; j < B; ++j)
      for (std::int64_t o = 0; o < L.out; ++o) L.db[std::size_t(o)] += g[j * L.out + o];
    if (l == 0) break;
    Layer& P = *layers_[std::size_t(l) - 1];
    gemm(false, false, L.in, B, L.out, *L.w, L.in, *L.g, L.out, *P.g, L.in);  // dX = W G   (NN), into P.g
    float* pg = P.g->host;
    const float* pz = P.z->host;
    for (std::size_t i = 0; i < P.g->n; ++i)
      pg[i] *= c_.activation == Activation::Relu ? (pz[i] > 0 ? 1.f : 0.f) : gelu_grad(pz[i]);
    P.g->dev_stale = true;
  }
}

void Mlp::update() {
  ++adam_t_;
  const float c1 = 1.f - std::pow(c_.beta1, float(adam_t_)), c2 = 1.f - std::pow(c_.beta2, float(adam_t_));
  auto adam = [&](float* p, const float* g, float* m, float* v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      m[i] = c_.beta1 * m[i] + (1 - c_.beta1) * g[i];
      v[i] = c_.beta2 * v[i] + (1 - c_.beta2) * g[i] * g[i];
      p[i] -= c_.lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + c_.eps);
    }
  };
  for (auto& L : layers_) {
    adam(L->w->host, L->dw->host, L->mw.data(), L->vw.data(), L->w->n);
    adam(L->b.data(), L->db.data(), L->mb.data(), L->vb.data(), L->b.size());
    L->w->dev_stale = true;
  }
}

float* Mlp::weight(int l) { return layers_.at(std::size_t(l))->w->host; }
float* Mlp::bias(int l) { return layers_.at(std::size_t(l))->b.data(); }
void Mlp::params_changed() {
  for (auto& L : layers_) L->w->dev_stale = true;
}
const float* Mlp::weight_grad(int l) { return layers_.at(std::size_t(l))->dw->host; }
const float* Mlp::bias_grad(int l) { return layers_.at(std::size_t(l))->db.data(); }

// ---- the loop -------------------------------------------------------------------------------------

std::vector<StepLog> train(GemmEngine& engine, const MlpConfig& config, int steps,
                           const std::function<void(const StepLog&)>& on_step) {
  TeacherTask task(config.inputs, config.classes, config.seed);
  Mlp mlp(engine, config);
  std::vector<StepLog> log;
  for (int s = 0; s < steps; ++s) {
    Batch b = task.sample(config.batch, std::uint64_t(s));  // data generation is not timed
    double gemm0 = mlp.gemm_seconds();
    auto t0 = Clock::now();
    float loss = mlp.train_step(b);
    engine.synchronize();
    StepLog r{s, loss, seconds_since(t0) * 1e3, (mlp.gemm_seconds() - gemm0) * 1e3};
    log.push_back(r);
    if (on_step) on_step(r);
  }
  return log;
}

}  // namespace tiletune::examples
