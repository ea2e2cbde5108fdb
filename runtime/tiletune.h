/* tiletune runtime: the C API a trainer links (libtiletune_runtime.so).
 *
 * A handle opens a tuned solution database read-only (and optionally a user database over it),
 * loads the winners for its device's arch into memory, and serves each GEMM or convolution from one
 * dispatch ladder, decided once per problem and cached:
 *   1. tuned   - the winner of that exact problem, the user database's first; the winner may be a
 *                generated kernel or the vendor library (a sweep times it as a candidate);
 *   2. pool    - untuned: the winner of the nearest tuned problem of the same types and layout
 *                (within about a factor of two in each size), when the database shows it beat the
 *                vendor library by 10% or more on its own problem, or no vendor computes this one;
 *                where no vendor computes it, also a generic kernel `tiletune db pack` pooled for
 *                its class of problems, at any size, ranked by the analytical model;
 *   3. vendor  - untuned: the vendor library's own choice (cuBLAS, cuDNN; OpenBLAS on the host);
 *   4. default - only where no vendor computes the problem: a template's general default kernel
 *                (always correct; compiled once on first use).
 * tiletune_get_stats counts the calls per rung; tiletune_explain says which rung and why.
 * TILETUNE_VENDOR=off leaves the vendor rung out. No call aborts or throws: every failure returns
 * a status, and tiletune_last_error() says why.
 *
 * Convention: BLAS column-major, C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
 * Pointers are device pointers of the handle's device (plain host memory on the host backend).
 * Thread safety: any number of threads may call tiletune_gemm* on one handle at once.
 *
 * With TILETUNE_RECORD_UNTUNED=<file>, tiletune_destroy records every untuned problem with its call
 * count into <file> as tiletune_record does: a tuning config that `tiletune tune` takes as input.
 *
 * Convolutions (tiletune_conv_*) take the same ladder; their pool neighbours must share direction,
 * types, layout, filter size, stride, padding, dilation and groups (within about a factor of two
 * in n, c, k and h*w).
 */
#ifndef TILETUNE_H
#define TILETUNE_H

#include <stddef.h>
#include <stdint.h>

/* The version of this header; tiletune_version() says the library's. A 0.x minor version may
 * change the C API: the library's soname carries the major version. */
#define TILETUNE_VERSION_MAJOR 0
#define TILETUNE_VERSION_MINOR 1
#define TILETUNE_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the loaded library (a static string). */
const char* tiletune_version(void);

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
/* 8-bit GEMM types (GEMMs only; convolutions answer TILETUNE_ERROR_INVALID_VALUE):
 *  - TILETUNE_R_8F_E4M3 / TILETUNE_R_8F_E5M2 (OCP fp8) inputs with TILETUNE_R_16BF, TILETUNE_R_16F or
 *    TILETUNE_R_32F output, fp32 accumulation. There are no separate scale pointers: alpha is the
 *    product of A's and B's per-tensor scales (cuBLASLt's A and B scale factors, torch._scaled_mm's
 *    scale_a * scale_b). A and B may be of two fp8 types (e4m3 x e5m2, e5m2 x e4m3: the backward
 *    pass's products) through tiletune_gemm_strided_batched_mixed. e5m2 x e5m2 runs on tuned
 *    kernels only: cuBLASLt has none, so its vendor rung declines it, and an untuned one fails as any
 *    problem no rung serves, with tiletune_last_error() saying so. fp8 types are inputs only, and
 *    an fp8 operand never goes with a non-fp8 one.
 *  - TILETUNE_R_8I inputs with TILETUNE_R_32I output, int32 accumulation (cublasLt's and
 *    torch._int_mm's int8 GEMM): exact, wrapping on int32 overflow. alpha and beta must be
 *    integers (C = alpha * A B + beta * C in int32); other values answer TILETUNE_ERROR_INVALID_VALUE.
 * Hopper's 8-bit tensor cores read A and B K-major only: the tuned wgmma kernels cover A
 * transposed, B not (TN, the layout of torch._scaled_mm and cuBLASLt's fp8); other layouts run on
 * the host backend's kernels, or answer TILETUNE_ERROR_NOT_SUPPORTED on a GPU. */
typedef enum {
  TILETUNE_R_32F = 0,
  TILETUNE_R_16F = 1,
  TILETUNE_R_16BF = 2,
  TILETUNE_R_8F_E4M3 = 3,
  TILETUNE_R_8I = 4,
  TILETUNE_R_32I = 5,
  TILETUNE_R_8F_E5M2 = 6
} tiletune_datatype_t;
/* Accumulation is always fp32; FAST_TF32 lets fp32 inputs run on tf32 tensor cores (as cuBLAS's
 * CUBLAS_COMPUTE_32F_FAST_TF32). It is part of the problem key: tf32 and fp32 problems are tuned apart. */
