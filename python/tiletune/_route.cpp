// The C++ half of tiletune.torch's route (built just in time by _route.py): aten's mm, addmm, bmm,
// baddbmm, convolution and convolution_backward overridden for the CPU and CUDA keys, so that a call
// handed back to PyTorch costs a hash lookup and PyTorch's own kernel, with no Python in between.
//
// Every decision stays in torch.py. A call whose tensor metadata this file has not seen declined
// goes to torch.py's handler through the op tiletune_route::<name> (a Python kernel), which answers
// with its output, or with a code: hand it back, and whether the decline depends on nothing but
// the metadata (then it is remembered here, and the next such call never reaches Python). Declines
// that depend on a per-call setting (deterministic algorithms, graph capture, TF32 for cuDNN) are
// never remembered; routed calls always go to Python, which reads those settings each time.
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/baddbmm_cpu_dispatch.h>
#include <ATen/ops/bmm_cpu_dispatch.h>
#include <ATen/ops/convolution_backward_compositeexplicitautograd_dispatch.h>
#include <ATen/ops/convolution_compositeexplicitautograd_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <torch/library.h>
#ifdef TILETUNE_ROUTE_CUDA
#include <ATen/ops/addmm_cuda_dispatch.h>
#include <ATen/ops/baddbmm_cuda_dispatch.h>
#include <ATen/ops/bmm_cuda_dispatch.h>
#include <ATen/ops/convolution_backward_cuda_dispatch.h>
#include <ATen/ops/mm_cuda_dispatch.h>
#endif

#include <pthread.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

using c10::DispatchKey;
using SymInts = c10::SymIntArrayRef;

// The codes torch.py's handler answers with besides a reason's index (>= 0: a decline to remember).
constexpr int64_t kRouted = -1;
constexpr int64_t kDeclinedThisCall = -2;

// A call's metadata, flattened: what torch.py's decisions read (sizes, strides, dtypes, devices,
// the ops' flags and, for GEMMs, whether TF32 is allowed). Empty when it cannot be told (symbolic
// sizes): such a call is never remembered.
class Key {
 public:
  explicit Key(int64_t op) { v_.reserve(40); v_.push_back(op); }
  Key& add(const at::Tensor& t) {
    if (!t.defined()) return add(-1);
    if (t.unsafeGetTensorImpl()->has_symbolic_sizes_strides()) return invalid();
    add(static_cast<int64_t>(t.scalar_type())).add(static_cast<int64_t>(t.device().type())).add(t.device().index());
    add(t.dim());
    for (auto s : t.sizes()) add(s);
    for (auto s : t.strides()) add(s);
    return *this;
  }
  Key& add(const std::optional<at::Tensor>& t) { return t ? add(*t) : add(-2); }
  Key& add(SymInts v) {
    add(static_cast<int64_t>(v.size()));
    for (const auto& s : v) add(s);
    return *this;
  }
  Key& add(const c10::SymInt& s) {
    auto i = s.maybe_as_int();
    return i ? add(*i) : invalid();
  }
  Key& add(int64_t i) {
    if (!v_.empty()) v_.push_back(i);
    return *this;
  }
  bool valid() const { return !v_.empty(); }
  const std::vector<int64_t>& values() const { return v_; }
  std::vector<int64_t>&& take() { return std::move(v_); }

 private:
  Key& invalid() {
    v_.clear();
    return *this;
  }
  std::vector<int64_t> v_;
};

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& v) const noexcept {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t x : v) h = (h ^ static_cast<uint64_t>(x)) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};

// The metadata of calls handed back for good, each with the reason torch.py gave (its index into
// torch.py's list of reasons), and how many calls were handed back for each reason from here.
class Declines {
 public:
  // True (and counted) when a call with this key goes to PyTorch without asking torch.py.
  bool known(const Key& key) {
    if (!key.valid()) return false;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key.values());
    if (it == map_.end()) return false;
    ++hits_[it->second];
    return true;
  }
  void remember(Key&& key, int64_t reason) {
    if (!key.valid()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= kMaxEntries) map_.clear();  // as torch.py bounds its own caches
    map_.emplace(key.take(), reason);
    if (hits_.size() <= static_cast<size_t>(reason)) hits_.resize(reason + 1);
  }
  // (reason, calls) pairs, flattened, for the reasons with calls.
  std::vector<int64_t> counts() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int64_t> out;
    for (size_t i = 0; i < hits_.size(); ++i)
      if (hits_[i]) out.insert(out.end(), {static_cast<int64_t>(i), hits_[i]});
    return out;
  }
  void reset() {
    std::lock_guard<std::mutex> lock(mu_);
    map_.clear();
    hits_.clear();
  }

 private:
  static constexpr size_t kMaxEntries = 100000;
  std::mutex mu_;
  std::unordered_map<std::vector<int64_t>, int64_t, KeyHash> map_;
  std::vector<int64_t> hits_;
};

