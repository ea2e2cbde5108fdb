// cuDNN as the convolution yardstick, loaded with dlopen (vendors/cuda/cudnn_api.h says why). The
// algorithm is cuDNN's own choice: its find (cudnnFind*AlgorithmEx) times every algorithm on our
// buffers with a generous workspace, as frameworks' benchmark mode does, and the fastest is kept.
#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <map>
#include <mutex>
#include <type_traits>
#include <vector>

#include "common/env.h"
#include "common/error.h"
#include "gpu/cuda/cuda_backend.h"
#include "vendors/cuda/cudnn_api.h"
#include "vendors/libraries.h"
#include "vendors/shared_library.h"
#include "vendors/vendor_conv.h"

#if __has_include(<cudnn.h>)
#include <cudnn.h>
namespace tiletune::gpu::cuda::cudnn {
// int(): the two sides are different enum types.
static_assert(kSuccess == int(CUDNN_STATUS_SUCCESS) && kFloat == int(CUDNN_DATA_FLOAT) && kHalf == int(CUDNN_DATA_HALF) &&
              kBfloat16 == int(CUDNN_DATA_BFLOAT16) && kNchw == int(CUDNN_TENSOR_NCHW) && kNhwc == int(CUDNN_TENSOR_NHWC) &&
              kCrossCorrelation == int(CUDNN_CROSS_CORRELATION) && kDefaultMath == int(CUDNN_DEFAULT_MATH) &&
              kTensorOpMath == int(CUDNN_TENSOR_OP_MATH) && kFmaMath == int(CUDNN_FMA_MATH));
static_assert(kFwdAlgoCount == int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT) &&
              kBwdDataAlgoCount == int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) &&
              kBwdFilterAlgoCount == int(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT));
static_assert(sizeof(AlgoPerf) == sizeof(cudnnConvolutionFwdAlgoPerf_t) &&
              sizeof(AlgoPerf) == sizeof(cudnnConvolutionBwdDataAlgoPerf_t) &&
              sizeof(AlgoPerf) == sizeof(cudnnConvolutionBwdFilterAlgoPerf_t) &&
              offsetof(AlgoPerf, time) == offsetof(cudnnConvolutionFwdAlgoPerf_t, time) &&
              offsetof(AlgoPerf, memory) == offsetof(cudnnConvolutionFwdAlgoPerf_t, memory) &&
              offsetof(AlgoPerf, math_type) == offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType));
}  // namespace tiletune::gpu::cuda::cudnn
#endif

