// The C API: every entry point catches everything, so that no exception or abort reaches the
// trainer; the reason is kept per thread for tiletune_last_error().
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "common/error.h"
#include "runtime/runtime.h"
#include "tiletune.h"

#define TT_STR2(x) #x
#define TT_STR(x) TT_STR2(x)
static_assert(std::string_view(TILETUNE_VERSION_STRING) ==
                  TT_STR(TILETUNE_VERSION_MAJOR) "." TT_STR(TILETUNE_VERSION_MINOR) "." TT_STR(TILETUNE_VERSION_PATCH),
              "runtime/tiletune.h's TILETUNE_VERSION_* must be the project's VERSION in CMakeLists.txt");

struct tiletune_handle {
  std::unique_ptr<tiletune::runtime::Runtime> rt;
  // What tiletune_malloc handed out: tiletune_free takes nothing else (a foreign pointer is an
  // error, not a crash in the allocator).
  std::mutex allocations_mu;
  std::unordered_set<void*> allocations;
};

namespace {

thread_local std::string last_error;

template <class F>
tiletune_status_t guarded(tiletune_status_t on_error, F&& f) {
  try {
    last_error.clear();
    f();
    return TILETUNE_SUCCESS;
  } catch (const tiletune::Error& e) {
    last_error = e.what();
    return on_error;
  } catch (const std::exception& e) {
    last_error = std::string("internal error: ") + e.what();
    return TILETUNE_ERROR_INTERNAL;
  } catch (...) {
    last_error = "internal error: unknown exception";
    return TILETUNE_ERROR_INTERNAL;
  }
}

// An enum argument as the int the caller passed: a C caller may pass any value, and loading one
// outside the enum's range as the enum type is undefined behaviour; its bytes are read instead.
template <class E>
int raw(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// Below, every enum argument travels as raw()'s int: passing the enum on by value loads it too.
tiletune::DataType dtype(int t) {
  switch (t) {
    case TILETUNE_R_32F: return tiletune::DataType::F32;
    case TILETUNE_R_16F: return tiletune::DataType::F16;
    case TILETUNE_R_16BF: return tiletune::DataType::BF16;
    case TILETUNE_R_8F_E4M3: return tiletune::DataType::E4M3;
    case TILETUNE_R_8F_E5M2: return tiletune::DataType::E5M2;
    case TILETUNE_R_8I: return tiletune::DataType::S8;
    case TILETUNE_R_32I: return tiletune::DataType::S32;
  }
  throw tiletune::Error("unknown data type " + std::to_string(t));
}

bool op(int o) {
  if (o != TILETUNE_OP_N && o != TILETUNE_OP_T) throw tiletune::Error("unknown operation " + std::to_string(o));
  return o == TILETUNE_OP_T;
}

void need_pointers(std::initializer_list<const void*> ptrs, const char* names) {
  for (const void* p : ptrs)
    if (!p) throw tiletune::Error(std::string("null pointer among ") + names);
}

// b_type: the entry points without a B type of its own pass A's.
tiletune::GemmProblem make_problem(int op_a, int op_b, int64_t m, int64_t n, int64_t k, int a_type, int b_type,
                                   int64_t lda, int64_t stride_a, int64_t ldb, int64_t stride_b, int c_type,
                                   int64_t ldc, int64_t stride_c, int64_t batch, bool beta_zero, int compute) {
  tiletune::GemmProblem p;
  p.a_type = dtype(a_type);
  if (b_type != a_type) p.b_type = dtype(b_type);
  p.c_type = dtype(c_type);
  p.trans_a = op(op_a);
  p.trans_b = op(op_b);
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.lda = lda;
  p.ldb = ldb;
  p.ldc = ldc;
  p.stride_a = stride_a;
  p.stride_b = stride_b;
  p.stride_c = stride_c;
  p.beta_zero = beta_zero;
  if (compute != TILETUNE_COMPUTE_32F && compute != TILETUNE_COMPUTE_32F_FAST_TF32)
    throw tiletune::Error("unknown compute type " + std::to_string(compute));
  p.compute_tf32 = compute == TILETUNE_COMPUTE_32F_FAST_TF32;
  if (batch > 1 && (stride_a == 0 || stride_b == 0 || stride_c == 0))
    throw tiletune::Error("batch > 1 needs non-zero strides (broadcasting an operand with stride 0 is not supported)");
  if (lda <= 0 || ldb <= 0 || ldc <= 0) throw tiletune::Error("leading dimensions must be > 0");
  p.validate();
  return p;
}

tiletune_status_t need_handle(tiletune_handle_t h) {
  if (h && h->rt) return TILETUNE_SUCCESS;
  last_error = "null tiletune handle";
  return TILETUNE_ERROR_INVALID_VALUE;
}

tiletune::ConvProblem make_conv(const tiletune_conv_desc_t* d, tiletune::ConvDirection dir) {
  if (!d) throw tiletune::Error("null convolution descriptor");
  if (raw(d->layout) != TILETUNE_LAYOUT_NHWC && raw(d->layout) != TILETUNE_LAYOUT_NCHW)
    throw tiletune::Error("unknown convolution layout " + std::to_string(raw(d->layout)));
  tiletune::ConvProblem p;
  p.direction = dir;
  p.layout = raw(d->layout) == TILETUNE_LAYOUT_NCHW ? tiletune::ConvLayout::NCHW : tiletune::ConvLayout::NHWC;
  p.in_type = dtype(raw(d->in_type));
  p.out_type = dtype(raw(d->out_type));
  p.n = d->n, p.c = d->c, p.h = d->h, p.w = d->w, p.k = d->k, p.r = d->r, p.s = d->s;
  p.stride_h = d->stride_h, p.stride_w = d->stride_w, p.pad_h = d->pad_h, p.pad_w = d->pad_w;
  p.dil_h = d->dilation_h, p.dil_w = d->dilation_w, p.groups = d->groups;
  p.validate();
  return p;
}

// The three directions differ only in which tensor is written (pointers by forward role).
tiletune_status_t run_conv(tiletune_handle_t h, const tiletune_conv_desc_t* d, tiletune::ConvDirection dir,
                           const void* x, const void* w, const void* y, void* stream) {
  if (auto s = need_handle(h)) return s;
  tiletune::ConvProblem p;
  tiletune_status_t s = guarded(TILETUNE_ERROR_INVALID_VALUE, [&] {
    p = make_conv(d, dir);
    need_pointers({x, w, y}, "x, w, y");
  });
  if (s != TILETUNE_SUCCESS) return s;
  return guarded(TILETUNE_ERROR_LAUNCH, [&] {
    h->rt->conv(p, const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y), stream);
  });
}


}  // namespace

