// The C++ half of tiletune.torch's route (built just in time by _route.py): aten's mm, addmm, bmm,
// baddbmm, convolution and convolution_backward overridden for the CPU and CUDA keys, so that a call
// handed back to PyTorch costs a hash lookup and PyTorch's own kernel, with no Python in between.
//
// Every decision stays in torch.py. A call whose tensor metadata this file has not seen goes to
// torch.py's handler through the op tiletune_route::<name> (a Python kernel), which answers with its
// output, or with a code: hand it back, and whether the decline depends on nothing but the metadata
// (then it is remembered here, and the next such call never reaches Python). A call torch.py served
// comes back with a plan: the C API call(s) it made, as numbers that depend on the metadata only
// (see the Plan layouts below). The next call with that metadata runs the plan here, through the C
// API's function pointers torch.py handed over at enable(), without entering Python.
// Declines that depend on a per-call setting (deterministic algorithms, graph capture, TF32 for
// cuDNN) are never remembered, and a plan runs only when those settings would not decline the call:
// otherwise the call goes to Python, which reads them. A plan whose C API call fails is forgotten and
// the call goes to Python, which serves it or hands it back (and counts and warns) as it always did.
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
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
#ifdef TILETUNE_ROUTE_CUDA_PLANS
#include <c10/cuda/CUDAStream.h>  // the CUDA toolkit's headers: _route.py builds without plans for CUDA if absent
#endif

#include <pthread.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
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

enum Op : int64_t { kMm, kAddmm, kBmm, kBaddbmm, kConvolution, kConvolutionBackward, kOps };

// A served call's C API call(s), as torch.py answered them (values by index):
//   common:  [0] kind, [1] tiletune_handle_t, [2] poison (fill outputs with NaN first: the tests)
//   GEMM:    [3] op_a [4] op_b [5] m [6] n [7] k [8] ab/c type [9] lda [10] stride_a [11] ldb [12] stride_b
//            [13] ldc [14] stride_c [15] batch [16] compute [17] the bias is read (beta != 0)
//            A is mat2 and B is self/mat1 (row-major out = column-major out^T); out is row-major.
//   conv:    [3..16] tiletune_conv_desc_t's int64 fields, [17] layout [18] in_type [19] out_type,
//            [20] channels_last outputs [21] p [22] q (y's height and width); forward: [23] a bias is
//            added; backward: [23] dx ours [24] dw ours [25] dx PyTorch's [26] dw PyTorch's
//            [27] the reason PyTorch's gradient was declined for (-1: none) [28] the bias's gradient
enum PlanKind : int64_t { kGemmPlan, kConvForwardPlan, kConvBackwardPlan };

// torch.py's plan for an op has the kind and length the op's code here reads.
bool plan_fits(Op op, const std::vector<int64_t>& v) {
  switch (op) {
    case kConvolution:
      return v.size() == 24 && v[0] == kConvForwardPlan;
    case kConvolutionBackward:
      return v.size() == 29 && v[0] == kConvBackwardPlan;
    default:
      return v.size() == 18 && v[0] == kGemmPlan;
  }
}
struct Plan {
  std::vector<int64_t> v;
  uint64_t generation;  // the enable() it belongs to: its handle is alive while that lasts
};

// The C API's entry points (runtime/tiletune.h), as torch.py found them in the library it loaded.
struct ConvDesc {
  int64_t n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
  int layout, in_type, out_type;
};
using GemmFn = int (*)(void*, int, int, int64_t, int64_t, int64_t, float, const void*, int, int64_t, int64_t,
                       const void*, int64_t, int64_t, float, void*, int, int64_t, int64_t, int64_t, int, void*);
using ConvFn = int (*)(void*, const ConvDesc*, const void*, const void*, void*, void*);
using CaptureFn = int (*)(void*, int*);  // cudaStreamIsCapturing
struct CApi {
  GemmFn gemm = nullptr;
  ConvFn conv[3] = {nullptr, nullptr, nullptr};  // forward, backward data, backward filter
  CaptureFn capturing = nullptr;
};

// What this file remembers by a call's metadata: a decline (the reason torch.py gave: its index into
// torch.py's list of reasons) or a plan; and how many calls it settled by itself.
class Table {
 public:
  struct Entry {
    int64_t reason;                     // >= 0 with no plan
    std::shared_ptr<const Plan> plan;  // a served call
  };

