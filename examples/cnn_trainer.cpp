// cnn_trainer: trains a small NHWC convolutional network (examples/cnn.h) on a synthetic image
// classification task with every convolution (forward, input gradient, filter gradient) and every
// matrix product dispatched through the tiletune runtime, and prints the loss falling, the time
// spent in the runtime and its tuned / nearest / fallback counts.
//
//   cnn_trainer --db empty.db --create-db --backend host           # fallback kernels only
//   cnn_trainer --print-config > cnn.json && tiletune tune cnn.json --db cnn.db --backend host
//   cnn_trainer --db cnn.db --backend host                         # every call tuned
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "cnn.h"
#include "db/database.h"  // only for --create-db

using namespace tiletune;
using namespace tiletune::examples;

int main(int argc, char** argv) {
  CLI::App app{"cnn_trainer: a small CNN trained with tiletune's convolutions and GEMMs"};
  std::string db, backend = "auto", dtype = "f32";
  int device = 0, steps = 60, log_every = 10;
  bool create_db = false, print_config = false;
  CnnConfig c;
  app.add_option("--db", db, "tiletune solution database");
  app.add_flag("--create-db", create_db, "create an empty database at --db if it is missing (fallback kernels only)");
  app.add_option("--backend", backend, "tiletune backend")->check(CLI::IsMember({"auto", "host", "cuda", "hip"}));
  app.add_option("--device", device, "device index");
  app.add_option("--steps", steps, "training steps")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--log-every", log_every, "print every n-th step")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--batch", c.batch)->capture_default_str();
  app.add_option("--height", c.height)->capture_default_str();
  app.add_option("--width", c.width)->capture_default_str();
  app.add_option("--channels", c.channels, "image channels")->capture_default_str();
  app.add_option("--conv1", c.conv1, "output channels of the first convolution")->capture_default_str();
  app.add_option("--conv2", c.conv2, "output channels of the second (stride 2) convolution")->capture_default_str();
  app.add_option("--classes", c.classes)->capture_default_str();
  app.add_option("--dtype", dtype, "f32, or bf16 (convolutions bf16 throughout, GEMMs bf16 -> f32)")
      ->check(CLI::IsMember({"f32", "bf16"}))->capture_default_str();
  app.add_option("--lr", c.lr, "Adam learning rate")->capture_default_str();
  app.add_option("--seed", c.seed)->capture_default_str();
  app.add_flag("--print-config", print_config, "print the tuning config of this size's problems and exit");
  CLI11_PARSE(app, argc, argv);
  c.bf16 = dtype == "bf16";

  try {
    c.validate();
    if (print_config) {
      std::printf("%s", cnn_tuning_config_json(c, "cnn_trainer").c_str());
      return 0;
    }
    if (db.empty()) {
      std::fprintf(stderr, "cnn_trainer: --db is required (`tiletune tune` makes a tuned one, --create-db an empty one)\n");
      return 2;
    }
    if (!std::filesystem::exists(db)) {
      if (!create_db) {
        std::fprintf(stderr, "cnn_trainer: %s does not exist (add --create-db for an empty one)\n", db.c_str());
        return 2;
      }
      db::Database::open(db, db::Mode::ReadWrite);
    }
    Handle h(db, backend, device);
    Cnn net(h, c);
    std::printf("cnn_trainer on %s: batch %lld, %lldx%lldx%lld images, conv %lld -> %lld, %lld classes, %s\n",
                h.arch().c_str(), (long long)c.batch, (long long)c.height, (long long)c.width, (long long)c.channels,
                (long long)c.conv1, (long long)c.conv2, (long long)c.classes, dtype.c_str());
    double first = 0, last = 0, runtime_ms = 0;
    const int window = std::max(1, std::min(10, steps / 4));
    for (int s = 0; s < steps; ++s) {
      const CnnStep st = net.train_step(sample_images(c, std::uint64_t(s)));
      if (s < window) first += st.loss / window;
      if (s >= steps - window) last += st.loss / window;
      if (s > 0) runtime_ms += st.runtime_ms;  // the first step compiles the fallbacks
      if (s % log_every == 0 || s + 1 == steps)
        std::printf("step %4d  loss %.4f  runtime %.2f ms\n", s, st.loss, st.runtime_ms);
    }
    const tiletune_stats_t st = h.stats();
    std::printf("loss: mean of the first %d steps %.4f, of the last %d %.4f\n", window, first, window, last);
    if (steps > 1) std::printf("runtime per step (convolutions + GEMMs, after the first): %.3f ms\n", runtime_ms / (steps - 1));
    std::printf("tiletune stats: calls %llu, tuned %llu, nearest %llu, fallbacks %llu, jit_compiles %llu\n",
                (unsigned long long)st.calls, (unsigned long long)st.tuned, (unsigned long long)st.nearest,
                (unsigned long long)st.fallbacks, (unsigned long long)st.jit_compiles);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnn_trainer: %s\n", e.what());
    return 1;
  }
  return 0;
}