extern "C" {

const char* tiletune_version(void) { return TILETUNE_VERSION_STRING; }

const char* tiletune_last_error(void) { return last_error.c_str(); }

const char* tiletune_status_string(tiletune_status_t s) {
  switch (s) {
    case TILETUNE_SUCCESS: return "success";
    case TILETUNE_ERROR_INVALID_VALUE: return "invalid value";
    case TILETUNE_ERROR_DATABASE: return "database error";
    case TILETUNE_ERROR_DEVICE: return "device error";
    case TILETUNE_ERROR_NOT_SUPPORTED: return "not supported";
    case TILETUNE_ERROR_LAUNCH: return "launch error";
    case TILETUNE_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

tiletune_status_t tiletune_create_ex(tiletune_handle_t* handle, const char* db_path, const char* user_db_path,
                                     const char* backend, int device) {
  if (!handle) {
    last_error = "tiletune_create: null handle";
    return TILETUNE_ERROR_INVALID_VALUE;
  }
  *handle = nullptr;
  std::unique_ptr<tiletune::gpu::Device> dev;
  tiletune_status_t s = guarded(TILETUNE_ERROR_DEVICE, [&] {
    dev = tiletune::gpu::open_device(tiletune::gpu::resolve_backend(backend ? backend : "auto"), device);
  });
  if (s != TILETUNE_SUCCESS) return s;
  std::unique_ptr<tiletune::runtime::Runtime> rt;
  const tiletune::runtime::Databases dbs{db_path ? db_path : "", user_db_path ? user_db_path : ""};
  s = guarded(TILETUNE_ERROR_DATABASE, [&] { rt = std::make_unique<tiletune::runtime::Runtime>(std::move(dev), dbs); });
  if (s != TILETUNE_SUCCESS) return s;
  return guarded(TILETUNE_ERROR_INTERNAL, [&] { *handle = new tiletune_handle{std::move(rt)}; });
}

tiletune_status_t tiletune_create(tiletune_handle_t* handle, const char* db_path, const char* backend, int device) {
  if (!handle || !db_path) {
    last_error = "tiletune_create: null handle or database path (tiletune_create_ex takes none)";
    return TILETUNE_ERROR_INVALID_VALUE;
  }
  return tiletune_create_ex(handle, db_path, nullptr, backend, device);
}

tiletune_status_t tiletune_destroy(tiletune_handle_t handle) {
  delete handle;
  return TILETUNE_SUCCESS;
}

namespace {
tiletune_status_t gemm(tiletune_handle_t h, int op_a, int op_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const void* a, int a_type, int64_t lda, int64_t stride_a, const void* b, int b_type, int64_t ldb,
                       int64_t stride_b, float beta, void* c, int c_type, int64_t ldc, int64_t stride_c, int64_t batch,
                       int compute, void* stream) {
  if (auto s = need_handle(h)) return s;
  tiletune::GemmProblem p;
  tiletune_status_t s = guarded(TILETUNE_ERROR_INVALID_VALUE, [&] {
    p = make_problem(op_a, op_b, m, n, k, a_type, b_type, lda, stride_a, ldb, stride_b, c_type, ldc, stride_c, batch,
                     beta == 0.0f, compute);
    // The int8 kernels scale in int32: a fractional alpha or beta would be truncated silently.
    if (tiletune::is_integer(p.c_type) && (alpha != std::nearbyint(alpha) || beta != std::nearbyint(beta)))
      throw tiletune::Error("int8 GEMMs take integer alpha and beta (got alpha=" + std::to_string(alpha) +
                            ", beta=" + std::to_string(beta) + ")");
    need_pointers({a, b, c}, "A, B, C");
  });
  if (s != TILETUNE_SUCCESS) return s;
  return guarded(TILETUNE_ERROR_LAUNCH, [&] { h->rt->gemm(p, alpha, a, b, beta, c, stream); });
}
}  // namespace

tiletune_status_t tiletune_gemm_strided_batched_ex(tiletune_handle_t h, tiletune_operation_t op_a,
                                                   tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k,
                                                   float alpha, const void* a, tiletune_datatype_t ab_type,
                                                   int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
                                                   int64_t stride_b, float beta, void* c, tiletune_datatype_t c_type,
                                                   int64_t ldc, int64_t stride_c, int64_t batch,
                                                   tiletune_compute_t compute, void* stream) {
  return gemm(h, raw(op_a), raw(op_b), m, n, k, alpha, a, raw(ab_type), lda, stride_a, b, raw(ab_type), ldb, stride_b,
              beta, c, raw(c_type), ldc, stride_c, batch, raw(compute), stream);
}

tiletune_status_t tiletune_gemm_strided_batched_mixed(tiletune_handle_t h, tiletune_operation_t op_a,
                                                      tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k,
                                                      float alpha, const void* a, tiletune_datatype_t a_type,
                                                      int64_t lda, int64_t stride_a, const void* b,
                                                      tiletune_datatype_t b_type, int64_t ldb, int64_t stride_b,
                                                      float beta, void* c, tiletune_datatype_t c_type, int64_t ldc,
                                                      int64_t stride_c, int64_t batch, tiletune_compute_t compute,
                                                      void* stream) {
  return gemm(h, raw(op_a), raw(op_b), m, n, k, alpha, a, raw(a_type), lda, stride_a, b, raw(b_type), ldb, stride_b,
              beta, c, raw(c_type), ldc, stride_c, batch, raw(compute), stream);
}

tiletune_status_t tiletune_gemm_strided_batched(tiletune_handle_t h, tiletune_operation_t op_a,
                                                tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k,
                                                float alpha, const void* a, tiletune_datatype_t ab_type,
                                                int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
                                                int64_t stride_b, float beta, void* c, tiletune_datatype_t c_type,
                                                int64_t ldc, int64_t stride_c, int64_t batch, void* stream) {
  return gemm(h, raw(op_a), raw(op_b), m, n, k, alpha, a, raw(ab_type), lda, stride_a, b, raw(ab_type), ldb, stride_b,
              beta, c, raw(c_type), ldc, stride_c, batch, TILETUNE_COMPUTE_32F, stream);
}

tiletune_status_t tiletune_gemm(tiletune_handle_t h, tiletune_operation_t op_a, tiletune_operation_t op_b, int64_t m,
                                int64_t n, int64_t k, float alpha, const void* a, tiletune_datatype_t ab_type,
                                int64_t lda, const void* b, int64_t ldb, float beta, void* c,
                                tiletune_datatype_t c_type, int64_t ldc, void* stream) {
  return gemm(h, raw(op_a), raw(op_b), m, n, k, alpha, a, raw(ab_type), lda, 0, b, raw(ab_type), ldb, 0, beta, c,
              raw(c_type), ldc, 0, 1, TILETUNE_COMPUTE_32F, stream);
}

namespace {
tiletune_status_t explain_into(tiletune_handle_t h, const std::function<tiletune::Problem()>& problem, char* text,
                               size_t text_size) {
  if (auto s = need_handle(h)) return s;
  std::string why;
  tiletune_status_t s = guarded(TILETUNE_ERROR_INVALID_VALUE, [&] { why = h->rt->explain(problem()); });
  if (s == TILETUNE_SUCCESS && text && text_size) {
    std::strncpy(text, why.c_str(), text_size - 1);
    text[text_size - 1] = '\0';
  }
  return s;
}

tiletune_status_t choice_into(tiletune_handle_t h, const std::function<tiletune::Problem()>& problem,
                              tiletune_choice_t* out) {
  if (auto s = need_handle(h)) return s;
  return guarded(TILETUNE_ERROR_INVALID_VALUE, [&] {
    if (!out) throw tiletune::Error("a null tiletune_choice_t was passed");
    const auto c = h->rt->choice(problem());
    *out = tiletune_choice_t{tiletune_rung_t(int(c.rung)), c.kernel ? 1 : 0, c.vendor_ratio};
  });
}

// C++ linkage: inside the extern "C" block, a function returning a C++ type would declare C linkage.
extern "C++" tiletune::Problem conv_of(const tiletune_conv_desc_t* desc, tiletune_conv_direction_t direction) {
  const int d = raw(direction);
  if (d != TILETUNE_CONV_FORWARD && d != TILETUNE_CONV_BACKWARD_DATA && d != TILETUNE_CONV_BACKWARD_FILTER)
    throw tiletune::Error("unknown convolution direction " + std::to_string(d));
  return tiletune::Problem(make_conv(desc, tiletune::ConvDirection(d)));
}
}  // namespace

namespace {
// Both choice calls meet here with every enum as raw()'s int (forwarding one as its enum type loads it).
tiletune_status_t gemm_choice(tiletune_handle_t h, int op_a, int op_b, int64_t m, int64_t n, int64_t k, int a_type,
                              int b_type, int64_t lda, int64_t stride_a, int64_t ldb, int64_t stride_b, int c_type,
                              int64_t ldc, int64_t stride_c, int64_t batch, int beta_is_zero, int compute,
                              tiletune_choice_t* choice) {
  return choice_into(
      h,
      [&] {
        return tiletune::Problem(make_problem(op_a, op_b, m, n, k, a_type, b_type, lda, stride_a, ldb, stride_b, c_type,
                                              ldc, stride_c, batch, beta_is_zero != 0, compute));
      },
      choice);
}
}  // namespace

tiletune_status_t tiletune_gemm_choice(tiletune_handle_t h, tiletune_operation_t op_a, tiletune_operation_t op_b,
                                       int64_t m, int64_t n, int64_t k, tiletune_datatype_t ab_type, int64_t lda,
                                       int64_t stride_a, int64_t ldb, int64_t stride_b, tiletune_datatype_t c_type,
                                       int64_t ldc, int64_t stride_c, int64_t batch, int beta_is_zero,
                                       tiletune_compute_t compute, tiletune_choice_t* choice) {
  return gemm_choice(h, raw(op_a), raw(op_b), m, n, k, raw(ab_type), raw(ab_type), lda, stride_a, ldb, stride_b,
                     raw(c_type), ldc, stride_c, batch, beta_is_zero, raw(compute), choice);
}

tiletune_status_t tiletune_gemm_choice_mixed(tiletune_handle_t h, tiletune_operation_t op_a, tiletune_operation_t op_b,
                                             int64_t m, int64_t n, int64_t k, tiletune_datatype_t a_type,
                                             tiletune_datatype_t b_type, int64_t lda, int64_t stride_a, int64_t ldb,
                                             int64_t stride_b, tiletune_datatype_t c_type, int64_t ldc,
                                             int64_t stride_c, int64_t batch, int beta_is_zero,
                                             tiletune_compute_t compute, tiletune_choice_t* choice) {
  return gemm_choice(h, raw(op_a), raw(op_b), m, n, k, raw(a_type), raw(b_type), lda, stride_a, ldb, stride_b,
                     raw(c_type), ldc, stride_c, batch, beta_is_zero, raw(compute), choice);
}

tiletune_status_t tiletune_conv_choice(tiletune_handle_t h, const tiletune_conv_desc_t* desc,
                                       tiletune_conv_direction_t direction, tiletune_choice_t* choice) {
  return choice_into(h, [&] { return conv_of(desc, direction); }, choice);
}

namespace {
// Both GEMM explain calls meet here, every enum as raw()'s int (as the choice calls).
tiletune_status_t gemm_explain(tiletune_handle_t h, int op_a, int op_b, int64_t m, int64_t n, int64_t k, int a_type,
                               int b_type, int64_t lda, int64_t ldb, int c_type, int64_t ldc, int64_t batch,
                               int beta_is_zero, int compute, char* text, size_t text_size) {
  return explain_into(
      h,
      [&] {
        return tiletune::Problem(make_problem(op_a, op_b, m, n, k, a_type, b_type, lda, 0, ldb, 0, c_type, ldc, 0,
                                              batch, beta_is_zero != 0, compute));
      },
      text, text_size);
}
}  // namespace

tiletune_status_t tiletune_explain(tiletune_handle_t h, tiletune_operation_t op_a, tiletune_operation_t op_b, int64_t m,
                                   int64_t n, int64_t k, tiletune_datatype_t ab_type, int64_t lda, int64_t ldb,
                                   tiletune_datatype_t c_type, int64_t ldc, int64_t batch, int beta_is_zero,
                                   tiletune_compute_t compute, char* text, size_t text_size) {
  return gemm_explain(h, raw(op_a), raw(op_b), m, n, k, raw(ab_type), raw(ab_type), lda, ldb, raw(c_type), ldc, batch,
                      beta_is_zero, raw(compute), text, text_size);
}

tiletune_status_t tiletune_explain_mixed(tiletune_handle_t h, tiletune_operation_t op_a, tiletune_operation_t op_b,
                                         int64_t m, int64_t n, int64_t k, tiletune_datatype_t a_type,
                                         tiletune_datatype_t b_type, int64_t lda, int64_t ldb,
                                         tiletune_datatype_t c_type, int64_t ldc, int64_t batch, int beta_is_zero,
                                         tiletune_compute_t compute, char* text, size_t text_size) {
  return gemm_explain(h, raw(op_a), raw(op_b), m, n, k, raw(a_type), raw(b_type), lda, ldb, raw(c_type), ldc, batch,
                      beta_is_zero, raw(compute), text, text_size);
}

tiletune_status_t tiletune_explain_conv(tiletune_handle_t h, const tiletune_conv_desc_t* desc,
                                        tiletune_conv_direction_t direction, char* text, size_t text_size) {
  return explain_into(h, [&] { return conv_of(desc, direction); }, text, text_size);
}

void tiletune_conv_desc_init(tiletune_conv_desc_t* d, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                             int64_t r, int64_t s) {
  if (!d) return;
  *d = tiletune_conv_desc_t{};
  d->n = n, d->c = c, d->h = h, d->w = w, d->k = k, d->r = r, d->s = s;
  d->stride_h = d->stride_w = d->dilation_h = d->dilation_w = d->groups = 1;
  d->layout = TILETUNE_LAYOUT_NHWC;
  d->in_type = d->out_type = TILETUNE_R_32F;
}

tiletune_status_t tiletune_conv_forward(tiletune_handle_t h, const tiletune_conv_desc_t* d, const void* x,
                                        const void* w, void* y, void* stream) {
  return run_conv(h, d, tiletune::ConvDirection::Forward, x, w, y, stream);
}

tiletune_status_t tiletune_conv_backward_data(tiletune_handle_t h, const tiletune_conv_desc_t* d, const void* dy,
                                              const void* w, void* dx, void* stream) {
  return run_conv(h, d, tiletune::ConvDirection::BackwardData, dx, w, dy, stream);
}

tiletune_status_t tiletune_conv_backward_filter(tiletune_handle_t h, const tiletune_conv_desc_t* d, const void* x,
                                                const void* dy, void* dw, void* stream) {
  return run_conv(h, d, tiletune::ConvDirection::BackwardFilter, x, dw, dy, stream);
}

tiletune_status_t tiletune_get_stats(tiletune_handle_t h, tiletune_stats_t* out) {
  if (auto s = need_handle(h)) return s;
  if (!out) {
    last_error = "tiletune_get_stats: null stats pointer";
    return TILETUNE_ERROR_INVALID_VALUE;
  }
  const auto& st = h->rt->stats();
  *out = {st.calls.load(),  st.tuned.load(),      st.nearest.load(), st.fallbacks.load(),   st.jit_compiles.load(),
          st.vendor.load(), st.user_tuned.load(), st.online.load(),  st.online_tuned.load()};
  return TILETUNE_SUCCESS;
}

tiletune_status_t tiletune_set_online(tiletune_handle_t h, int enable) {
  if (auto s = need_handle(h)) return s;
  return guarded(TILETUNE_ERROR_NOT_SUPPORTED, [&] { h->rt->set_online(enable != 0); });
}

tiletune_status_t tiletune_online_wait(tiletune_handle_t h, double seconds, int* idle) {
  if (auto s = need_handle(h)) return s;
  return guarded(TILETUNE_ERROR_INTERNAL, [&] {
    const bool done = h->rt->wait_online(seconds);
    if (idle) *idle = done;
  });
}

tiletune_status_t tiletune_record(tiletune_handle_t h, const char* path) {
  if (auto s = need_handle(h)) return s;
  if (!path || !*path) {
    last_error = "tiletune_record: null or empty path";
    return TILETUNE_ERROR_INVALID_VALUE;
  }
  return guarded(TILETUNE_ERROR_INVALID_VALUE, [&] { h->rt->record(path); });
}

tiletune_status_t tiletune_get_arch(tiletune_handle_t h, char* arch, size_t arch_size, size_t* tuned) {
  if (auto s = need_handle(h)) return s;
  const std::string& a = h->rt->device().info().arch;
  if (arch && arch_size) {
    std::strncpy(arch, a.c_str(), arch_size - 1);
    arch[arch_size - 1] = '\0';
  }
  if (tuned) *tuned = h->rt->tuned_problems();
  return TILETUNE_SUCCESS;
}

tiletune_status_t tiletune_malloc(tiletune_handle_t h, void** ptr, size_t bytes) {
  if (auto s = need_handle(h)) return s;
  if (!ptr) {
    last_error = "tiletune_malloc: null result pointer";
    return TILETUNE_ERROR_INVALID_VALUE;
  }
  // More than any device holds (and what rounding up to an allocation granule would wrap) is
  // refused here, before an allocator sees it.
  if (bytes > (std::size_t(1) << 50)) {
    last_error = "tiletune_malloc: " + std::to_string(bytes) + " bytes is more than any device holds";
    return TILETUNE_ERROR_INVALID_VALUE;
  }
  return guarded(TILETUNE_ERROR_DEVICE, [&] {
    void* p = h->rt->device().alloc(bytes);
    std::lock_guard<std::mutex> lock(h->allocations_mu);
    h->allocations.insert(p);
    *ptr = p;
  });
}
tiletune_status_t tiletune_free(tiletune_handle_t h, void* ptr) {
  if (auto s = need_handle(h)) return s;
  if (!ptr) return TILETUNE_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(h->allocations_mu);
    if (!h->allocations.erase(ptr)) {
      last_error = "tiletune_free: the pointer was not allocated by tiletune_malloc on this handle (or freed already)";
      return TILETUNE_ERROR_INVALID_VALUE;
    }
  }
  h->rt->device().free(ptr);
  return TILETUNE_SUCCESS;
}
tiletune_status_t tiletune_memcpy_to_device(tiletune_handle_t h, void* dst, const void* src, size_t bytes) {
  if (auto s = need_handle(h)) return s;
  if (bytes && (!dst || !src)) {
    last_error = "tiletune_memcpy_to_device: null pointer";
    return TILETUNE_ERROR_INVALID_VALUE;
  }
  return guarded(TILETUNE_ERROR_DEVICE, [&] { h->rt->device().copy_to_device(dst, src, bytes); });
}
tiletune_status_t tiletune_memcpy_to_host(tiletune_handle_t h, void* dst, const void* src, size_t bytes) {
  if (auto s = need_handle(h)) return s;
  if (bytes && (!dst || !src)) {
    last_error = "tiletune_memcpy_to_host: null pointer";
    return TILETUNE_ERROR_INVALID_VALUE;
  }
  return guarded(TILETUNE_ERROR_DEVICE, [&] { h->rt->device().copy_to_host(dst, src, bytes); });
}
tiletune_status_t tiletune_synchronize(tiletune_handle_t h) {
  if (auto s = need_handle(h)) return s;
  return guarded(TILETUNE_ERROR_LAUNCH, [&] { h->rt->device().synchronize(); });
}

}  // extern "C"
