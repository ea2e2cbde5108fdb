// See cnn.h for the network, the layouts and what runs where.
#include "cnn.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "numeric.h"

namespace tiletune::examples {

namespace {

std::int64_t out_size(std::int64_t in, std::int64_t pad, std::int64_t r, std::int64_t stride) {
  return (in + 2 * pad - r) / stride + 1;
}

tiletune_conv_desc_t conv3x3(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t k,
                             std::int64_t stride, bool bf16) {
  tiletune_conv_desc_t d;
  tiletune_conv_desc_init(&d, n, c, h, w, k, 3, 3);
  d.stride_h = d.stride_w = stride;
  d.pad_h = d.pad_w = 1;
  d.in_type = d.out_type = bf16 ? TILETUNE_R_16BF : TILETUNE_R_32F;
  return d;
}

std::string conv_json(const char* name, const char* direction, const tiletune_conv_desc_t& d, bool bf16) {
  std::ostringstream o;
  o << "{\"name\": \"" << name << "\", \"kind\": \"conv\", \"direction\": \"" << direction << "\", \"dtype\": \""
    << (bf16 ? "bf16" : "f32") << "\", \"layout\": \"NHWC\", \"n\": " << d.n << ", \"c\": " << d.c << ", \"h\": " << d.h
    << ", \"w\": " << d.w << ", \"k\": " << d.k << ", \"r\": " << d.r << ", \"s\": " << d.s
    << ", \"stride\": " << d.stride_h << ", \"pad\": " << d.pad_h << "}";
  return o.str();
}

std::string gemm_json(const char* name, char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, bool bf16) {
  std::ostringstream o;
  o << "{\"name\": \"" << name << "\", " << (bf16 ? "\"a_type\": \"bf16\", \"c_type\": \"f32\"" : "\"dtype\": \"f32\"")
    << ", \"transA\": \"" << ta << "\", \"transB\": \"" << tb << "\", \"m\": " << m << ", \"n\": " << n
    << ", \"k\": " << k << "}";
  return o.str();
}

}  // namespace

tiletune_conv_desc_t CnnConfig::conv1_desc() const { return conv3x3(batch, channels, height, width, conv1, 1, bf16); }
tiletune_conv_desc_t CnnConfig::conv2_desc() const { return conv3x3(batch, conv1, height, width, conv2, 2, bf16); }
std::int64_t CnnConfig::features() const {
  return out_size(height, 1, 3, 2) * out_size(width, 1, 3, 2) * conv2;
}

void CnnConfig::validate() const {
  const std::pair<const char*, std::int64_t> sizes[] = {{"batch", batch},   {"height", height}, {"width", width},
                                                        {"channels", channels}, {"conv1", conv1}, {"conv2", conv2},
                                                        {"classes", classes}};
  for (const auto& [name, v] : sizes)
    if (v < 1) throw std::invalid_argument(std::string(name) + " must be >= 1, got " + std::to_string(v));
  if (classes < 2) throw std::invalid_argument("classes must be >= 2, got " + std::to_string(classes));
  if (!(lr > 0)) throw std::invalid_argument("lr must be > 0");
}

std::string cnn_tuning_config_json(const CnnConfig& c, const std::string& name, const std::string& templates_json,
                                   const std::string& benchmark_json) {
  const auto d1 = c.conv1_desc(), d2 = c.conv2_desc();
  const std::int64_t F = c.features();
  const std::vector<std::string> problems = {
      conv_json("conv1 forward", "fwd", d1, c.bf16),
      conv_json("conv1 filter grad", "wgrad", d1, c.bf16),
      conv_json("conv2 forward", "fwd", d2, c.bf16),
      conv_json("conv2 input grad", "dgrad", d2, c.bf16),
      conv_json("conv2 filter grad", "wgrad", d2, c.bf16),
      gemm_json("head forward", 'T', 'N', c.classes, c.batch, F, c.bf16),
      gemm_json("head weight grad", 'N', 'T', F, c.classes, c.batch, c.bf16),
      gemm_json("head input grad", 'N', 'N', F, c.batch, c.classes, c.bf16)};
  std::ostringstream o;
  o << "{\n  \"name\": \"" << name << "\",\n  \"problems\": [\n";
  for (std::size_t i = 0; i < problems.size(); ++i) o << "    " << problems[i] << (i + 1 < problems.size() ? ",\n" : "\n");
  o << "  ]";
  if (!templates_json.empty()) o << ",\n  \"templates\": " << templates_json;
  if (!benchmark_json.empty()) o << ",\n  \"benchmark\": " << benchmark_json;
  o << "\n}\n";
  return o.str();
}

ImageBatch sample_images(const CnnConfig& c, std::uint64_t step) {
  const std::int64_t H = c.height, W = c.width, C = c.channels, pixels = H * W * C;
  std::vector<float> patterns(std::size_t(c.classes * pixels));
  Normal fixed(mix(c.seed, 0xc1a55));
  for (float& v : patterns) v = fixed();
  Normal g(mix(c.seed, step + 1));
  std::mt19937_64 rng(mix(c.seed ^ 0x5eed, step));
  ImageBatch b;
  b.x.resize(std::size_t(c.batch * pixels));
  b.labels.resize(std::size_t(c.batch));
  for (std::int64_t n = 0; n < c.batch; ++n) {
    const int label = int(rng() % std::uint64_t(c.classes));
    const std::int64_t dy = std::int64_t(rng() % 5) - 2, dx = std::int64_t(rng() % 5) - 2;
    b.labels[std::size_t(n)] = label;
    for (std::int64_t y = 0; y < H; ++y)
      for (std::int64_t x = 0; x < W; ++x)
        for (std::int64_t ch = 0; ch < C; ++ch) {
          const std::int64_t sy = (y + dy + H) % H, sx = (x + dx + W) % W;
          b.x[std::size_t(((n * H + y) * W + x) * C + ch)] =
              patterns[std::size_t(label * pixels + (sy * W + sx) * C + ch)] + 0.5f * g();
        }
  }
  return b;
}

// ---- Cnn ----------------------------------------------------------------------------------------

// A host fp32 mirror and the runtime buffer it is copied to / from, in bf16 or fp32.
struct Cnn::Tensor {
  Tensor(Handle& h, std::size_t count, bool half) : h(h), host(count), half(half) {
    dev = h.malloc(count * (half ? 2 : 4));
  }
  ~Tensor() {
    try {
      h.free(dev);
    } catch (...) {  // a destructor must not throw; the handle reports its own errors
    }
  }
  void upload() {
    if (!half) return h.to_device(dev, host.data(), host.size() * 4);
    staging.resize(host.size());
    for (std::size_t i = 0; i < host.size(); ++i) staging[i] = to_bf16(host[i]);
    h.to_device(dev, staging.data(), staging.size() * 2);
  }
  void download() {
    if (!half) return h.to_host(host.data(), dev, host.size() * 4);
    staging.resize(host.size());
    h.to_host(staging.data(), dev, staging.size() * 2);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = from_bf16(staging[i]);
  }
  Handle& h;
  std::vector<float> host;
  std::vector<std::uint16_t> staging;
  bool half;
  void* dev = nullptr;
};

// A weight (fp32 master on the host, a runtime copy), its gradient and Adam's moments.
struct Cnn::Param {
  Param(Handle& h, std::size_t count, bool half, float scale, Normal& g)
      : value(h, count, half), grad(h, count, half), m(count), v(count) {
    for (float& x : value.host) x = scale * g();
    value.upload();
  }
  Tensor value, grad;
  std::vector<float> m, v;
};

namespace {

void adam(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m, std::vector<float>& v, float lr,
          std::uint64_t t) {
  const float b1 = 0.9f, b2 = 0.999f;
  const float c1 = 1 - std::pow(b1, float(t)), c2 = 1 - std::pow(b2, float(t));
  for (std::size_t i = 0; i < w.size(); ++i) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    w[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + 1e-8f);
  }
}

// out = relu(z) (forward) or out = upstream where z > 0 (backward), in place on `out`.
void relu(const std::vector<float>& z, std::vector<float>& out, bool backward) {
  for (std::size_t i = 0; i < z.size(); ++i) out[i] = z[i] > 0 ? (backward ? out[i] : z[i]) : 0.f;
}

}  // namespace

