// Index math of the MFMA GEMM template (mfma_gemm.cuh), as plain constexpr functions so that the
// very same functions run in the kernel (hipRTC treats constexpr functions as host+device) and in
// the host-side emulation test (tests/test_hip_mfma.cpp), which checks that every product
// A(i,k)*B(k,j) of a macro tile lands exactly once in C(i,j) without an AMD GPU.
//
// MFMA register layouts used (single-block instructions, wave64, CDNA1/CDNA2 ISA):
//   v_mfma_f32_32x32x8{f16,bf16_1k}, v_mfma_f32_16x16x16{f16,bf16_1k}: KPL = 4 values per lane
//   v_mfma_f32_32x32x2f32, v_mfma_f32_16x16x4f32:                        KPL = 1 value per lane
//   A (MI x K):  lane l, slot s holds A[l % MI][(l / MI) * KPL + s]
//   B (K x MI):  lane l, slot s holds B[(l / MI) * KPL + s][l % MI]
//   D (MI x MI): lane l, accumulator r holds D[(r / 4) * 4 * G + (l / MI) * 4 + r % 4][l % MI],
//                G = 64 / MI lane groups, r < MI * MI / 64
// (gfx908's v_mfma_f32_32x32x4bf16 / 16x16x8bf16 take 2 values per lane; the kernel issues two
//  of them on the two halves of a KPL = 4 fragment, which only permutes k identically for A and B.)
// Only integer arithmetic, no includes: the header is compiled by hipRTC and the host compiler.
#ifndef TILETUNE_MFMA_LAYOUT_H
#define TILETUNE_MFMA_LAYOUT_H

namespace tt_mfma {

constexpr int groups(int mi) { return 64 / mi; }                  // lane groups along k
constexpr int inst_k(int mi, int kpl) { return groups(mi) * kpl; }  // K of one instruction
constexpr int acc_regs(int mi) { return mi * mi / 64; }            // accumulators per lane

// Operand fragments: row of A (= column of B) and k within the instruction.
constexpr int frag_mn(int lane, int mi) { return lane % mi; }
constexpr int frag_k(int lane, int slot, int mi, int kpl) { return (lane / mi) * kpl + slot; }

// Accumulator element (row, column) within the instruction's MI x MI block.
constexpr int acc_row(int lane, int r, int mi) { return (r / 4) * 4 * groups(mi) + (lane / mi) * 4 + r % 4; }
constexpr int acc_col(int lane, int mi) { return lane % mi; }

// Waves tile the macro tile m-fastest; wave tile WM x WN.
constexpr int wave_m0(int wave, int mt0, int wm) { return (wave % (mt0 / wm)) * wm; }
constexpr int wave_n0(int wave, int mt0, int wm, int wn) { return (wave / (mt0 / wm)) * wn; }

// Staging of an operand tile as it lies in global memory: CONT x STRD elements, CONT along the
// contiguous dimension, VW-element vectors numbered v = 0, 1, ... (thread tid stages
// v = tid + i * THREADS). Element j of vector v sits at (stage_cont, stage_strd) of the tile.
constexpr int stage_cont(int v, int j, int cont, int vw) { return (v % (cont / vw)) * vw + j; }
constexpr int stage_strd(int v, int cont, int vw) { return v / (cont / vw); }

// LDS tile: one row per m (A) or n (B), k contiguous, pitch = DU + PAD elements, so that a lane's
// KPL fragment values are one 8-byte (16-bit types) or 4-byte (fp32) LDS read.
constexpr int lds_index(int mn, int k, int pitch) { return mn * pitch + k; }

// Width of the LDS vector stores of a k-contiguous staged vector: the largest power of two (<= 8)
// dividing both the global vector width and the pitch, so that every store is naturally aligned.
constexpr int common_pow2(int a, int b) {
  return (a % 8 == 0 && b % 8 == 0) ? 8 : (a % 4 == 0 && b % 4 == 0) ? 4 : (a % 2 == 0 && b % 2 == 0) ? 2 : 1;
}

}  // namespace tt_mfma

#endif
