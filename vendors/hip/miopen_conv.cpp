// MIOpen as the HIP backend's vendor convolution, in all three directions. Its find (which MIOpen
// requires before a convolution call: it compiles and times its solvers on the caller's buffers)
// runs at a problem's first call, and the fastest algorithm serves it, as cuDNN's legacy find does
// on CUDA (vendors/cuda/cudnn_conv.cpp); the other algorithms it found are the choices a sweep times.
// Every call binds the handle's device first, as rocblas_gemm.cpp does.
// Loaded with dlopen and declared here from MIOpen's published C API (miopen.h), so that it builds
// where no ROCm is installed (Debian 12 packages no MIOpen). Compile-verified only: no AMD GPU has
// run it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "gpu/hip/hip_api.h"
#include "gpu/hip/hip_backend.h"
#include "gpu/stream_buffers.h"
#include "vendors/libraries.h"
#include "vendors/shared_library.h"
#include "vendors/vendor_conv.h"

namespace tiletune::gpu::hip {
namespace {

// MIOpen's C API (miopen.h): opaque handles, int enums, size_t workspaces.
using mi_handle = struct miopen_handle_opaque*;
using mi_tensor = struct miopen_tensor_opaque*;
using mi_conv = struct miopen_conv_opaque*;
using mi_status = int;
constexpr mi_status kSuccess = 0;
constexpr int kHalf = 0, kFloat = 1, kBFloat16 = 5;  // miopenDataType_t
constexpr int kCrossCorrelation = 0;                // miopenConvolution
// miopenConvAlgoPerf_t: the direction's algorithm (an enum, in a union), its time and workspace.
struct AlgoPerf {
  int algo;
  float time;
  std::size_t memory;
};

using FindFn = mi_status (*)(mi_handle, mi_tensor, const void*, mi_tensor, const void*, mi_conv, mi_tensor, void*, int,
                             int*, AlgoPerf*, void*, std::size_t, bool);
using RunFn = mi_status (*)(mi_handle, const void*, mi_tensor, const void*, mi_tensor, const void*, mi_conv, int,
                            const void*, mi_tensor, void*, void*, std::size_t);
using WorkspaceFn = mi_status (*)(mi_handle, mi_tensor, mi_tensor, mi_conv, mi_tensor, std::size_t*);

struct Miopen {
  mi_status (*create)(mi_handle*) = nullptr;
  mi_status (*destroy)(mi_handle) = nullptr;
  mi_status (*set_stream)(mi_handle, void*) = nullptr;
  const char* (*error_string)(mi_status) = nullptr;
  mi_status (*version)(std::size_t*, std::size_t*, std::size_t*) = nullptr;
  mi_status (*create_tensor)(mi_tensor*) = nullptr;
  mi_status (*set_tensor)(mi_tensor, int, int, const int*, const int*) = nullptr;
  mi_status (*destroy_tensor)(mi_tensor) = nullptr;
  mi_status (*create_conv)(mi_conv*) = nullptr;
  mi_status (*init_conv)(mi_conv, int, const int*, const int*, const int*, int) = nullptr;
  mi_status (*set_groups)(mi_conv, int) = nullptr;
  mi_status (*destroy_conv)(mi_conv) = nullptr;
  // Per direction (forward, backward data, backward weights): workspace size, find, run.
  WorkspaceFn workspace[3] = {};
  FindFn find[3] = {};
  RunFn run[3] = {};
  std::string missing;  // why it cannot be used ("" when it can)
};

const Miopen& lib() {
  static const Miopen m = [] {
    Miopen m;
    std::string error;
    void* h = open_library({"libMIOpen.so.1", "libMIOpen.so"}, &error);
    if (!h) {
      m.missing = "MIOpen (libMIOpen.so.1) cannot be loaded: " + error;
      return m;
    }
    auto sym = [&](auto& fn, const char* name) { bind_symbol(h, fn, name, error); };
    sym(m.create, "miopenCreate");
    sym(m.destroy, "miopenDestroy");
    sym(m.set_stream, "miopenSetStream");
    sym(m.error_string, "miopenGetErrorString");
    sym(m.version, "miopenGetVersion");
    sym(m.create_tensor, "miopenCreateTensorDescriptor");
    sym(m.set_tensor, "miopenSetTensorDescriptor");
    sym(m.destroy_tensor, "miopenDestroyTensorDescriptor");
    sym(m.create_conv, "miopenCreateConvolutionDescriptor");
    sym(m.init_conv, "miopenInitConvolutionNdDescriptor");
    sym(m.set_groups, "miopenSetConvolutionGroupCount");
    sym(m.destroy_conv, "miopenDestroyConvolutionDescriptor");
    sym(m.workspace[0], "miopenConvolutionForwardGetWorkSpaceSize");
    sym(m.workspace[1], "miopenConvolutionBackwardDataGetWorkSpaceSize");
    sym(m.workspace[2], "miopenConvolutionBackwardWeightsGetWorkSpaceSize");
    sym(m.find[0], "miopenFindConvolutionForwardAlgorithm");
    sym(m.find[1], "miopenFindConvolutionBackwardDataAlgorithm");
    sym(m.find[2], "miopenFindConvolutionBackwardWeightsAlgorithm");
    sym(m.run[0], "miopenConvolutionForward");
    sym(m.run[1], "miopenConvolutionBackwardData");
    sym(m.run[2], "miopenConvolutionBackwardWeights");
    if (!error.empty()) m.missing = "the loaded MIOpen lacks " + error;
    return m;
  }();
  return m;
}

int mi_type(DataType t) { return t == DataType::F32 ? kFloat : t == DataType::F16 ? kHalf : kBFloat16; }

class MiopenConv final : public VendorConv {
 public:
  explicit MiopenConv(Device& dev) : dev_(dev), device_(dev.info().index) {
    bind_device();
    check(lib().create(&handle_), "miopenCreate");
    std::size_t major = 0, minor = 0, patch = 0;
    name_ = "MIOpen";
    if (lib().version(&major, &minor, &patch) == kSuccess)
      name_ += " " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  }
  ~MiopenConv() override {
    for (auto& [key, plan] : plans_) destroy(plan);
    lib().destroy(handle_);
  }
  std::string name() const override { return name_; }
  std::string unsupported(const ConvProblem& p) const override { return one_type_only(name_, p); }