Declines declines;
thread_local bool paused = false;     // tiletune.torch.paused() on this thread
std::atomic<bool> forked{false};      // a forked child (a DataLoader worker): the parent's runtimes are not its own

bool off() { return paused || forked.load(std::memory_order_relaxed); }

template <class Result>
Result without_code(const std::tuple<at::Tensor, int64_t>& r) {
  return std::get<0>(r);
}
template <class Result>
Result without_code(const std::tuple<at::Tensor, at::Tensor, at::Tensor, int64_t>& r) {
  return {std::get<0>(r), std::get<1>(r), std::get<2>(r)};
}

// A call through torch.py unless its key was declined for good; PyTorch's own kernel (`theirs`)
// for what is handed back.
template <class Result, class Answer, class Theirs, class... Args>
Result route(DispatchKey dk, const char* name, Key&& key, const Theirs& theirs, const Args&... args) {
  if (off() || declines.known(key)) return theirs();
  static const auto handler = c10::Dispatcher::singleton()
                                  .findSchemaOrThrow((std::string("tiletune_route::") + name).c_str(), "")
                                  .typed<Answer(const Args&...)>();
  Answer answer = handler.redispatch(c10::DispatchKeySet(dk), args...);
  int64_t code = std::get<std::tuple_size_v<Answer> - 1>(answer);
  if (code == kRouted) return without_code<Result>(answer);
  if (code >= 0) declines.remember(std::move(key), code);
  return theirs();
}

enum Op : int64_t { kMm, kAddmm, kBmm, kBaddbmm, kConvolution, kConvolutionBackward };

using GemmAnswer = std::tuple<at::Tensor, int64_t>;

bool tf32() { return at::globalContext().allowTF32CuBLAS(); }

// PyTorch's own kernel for the key K: what its dispatcher would have called.
template <DispatchKey K>
struct Theirs;

template <>
struct Theirs<DispatchKey::CPU> {
  static at::Tensor mm(const at::Tensor& a, const at::Tensor& b) { return at::cpu::mm(a, b); }
  static at::Tensor bmm(const at::Tensor& a, const at::Tensor& b) { return at::cpu::bmm(a, b); }
  static at::Tensor addmm(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta,
                          const at::Scalar& alpha) {
    return at::cpu::addmm(c, a, b, beta, alpha);
  }
  static at::Tensor baddbmm(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta,
                            const at::Scalar& alpha) {
    return at::cpu::baddbmm(c, a, b, beta, alpha);
  }
  template <class... Args>
  static std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(const Args&... args) {
    return at::compositeexplicitautograd::convolution_backward_symint(args...);
  }
};

#ifdef TILETUNE_ROUTE_CUDA
template <>
struct Theirs<DispatchKey::CUDA> {
  static at::Tensor mm(const at::Tensor& a, const at::Tensor& b) { return at::cuda::mm(a, b); }
  static at::Tensor bmm(const at::Tensor& a, const at::Tensor& b) { return at::cuda::bmm(a, b); }
  static at::Tensor addmm(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta,
                          const at::Scalar& alpha) {
    return at::cuda::addmm(c, a, b, beta, alpha);
  }
  static at::Tensor baddbmm(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta,
                            const at::Scalar& alpha) {
    return at::cuda::baddbmm(c, a, b, beta, alpha);
  }
  template <class... Args>
  static std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(const Args&... args) {
    return at::cuda::convolution_backward_symint(args...);
  }
};
#endif

template <DispatchKey K>
at::Tensor mm(const at::Tensor& a, const at::Tensor& b) {
  return route<at::Tensor, GemmAnswer>(K, "mm", std::move(Key(kMm).add(a).add(b).add(tf32())),
                                       [&] { return Theirs<K>::mm(a, b); }, a, b);
}

template <DispatchKey K>
at::Tensor bmm(const at::Tensor& a, const at::Tensor& b) {
  return route<at::Tensor, GemmAnswer>(K, "bmm", std::move(Key(kBmm).add(a).add(b).add(tf32())),
                                       [&] { return Theirs<K>::bmm(a, b); }, a, b);
}

// With beta 0 the bias is not read: torch.py decides without it.
Key biased_key(int64_t op, const at::Tensor& c, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta) {
  Key key(op);
  key.add(a).add(b).add(tf32());
  bool fused = !beta.equal(0);
  key.add(fused);
  if (fused) key.add(c);
  return key;
}

template <DispatchKey K>
at::Tensor addmm(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  return route<at::Tensor, GemmAnswer>(K, "addmm", biased_key(kAddmm, c, a, b, beta),
                                       [&] { return Theirs<K>::addmm(c, a, b, beta, alpha); }, c, a, b, beta, alpha);
}

