// Hopper (sm_90a) 1x1 convolutions (stride 1, no padding) whose reduction is at most 64 channels and whose output
// row is at most 256: the forward pass of C <= 64 and the input gradient of K <= 64, NHWC, bf16 / fp16 in and out,
// fp32 accumulation. These layers write far more than they read (MobileNet's 1x1 input gradient of 24 -> 144
// channels writes 57.8 MB and reads 9.6); the GEMM templates tile the output's channels, so a tile's stores are
// strided boxes, and a 144-channel row takes a 128-row tile and a mostly empty second one.
//
// Here a tile is 64 pixels x the whole output row, so its output is one contiguous run of dx (or y): the
// warpgroup stages it in shared memory as it lies in memory and one thread stores it with a single bulk copy
// (cp.async.bulk, shared -> global), two staging buffers alternating so that a tile's store drains while the next
// tile's operands load and multiply. Persistent blocks of WGS warpgroups, each on its own tiles with its own
// buffers and named barrier; the filters (NC chunks of 64 output channels x the reduction) are staged once per
// block. The reduction (KRED <= 64) is one 128-byte K-major line per pixel (swizzled, columns past KRED zero),
// so a tile is KS k16 steps of NC m64n64 wgmma.
//
// Shared memory (1024-aligned): the filters, NC chunks of B_CHUNK bytes (input gradient: MN-major, a line per
// reduction channel; forward: K-major, a row per output channel); then per warpgroup two A buffers of 8 KB and
// two staging buffers of 64 * NOUT output elements.
#include "conv_params.h"
#include "conv_tma_params.h"  // wgmma_common.h's TMA helpers name its tensor map
#include "mma_common.h"
#include "narrow_conv.cuh"
#include "wgmma_common.h"
#include "wgmma_octets.h"

namespace tt_rows1x1 {

TT_DEVICE void bulk_store(void* dst, unsigned src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src), "r"(bytes)
               : "memory");
}

}  // namespace tt_rows1x1