  // The algorithms its find timed for `p` on these buffers after the fastest, which the default
  // call runs ({ALGO: the direction's algorithm enum}).
  std::vector<VendorChoice> alternatives(const ConvProblem& p, const TtConvParams& a, int limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    bind_device();
    std::vector<VendorChoice> out;
    const std::vector<AlgoPerf>& found = plan_for(p, a).found;
    for (std::size_t i = 1; i < found.size() && int(out.size()) < limit; ++i) out.push_back({{"ALGO", found[i].algo}});
    return out;
  }

  void run(const ConvProblem& p, const TtConvParams& a, Stream stream, const VendorChoice& choice) override {
    std::lock_guard<std::mutex> lock(mu_);
    bind_device();
    const Plan& plan = plan_for(p, a);  // MIOpen runs only what its find found
    const AlgoPerf* algo = &plan.found.front();
    if (!choice.empty()) {
      auto it = choice.find("ALGO");
      auto found = std::find_if(plan.found.begin(), plan.found.end(),
                                [&](const AlgoPerf& f) { return it != choice.end() && f.algo == it->second; });
      if (found != plan.found.end()) algo = &*found;
      else if (strict_) throw Error(name_ + "'s find did not offer this algorithm for " + p.key());
    }
    check(lib().set_stream(handle_, stream), "miopenSetStream");
    void* ws = algo->memory ? workspace(stream, algo->memory) : nullptr;
    const float one = 1, zero = 0;  // MIOpen's 2-D forward takes alpha 1 and beta 0 only
    const int d = int(p.direction);
    // Forward: x, w -> y; backward data: dy, w -> dx; backward weights: dy, x -> dw.
    switch (p.direction) {
      case ConvDirection::Forward:
        check(lib().run[d](handle_, &one, plan.x, a.x, plan.w, a.wt, plan.conv, algo->algo, &zero, plan.y, a.y, ws,
                           algo->memory),
              "miopenConvolutionForward");
        break;
      case ConvDirection::BackwardData:
        check(lib().run[d](handle_, &one, plan.y, a.y, plan.w, a.wt, plan.conv, algo->algo, &zero, plan.x,
                           const_cast<void*>(a.x), ws, algo->memory),
              "miopenConvolutionBackwardData");
        break;
      case ConvDirection::BackwardFilter:
        check(lib().run[d](handle_, &one, plan.y, a.y, plan.x, a.x, plan.conv, algo->algo, &zero, plan.w,
                           const_cast<void*>(a.wt), ws, algo->memory),
              "miopenConvolutionBackwardWeights");
        break;
    }
  }