template <DispatchKey K>
at::Tensor baddbmm(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta,
                   const at::Scalar& alpha) {
  return route<at::Tensor, GemmAnswer>(K, "baddbmm", biased_key(kBaddbmm, c, a, b, beta),
                                       [&] { return Theirs<K>::baddbmm(c, a, b, beta, alpha); }, c, a, b, beta,
                                       alpha);
}

// The convolution's own kernel is its CompositeExplicitAutograd one for both keys: it picks cuDNN,
// MIOpen or the CPU implementation as PyTorch would.
template <DispatchKey K>
at::Tensor convolution(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                       SymInts stride, SymInts padding, SymInts dilation, bool transposed, SymInts output_padding,
                       c10::SymInt groups) {
  Key key(kConvolution);
  key.add(x).add(w).add(bias).add(stride).add(padding).add(dilation).add(transposed).add(output_padding).add(groups);
  return route<at::Tensor, GemmAnswer>(
      K, "convolution", std::move(key),
      [&] {
        return at::compositeexplicitautograd::convolution_symint(x, w, bias, stride, padding, dilation, transposed,
                                                                 output_padding, groups);
      },
      x, w, bias, stride, padding, dilation, transposed, output_padding, groups);
}

template <DispatchKey K>
std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w, at::OptionalSymIntArrayRef bias_sizes,
    SymInts stride, SymInts padding, SymInts dilation, bool transposed, SymInts output_padding, c10::SymInt groups,
    std::array<bool, 3> mask) {
  Key key(kConvolutionBackward);
  key.add(dy).add(x).add(w).add(stride).add(padding).add(dilation).add(transposed).add(output_padding).add(groups);
  key.add(mask[0]).add(mask[1]).add(mask[2]).add(bias_sizes.has_value());
  if (bias_sizes) key.add(*bias_sizes);
  using Answer = std::tuple<at::Tensor, at::Tensor, at::Tensor, int64_t>;
  return route<std::tuple<at::Tensor, at::Tensor, at::Tensor>, Answer>(
      K, "convolution_backward", std::move(key),
      [&] {
        return Theirs<K>::convolution_backward(dy, x, w, bias_sizes, stride, padding, dilation, transposed,
                                               output_padding, groups, mask);
      },
      dy, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, mask);
}

template <DispatchKey K>
std::unique_ptr<torch::Library> override_aten() {
  auto lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", K, __FILE__, __LINE__);
  lib->impl("mm", TORCH_FN(mm<K>));
  lib->impl("addmm", TORCH_FN(addmm<K>));
  lib->impl("bmm", TORCH_FN(bmm<K>));
  lib->impl("baddbmm", TORCH_FN(baddbmm<K>));
  lib->impl("convolution", TORCH_FN(convolution<K>));
  lib->impl("convolution_backward", TORCH_FN(convolution_backward<K>));
  return lib;
}

std::mutex overrides_mu;
std::vector<std::unique_ptr<torch::Library>> overrides;  // destroyed: aten's own kernels are back

void enable_overrides(const c10::List<std::string>& keys) {
  std::lock_guard<std::mutex> lock(overrides_mu);
  TORCH_CHECK(overrides.empty(), "tiletune_route: already enabled");
  declines.reset();
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string k = keys.get(i);
    if (k == "CPU") {
      overrides.push_back(override_aten<DispatchKey::CPU>());
    } else if (k == "CUDA") {
#ifdef TILETUNE_ROUTE_CUDA
      overrides.push_back(override_aten<DispatchKey::CUDA>());
#else
      TORCH_CHECK(false, "tiletune_route was built without CUDA");
#endif
    } else {
      TORCH_CHECK(false, "tiletune_route: no dispatch key ", k);
    }
  }
}

// The counts of the last enable() stay readable until the next one.
void disable_overrides() {
  std::lock_guard<std::mutex> lock(overrides_mu);
  overrides.clear();
}

bool pause_this_thread(bool on) {
  bool was = paused;
  paused = on;
  return was;
}

std::vector<int64_t> declined_counts() { return declines.counts(); }

}  // namespace

TORCH_LIBRARY(tiletune_route, m) {
  pthread_atfork(nullptr, nullptr, [] { forked = true; });
  m.def("enable(str[] keys) -> ()", &enable_overrides);
  m.def("disable() -> ()", &disable_overrides);
  m.def("pause(bool on) -> bool", &pause_this_thread);
  m.def("counts() -> int[]", &declined_counts);
  // torch.py's handlers: aten's schemas, answering (outputs..., code).
  m.def("mm(Tensor self, Tensor mat2) -> (Tensor, int)");
  m.def("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> (Tensor, int)");
  m.def("bmm(Tensor self, Tensor mat2) -> (Tensor, int)");
  m.def("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> (Tensor, int)");
  m.def("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
        "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> (Tensor, int)");
  m.def("convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, "
        "SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, "
        "SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor, int)");
}