  // The entry for this key, if any (a decline is counted here).
  std::optional<Entry> find(const Key& key) {
    if (!key.valid()) return std::nullopt;
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = map_.find(key.values());
    if (it == map_.end()) return std::nullopt;
    if (!it->second.plan) count_decline(it->second.reason);
    return it->second;
  }
  void decline(Key&& key, int64_t reason) { put(std::move(key), Entry{reason, nullptr}); }
  void serve(Key&& key, std::vector<int64_t>&& plan) {
    auto p = std::make_shared<Plan>();
    p->v = std::move(plan);
    p->generation = generation_.load();
    put(std::move(key), Entry{-1, std::move(p)});
  }
  void forget(const Key& key, const Plan* plan) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    auto it = map_.find(key.values());
    if (it != map_.end() && it->second.plan.get() == plan) map_.erase(it);
  }

  // Runs `call` (the plan's C API calls) unless the plan's enable() is over, in which case its
  // handle may be closed: then false, and the caller serves the call otherwise.
  template <class F>
  bool while_alive(const Plan& plan, F&& call) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (plan.generation != generation_.load() || !api_.gemm) return false;
    call(api_);
    return true;
  }

  void count_decline(int64_t reason) {
    std::lock_guard<std::mutex> lock(counts_mu_);
    if (hits_.size() <= static_cast<size_t>(reason)) hits_.resize(reason + 1);
    ++hits_[reason];
  }
  void count_served(Op op, bool ok) {
    std::lock_guard<std::mutex> lock(counts_mu_);
    ++(ok ? served_ : failed_)[op];
  }
  // (reason, calls) pairs, flattened, for the reasons with calls.
  std::vector<int64_t> counts() {
    std::lock_guard<std::mutex> lock(counts_mu_);
    std::vector<int64_t> out;
    for (size_t i = 0; i < hits_.size(); ++i)
      if (hits_[i]) out.insert(out.end(), {static_cast<int64_t>(i), hits_[i]});
    return out;
  }
  // Calls served from a plan by op, then the plans whose C API call failed, by op.
  std::vector<int64_t> served() {
    std::lock_guard<std::mutex> lock(counts_mu_);
    std::vector<int64_t> out(served_, served_ + kOps);
    out.insert(out.end(), failed_, failed_ + kOps);
    return out;
  }
  bool alive(const Plan& plan) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return plan.generation == generation_.load() && api_.gemm;
  }
  CaptureFn capture_check() {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return api_.capturing;
  }

  // A new enable(): nothing remembered, the new C API entry points. With the unique lock, no plan of
  // the previous enable() is running once this returns (its runtimes may be closed after).
  void reset(const CApi& api) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    map_.clear();
    api_ = api;
    ++generation_;
    std::lock_guard<std::mutex> counts_lock(counts_mu_);
    hits_.clear();
    std::fill(served_, served_ + kOps, 0);
    std::fill(failed_, failed_ + kOps, 0);
  }
  // disable(): every plan is dead from here (counts stay readable).
  void retire() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    map_.clear();
    api_ = CApi{};
    ++generation_;
  }

 private:
  void put(Key&& key, Entry&& e) {
    if (!key.valid()) return;
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (map_.size() >= kMaxEntries) map_.clear();  // as torch.py bounds its own caches
    map_.insert_or_assign(key.take(), std::move(e));
  }
  static constexpr size_t kMaxEntries = 100000;
  std::shared_mutex mu_;
  std::unordered_map<std::vector<int64_t>, Entry, KeyHash> map_;
  CApi api_;
  std::atomic<uint64_t> generation_{0};
  std::mutex counts_mu_;
  std::vector<int64_t> hits_;
  int64_t served_[kOps] = {}, failed_[kOps] = {};
};

Table table;
thread_local bool paused = false;     // tiletune.torch.paused() on this thread
std::atomic<bool> forked{false};      // a forked child (a DataLoader worker): the parent's runtimes are not its own

bool off() { return paused || forked.load(std::memory_order_relaxed); }

// The stream tiletune writes on: the tensor's device's current one (none on the host backend).
void* stream_of(const at::Tensor& t) {
#ifdef TILETUNE_ROUTE_CUDA_PLANS
  if (t.is_cuda()) return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
#endif
  (void)t;
  return nullptr;
}