namespace tiletune::gpu::cuda {
namespace cudnn {

void* library(std::string* why) {
  static std::string error;
  static void* const handle = [] {
    const auto env = env_text("TILETUNE_CUDNN_LIB");
    if (void* h = open_library(env ? std::vector<std::string>{*env} : std::vector<std::string>{"libcudnn.so.9", "libcudnn.so"},
                               &error))
      return h;
    error = "cuDNN not found (" + error + "); set TILETUNE_CUDNN_LIB to the path of libcudnn.so.9";
    return static_cast<void*>(nullptr);
  }();
  if (!handle && why) *why = error;
  return handle;
}

const Api* api(std::string* why) {
  static std::string error;
  static const Api* loaded = [] () -> const Api* {
    static Api a{};
    void* h = library(&error);
    if (!h) return nullptr;
    auto sym = [&](auto& fn, const char* name) { bind_symbol(h, fn, name, error); };
    sym(a.create, "cudnnCreate");
    sym(a.destroy, "cudnnDestroy");
    sym(a.error_string, "cudnnGetErrorString");
    sym(a.version, "cudnnGetVersion");
    sym(a.set_stream, "cudnnSetStream");
    sym(a.create_tensor, "cudnnCreateTensorDescriptor");
    sym(a.destroy_tensor, "cudnnDestroyTensorDescriptor");
    sym(a.set_tensor_4d, "cudnnSetTensor4dDescriptor");
    sym(a.create_filter, "cudnnCreateFilterDescriptor");
    sym(a.destroy_filter, "cudnnDestroyFilterDescriptor");
    sym(a.set_filter_4d, "cudnnSetFilter4dDescriptor");
    sym(a.create_conv, "cudnnCreateConvolutionDescriptor");
    sym(a.destroy_conv, "cudnnDestroyConvolutionDescriptor");
    sym(a.set_conv_2d, "cudnnSetConvolution2dDescriptor");
    sym(a.set_group_count, "cudnnSetConvolutionGroupCount");
    sym(a.set_math_type, "cudnnSetConvolutionMathType");
    sym(a.find_fwd, "cudnnFindConvolutionForwardAlgorithmEx");
    sym(a.find_bwd_data, "cudnnFindConvolutionBackwardDataAlgorithmEx");
    sym(a.find_bwd_filter, "cudnnFindConvolutionBackwardFilterAlgorithmEx");
    sym(a.fwd, "cudnnConvolutionForward");
    sym(a.bwd_data, "cudnnConvolutionBackwardData");
    sym(a.bwd_filter, "cudnnConvolutionBackwardFilter");
    if (!error.empty()) {
      error = "the loaded cuDNN lacks " + error;
      return nullptr;
    }
    return &a;
  }();
  if (!loaded && why) *why = error;
  return loaded;
}

}  // namespace cudnn
namespace {

const char* algo_name(ConvDirection d, int algo) {
  static const char* const fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                    "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const bwd_data[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const bwd_filter[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
                                           "FFT_TILING"};
  switch (d) {
    case ConvDirection::Forward: return algo >= 0 && algo < cudnn::kFwdAlgoCount ? fwd[algo] : "?";
    case ConvDirection::BackwardData: return algo >= 0 && algo < cudnn::kBwdDataAlgoCount ? bwd_data[algo] : "?";
    case ConvDirection::BackwardFilter:
      return algo >= 0 && algo < cudnn::kBwdFilterAlgoCount ? bwd_filter[algo] : "?";
  }
  return "?";
}

int cudnn_type(DataType t) {
  return t == DataType::F32 ? cudnn::kFloat : t == DataType::F16 ? cudnn::kHalf : cudnn::kBfloat16;
}

class CudnnConv final : public VendorConv {
 public:
  CudnnConv(Device& dev, const cudnn::Api& api) : dev_(dev), api_(api) {
    check(api_.create(&handle_), "cudnnCreate");
    const std::size_t v = api_.version();
    name_ = "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  }
  ~CudnnConv() override {
    for (auto& [key, plan] : plans_) destroy(plan);
    api_.destroy(handle_);
  }
  std::string name() const override { return name_; }

  std::string unsupported(const ConvProblem& p) const override { return one_type_only(name_ + " (legacy API)", p); }

  // The legacy API offers no choices of its own here (alternatives() is empty): a choice recorded
  // through the graph API runs this library's default, or throws when strict.
  void run(const ConvProblem& p, const TtConvParams& a, Stream stream, const VendorChoice& choice) override {
    if (!choice.empty() && strict_) throw Error(name_ + " (legacy API) takes no engine configuration");
    std::lock_guard<std::mutex> lock(mu_);
    // The search runs on the default stream, so that it waits for whatever made the inputs.
    check(api_.set_stream(handle_, nullptr), "cudnnSetStream");
    const Plan& plan = plan_for(p, a);
    check(api_.set_stream(handle_, stream), "cudnnSetStream");
    void* ws = workspaces_.for_stream(stream, plan.ws_bytes);
    const float one = 1, zero = 0;
    switch (p.direction) {
      case ConvDirection::Forward:
        check(api_.fwd(handle_, &one, plan.x, a.x, plan.w, a.wt, plan.conv, plan.algo, ws, plan.ws_bytes,
                       &zero, plan.y, a.y),
              "cudnnConvolutionForward");
        break;
      case ConvDirection::BackwardData:
        check(api_.bwd_data(handle_, &one, plan.w, a.wt, plan.y, a.y, plan.conv, plan.algo, ws,
                            plan.ws_bytes, &zero, plan.x, a.x),
              "cudnnConvolutionBackwardData");
        break;
      case ConvDirection::BackwardFilter:
        check(api_.bwd_filter(handle_, &one, plan.x, a.x, plan.y, a.y, plan.conv, plan.algo, ws,
                              plan.ws_bytes, &zero, plan.w, a.wt),
              "cudnnConvolutionBackwardFilter");
        break;
    }
  }

  std::string algorithm(const ConvProblem& p) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(p.key());
    return it == plans_.end() ? "" : it->second.name;
  }

 private:
  struct Plan {
    cudnn::TensorDesc x = nullptr, y = nullptr;
    cudnn::FilterDesc w = nullptr;
    cudnn::ConvDesc conv = nullptr;
    int algo = 0;
    std::size_t ws_bytes = 0;
    std::string name;
  };

  void check(cudnn::Status s, const char* what) const {
    if (s != cudnn::kSuccess) throw Error(std::string(what) + " failed: " + api_.error_string(s));
  }

  const Plan& plan_for(const ConvProblem& p, const TtConvParams& a) {
    const std::string key = p.key();
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
    if (std::string why = unsupported(p); !why.empty()) throw Error(why);
    DeviceBuffer& search_ws = workspaces_.search();
    dev_.synchronize();  // as cudnn_graph.cpp: the search on the default stream writes the caller's output
    Plan& plan = plans_[key];  // owned by plans_ from here on, so the destructor frees its descriptors
    try {
      search(p, a, plan, search_ws);
    } catch (...) {
      destroy(plan);
      plans_.erase(key);  // a later call searches again rather than run a plan never found
      throw;
    }
    return plan;
  }

