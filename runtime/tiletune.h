/* tiletune runtime: the C API a trainer links (libtiletune_runtime.so).
 *
 * A handle opens a tuned solution database read-only, loads the winners for its device's arch into
 * memory, and runs each GEMM with the tuned kernel for that exact problem. A problem nobody tuned
 * runs on the template's general default kernel (always correct; compiled once on first use) and
 * is counted as a fallback. No call aborts or throws: every failure returns a status, and
 * tiletune_last_error() says why.
 *
 * Convention: BLAS column-major, C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
 * Pointers are device pointers of the handle's device (plain host memory on the host backend).
 * Thread safety: any number of threads may call tiletune_gemm* on one handle at once.
 *
 * Untuned problems run the winner of the nearest tuned problem of the same types and layout (within
 * about a factor of two in m, n, k), else the general default kernel; both are counted in the stats.
 * With TILETUNE_RECORD_UNTUNED=<file>, tiletune_destroy writes every untuned problem with its call
 * count to <file> as a tuning config that `tiletune tune` takes as input.
 *
 * Convolutions (tiletune_conv_*) follow the same rules: the exact problem's winner, else the
 * nearest tuned convolution of the same direction, types, layout, filter size, stride, padding,
 * dilation and groups (within about a factor of two in n, c, k and h*w), else the default of the
 * first convolution template admitting it; counted in the same stats.
 */
#ifndef TILETUNE_H
#define TILETUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tiletune_handle* tiletune_handle_t;

typedef enum {
  TILETUNE_SUCCESS = 0,
  TILETUNE_ERROR_INVALID_VALUE = 1, /* bad sizes, leading dimensions, types, null pointers */
  TILETUNE_ERROR_DATABASE = 2,      /* missing, corrupt, foreign or newer-schema database */
  TILETUNE_ERROR_DEVICE = 3,        /* no such device / backend, driver failure */
  TILETUNE_ERROR_NOT_SUPPORTED = 4, /* no kernel can run this problem on this device */
  TILETUNE_ERROR_LAUNCH = 5,        /* compiling, loading or launching a kernel failed */
  TILETUNE_ERROR_INTERNAL = 6
} tiletune_status_t;

typedef enum { TILETUNE_OP_N = 0, TILETUNE_OP_T = 1 } tiletune_operation_t;
typedef enum { TILETUNE_R_32F = 0, TILETUNE_R_16F = 1, TILETUNE_R_16BF = 2 } tiletune_datatype_t;
/* Accumulation is always fp32; FAST_TF32 lets fp32 inputs run on tf32 tensor cores (as cuBLAS's
 * CUBLAS_COMPUTE_32F_FAST_TF32). It is part of the problem key: tf32 and fp32 problems are tuned apart. */
typedef enum { TILETUNE_COMPUTE_32F = 0, TILETUNE_COMPUTE_32F_FAST_TF32 = 1 } tiletune_compute_t;

typedef struct {
  uint64_t calls;        /* GEMM calls that launched a kernel */
  uint64_t tuned;        /* ... with the tuned winner of that exact problem */
  uint64_t nearest;      /* ... with the winner of the nearest tuned problem (see runtime.h) */
  uint64_t fallbacks;    /* ... with the general default kernel (untuned problem) */
  uint64_t jit_compiles; /* kernels compiled at run time (fallbacks, or no code object for this arch) */
} tiletune_stats_t;

/* Activations NHWC with KRSC filters, or NCHW with KCRS filters (outputs laid out like inputs). */
typedef enum { TILETUNE_LAYOUT_NHWC = 0, TILETUNE_LAYOUT_NCHW = 1 } tiletune_conv_layout_t;

/* A 2-d convolution y = conv(x, w), described by its forward shapes whatever the direction:
 *   x: n x c x h x w, w: k x (c / groups) x r x s, y: n x k x p x q with
 *   p = (h + 2*pad_h - dilation_h*(r-1) - 1) / stride_h + 1, q likewise.
 * in_type: the two tensors read; out_type: the tensor written. Accumulation is fp32; the written
 * tensor is overwritten (no alpha / beta). Pointers need only element alignment.
 * tiletune_conv_desc_init fills stride, dilation and groups with 1, padding with 0, NHWC, fp32. */
typedef struct {
  int64_t n, c, h, w, k, r, s;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
  tiletune_conv_layout_t layout;
  tiletune_datatype_t in_type, out_type;
} tiletune_conv_desc_t;