// Whether a plan may run for this call: torch.py's per-call settings (_settings) would not decline
// it. Anything this cannot tell goes to torch.py, which can.
bool plan_allowed(Op op, const at::Tensor& first) {
  auto& ctx = at::globalContext();
  if (ctx.deterministicAlgorithms()) return false;
  if (first.is_cpu()) return true;
#ifdef TILETUNE_ROUTE_CUDA_PLANS
  if (!first.is_cuda()) return false;
  auto capturing = table.capture_check();
  int status = 0;
  if (!capturing || capturing(stream_of(first), &status) != 0 || status != 0) return false;
  bool conv = op == kConvolution || op == kConvolutionBackward;
  return !(conv && first.scalar_type() == at::kFloat && ctx.allowTF32CuDNN());
#else
  (void)op;
  return false;
#endif
}

at::Tensor empty_out(const Plan& plan, at::IntArrayRef shape, const at::Tensor& like, bool channels_last) {
  auto t = at::empty(shape, like.options().memory_format(channels_last ? at::MemoryFormat::ChannelsLast
                                                                       : at::MemoryFormat::Contiguous));
  if (plan.v[2]) t.fill_(std::numeric_limits<double>::quiet_NaN());
  return t;
}

template <class Result, class Answer>
Result outputs_of(const Answer& a) {
  if constexpr (std::tuple_size_v<Answer> == 3) {
    return std::get<0>(a);
  } else {
    return {std::get<0>(a), std::get<1>(a), std::get<2>(a)};
  }
}

// A call through its plan, else through torch.py unless its key was declined for good; PyTorch's
// own kernel (`theirs`) for what is handed back. `ours(plan)`: the plan run, or nothing when a C API
// call failed or the plan is dead.
template <class Result, class Answer, class Theirs, class Ours, class... Args>
Result route(DispatchKey dk, Op op, const char* name, Key&& key, const at::Tensor& first, const Theirs& theirs,
             const Ours& ours, const Args&... args) {
  if (off()) return theirs();
  if (auto e = table.find(key)) {
    if (!e->plan) return theirs();
    if (plan_allowed(op, first)) {
      c10::OptionalDeviceGuard guard;
      if (first.is_cuda()) guard.reset_device(first.device());
      std::optional<Result> out = ours(*e->plan);
      if (!out && !table.alive(*e->plan)) return theirs();  // disable() came in between: routing is over
      table.count_served(op, out.has_value());
      if (out) return std::move(*out);
      table.forget(key, e->plan.get());  // torch.py decides again, and serves or hands back this call
    }
  }
  static const auto handler = c10::Dispatcher::singleton()
                                  .findSchemaOrThrow((std::string("tiletune_route::") + name).c_str(), "")
                                  .typed<Answer(const Args&...)>();
  Answer answer = handler.redispatch(c10::DispatchKeySet(dk), args...);
  constexpr size_t n = std::tuple_size_v<Answer>;
  int64_t code = std::get<n - 2>(answer);
  if (code == kRouted) {
    auto& plan = std::get<n - 1>(answer);
    if (!plan.empty()) {
      TORCH_CHECK(plan_fits(op, plan), "tiletune_route: torch.py's plan for ", name, " does not fit _route.cpp");
      table.serve(std::move(key), std::move(plan));
    }
    return outputs_of<Result>(answer);
  }
  if (code >= 0) table.decline(std::move(key), code);
  return theirs();
}

using GemmAnswer = std::tuple<at::Tensor, int64_t, std::vector<int64_t>>;

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

void* handle_of(const Plan& plan) { return reinterpret_cast<void*>(static_cast<intptr_t>(plan.v[1])); }

// out = alpha * a @ b (+ beta * bias), as torch.py's _gemm calls the C API.
std::optional<at::Tensor> gemm_plan(const Plan& plan, const at::Tensor& a, const at::Tensor& b,
                                    const at::Tensor* bias, const at::Scalar& beta, const at::Scalar& alpha,
                                    bool batched) {
  const auto& v = plan.v;
  auto shape = batched ? std::vector<int64_t>{a.size(0), a.size(1), b.size(2)}
                       : std::vector<int64_t>{a.size(0), b.size(1)};
  at::Tensor out;
  float beta_f = 0.0f;
  if (v[17]) {
    out = at::empty(shape, a.options());
    out.copy_(bias->expand(shape));
    beta_f = beta.toFloat();
  } else {
    out = empty_out(plan, shape, a, false);
  }
  void* stream = stream_of(a);
  int status = -1;
  bool alive = table.while_alive(plan, [&](const CApi& api) {
    status = api.gemm(handle_of(plan), v[3], v[4], v[5], v[6], v[7], alpha.toFloat(), b.data_ptr(), v[8], v[9],
                      v[10], a.data_ptr(), v[11], v[12], beta_f, out.data_ptr(), v[8], v[13], v[14], v[15], v[16],
                      stream);
  });
  if (!alive || status != 0) return std::nullopt;
  return out;
}

