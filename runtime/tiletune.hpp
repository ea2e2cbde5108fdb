// tiletune runtime, C++ API: RAII over the C API of tiletune.h; failures throw tiletune::RuntimeError
// carrying the status and the message.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

#include "tiletune.h"

namespace tiletune {

class RuntimeError : public std::runtime_error {
 public:
  RuntimeError(tiletune_status_t status, const std::string& what) : std::runtime_error(what), status_(status) {}
  tiletune_status_t status() const { return status_; }

 private:
  tiletune_status_t status_;
};

inline void check(tiletune_status_t s) {
  if (s != TILETUNE_SUCCESS)
    throw RuntimeError(s, std::string(tiletune_status_string(s)) + ": " + tiletune_last_error());
}

class Handle {
 public:
  explicit Handle(const std::string& db_path, const std::string& backend = "auto", int device = 0) {
    check(tiletune_create(&h_, db_path.c_str(), backend.c_str(), device));
  }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (h_) tiletune_destroy(h_);
  }
  tiletune_handle_t get() const { return h_; }

  void gemm(tiletune_operation_t op_a, tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k, float alpha,
            const void* a, tiletune_datatype_t ab_type, int64_t lda, const void* b, int64_t ldb, float beta, void* c,
            tiletune_datatype_t c_type, int64_t ldc, void* stream = nullptr) {
    check(tiletune_gemm(h_, op_a, op_b, m, n, k, alpha, a, ab_type, lda, b, ldb, beta, c, c_type, ldc, stream));
  }
  // Convolutions (tiletune.h): forward, input gradient, filter gradient.
  void conv_forward(const tiletune_conv_desc_t& d, const void* x, const void* w, void* y, void* stream = nullptr) {
    check(tiletune_conv_forward(h_, &d, x, w, y, stream));
  }
  void conv_backward_data(const tiletune_conv_desc_t& d, const void* dy, const void* w, void* dx,
                          void* stream = nullptr) {
    check(tiletune_conv_backward_data(h_, &d, dy, w, dx, stream));
  }
  void conv_backward_filter(const tiletune_conv_desc_t& d, const void* x, const void* dy, void* dw,
                            void* stream = nullptr) {
    check(tiletune_conv_backward_filter(h_, &d, x, dy, dw, stream));
  }
  void gemm_strided_batched(tiletune_operation_t op_a, tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k,
                            float alpha, const void* a, tiletune_datatype_t ab_type, int64_t lda, int64_t stride_a,
                            const void* b, int64_t ldb, int64_t stride_b, float beta, void* c,
                            tiletune_datatype_t c_type, int64_t ldc, int64_t stride_c, int64_t batch,
                            void* stream = nullptr) {
    check(tiletune_gemm_strided_batched(h_, op_a, op_b, m, n, k, alpha, a, ab_type, lda, stride_a, b, ldb, stride_b,
                                        beta, c, c_type, ldc, stride_c, batch, stream));
  }
  void gemm_strided_batched_ex(tiletune_operation_t op_a, tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k,
                               float alpha, const void* a, tiletune_datatype_t ab_type, int64_t lda, int64_t stride_a,
                               const void* b, int64_t ldb, int64_t stride_b, float beta, void* c,
                               tiletune_datatype_t c_type, int64_t ldc, int64_t stride_c, int64_t batch,
                               tiletune_compute_t compute, void* stream = nullptr) {
    check(tiletune_gemm_strided_batched_ex(h_, op_a, op_b, m, n, k, alpha, a, ab_type, lda, stride_a, b, ldb, stride_b,
                                           beta, c, c_type, ldc, stride_c, batch, compute, stream));
  }
  // B's type apart from A's: fp8 A and B of two types (tiletune_gemm_strided_batched_mixed).
  void gemm_strided_batched_mixed(tiletune_operation_t op_a, tiletune_operation_t op_b, int64_t m, int64_t n,
                                  int64_t k, float alpha, const void* a, tiletune_datatype_t a_type, int64_t lda,
                                  int64_t stride_a, const void* b, tiletune_datatype_t b_type, int64_t ldb,
                                  int64_t stride_b, float beta, void* c, tiletune_datatype_t c_type, int64_t ldc,
                                  int64_t stride_c, int64_t batch, tiletune_compute_t compute, void* stream = nullptr) {
    check(tiletune_gemm_strided_batched_mixed(h_, op_a, op_b, m, n, k, alpha, a, a_type, lda, stride_a, b, b_type, ldb,
                                              stride_b, beta, c, c_type, ldc, stride_c, batch, compute, stream));
  }
  tiletune_stats_t stats() const {
    tiletune_stats_t s{};
    check(tiletune_get_stats(h_, &s));
    return s;
  }
  // Merges the untuned problems into the tuning config at `path` (tiletune_record).
  void record(const std::string& path) { check(tiletune_record(h_, path.c_str())); }
  std::string arch() const {
    char buf[64];
    size_t n = 0;
    check(tiletune_get_arch(h_, buf, sizeof buf, &n));
    return buf;
  }
  void* malloc(size_t bytes) {
    void* p = nullptr;
    check(tiletune_malloc(h_, &p, bytes));
    return p;
  }
  void free(void* p) { check(tiletune_free(h_, p)); }
  void to_device(void* dst, const void* src, size_t bytes) { check(tiletune_memcpy_to_device(h_, dst, src, bytes)); }
  void to_host(void* dst, const void* src, size_t bytes) { check(tiletune_memcpy_to_host(h_, dst, src, bytes)); }
  void synchronize() { check(tiletune_synchronize(h_)); }

 private:
  tiletune_handle_t h_ = nullptr;
};

}  // namespace tiletune
