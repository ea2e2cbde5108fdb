/* An installed tiletune from C: open a tuned database on the host backend, multiply, check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <tiletune.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer_c DB\n");
    return 2;
  }
  printf("tiletune %s (header %d.%d.%d)\n", tiletune_version(), TILETUNE_VERSION_MAJOR, TILETUNE_VERSION_MINOR,
         TILETUNE_VERSION_PATCH);
  tiletune_handle_t h = NULL;
  if (tiletune_create_ex(&h, argv[1], NULL, "host", 0) != TILETUNE_SUCCESS) {
    fprintf(stderr, "tiletune_create_ex: %s\n", tiletune_last_error());
    return 1;
  }
  enum { M = 40, N = 24, K = 16 };
  static float a[M * K], b[K * N], c[M * N];
  unsigned s = 12345;
  for (int i = 0; i < M * K; ++i) a[i] = (float)((s = s * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
  for (int i = 0; i < K * N; ++i) b[i] = (float)((s = s * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
  for (int i = 0; i < M * N; ++i) c[i] = NAN; /* poisoned: every element must be written */
  if (tiletune_gemm(h, TILETUNE_OP_N, TILETUNE_OP_N, M, N, K, 1.0f, a, TILETUNE_R_32F, M, b, K, 0.0f, c,
                    TILETUNE_R_32F, M, NULL) != TILETUNE_SUCCESS) {
    fprintf(stderr, "tiletune_gemm: %s\n", tiletune_last_error());
    return 1;
  }
  double worst = 0;
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < M; ++i) {
      double ref = 0;
      for (int p = 0; p < K; ++p) ref += (double)a[i + p * M] * (double)b[p + j * K];
      const double e = fabs(c[i + j * M] - ref);
      if (!(e <= worst)) worst = e; /* NaN included */
    }
  tiletune_destroy(h);
  printf("C: worst error %g\n", worst);
  return worst < 1e-4 ? 0 : 1;
}