template <DispatchKey K>
at::Tensor mm(const at::Tensor& a, const at::Tensor& b) {
  return route<at::Tensor, GemmAnswer>(
      K, kMm, "mm", std::move(Key(kMm).add(a).add(b).add(tf32())), a, [&] { return Theirs<K>::mm(a, b); },
      [&](const Plan& p) { return gemm_plan(p, a, b, nullptr, 0, 1, false); }, a, b);
}

template <DispatchKey K>
at::Tensor bmm(const at::Tensor& a, const at::Tensor& b) {
  return route<at::Tensor, GemmAnswer>(
      K, kBmm, "bmm", std::move(Key(kBmm).add(a).add(b).add(tf32())), a, [&] { return Theirs<K>::bmm(a, b); },
      [&](const Plan& p) { return gemm_plan(p, a, b, nullptr, 0, 1, true); }, a, b);
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
  return route<at::Tensor, GemmAnswer>(
      K, kAddmm, "addmm", biased_key(kAddmm, c, a, b, beta), a,
      [&] { return Theirs<K>::addmm(c, a, b, beta, alpha); },
      [&](const Plan& p) { return gemm_plan(p, a, b, &c, beta, alpha, false); }, c, a, b, beta, alpha);
}

template <DispatchKey K>
at::Tensor baddbmm(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta,
                   const at::Scalar& alpha) {
  return route<at::Tensor, GemmAnswer>(
      K, kBaddbmm, "baddbmm", biased_key(kBaddbmm, c, a, b, beta), a,
      [&] { return Theirs<K>::baddbmm(c, a, b, beta, alpha); },
      [&](const Plan& p) { return gemm_plan(p, a, b, &c, beta, alpha, true); }, c, a, b, beta, alpha);
}

ConvDesc desc_of(const Plan& plan) {
  const auto& v = plan.v;
  return ConvDesc{v[3],  v[4],  v[5],  v[6],  v[7],  v[8],  v[9],  v[10], v[11], v[12], v[13], v[14], v[15], v[16],
                  static_cast<int>(v[17]), static_cast<int>(v[18]), static_cast<int>(v[19])};
}