typedef enum { TILETUNE_COMPUTE_32F = 0, TILETUNE_COMPUTE_32F_FAST_TF32 = 1 } tiletune_compute_t;

/* Calls by the rung of the dispatch ladder that served them (see the top of this file). */
typedef struct {
  uint64_t calls;        /* GEMM and convolution calls that ran */
  uint64_t tuned;        /* ... with the tuned winner of that exact problem (a kernel, or the vendor library) */
  uint64_t nearest;      /* ... with a pool kernel: the winner of the nearest tuned problem */
  uint64_t fallbacks;    /* ... with a template's general default (untuned, and no vendor library computes it) */
  uint64_t jit_compiles; /* kernels compiled at run time (defaults, or no code object for this arch) */
  uint64_t vendor;       /* ... untuned, with the vendor library's own choice (cuBLAS, cuDNN, OpenBLAS) */
  uint64_t user_tuned;   /* of `tuned`, those whose winner came from the user database */
  uint64_t online;       /* of `user_tuned`, those whose winner online tuning brought in while this handle ran
                            (tuned by it, or by another process sharing the user database) */
  uint64_t online_tuned; /* problems tuned online by this handle (not those another process had tuned) */
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
/* As tiletune_create, with a user database whose winners take precedence over the shipped
 * database's (NULL: $TILETUNE_USER_DB if set; a file that does not exist yet is skipped). db_path
 * may be NULL: then only the user database, the vendor library and the defaults serve. */
tiletune_status_t tiletune_create_ex(tiletune_handle_t* handle, const char* db_path, const char* user_db_path,
                                     const char* backend, int device);
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

/* As tiletune_gemm_strided_batched_ex, with B's type named apart from A's: fp8 A and B may differ
 * (TILETUNE_R_8F_E4M3 x TILETUNE_R_8F_E5M2 and the reverse); with a_type == b_type it is
 * tiletune_gemm_strided_batched_ex. Any other pair answers TILETUNE_ERROR_INVALID_VALUE. */
tiletune_status_t tiletune_gemm_strided_batched_mixed(tiletune_handle_t handle, tiletune_operation_t op_a,
                                                      tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k,
                                                      float alpha, const void* a, tiletune_datatype_t a_type,
                                                      int64_t lda, int64_t stride_a, const void* b,
                                                      tiletune_datatype_t b_type, int64_t ldb, int64_t stride_b,
                                                      float beta, void* c, tiletune_datatype_t c_type, int64_t ldc,
                                                      int64_t stride_c, int64_t batch, tiletune_compute_t compute,
                                                      void* stream);

/* One line saying which kernel a problem would get and why (exact winner, nearest, fallback). */
tiletune_status_t tiletune_explain(tiletune_handle_t handle, tiletune_operation_t op_a, tiletune_operation_t op_b,
                                   int64_t m, int64_t n, int64_t k, tiletune_datatype_t ab_type, int64_t lda,
                                   int64_t ldb, tiletune_datatype_t c_type, int64_t ldc, int64_t batch,
                                   int beta_is_zero, tiletune_compute_t compute, char* text, size_t text_size);

/* As tiletune_explain, with B's type named apart from A's (tiletune_gemm_strided_batched_mixed). */
tiletune_status_t tiletune_explain_mixed(tiletune_handle_t handle, tiletune_operation_t op_a,
                                         tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k,
                                         tiletune_datatype_t a_type, tiletune_datatype_t b_type, int64_t lda,
                                         int64_t ldb, tiletune_datatype_t c_type, int64_t ldc, int64_t batch,
                                         int beta_is_zero, tiletune_compute_t compute, char* text, size_t text_size);

typedef enum {
  TILETUNE_CONV_FORWARD = 0,
  TILETUNE_CONV_BACKWARD_DATA = 1,
  TILETUNE_CONV_BACKWARD_FILTER = 2
} tiletune_conv_direction_t;
/* As tiletune_explain, for a convolution in one direction. */
tiletune_status_t tiletune_explain_conv(tiletune_handle_t handle, const tiletune_conv_desc_t* desc,
                                        tiletune_conv_direction_t direction, char* text, size_t text_size);

/* How a problem would be served, as data: for a framework that calls tiletune only where it
 * beats what the framework would do itself (tiletune.torch hands vendor-rung problems back to
 * PyTorch, whose own call of the same library may fuse a bias or pick its algorithm by benchmark). */
typedef enum { TILETUNE_RUNG_TUNED = 0, TILETUNE_RUNG_POOL = 1, TILETUNE_RUNG_VENDOR = 2, TILETUNE_RUNG_DEFAULT = 3 } tiletune_rung_t;
typedef struct {
  tiletune_rung_t rung;
  int kernel;           /* 1: a generated kernel runs; 0: the vendor library (its default or one of its algorithms) */
  double vendor_ratio;  /* the choice's speed over the vendor's default, measured on the problem it was tuned
                         * on (the pool's neighbour for the pool rung); 1 for the vendor's default; 0: unmeasured */
} tiletune_choice_t;
/* The GEMM as tiletune_gemm_strided_batched_ex would be called (strides as there; 0 with batch 1). */
tiletune_status_t tiletune_gemm_choice(tiletune_handle_t handle, tiletune_operation_t op_a, tiletune_operation_t op_b,
                                       int64_t m, int64_t n, int64_t k, tiletune_datatype_t ab_type, int64_t lda,
                                       int64_t stride_a, int64_t ldb, int64_t stride_b, tiletune_datatype_t c_type,
                                       int64_t ldc, int64_t stride_c, int64_t batch, int beta_is_zero,
                                       tiletune_compute_t compute, tiletune_choice_t* choice);
/* As tiletune_gemm_choice, with B's type named apart from A's (tiletune_gemm_strided_batched_mixed). */
tiletune_status_t tiletune_gemm_choice_mixed(tiletune_handle_t handle, tiletune_operation_t op_a,
                                             tiletune_operation_t op_b, int64_t m, int64_t n, int64_t k,
                                             tiletune_datatype_t a_type, tiletune_datatype_t b_type, int64_t lda,
                                             int64_t stride_a, int64_t ldb, int64_t stride_b,
                                             tiletune_datatype_t c_type, int64_t ldc, int64_t stride_c, int64_t batch,
                                             int beta_is_zero, tiletune_compute_t compute, tiletune_choice_t* choice);
tiletune_status_t tiletune_conv_choice(tiletune_handle_t handle, const tiletune_conv_desc_t* desc,
                                       tiletune_conv_direction_t direction, tiletune_choice_t* choice);

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

/* Online tuning (also switched on by TILETUNE_ONLINE=1 at tiletune_create): a problem served untuned
 * TILETUNE_ONLINE_AFTER times (3) is tuned in the background by a `tiletune tune` process (model
 * search, TILETUNE_ONLINE_BUDGET candidates (24), TILETUNE_ONLINE_SECONDS of measuring (30)) that
 * writes its winner into the user database ($XDG_CACHE_HOME/tiletune/user.db when none is named);
 * later calls run that winner. Calls never wait for it; a candidate that crashes or hangs ends only
 * a worker of that process. The program is TILETUNE_EXE, else `tiletune` beside this library;
 * without one, enabling fails with TILETUNE_ERROR_NOT_SUPPORTED. Processes sharing one user database
 * (a data-parallel job's ranks) tune each problem once: the first takes a lock (a file per problem
 * and arch in "<user db>.locks/"), the others wait for it and then serve the winner it wrote. */
tiletune_status_t tiletune_set_online(tiletune_handle_t handle, int enable);
/* Waits at most `seconds` for online tuning to finish what it has; *idle says whether it did. */
tiletune_status_t tiletune_online_wait(tiletune_handle_t handle, double seconds, int* idle);
/* Merges the problems this handle served without an exact winner (on the pool, vendor or default
 * rung) into the tuning config at `path`, for `tiletune tune`: one entry per problem with "calls",
 * the calls served so, and a "name" for people. A config already there is added to, whatever else
 * it holds: problems are united by key and their calls summed, so the processes of one job may
 * record into one file, even at the same moment (they take turns on an exclusive flock of
 * "<path>.lock"; the file is replaced whole, by rename). Each call adds only the calls since this
 * handle's last record into that file: recording again never counts a call twice. With nothing to
 * add, the file is not touched; an empty file counts as none. A file at `path` that is not such a
 * config (unparsable, no "problems" array, an entry that is not one problem) fails the call with
 * TILETUNE_ERROR_INVALID_VALUE and is left as it is; so does a file or lock that cannot be read or
 * written. */
tiletune_status_t tiletune_record(tiletune_handle_t handle, const char* path);

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