  void destroy(const Plan& plan) {
    if (plan.x) api_.destroy_tensor(plan.x);
    if (plan.y) api_.destroy_tensor(plan.y);
    if (plan.w) api_.destroy_filter(plan.w);
    if (plan.conv) api_.destroy_conv(plan.conv);
  }

  // Describes `p` to cuDNN and keeps the fastest algorithm its find reports on these buffers.
  void search(const ConvProblem& p, const TtConvParams& a, Plan& plan, DeviceBuffer& workspace) {
    const std::string key = p.key();
    check(api_.create_tensor(&plan.x), "cudnnCreateTensorDescriptor");
    check(api_.create_tensor(&plan.y), "cudnnCreateTensorDescriptor");
    check(api_.create_filter(&plan.w), "cudnnCreateFilterDescriptor");
    check(api_.create_conv(&plan.conv), "cudnnCreateConvolutionDescriptor");
    const int format = p.layout == ConvLayout::NCHW ? cudnn::kNchw : cudnn::kNhwc;
    const int type = cudnn_type(p.in_type);
    check(api_.set_tensor_4d(plan.x, format, type, int(p.n), int(p.c), int(p.h), int(p.w)), "cudnnSetTensor4dDescriptor");
    check(api_.set_tensor_4d(plan.y, format, type, int(p.n), int(p.k), int(p.p()), int(p.q())),
          "cudnnSetTensor4dDescriptor");
    // Filters: format NHWC means KRSC, NCHW means KCRS, as ours (conv_params.h).
    check(api_.set_filter_4d(plan.w, type, format, int(p.k), int(p.c / p.groups), int(p.r), int(p.s)),
          "cudnnSetFilter4dDescriptor");
    check(api_.set_conv_2d(plan.conv, int(p.pad_h), int(p.pad_w), int(p.stride_h), int(p.stride_w), int(p.dil_h),
                           int(p.dil_w), cudnn::kCrossCorrelation, cudnn::kFloat),
          "cudnnSetConvolution2dDescriptor");
    check(api_.set_group_count(plan.conv, int(p.groups)), "cudnnSetConvolutionGroupCount");
    // fp32 without TF32, as the SIMT templates it is compared with (and as cuBLAS's default math).
    check(api_.set_math_type(plan.conv, p.in_type == DataType::F32 ? cudnn::kFmaMath : cudnn::kTensorOpMath),
          "cudnnSetConvolutionMathType");
    cudnn::AlgoPerf perf[8] = {};
    int found = 0;
    switch (p.direction) {
      case ConvDirection::Forward:
        check(api_.find_fwd(handle_, plan.x, a.x, plan.w, a.wt, plan.conv, plan.y, a.y, cudnn::kFwdAlgoCount, &found,
                            perf, workspace.get(), workspace.size()),
              "cudnnFindConvolutionForwardAlgorithmEx");
        break;
      case ConvDirection::BackwardData:
        check(api_.find_bwd_data(handle_, plan.w, a.wt, plan.y, a.y, plan.conv, plan.x, a.x, cudnn::kBwdDataAlgoCount,
                                 &found, perf, workspace.get(), workspace.size()),
              "cudnnFindConvolutionBackwardDataAlgorithmEx");
        break;
      case ConvDirection::BackwardFilter:
        check(api_.find_bwd_filter(handle_, plan.x, a.x, plan.y, a.y, plan.conv, plan.w, a.wt,
                                   cudnn::kBwdFilterAlgoCount, &found, perf, workspace.get(), workspace.size()),
              "cudnnFindConvolutionBackwardFilterAlgorithmEx");
        break;
    }
    // Results come fastest first; failed algorithms carry their status.
    const cudnn::AlgoPerf* best = nullptr;
    for (int i = 0; i < found && !best; ++i)
      if (perf[i].status == cudnn::kSuccess && perf[i].memory <= workspace.size()) best = &perf[i];
    if (!best) throw Error(name_ + " found no algorithm for " + key);
    // The math type the algorithm was timed with must be the descriptor's when it runs.
    check(api_.set_math_type(plan.conv, best->math_type), "cudnnSetConvolutionMathType");
    plan.algo = best->algo;
    plan.ws_bytes = best->memory;
    plan.name = std::string(algo_name(p.direction, best->algo)) + (best->math_type == cudnn::kTensorOpMath ? "/tensor-op" : "") +
                " (find: " + std::to_string(best->time) + " ms)";
  }

  Device& dev_;
  const cudnn::Api& api_;
  cudnn::Handle handle_ = nullptr;
  std::string name_;
  mutable std::mutex mu_;  // one handle; its stream is set per call
  cudnn::Workspaces workspaces_{dev_};
  std::map<std::string, Plan> plans_;
};

}  // namespace

std::unique_ptr<VendorConv> make_cudnn_conv(Device& dev, std::string* why_not) {
  const cudnn::Api* api = cudnn::api(why_not);
  if (!api) return nullptr;
  return std::make_unique<CudnnConv>(dev, *api);
}

}  // namespace tiletune::gpu::cuda