// The convolution's own kernel is its CompositeExplicitAutograd one for both keys: it picks cuDNN,
// MIOpen or the CPU implementation as PyTorch would.
template <DispatchKey K>
at::Tensor convolution(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                       SymInts stride, SymInts padding, SymInts dilation, bool transposed, SymInts output_padding,
                       c10::SymInt groups) {
  Key key(kConvolution);
  key.add(x).add(w).add(bias).add(stride).add(padding).add(dilation).add(transposed).add(output_padding).add(groups);
  auto ours = [&](const Plan& plan) -> std::optional<at::Tensor> {
    const auto& v = plan.v;
    ConvDesc d = desc_of(plan);
    at::Tensor y = empty_out(plan, {d.n, d.k, v[21], v[22]}, x, v[20]);
    void* stream = stream_of(x);
    int status = -1;
    bool alive = table.while_alive(
        plan, [&](const CApi& api) { status = api.conv[0](handle_of(plan), &d, x.data_ptr(), w.data_ptr(), y.data_ptr(), stream); });
    if (!alive || status != 0) return std::nullopt;
    if (v[23]) y.add_(bias->view({1, -1, 1, 1}));
    return y;
  };
  return route<at::Tensor, GemmAnswer>(
      K, kConvolution, "convolution", std::move(key), x,
      [&] {
        return at::compositeexplicitautograd::convolution_symint(x, w, bias, stride, padding, dilation, transposed,
                                                                 output_padding, groups);
      },
      ours, x, w, bias, stride, padding, dilation, transposed, output_padding, groups);
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
  using Result = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
  using Answer = std::tuple<at::Tensor, at::Tensor, at::Tensor, int64_t, std::vector<int64_t>>;
  auto theirs = [&](std::array<bool, 3> m) {
    return Theirs<K>::convolution_backward(dy, x, w, bias_sizes, stride, padding, dilation, transposed,
                                           output_padding, groups, m);
  };
  // As torch.py's _convolution_backward: each gradient from tiletune or PyTorch, the bias's a sum.
  auto ours = [&](const Plan& plan) -> std::optional<Result> {
    const auto& v = plan.v;
    at::Tensor dx, dw, db;
    if (v[25] || v[26]) std::tie(dx, dw, std::ignore) = theirs({v[25] != 0, v[26] != 0, false});
    if (v[23]) dx = empty_out(plan, x.sizes(), x, v[20]);
    if (v[24]) dw = empty_out(plan, w.sizes(), w, v[20]);
    ConvDesc d = desc_of(plan);
    void* stream = stream_of(x);
    int status = 0;
    bool alive = table.while_alive(plan, [&](const CApi& api) {
      if (v[23]) status = api.conv[1](handle_of(plan), &d, dy.data_ptr(), w.data_ptr(), dx.data_ptr(), stream);
      if (v[24] && status == 0)
        status = api.conv[2](handle_of(plan), &d, x.data_ptr(), dy.data_ptr(), dw.data_ptr(), stream);
    });
    if (!alive || status != 0) return std::nullopt;
    if (v[27] >= 0) table.count_decline(v[27]);
    if (v[28]) db = dy.sum({0, 2, 3});
    return Result{dx, dw, db};
  };
  return route<Result, Answer>(K, kConvolutionBackward, "convolution_backward", std::move(key), x,
                               [&] { return theirs(mask); }, ours, dy, x, w, bias_sizes, stride, padding, dilation,
                               transposed, output_padding, groups, mask);
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

// `api`: the C API's entry points (gemm, conv forward, backward data, backward filter) and
// cudaStreamIsCapturing, as addresses; 0 where there is none (then no plan runs where it is needed).
void enable_overrides(const c10::List<std::string>& keys, const std::vector<int64_t>& api) {
  std::lock_guard<std::mutex> lock(overrides_mu);
  TORCH_CHECK(overrides.empty(), "tiletune_route: already enabled");
  TORCH_CHECK(api.size() == 5, "tiletune_route: enable() takes 5 entry points");
  auto fn = [&](size_t i) { return reinterpret_cast<void*>(static_cast<intptr_t>(api[i])); };
  CApi c;
  c.gemm = reinterpret_cast<GemmFn>(fn(0));
  for (int d = 0; d < 3; ++d) c.conv[d] = reinterpret_cast<ConvFn>(fn(1 + d));
  c.capturing = reinterpret_cast<CaptureFn>(fn(4));
  if (!c.conv[0] || !c.conv[1] || !c.conv[2]) c.gemm = nullptr;  // all or none: while_alive checks gemm
  table.reset(c);
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
  table.retire();  // after this, no plan runs on the runtimes torch.py closes next
}

bool pause_this_thread(bool on) {
  bool was = paused;
  paused = on;
  return was;
}

std::vector<int64_t> declined_counts() { return table.counts(); }
std::vector<int64_t> served_counts() { return table.served(); }

bool cuda_plans() {
#ifdef TILETUNE_ROUTE_CUDA_PLANS
  return true;
#else
  return false;
#endif
}

}  // namespace

TORCH_LIBRARY(tiletune_route, m) {
  pthread_atfork(nullptr, nullptr, [] { forked = true; });
  m.def("enable(str[] keys, int[] api) -> ()", &enable_overrides);
  m.def("disable() -> ()", &disable_overrides);
  m.def("pause(bool on) -> bool", &pause_this_thread);
  m.def("counts() -> int[]", &declined_counts);
  m.def("served() -> int[]", &served_counts);
  m.def("cuda_plans() -> bool", &cuda_plans);
  // torch.py's handlers: aten's schemas, answering (outputs..., code, plan).
  m.def("mm(Tensor self, Tensor mat2) -> (Tensor, int, int[])");
  m.def("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> (Tensor, int, int[])");
  m.def("bmm(Tensor self, Tensor mat2) -> (Tensor, int, int[])");
  m.def("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> (Tensor, int, int[])");
  m.def("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
        "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> (Tensor, int, int[])");
  m.def("convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, "
        "SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, "
        "SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor, int, int[])");
}
