// tiletune example: a small convolutional network whose every convolution (forward, input
// gradient, filter gradient) and every matrix product goes through the tiletune runtime.
//
//   x   [N, H, W, C0]  NHWC image
//   z1 = conv1(x)   3x3, stride 1, pad 1, C0 -> C1 (KRSC filters)   a1 = relu(z1)
//   z2 = conv2(a1)  3x3, stride 2, pad 1, C1 -> C2                  a2 = relu(z2)
//   logits [classes, N] = Wh^T a2 + bh    (a2 read as [F, N] column-major, F = P2*Q2*C2: one
//                                          image's NHWC pixels are contiguous; TN GEMM)
// Backward: head dWh = a2 G^T (NT), da2 = Wh G (NN); conv2 filter and input gradients, conv1
// filter gradient (the image needs no gradient). The convolutions have no bias (ReLU after a
// conv without bias learns this task well); the head has one. ReLU, softmax cross-entropy and
// Adam run on the host, on host mirrors copied to and from the runtime's buffers around every
// call (slow on a GPU but simple; the runtime's time is measured apart).
// With bf16, every convolution reads and writes bf16 (as issue 6's ResNet problems), and the
// GEMMs read bf16 and write fp32; master weights stay fp32.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tiletune.hpp"

namespace tiletune::examples {

struct CnnConfig {
  std::int64_t batch = 32, height = 12, width = 12, channels = 3;  // the image
  std::int64_t conv1 = 8, conv2 = 16;                              // output channels
  std::int64_t classes = 4;
  bool bf16 = false;
  float lr = 3e-3f;  // Adam
  std::uint64_t seed = 1;

  tiletune_conv_desc_t conv1_desc() const;
  tiletune_conv_desc_t conv2_desc() const;
  std::int64_t features() const;  // F = P2 * Q2 * C2
  void validate() const;          // throws std::invalid_argument naming the bad field
};

// A tuning config (JSON) with exactly the convolutions and GEMMs one training step issues;
// `templates_json` / `benchmark_json` are the values of those keys ("" leaves them out).
std::string cnn_tuning_config_json(const CnnConfig& c, const std::string& name, const std::string& templates_json = "",
                                   const std::string& benchmark_json = "");

// The synthetic task: each class owns a fixed random pattern; an image is its class's pattern
// shifted (circularly) by up to two pixels each way, plus noise. Batches depend only on (seed, step).
struct ImageBatch {
  std::vector<float> x;  // [N, H, W, C0]
  std::vector<int> labels;
};
ImageBatch sample_images(const CnnConfig& c, std::uint64_t step);

struct CnnStep {
  float loss = 0;
  double runtime_ms = 0;  // in runtime calls (convolutions and GEMMs), synchronised
};

class Cnn {
 public:
  Cnn(Handle& h, const CnnConfig& c);
  ~Cnn();
  Cnn(const Cnn&) = delete;
  Cnn& operator=(const Cnn&) = delete;
  CnnStep train_step(const ImageBatch& b);  // forward, backward, one Adam step

 private:
  struct Tensor;
  struct Param;
  Handle& h_;
  CnnConfig c_;
  tiletune_conv_desc_t d1_, d2_;
  std::unique_ptr<Tensor> x_, z1_, a1_, z2_, a2_, logits_, g_, dwh_, da2_, dz2_, da1_, dz1_;
  std::unique_ptr<Param> w1_, w2_, wh_;
  std::vector<float> bh_, bh_m_, bh_v_;
  std::uint64_t t_ = 0;
};

}  // namespace tiletune::examples