  std::string algorithm(const ConvProblem& p) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(p.key());
    return it == plans_.end() ? "" : "algorithm " + std::to_string(it->second.found.front().algo) + " (find: " +
                                         std::to_string(it->second.found.front().time) + " ms)";
  }

 private:
  struct Plan {
    mi_tensor x = nullptr, w = nullptr, y = nullptr;
    mi_conv conv = nullptr;
    std::vector<AlgoPerf> found;  // fastest first
  };

  void bind_device() const {
    if (runtime().hipSetDevice(device_) != hipSuccess) throw Error("hipSetDevice(" + std::to_string(device_) + ") failed");
  }

  void check(mi_status s, const char* what) const {
    if (s != kSuccess)
      throw Error(std::string(what) + " failed: " + (lib().error_string ? lib().error_string(s) : std::to_string(s)));
  }

  void* workspace(Stream stream, std::size_t bytes) { return workspaces_.get(dev_, stream, bytes).get(); }

  void destroy(const Plan& plan) {
    for (mi_tensor t : {plan.x, plan.w, plan.y})
      if (t) lib().destroy_tensor(t);
    if (plan.conv) lib().destroy_conv(plan.conv);
  }

  // NCHW dimensions with the strides of the problem's layout (NHWC: KRSC filters).
  void describe(mi_tensor t, DataType type, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                ConvLayout layout) {
    const int dims[4] = {int(n), int(c), int(h), int(w)};
    const int nhwc[4] = {int(h * w * c), 1, int(w * c), int(c)}, nchw[4] = {int(c * h * w), int(h * w), int(w), 1};
    check(lib().set_tensor(t, mi_type(type), 4, dims, layout == ConvLayout::NHWC ? nhwc : nchw),
          "miopenSetTensorDescriptor");
  }

  // Under mu_: `p` described to MIOpen and its find run on these buffers, once per problem.
  const Plan& plan_for(const ConvProblem& p, const TtConvParams& a) {
    const std::string key = p.key();
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
    if (std::string why = unsupported(p); !why.empty()) throw Error(why);
    dev_.synchronize();  // the find runs on the handle's stream and writes the caller's output
    Plan& plan = plans_[key];
    try {
      check(lib().set_stream(handle_, nullptr), "miopenSetStream");
      check(lib().create_tensor(&plan.x), "miopenCreateTensorDescriptor");
      check(lib().create_tensor(&plan.w), "miopenCreateTensorDescriptor");
      check(lib().create_tensor(&plan.y), "miopenCreateTensorDescriptor");
      check(lib().create_conv(&plan.conv), "miopenCreateConvolutionDescriptor");
      describe(plan.x, p.in_type, p.n, p.c, p.h, p.w, p.layout);
      describe(plan.w, p.in_type, p.k, p.c / p.groups, p.r, p.s, p.layout);
      describe(plan.y, p.in_type, p.n, p.k, p.p(), p.q(), p.layout);
      const int pad[2] = {int(p.pad_h), int(p.pad_w)}, stride[2] = {int(p.stride_h), int(p.stride_w)},
                dil[2] = {int(p.dil_h), int(p.dil_w)};
      check(lib().init_conv(plan.conv, 2, pad, stride, dil, kCrossCorrelation), "miopenInitConvolutionNdDescriptor");
      check(lib().set_groups(plan.conv, int(p.groups)), "miopenSetConvolutionGroupCount");
      find(p, a, plan);
    } catch (...) {
      destroy(plan);
      plans_.erase(key);  // a later call describes and finds again
      throw;
    }
    return plan;
  }