/* backend: "auto" (CUDA, else HIP, else host), "cuda", "hip" or "host". */
tiletune_status_t tiletune_create(tiletune_handle_t* handle, const char* db_path, const char* backend, int device);
tiletune_status_t tiletune_destroy(tiletune_handle_t handle);

/* The message of the last failure on this thread ("" if none). */
const char* tiletune_last_error(void);
const char* tiletune_status_string(tiletune_status_t status);

tiletune_status_t tiletune_gemm(tiletune_handle_t handle, tiletune_operation_t op_a, tiletune_operation_t op_b,
                                int64_t m, int64_t n, int64_t k, float alpha,
                                const void* a, tiletune_datatype_t ab_type, int64_t lda,
                                const void* b, int64_t ldb, float beta,
                                void* c, tiletune_datatype_t c_type, int64_t ldc, void* stream);

/* Batch i uses a + i * stride_a elements (likewise b, c). */
tiletune_status_t tiletune_gemm_strided_batched(tiletune_handle_t handle, tiletune_operation_t op_a,
                                                tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k,
                                                float alpha, const void* a, tiletune_datatype_t ab_type,
                                                int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
                                                int64_t stride_b, float beta, void* c, tiletune_datatype_t c_type,
                                                int64_t ldc, int64_t stride_c, int64_t batch, void* stream);

/* As tiletune_gemm_strided_batched, with the compute type named. */
tiletune_status_t tiletune_gemm_strided_batched_ex(tiletune_handle_t handle, tiletune_operation_t op_a,
                                                   tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k,
                                                   float alpha, const void* a, tiletune_datatype_t ab_type,
                                                   int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
                                                   int64_t stride_b, float beta, void* c, tiletune_datatype_t c_type,
                                                   int64_t ldc, int64_t stride_c, int64_t batch,
                                                   tiletune_compute_t compute, void* stream);

/* One line saying which kernel a problem would get and why (exact winner, nearest, fallback). */
tiletune_status_t tiletune_explain(tiletune_handle_t handle, tiletune_operation_t op_a, tiletune_operation_t op_b,
                                   int64_t m, int64_t n, int64_t k, tiletune_datatype_t ab_type, int64_t lda,
                                   int64_t ldb, tiletune_datatype_t c_type, int64_t ldc, int64_t batch,
                                   int beta_is_zero, tiletune_compute_t compute, char* text, size_t text_size);

void tiletune_conv_desc_init(tiletune_conv_desc_t* desc, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                             int64_t r, int64_t s);
/* y = conv(x, w). */
tiletune_status_t tiletune_conv_forward(tiletune_handle_t handle, const tiletune_conv_desc_t* desc, const void* x,
                                        const void* w, void* y, void* stream);
/* dx = the input gradient from the output gradient dy (shaped like y) and the filters w. */
tiletune_status_t tiletune_conv_backward_data(tiletune_handle_t handle, const tiletune_conv_desc_t* desc,
                                              const void* dy, const void* w, void* dx, void* stream);
/* dw = the filter gradient from the input x and the output gradient dy. */
tiletune_status_t tiletune_conv_backward_filter(tiletune_handle_t handle, const tiletune_conv_desc_t* desc,
                                                const void* x, const void* dy, void* dw, void* stream);

tiletune_status_t tiletune_get_stats(tiletune_handle_t handle, tiletune_stats_t* stats);
/* Arch of the handle's device, e.g. "sm_90a", and the number of tuned problems loaded for it. */
tiletune_status_t tiletune_get_arch(tiletune_handle_t handle, char* arch, size_t arch_size, size_t* tuned_problems);

/* Memory of the handle's device, for callers without their own allocator (tests, examples). */
tiletune_status_t tiletune_malloc(tiletune_handle_t handle, void** ptr, size_t bytes);
tiletune_status_t tiletune_free(tiletune_handle_t handle, void* ptr);
tiletune_status_t tiletune_memcpy_to_device(tiletune_handle_t handle, void* dst, const void* src, size_t bytes);
tiletune_status_t tiletune_memcpy_to_host(tiletune_handle_t handle, void* dst, const void* src, size_t bytes);
tiletune_status_t tiletune_synchronize(tiletune_handle_t handle);

#ifdef __cplusplus
}
#endif

#endif /* TILETUNE_H */