template <typename TA, typename TC, int DIR, bool NCHW, int NC, int KS, int WGS>
__global__ void __launch_bounds__(128 * WGS, 1) wgmma_rows1x1(const TtConvParams p) {
  using namespace tt_wg;
  using tt_mma::u32;
  using tt_narrow::swizzle128;
  static_assert((DIR == 0 || DIR == 1) && !NCHW, "wgmma_rows1x1: forward pass or input gradient, NHWC");
  static_assert(sizeof(TA) == 2 && sizeof(TC) == 2, "16-bit inputs and output");
  static_assert(NC >= 1 && NC <= 4 && KS >= 1 && KS <= 4 && (WGS == 1 || WGS == 2), "parameters");
  constexpr int TNB = DIR == 1 ? 1 : 0;  // the filters: MN-major for the input gradient (W[k][c], c the output)
  typedef TtWgmma<64, IsBf16<TA>::value, 0, TNB> Mma;
  constexpr u32 B_CHUNK = DIR == 1 ? KS * 16 * 128 : 64 * 128;
  constexpr u32 A_BYTES = 64 * 128;

  const int kred = DIR == 1 ? p.k : p.c, nout = DIR == 1 ? p.c : p.k;
  const long long m_total = (long long)p.n * p.h * p.w;
  const int tiles = int((m_total + 63) / 64);
  const TA* src = static_cast<const TA*>(DIR == 1 ? p.y : p.x);
  TC* dst = static_cast<TC*>(DIR == 1 ? p.x : p.y);
  const TA* wt = static_cast<const TA*>(p.wt);

  extern __shared__ __align__(1024) unsigned char smem_dyn[];
  unsigned char* const smem = smem_dyn + pad_to_1024(smem_addr(smem_dyn));
  const u32 sbase = smem_addr(smem);
  const u32 stage_out = (u32)(64 * nout * 2);  // a staging buffer: 64 rows of the output as they lie in memory
  const u32 a0 = sbase + NC * B_CHUNK;
  const u32 s0 = a0 + WGS * 2 * A_BYTES;
  const u32 all_bytes = NC * B_CHUNK + WGS * 2 * A_BYTES;

  // Zero the filters and A buffers (columns past KRED, lines past it, channels past NOUT stay zero), then stage
  // the filters: W[k][c] (R = S = 1), eight channels of c a 16-byte chunk.
  for (u32 i = threadIdx.x * 16; i < all_bytes; i += blockDim.x * 16)
    *reinterpret_cast<uint4*>(smem + i) = make_uint4(0, 0, 0, 0);
  __syncthreads();
  const bool wvec = ((unsigned long long)wt & 15) == 0;
  for (int i = threadIdx.x; i < p.k * (p.c / 8); i += blockDim.x) {
    const int k = i / (p.c / 8), c0 = (i - k * (p.c / 8)) * 8;
    uint4 v;
    if (wvec) {
      v = *reinterpret_cast<const uint4*>(wt + (long long)k * p.c + c0);
    } else {
      unsigned short e[8];
      for (int j = 0; j < 8; ++j) e[j] = reinterpret_cast<const unsigned short*>(wt)[(long long)k * p.c + c0 + j];
      v = make_uint4(e[0] | (u32)e[1] << 16, e[2] | (u32)e[3] << 16, e[4] | (u32)e[5] << 16, e[6] | (u32)e[7] << 16);
    }
    // Input gradient: line k (reduction), chunk c0 / 8 of output chunk c0 / 64. Forward: row k (output) of chunk
    // k / 64, reduction chunk c0 / 8.
    const u32 off = DIR == 1 ? (c0 / 64) * B_CHUNK + swizzle128(k, (c0 % 64) / 8)
                             : (k / 64) * B_CHUNK + swizzle128(k % 64, c0 / 8);
    *reinterpret_cast<uint4*>(smem + off) = v;
  }
  fence_async_smem();
  __syncthreads();

  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  const u32 abuf = a0 + wg * 2 * A_BYTES, sbuf = s0 + wg * 2 * stage_out;
  const bool vec = ((unsigned long long)src & 15) == 0;
  const bool out_vec = ((unsigned long long)dst & 15) == 0;
  const int vecs = kred / 8;
  // Tile t's 64 pixels x KRED into A buffer `b` (rows past the tensor zero-filled).
  auto load_a = [&](int b, int t) {
    const long long m0 = (long long)t * 64;
    for (int e = tid; e < 64 * vecs; e += 128) {
      const int row = e / vecs, v = e - row * vecs;
      const bool ok = m0 + row < m_total;
      tt_narrow::copy8(abuf + b * A_BYTES + swizzle128(row, v), src + (ok ? (m0 + row) * kred + v * 8 : 0), ok, vec, smem,
                       sbase);
    }
  };
  const u64 db0 = DIR == 1 ? desc(sbase, KS * 16 * 128, 1024) : desc(sbase, 16, 1024);
  constexpr u32 B_STEP = DIR == 1 ? 2048 : 32;  // bytes of a k16 step: 16 lines (MN-major), 32 bytes (K-major)

  float acc[NC][32];
  const int first = blockIdx.x * WGS + wg, step = gridDim.x * WGS;
  if (first < tiles) load_a(0, first);
  tt_mma::cp_async_commit();
  int i = 0;
  for (int t = first; t < tiles; t += step, ++i) {
    if (t + step < tiles) load_a((i + 1) & 1, t + step);
    tt_mma::cp_async_commit();
    tt_mma::cp_async_wait<1>();
    fence_async_smem();
    named_sync(1 + wg, 128);

    const u64 da = desc(abuf + (i & 1) * A_BYTES, 16, 1024);
    wg_fence();
    TT_UNROLL
    for (int nc = 0; nc < NC; ++nc)
      TT_UNROLL
      for (int kk = 0; kk < KS; ++kk)
        Mma::mma(acc[nc], da + kk * (32 / 16), db0 + (u64)((nc * B_CHUNK + kk * B_STEP) >> 4), kk > 0 ? 1 : 0);
    wg_commit();
    wg_wait<0>();
    fence_regs<NC * 32>(&acc[0][0]);

    // The tile's rows into staging buffer i & 1, as dx's rows lie: the buffer's store of two tiles ago has read it.
    const u32 sb = sbuf + (i & 1) * stage_out;
    if (tid == 0) bulk_wait_read<1>();
    named_sync(1 + wg, 128);  // (and, unaligned, every thread's copy-out of this buffer two tiles ago is done)
    // Fragment j of chunk nc: rows 16 warp + g (+ 8 h), columns nc * 64 + 8 j + 2 t (+ 1); lane t stores the 8
    // columns of fragment j0 + t (wgmma_octets.h).
    TT_UNROLL
    for (int nc = 0; nc < NC; ++nc)
      TT_UNROLL
      for (int h = 0; h < 2; ++h)
        TT_UNROLL
        for (int j0 = 0; j0 < 8; j0 += 4) {
          const uint4 o = tt_octets::row_octet<TC>(acc[nc], j0, h, lane);
          const int row = 16 * warp + (lane >> 2) + 8 * h, col = nc * 64 + 8 * (j0 + (lane & 3));
          if (col < nout)
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(sb + (u32)((row * nout + col) * 2)),
                         "r"(o.x), "r"(o.y), "r"(o.z), "r"(o.w)
                         : "memory");
        }
    const long long m0 = (long long)t * 64;
    const int rows = int(m_total - m0 < 64 ? m_total - m0 : 64);
    if (out_vec) {
      fence_async_smem();  // the staging's generic writes before the bulk copy reads them
      named_sync(1 + wg, 128);
      if (tid == 0) {
        tt_rows1x1::bulk_store(dst + m0 * nout, sb, (u32)(rows * nout * 2));
        bulk_commit();
      }
    } else {  // dx (y) not 16-byte aligned: the threads copy the rows out element by element
      named_sync(1 + wg, 128);
      const unsigned short* st = reinterpret_cast<const unsigned short*>(smem + (sb - sbase));
      unsigned short* out = reinterpret_cast<unsigned short*>(dst) + m0 * nout;
      for (int e = tid; e < rows * nout; e += 128) out[e] = st[e];
    }
  }
  if (tid == 0) bulk_wait_read<0>();
}