Cnn::Cnn(Handle& h, const CnnConfig& c) : h_(h), c_(c), d1_(c.conv1_desc()), d2_(c.conv2_desc()) {
  c_.validate();
  const bool half = c.bf16;
  const std::int64_t N = c.batch, HW = c.height * c.width, F = c.features();
  const auto act = [&](std::int64_t count, bool in_half) { return std::make_unique<Tensor>(h, std::size_t(count), in_half); };
  x_ = act(N * HW * c.channels, half);
  z1_ = act(N * HW * c.conv1, half);
  a1_ = act(N * HW * c.conv1, half);
  z2_ = act(N * F, half);
  a2_ = act(N * F, half);
  logits_ = act(c.classes * N, false);  // GEMM outputs are fp32
  g_ = act(c.classes * N, half);
  dwh_ = act(F * c.classes, false);
  da2_ = act(F * N, false);
  dz2_ = act(N * F, half);
  da1_ = act(N * HW * c.conv1, half);
  dz1_ = act(N * HW * c.conv1, half);
  Normal g(mix(c.seed, 0x1417));
  // He initialisation for the ReLU layers; the head 1/sqrt(F), so the first loss is near ln(classes).
  w1_ = std::make_unique<Param>(h, std::size_t(c.conv1 * 9 * c.channels), half, std::sqrt(2.f / float(9 * c.channels)), g);
  w2_ = std::make_unique<Param>(h, std::size_t(c.conv2 * 9 * c.conv1), half, std::sqrt(2.f / float(9 * c.conv1)), g);
  wh_ = std::make_unique<Param>(h, std::size_t(F * c.classes), half, std::sqrt(1.f / float(F)), g);
  bh_.assign(std::size_t(c.classes), 0.f);
  bh_m_ = bh_v_ = bh_;
}

