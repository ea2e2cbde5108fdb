// Probe: two facts about TMA tile stores (cp.async.bulk.tensor global <- shared) that the wgmma
// epilogues depend on, checked on the GPU:
//  1. the 128-byte swizzle is taken from the shared address bits [7:9], so a box may start at any
//     128-byte aligned shared address (not only on the 1024-byte period) and its lines are
//     swizzled as their addresses say;
//  2. a box whose first element is not 16-byte aligned in global memory (an odd start coordinate
//     in the contiguous dimension over a 16-byte aligned base) is refused at run time ("an illegal
//     instruction was encountered"), so a TMA store cannot write a column of C that starts off 16
//     bytes, whatever the map (results/gemm/2026-12-07_h100_tma_store_alignment_1909468.md).
// The last case faults and ends the context, so it runs last.
// Build and run (CUDA toolkit, sm_90a GPU):
//   nvcc -O2 -arch=sm_90a -o tma_store_probe benchmarks/probes/tma_store_probe.cu -lcuda && ./tma_store_probe
#include <cuda.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

__global__ void store_kernel(const __grid_constant__ CUtensorMap map, int soff, int c0, int c1, int nbytes) {
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned short* s = reinterpret_cast<unsigned short*>(smem);
  for (int i = threadIdx.x; i < nbytes / 2; i += blockDim.x) s[i] = (unsigned short)(i + 1);  // smem element index + 1
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned src = (unsigned)__cvta_generic_to_shared(smem + soff);
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(&map), "r"(src),
                 "r"(c0), "r"(c1) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

static int check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); printf("%s: %s\n", what, s); return 1; }
  return 0;
}

// Case: global buffer of `total` u16, map base at element `base`, dims {d0, d1}, stride1 elements,
// box {b0, b1}, swizzle; store from shared offset soff to coords (c0, c1). Prints which global
// elements changed and the smem index each holds, summarised as a check against two hypotheses.
static void run_case(const char* name, int total, int base, int d0, int d1, int stride1, int b0, int b1,
                     CUtensorMapSwizzle swz, int soff, int c0, int c1) {
  unsigned short* g;
  cudaMalloc(&g, total * 2);
  cudaMemset(g, 0, total * 2);
  CUtensorMap map;
  cuuint64_t dims[2] = {(cuuint64_t)d0, (cuuint64_t)d1};
  cuuint64_t strides[1] = {(cuuint64_t)stride1 * 2};
  cuuint32_t box[2] = {(cuuint32_t)b0, (cuuint32_t)b1};
  cuuint32_t es[2] = {1, 1};
  if (check(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, g + base, dims, strides, box, es,
                                   CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), name)) {
    cudaFree(g);
    return;
  }
  const int smem_bytes = 16384;
  cudaFuncSetAttribute(store_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  store_kernel<<<1, 128, smem_bytes>>>(map, soff, c0, c1, smem_bytes);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("%s: kernel: %s\n", name, cudaGetErrorString(e)); cudaFree(g); return; }
  std::vector<unsigned short> h(total);
  cudaMemcpy(h.data(), g, total * 2, cudaMemcpyDeviceToHost);
  cudaFree(g);
  // Expected under the two hypotheses: element (x, y) of the box (x inner) goes to global
  // base + (c0 + x) + (c1 + y) * stride1 (where inside dims); it comes from shared
  // soff + y * b0 * 2 + x * 2, whose 16-byte chunk is XORed (128-byte swizzle) with
  //   abs: ((address of the line) >> 7) & 7;   rel: y & 7 (the line within the box).
  int ok_abs = 1, ok_rel = 1, ok_none = 1, written = 0, expected = 0;
  std::vector<int> want(total, 0);
  for (int y = 0; y < b1; ++y)
    for (int x = 0; x < b0; ++x) {
      if (c0 + x < 0 || c0 + x >= d0 || c1 + y < 0 || c1 + y >= d1) continue;
      want[base + c0 + x + (long)(c1 + y) * stride1] = 1;
      ++expected;
      const int lin = soff + y * b0 * 2 + x * 2;  // unswizzled shared byte
      const int chunk = (lin >> 4) & 7;
      const int a = (lin & ~0x7f) | ((chunk ^ ((lin >> 7) & 7)) << 4) | (lin & 15);
      const int r = (lin & ~0x7f) | ((chunk ^ (y & 7)) << 4) | (lin & 15);
      const unsigned short got = h[base + c0 + x + (long)(c1 + y) * stride1];
      if (got != (unsigned short)(a / 2 + 1)) ok_abs = 0;
      if (got != (unsigned short)(r / 2 + 1)) ok_rel = 0;
      if (got != (unsigned short)(lin / 2 + 1)) ok_none = 0;
    }
  int stray = 0;
  for (int i = 0; i < total; ++i) {
    if (h[i]) ++written;
    if (h[i] && !want[i]) ++stray;
  }
  printf("%-40s written %5d expected %5d stray %d | matches: address-bit swizzle %d, box-relative swizzle %d, "
         "no swizzle %d\n",
         name, written, expected, stray, ok_abs, ok_rel, ok_none);
}

int main() {
  cuInit(0);
  cudaFree(0);
  const auto S128 = CU_TENSOR_MAP_SWIZZLE_128B;
  // 64-row (128-byte) lines, 16 columns, aligned.
  run_case("s128 box 64x4 smem 0", 64 * 16, 0, 64, 16, 64, 64, 4, S128, 0, 0, 0);
  run_case("s128 box 64x4 smem 1024", 64 * 16, 0, 64, 16, 64, 64, 4, S128, 1024, 0, 0);
  run_case("s128 box 64x4 smem 640", 64 * 16, 0, 64, 16, 64, 64, 4, S128, 640, 0, 0);
  run_case("s128 box 64x4 smem 128", 64 * 16, 0, 64, 16, 64, 64, 4, S128, 128, 0, 0);
  run_case("s128 box 64x1 smem 384", 64 * 16, 0, 64, 16, 64, 64, 1, S128, 384, 0, 0);
  // A column-major C of 120 rows, ld 121 (odd), 16 columns: the map over columns 3, 11, ... (8 * ld
  // elements apart, a multiple of 16 bytes), its base rounded down to 16 bytes from column 3's
  // first element, rows shifted by e = (3 * 121) % 8 = 3 elements. The same box at the aligned
  // coordinate 8 is written as expected; at the coordinate e (column 3's first row) it faults.
  {
    const int ld = 121, M = 120, r = 3, e = (r * ld) % 8, base = r * ld - e;
    run_case("s128 column-phase map, start 8", ld * 16 + 64, base, M + e, 2, ld * 8, 64, 4, S128, 640, 8, 0);
    run_case("s128 column-phase map, start e (odd)", ld * 16 + 64, base, M + e, 2, ld * 8, 64, 4, S128, 640, e, 0);
  }
  return 0;
}
