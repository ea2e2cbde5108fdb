// TMA tensor maps for the Hopper wgmma template; see tma_arguments.h and
// kernel_templates/wgmma_gemm.cuh for the shared-memory layouts these boxes fill.
#include "ops/cuda/tma_arguments.h"

#include <cstring>
#include <string>

#include "common/error.h"
#include "gpu/cuda/cuda_backend.h"
#include "kernel_templates/conv_tma_params.h"
#include "kernel_templates/gemm_tma_params.h"
#include "kernel_templates/wgmma_conv_index.h"
#include "kernel_templates/wgmma_tap_wgrad_index.h"
#include "solutions/conv_gemm.h"

namespace tiletune::gpu::cuda {

static_assert(sizeof(TtTensorMap) == sizeof(CUtensorMap), "TtTensorMap must mirror CUtensorMap");
static_assert(alignof(TtTensorMap) >= 64, "TMA descriptors must be 64-byte aligned");

namespace {

// A tiled map with the 128-byte swizzle (64-byte where the box's lines are 64 bytes) and zero fill outside
// the tensor into *map, or an error naming `what` and `shape` (the caller's description of the tensor).
void tiled_map(TensorMapEncoder encode, TtTensorMap* map, const char* what, const std::string& shape,
               CUtensorMapDataType dt, cuuint32_t rank, const void* base, const cuuint64_t* dims, const cuuint64_t* strides,
               const cuuint32_t* box, const cuuint32_t* elem_strides, CUtensorMapL2promotion l2,
               CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B) {
  CUtensorMap m;
  std::memset(&m, 0, sizeof m);
  const CUresult r = encode(&m, dt, rank, const_cast<void*>(base), dims, strides, box, elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(std::string("cuTensorMapEncodeTiled failed for ") + what + " (CUresult " +
                std::to_string(static_cast<int>(r)) + ", " + shape + ")");
  std::memcpy(map, &m, sizeof m);
}

// One operand as stored (column-major): `inner` contiguous elements per column, `outer` columns
// ld elements apart, `batch` matrices `stride` elements apart. The box is box_inner x box_outer; a box
// of 64-byte lines (wgmma_gemm's 32-column MN-major B) takes the 64-byte swizzle, any other the 128-byte one.
void encode_operand(TensorMapEncoder encode, TtTensorMap* map, const char* what, CUtensorMapDataType dt,
                    int elem_bytes, const void* base, std::int64_t inner, std::int64_t outer, std::int64_t ld,
                    std::int64_t stride, std::int64_t batch, int box_inner, int box_outer,
                    CUtensorMapL2promotion l2, int box_batch = 1) {
  const std::int64_t row_bytes = ld * elem_bytes;
  std::int64_t batch_bytes = stride * elem_bytes;
  if (batch <= 1) batch_bytes = (row_bytes * outer + 15) / 16 * 16;  // unused; any legal value
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0 || row_bytes % 16 != 0 || batch_bytes % 16 != 0)
    throw Error(std::string("TMA needs a 16-byte aligned ") + what +
                " with leading dimension and batch stride multiples of 16 bytes (ld=" + std::to_string(ld) +
                ", stride=" + std::to_string(stride) + ")");
  cuuint64_t dims[3] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(outer),
                        static_cast<cuuint64_t>(batch < 1 ? 1 : batch)};
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(row_bytes), static_cast<cuuint64_t>(batch_bytes)};
  cuuint32_t box[3] = {static_cast<cuuint32_t>(box_inner), static_cast<cuuint32_t>(box_outer),
                        static_cast<cuuint32_t>(box_batch)};
  cuuint32_t elem_strides[3] = {1, 1, 1};
  tiled_map(encode, map, what,
               "dims " + std::to_string(inner) + "x" + std::to_string(outer) + "x" + std::to_string(batch) + ", ld " +
                   std::to_string(ld),
               dt, 3, base, dims, strides, box, elem_strides, l2,
               box_inner * elem_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B);
}