Cnn::~Cnn() = default;

CnnStep Cnn::train_step(const ImageBatch& b) {
  const std::int64_t N = c_.batch, F = c_.features(), K = c_.classes;
  const tiletune_datatype_t ab = c_.bf16 ? TILETUNE_R_16BF : TILETUNE_R_32F;
  double runtime_s = 0;
  // Every runtime call is timed to its completion, so that the host work around it is not counted.
  auto timed = [&](auto&& call) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    h_.synchronize();
    runtime_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };

  // Forward.
  x_->host = b.x;
  x_->upload();
  timed([&] { h_.conv_forward(d1_, x_->dev, w1_->value.dev, z1_->dev); });
  z1_->download();
  relu(z1_->host, a1_->host, false);
  a1_->upload();
  timed([&] { h_.conv_forward(d2_, a1_->dev, w2_->value.dev, z2_->dev); });
  z2_->download();
  relu(z2_->host, a2_->host, false);
  a2_->upload();
  timed([&] {
    h_.gemm(TILETUNE_OP_T, TILETUNE_OP_N, K, N, F, 1.f, wh_->value.dev, ab, F, a2_->dev, F, 0.f, logits_->dev,
            TILETUNE_R_32F, K);
  });
  logits_->download();

  // Softmax cross-entropy; G = dLoss/dlogits = (softmax - onehot) / N.
  CnnStep step;
  std::vector<float> dbh(std::size_t(K), 0.f);
  for (std::int64_t n = 0; n < N; ++n) {
    float* l = &logits_->host[std::size_t(n * K)];
    float top = -INFINITY;
    for (std::int64_t k = 0; k < K; ++k) top = std::max(top, l[k] += bh_[std::size_t(k)]);
    double sum = 0;
    for (std::int64_t k = 0; k < K; ++k) sum += std::exp(double(l[k] - top));
    const int label = b.labels[std::size_t(n)];
    step.loss += float(std::log(sum) - double(l[label] - top)) / float(N);
    for (std::int64_t k = 0; k < K; ++k) {
      const float grad = (float(std::exp(double(l[k] - top)) / sum) - (k == label ? 1.f : 0.f)) / float(N);
      g_->host[std::size_t(n * K + k)] = grad;
      dbh[std::size_t(k)] += grad;
    }
  }
  g_->upload();

  // Backward: head, then conv2 (filter and input gradients), then conv1's filter gradient.
  timed([&] {
    h_.gemm(TILETUNE_OP_N, TILETUNE_OP_T, F, K, N, 1.f, a2_->dev, ab, F, g_->dev, K, 0.f, dwh_->dev, TILETUNE_R_32F, F);
    h_.gemm(TILETUNE_OP_N, TILETUNE_OP_N, F, N, K, 1.f, wh_->value.dev, ab, F, g_->dev, K, 0.f, da2_->dev,
            TILETUNE_R_32F, F);
  });
  dwh_->download();
  da2_->download();
  dz2_->host = da2_->host;
  relu(z2_->host, dz2_->host, true);
  dz2_->upload();
  timed([&] {
    h_.conv_backward_filter(d2_, a1_->dev, dz2_->dev, w2_->grad.dev);
    h_.conv_backward_data(d2_, dz2_->dev, w2_->value.dev, da1_->dev);
  });
  w2_->grad.download();
  da1_->download();
  dz1_->host = da1_->host;
  relu(z1_->host, dz1_->host, true);
  dz1_->upload();
  timed([&] { h_.conv_backward_filter(d1_, x_->dev, dz1_->dev, w1_->grad.dev); });
  w1_->grad.download();

  // Adam; the head's gradient came back as fp32 in dwh_.
  ++t_;
  adam(w1_->value.host, w1_->grad.host, w1_->m, w1_->v, c_.lr, t_);
  adam(w2_->value.host, w2_->grad.host, w2_->m, w2_->v, c_.lr, t_);
  adam(wh_->value.host, dwh_->host, wh_->m, wh_->v, c_.lr, t_);
  adam(bh_, dbh, bh_m_, bh_v_, c_.lr, t_);
  for (Param* p : {w1_.get(), w2_.get(), wh_.get()}) p->value.upload();
  step.runtime_ms = runtime_s * 1e3;
  return step;
}

}  // namespace tiletune::examples