  void find(const ConvProblem& p, const TtConvParams& a, Plan& plan) {
    const int d = int(p.direction);
    std::size_t bytes = 0;
    // Each direction's descriptors in its own order (miopen.h): forward w, x, y; backward data dy,
    // w, dx; backward weights dy, x, dw.
    switch (p.direction) {
      case ConvDirection::Forward: check(lib().workspace[d](handle_, plan.w, plan.x, plan.conv, plan.y, &bytes), "workspace size"); break;
      case ConvDirection::BackwardData: check(lib().workspace[d](handle_, plan.y, plan.w, plan.conv, plan.x, &bytes), "workspace size"); break;
      case ConvDirection::BackwardFilter: check(lib().workspace[d](handle_, plan.y, plan.x, plan.conv, plan.w, &bytes), "workspace size"); break;
    }
    void* ws = bytes ? workspace(nullptr, bytes) : nullptr;
    AlgoPerf perf[8] = {};
    int count = 0;
    const bool exhaustive = true;  // frameworks' benchmark mode
    switch (p.direction) {
      case ConvDirection::Forward:
        check(lib().find[d](handle_, plan.x, a.x, plan.w, a.wt, plan.conv, plan.y, a.y, 8, &count, perf, ws, bytes, exhaustive),
              "miopenFindConvolutionForwardAlgorithm");
        break;
      case ConvDirection::BackwardData:
        check(lib().find[d](handle_, plan.y, a.y, plan.w, a.wt, plan.conv, plan.x, const_cast<void*>(a.x), 8, &count,
                            perf, ws, bytes, exhaustive),
              "miopenFindConvolutionBackwardDataAlgorithm");
        break;
      case ConvDirection::BackwardFilter:
        check(lib().find[d](handle_, plan.y, a.y, plan.x, a.x, plan.conv, plan.w, const_cast<void*>(a.wt), 8, &count,
                            perf, ws, bytes, exhaustive),
              "miopenFindConvolutionBackwardWeightsAlgorithm");
        break;
    }
    plan.found.assign(perf, perf + std::clamp(count, 0, 8));
    std::stable_sort(plan.found.begin(), plan.found.end(), [](const AlgoPerf& x, const AlgoPerf& y) { return x.time < y.time; });
    if (plan.found.empty()) throw Error(name_ + " found no algorithm for " + p.key());
  }

  Device& dev_;
  int device_;
  mi_handle handle_ = nullptr;
  std::string name_;
  mutable std::mutex mu_;  // one handle; its stream is set per call
  StreamBuffers workspaces_;
  std::map<std::string, Plan> plans_;
};

}  // namespace

std::string miopen_missing() { return lib().missing; }

std::unique_ptr<VendorConv> make_miopen_conv(Device& dev, std::string* why_not) {
  if (!lib().missing.empty()) {
    if (why_not) *why_not = lib().missing;
    return nullptr;
  }
  try {
    return std::make_unique<MiopenConv>(dev);
  } catch (const Error& e) {  // a broken install leaves convolutions without a vendor, not the GEMMs
    if (why_not) *why_not = std::string("MIOpen cannot be used: ") + e.what();
    return nullptr;
  }
}

}  // namespace tiletune::gpu::hip