// A 16-bit NHWC tensor of ch x w x h x n (innermost first), boxes of box[4] elements taken every
// step_w-th column and step_h-th row, 128-byte swizzle, zero fill outside the tensor.
void encode_nhwc(TensorMapEncoder encode, TtTensorMap* map, const char* what, CUtensorMapDataType dt,
                 const void* base, int ch, int w, int h, int n, const cuuint32_t (&box)[4], int step_w, int step_h) {
  const cuuint64_t eb = 2;
  cuuint64_t dims[4] = {cuuint64_t(ch), cuuint64_t(w), cuuint64_t(h), cuuint64_t(n)};
  cuuint64_t strides[3] = {ch * eb, cuuint64_t(w) * ch * eb, cuuint64_t(h) * w * ch * eb};
  cuuint32_t elem_strides[4] = {1, cuuint32_t(step_w), cuuint32_t(step_h), 1};
  tiled_map(encode, map, what,
               "NHWC " + std::to_string(n) + "x" + std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(ch) +
                   ", box " + std::to_string(box[0]) + "x" + std::to_string(box[1]) + "x" + std::to_string(box[2]) + "x" +
                   std::to_string(box[3]),
               dt, 4, base, dims, strides, box, elem_strides, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

}  // namespace

std::vector<std::uint8_t> encode_tma_gemm_arguments(TensorMapEncoder encode, const TtGemmParams& p,
                                                    DataType a_type, bool trans_a, bool trans_b, int bm,
                                                    int bn, int bk, int cluster, int l2promo, int epi,
                                                    DataType c_type, int cluster_n) {
  if (!encode) throw Error("wgmma_gemm: cuTensorMapEncodeTiled is not available (no CUDA driver)");
  CUtensorMapL2promotion l2;
  switch (l2promo) {
    case 0: l2 = CU_TENSOR_MAP_L2_PROMOTION_NONE; break;
    case 1: l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_64B; break;
    case 2: l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_128B; break;
    case 3: l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B; break;
    default: throw Error("wgmma_gemm: L2PROMO " + std::to_string(l2promo) + " (0 none, 1 64B, 2 128B, 3 256B)");
  }
  auto map_type = [](DataType t, const char* what) {
    switch (t) {
      case DataType::BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
      case DataType::F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
      // fp32 inputs for tf32 wgmma, which reads the top 19 bits of each element.
      case DataType::F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
      // 8-bit inputs move as bytes (TMA only copies them); the int8 GEMM's int32 output.
      case DataType::E4M3:
      case DataType::E5M2:
      case DataType::S8: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
      case DataType::S32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
      default: throw Error(std::string("wgmma_gemm: unsupported ") + what + " type");
    }
  };
  const CUtensorMapDataType dt = map_type(a_type, "input");
  const int eb = size_of(a_type);
  const int line = 128 / eb;  // elements per 128-byte swizzle atom
  // The kernel's shared layouts assume BK and MN-major boxes of one 128-byte swizzle atom (one 64-byte
  // line for a B of 32 16-bit columns).
  if (cluster != 1 && cluster != 2 && cluster != 4)
    throw Error("wgmma_gemm: CLUSTER " + std::to_string(cluster) + " (1, 2 or 4 tile rows sharing B)");
  if ((cluster_n != 1 && cluster_n != 2 && cluster_n != 4) || cluster * cluster_n > 8)
    throw Error("wgmma_gemm: CLUSTERN " + std::to_string(cluster_n) + " (1, 2 or 4 tile columns, 8 CTAs a cluster at most)");
  // B's tile rows: whole 64-column boxes when it is MN-major, or one box of 32 16-bit columns (64-byte
  // lines); K-major, whole 8-row swizzle atoms (a CTA of a cluster loads its share in one box or atom by
  // atom, tt_kmajor_share_rows).
  const bool b32 = trans_b && bn == 32 && eb == 2;
  const bool bn_ok = trans_b ? bn % 64 == 0 || b32 : bn % 8 == 0;
  if (bk != line || bm % 64 != 0 || !bn_ok || bm > 256 || bn > 256)
    throw Error("wgmma_gemm: unsupported tile " + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
                std::to_string(bk) +
                " (BM a multiple of 64, BN of 8, or of 64 (32 of 16 bits) for an MN-major B, BK one 128-byte line)");
  TtGemmTmaParams args;
  std::memset(&args, 0, sizeof args);
  args.g = p;
  // A: op(A) is M x K. Stored K x M (K-major, trans_a) or M x K (MN-major). In a cluster of
  // cluster_n tile columns each CTA loads (and multicasts) its share: 1 / cluster_n of a K-major
  // tile's rows, of the K lines of each MN-major box.
  if (trans_a)
    encode_operand(encode, &args.map_a, "wgmma_gemm operand A", dt, eb, p.a, p.k, p.m, p.lda, p.stride_a, p.batch, bk,
                   tt_kmajor_share_rows(bm, cluster_n), l2);
  else
    encode_operand(encode, &args.map_a, "wgmma_gemm operand A", dt, eb, p.a, p.m, p.k, p.lda, p.stride_a, p.batch,
                   line, bk / cluster_n, l2);
  // B: op(B) is K x N. Stored K x N (K-major, !trans_b) or N x K (MN-major).
  // In a cluster each CTA loads (and multicasts) its share of B: 1 / cluster of a K-major tile's
  // rows (or 8-row atoms of it), of the K lines of each MN-major box.
  if (!trans_b)
    encode_operand(encode, &args.map_b, "wgmma_gemm operand B", dt, eb, p.b, p.k, p.n, p.ldb, p.stride_b, p.batch, bk,
                   tt_kmajor_share_rows(bn, cluster), l2);
  else
    encode_operand(encode, &args.map_b, "wgmma_gemm operand B", dt, eb, p.b, p.n, p.k, p.ldb, p.stride_b, p.batch,
                   b32 ? 32 : line, bk / cluster, l2);
  // C for the TMA-store epilogue: boxes of one 128-byte line down each of the kernel's epilogue
  // chunk of columns (32; 24 or 16 for 72- or 80-column tiles), in the 128-byte swizzle its
  // staging is written in.
  if (epi == 1) {
    const int cb = size_of(c_type);
    // The tiles whose consumers split N (WN = BN / 2) are 128 columns or more: their chunk is 32 too.
    const int chunk = tt_wgmma_epilogue_chunk(bn);
    encode_operand(encode, &args.map_c, "wgmma_gemm output C (TMA store)", map_type(c_type, "output"), cb, p.c, p.m,
                   p.n, p.ldc, p.stride_c, p.batch, 128 / cb, chunk, l2);
  } else if (epi != 0 && epi != 2 && epi != 3) {
    throw Error("wgmma_gemm: EPI " + std::to_string(epi) +
                " (0 stores from the threads, 1 TMA store, 2 the threads' stores in aligned runs, 3 stores by the "
                "producer's spare warps)");
  }
  std::vector<std::uint8_t> bytes(sizeof args);
  std::memcpy(bytes.data(), &args, sizeof args);
  return bytes;
}

std::vector<std::uint8_t> encode_tma_conv_arguments(Im2colMapEncoder encode_im2col, TensorMapEncoder encode_tiled,
                                                    const TtConvParams& p, ConvDirection direction, DataType in_type,
                                                    int bm, int bn, int phase, int epi, DataType out_type,
                                                    int halo) {
  if (!encode_im2col || !encode_tiled)
    throw Error("wgmma_conv: cuTensorMapEncodeIm2col is not available (no CUDA driver)");
  CUtensorMapDataType dt;
  switch (in_type) {
    case DataType::BF16: dt = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case DataType::F16: dt = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    default: throw Error("wgmma_conv: bf16 or fp16 inputs only");
  }
  const int dir = static_cast<int>(direction);
  const int red_c = direction == ConvDirection::BackwardData ? p.k : p.c;
  const bool phases = phase == 1;
  if (phases && (direction != ConvDirection::BackwardData || p.stride_h * p.stride_w == 1 || p.r < p.stride_h ||
                 p.s < p.stride_w || p.dil_h != 1 || p.dil_w != 1))
    throw Error("wgmma_conv: PHASE 1 is for strided input gradients with dilation 1 and R, S at least the stride");
  const bool bn_ok = (bn % 64 == 0 || (bn == 160 && direction != ConvDirection::BackwardFilter)) && bn <= 256;
  if (p.groups != 1 || red_c % 8 != 0 || p.c % 8 != 0 || p.k % 8 != 0 || bm % 64 != 0 || bm > 256 || !bn_ok ||
      (direction == ConvDirection::BackwardFilter && p.c % 64 != 0) ||
      (direction == ConvDirection::BackwardData && (p.stride_h != 1 || p.stride_w != 1) && !tt_wgconv::dgrad_scatters(p) &&
       !phases))
    throw Error("wgmma_conv: needs groups 1, C and K multiples of 8 (C of 64 for wgrad), 64..256-row "
                "tiles, and dgrad of stride 1 or a 1x1 without padding (C " + std::to_string(p.c) + ", K " +
                std::to_string(p.k) + ", groups " + std::to_string(p.groups) + ", tile " + std::to_string(bm) + "x" +
                std::to_string(bn) + ", direction " + std::to_string(dir) + "; a strided dgrad takes PHASE 1)");
  // The tensors the copies read: fwd x and wt, dgrad dy and wt, wgrad x and dy.
  const void* act = direction == ConvDirection::BackwardData ? p.y : p.x;
  const void* tiled = direction == ConvDirection::BackwardFilter ? p.y : p.wt;
  if (reinterpret_cast<std::uintptr_t>(act) % 16 != 0 || reinterpret_cast<std::uintptr_t>(tiled) % 16 != 0)
    throw Error("wgmma_conv: TMA needs the tensors it reads 16-byte aligned");
  const std::int64_t eb = 2;
  TtConvTmaParams args;
  std::memset(&args, 0, sizeof args);
  args.c = p;
  if (halo == 1 && (direction == ConvDirection::BackwardFilter || phases || p.stride_h != 1 || p.stride_w != 1 ||
                    p.dil_h != 1 || p.dil_w != 1 || epi != 0))
    throw Error("wgmma_conv: HALO 1 is for undilated stride-1 forward and input-gradient convolutions with EPI 0");
  if (halo != 0 && halo != 1)
    throw Error("wgmma_conv: HALO " + std::to_string(halo) + " (0 im2col copies a K step, 1 a patch a tile)");
  // The im2col side: x (fwd, wgrad) or dy (dgrad), NHWC, dimensions innermost first {C, W, H, N}.
  if (halo == 1) {  // HALO: tiled, one patch a tile: box {64, WB, rows, 1}, zero fill past the edges
    const tt_wgconv::Im2col v = tt_wgconv::im2col_of(p, dir);
    const int wb = v.grid_w + p.s - 1, rows = (bm + wb - 2) / wb + p.r;
    if (wb > 256 || rows > 256 || v.pad_h < 0 || v.pad_w < 0)
      throw Error("wgmma_conv: HALO 1 needs a patch of at most 256 x 256 pixels and padding >= 0 (" +
                  std::to_string(wb) + " x " + std::to_string(rows) + ")");
    const cuuint32_t box[4] = {64, cuuint32_t(wb), cuuint32_t(rows), 1};
    encode_nhwc(encode_tiled, &args.map_im2col, "wgmma_conv patch", dt, act, v.src_c, v.src_w, v.src_h, p.n, box, 1, 1);
  } else {
    const tt_wgconv::PhaseGrid g = tt_wgconv::phase_grid(p);
    const tt_wgconv::Im2col v = phases ? tt_wgconv::im2col_phase(p, g) : tt_wgconv::im2col_of(p, dir);
    cuuint64_t dims[4] = {cuuint64_t(v.src_c), cuuint64_t(v.src_w), cuuint64_t(v.src_h), cuuint64_t(p.n)};
    cuuint64_t strides[3] = {cuuint64_t(v.src_c * eb), cuuint64_t(std::int64_t(v.src_w) * v.src_c * eb),
                             cuuint64_t(std::int64_t(v.src_h) * v.src_w * v.src_c * eb)};
    int lower[2], upper[2];
    if (phases) tt_wgconv::phase_corners(p, g, lower, upper);
    else tt_wgconv::im2col_corners(v, p.r, p.s, lower, upper);
    cuuint32_t elem_strides[4] = {1, cuuint32_t(v.stride_w), cuuint32_t(v.stride_h), 1};
    // Pixels per copy: a box of GEMM rows (fwd, dgrad) or one K step of 64 pixels (wgrad).
    const int pixels = direction == ConvDirection::BackwardFilter ? 64 : (bm < 128 ? bm : 128);
    CUtensorMap m;
    std::memset(&m, 0, sizeof m);
    const CUresult r = encode_im2col(&m, dt, 4, const_cast<void*>(act), dims, strides, lower, upper, 64,
                                     cuuint32_t(pixels), elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                     CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
      throw Error("wgmma_conv: cuTensorMapEncodeIm2col failed (CUresult " + std::to_string(int(r)) + ", NHWC " +
                  std::to_string(p.n) + "x" + std::to_string(v.src_h) + "x" + std::to_string(v.src_w) + "x" +
                  std::to_string(v.src_c) + ", corners " + std::to_string(lower[0]) + "," + std::to_string(lower[1]) +
                  " / " + std::to_string(upper[0]) + "," + std::to_string(upper[1]) + ")");
    std::memcpy(&args.map_im2col, &m, sizeof m);
  }
  const std::int64_t rs = std::int64_t(p.r) * p.s;
  switch (direction) {
    case ConvDirection::Forward:
      if (p.c % 64 == 0)  // K rows of R*S*C contiguous elements (KRSC), box {64, BN}
        encode_operand(encode_tiled, &args.map_tiled, "wgmma_conv filters", dt, int(eb), p.wt, rs * p.c, p.k,
                       rs * p.c, 0, 1, 64, bn, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
      else  // {C, R*S, K}, box {64 of C, one tap, BN of K}: a tap's last chunk reads zeros past C
        encode_operand(encode_tiled, &args.map_tiled, "wgmma_conv filters", dt, int(eb), p.wt, p.c, rs, p.c,
                       rs * p.c, p.k, 64, 1, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, bn);
      break;
    case ConvDirection::BackwardData:  // {C, R*S, K}, box {64 of C, one tap, 64 of K}
      encode_operand(encode_tiled, &args.map_tiled, "wgmma_conv filters", dt, int(eb), p.wt, p.c, rs, p.c,
                     rs * p.c, p.k, 64, 1, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, 64);
      break;
    case ConvDirection::BackwardFilter:  // dy as N*P*Q rows of K, box {64 of K, 64 pixels}
      encode_operand(encode_tiled, &args.map_tiled, "wgmma_conv dy", dt, int(eb), p.y, p.k,
                     std::int64_t(p.n) * p.p * p.q, p.k, 0, 1, 64, 64, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
      break;
  }
  // EPI 1: the output as gemm_m rows of gemm_n contiguous elements (y, dx or dW), box {64, 16}: a
  // warp's 16 rows of a 64-column group.
  if (epi == 1) {
    CUtensorMapDataType odt;
    switch (out_type) {
      case DataType::BF16: odt = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
      case DataType::F16: odt = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
      default: throw Error("wgmma_conv: EPI 1 stores 16-bit outputs only");
    }
    if (phases || (direction == ConvDirection::BackwardData && p.stride_h * p.stride_w != 1))
      throw Error("wgmma_conv: EPI 1 stores rows of the output; a strided dgrad's rows are scattered (EPI 0)");
    // A box is 64 columns: a tile of BN 160 ends inside its third, whose last 32 columns would land in the next
    // tile's unless there is none.
    if (bn % 64 != 0 && p.gemm_n > bn)
      throw Error("wgmma_conv: EPI 1 with BN " + std::to_string(bn) + " needs one tile column (N " +
                  std::to_string(p.gemm_n) + ")");
    void* out = direction == ConvDirection::Forward ? p.y : direction == ConvDirection::BackwardData ? p.x : p.wt;
    encode_operand(encode_tiled, &args.map_out, "wgmma_conv output (TMA store)", odt, 2, out, p.gemm_n, p.gemm_m,
                   p.gemm_n, 0, 1, 64, 16, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  } else if (epi == 2) {  // the warps' own vector stores: no map, a phase's rows found as EPI 0 finds them
    if (out_type != DataType::BF16 && out_type != DataType::F16)
      throw Error("wgmma_conv: EPI 2 stores 16-bit outputs only");
    if (!phases && direction == ConvDirection::BackwardData && p.stride_h * p.stride_w != 1)
      throw Error("wgmma_conv: EPI 2 stores a strided dgrad's rows by its phases (PHASE 1), not scattered (EPI 0)");
  } else if (epi != 0) {
    throw Error("wgmma_conv: EPI " + std::to_string(epi) +
                " (0 the staged epilogue, 1 the warps' TMA stores, 2 the warps' vector stores)");
  }
  std::vector<std::uint8_t> bytes(sizeof args);
  std::memcpy(bytes.data(), &args, sizeof args);
  return bytes;
}

std::vector<std::uint8_t> make_tma_conv_arguments(const TtConvParams& p, const ConvProblem& problem,
                                                  const Variables& vars) {
  if (problem.layout != ConvLayout::NHWC) throw Error("wgmma_conv: NHWC convolutions only");
  auto get = [&](const char* name) -> int {
    auto it = vars.find(name);
    if (it == vars.end()) throw Error(std::string("wgmma_conv: variable ") + name + " missing");
    return static_cast<int>(it->second);
  };
  auto get_or = [&](const char* name, int fallback) {  // absent in an older database's solutions
    auto it = vars.find(name);
    return it == vars.end() ? fallback : static_cast<int>(it->second);
  };
  return encode_tma_conv_arguments(im2col_map_encoder(), tensor_map_encoder(), p, problem.direction,
                                   problem.in_type, get("BM"), get("BN"), get_or("PHASE", 0), get_or("EPI", 0),
                                   problem.out_type, get_or("HALO", 0));
}

std::vector<std::uint8_t> encode_tma_conv_rows_arguments(TensorMapEncoder encode, const TtConvParams& p,
                                                         const ConvProblem& problem, int pack) {
  if (!encode) throw Error("wgmma_tap_wgrad: cuTensorMapEncodeTiled is not available (no CUDA driver)");
  if (problem.layout != ConvLayout::NHWC || problem.direction != ConvDirection::BackwardFilter || p.groups != 1 ||
      p.stride_h < 1 || p.stride_h > 2 || p.stride_w < 1 || p.stride_w > 2 || p.dil_h != 1 || p.dil_w != 1 ||
      p.c % 8 != 0 || p.k % 8 != 0)
    throw Error("wgmma_tap_wgrad: weight gradients of NHWC undilated convolutions of stride 1 or 2 with C and K "
                "multiples of 8, groups 1 (C " + std::to_string(p.c) + ", K " + std::to_string(p.k) + ", stride " +
                std::to_string(p.stride_h) + "x" + std::to_string(p.stride_w) + ")");
  CUtensorMapDataType dt;
  switch (problem.in_type) {
    case DataType::BF16: dt = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case DataType::F16: dt = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    default: throw Error("wgmma_tap_wgrad: bf16 or fp16 inputs only");
  }
  if (reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0 || reinterpret_cast<std::uintptr_t>(p.y) % 16 != 0)
    throw Error("wgmma_tap_wgrad: TMA needs x and dy 16-byte aligned");
  const tt_tapr::Packing k = tt_tapr::packing(p, pack);
  // A box of box_w x rows elements walked with traversal strides (step_w, step_h): box dimensions
  // of step_w box_w and step_h rows.
  auto rows_map = [&](TtTensorMap* out, const char* what, const void* base, int ch, int w, int h, int box_w,
                      int step_w, int step_h) {
    const cuuint32_t box[4] = {64, cuuint32_t(box_w * step_w), cuuint32_t(k.rows * step_h), cuuint32_t(k.imgs)};
    encode_nhwc(encode, out, what, dt, base, ch, w, h, p.n, box, step_w, step_h);
  };
  TtConvTmaParams args;
  std::memset(&args, 0, sizeof args);
  args.c = p;
  rows_map(&args.map_im2col, "wgmma_tap_wgrad x", p.x, p.c, p.w, p.h, k.pitch, p.stride_w, p.stride_h);
  rows_map(&args.map_tiled, "wgmma_tap_wgrad dy", p.y, p.k, p.q, p.p, k.dy_box_w, 1, 1);
  std::vector<std::uint8_t> bytes(sizeof args);
  std::memcpy(bytes.data(), &args, sizeof args);
  return bytes;
}

std::vector<std::uint8_t> make_tma_conv_rows_arguments(const TtConvParams& p, const ConvProblem& problem,
                                                       const Variables& vars) {
  auto it = vars.find("PACK");  // absent in an older database's solutions: 0
  return encode_tma_conv_rows_arguments(tensor_map_encoder(), p, problem, it == vars.end() ? 0 : int(it->second));
}

namespace {

// encode_tma_gemm_arguments with the tile, cluster, L2 promotion and epilogue of a solution's
// variables, for the GEMM `problem` (its types and transposes).
std::vector<std::uint8_t> encode_gemm_of_solution(TensorMapEncoder encode, const TtGemmParams& p,
                                                  const GemmProblem& problem, const Variables& vars) {
  auto get = [&](const char* name) -> int {
    auto it = vars.find(name);
    if (it == vars.end()) throw Error(std::string("wgmma_gemm: variable ") + name + " missing");
    return static_cast<int>(it->second);
  };
  // Optional: KernelTemplate::variables() gives a solution without them (an older database's)
  // the template's default; a template without them gets the former fixed values.
  auto get_or = [&](const char* name, int fallback) {
    auto it = vars.find(name);
    return it == vars.end() ? fallback : static_cast<int>(it->second);
  };
  return encode_tma_gemm_arguments(encode, p, problem.a_type, problem.trans_a, problem.trans_b, get("BM"),
                                   get("BN"), get("BK"), get_or("CLUSTER", 1), get_or("L2PROMO", 3),
                                   get_or("EPI", 0), problem.c_type, get_or("CLUSTERN", 1));
}

}  // namespace

std::vector<std::uint8_t> make_tma_gemm_arguments(const TtGemmParams& p, const GemmProblem& problem,
                                                  const Variables& vars) {
  return encode_gemm_of_solution(tensor_map_encoder(), p, problem, vars);
}

std::vector<std::uint8_t> encode_tma_conv_gemm_arguments(TensorMapEncoder encode, const TtConvParams& p,
                                                         const Problem& problem, const Variables& vars) {
  const ConvProblem& conv = problem.conv();
  if (auto why = conv_gemm_refusal(conv)) throw Error("conv_as_gemm: not a plain GEMM: " + *why);
  if (conv.in_type != DataType::BF16 && conv.in_type != DataType::F16)
    throw Error("conv_as_gemm: bf16 or fp16 inputs only");
  const ConvGemm& g = problem.conv_gemm();
  return encode_gemm_of_solution(encode, conv_gemm_params(g, p), g.gemm, vars);
}

std::vector<std::uint8_t> make_tma_conv_gemm_arguments(const TtConvParams& p, const Problem& problem,
                                                       const Variables& vars) {
  return encode_tma_conv_gemm_arguments(tensor_map_encoder(), p, problem, vars);
}

}  // namespace tiletune::gpu::cuda
