"""A Triton matmul autotuned over 12 tile configurations: the peer that benchmarks/vs_torch.py times
beside torch.matmul. Any strides (the operands of every layout are views), fp32 accumulation;
fp32 inputs run as tf32 or as exact fp32 FMAs, as the caller asks.

matmul(x, y, out, precision) computes out = x @ y; the first call for a shape autotunes (Triton's
do_bench over the configurations, keyed by the sizes and strides)."""
import triton
import triton.language as tl

# (BM, BN, BK, stages, warps): the large tiles Hopper's wgmma wants, the mid-size ones for skinny or
# small problems, and deeper pipelines for short K steps.
_TILES = [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4), (128, 128, 64, 3, 8),
          (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (128, 128, 32, 4, 4), (64, 64, 64, 5, 4),
          (128, 256, 32, 4, 8), (256, 64, 64, 4, 4), (64, 256, 64, 4, 4), (64, 64, 32, 5, 2)]
CONFIGS = [triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_stages=s, num_warps=w)
           for bm, bn, bk, s, w in _TILES]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K", "sxm", "sxk", "syk", "syn", "PRECISION"])
@triton.jit
def _matmul(x, y, z, M, N, K, sxm, sxk, syk, syn, szm, szn, PRECISION: tl.constexpr,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    # Grouped ordering: GROUP row blocks share their columns of y in L2.
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BM)
    blocks_n = tl.cdiv(N, BN)
    per_group = GROUP * blocks_n
    first_m = (pid // per_group) * GROUP
    rows = min(blocks_m - first_m, GROUP)
    pm = first_m + (pid % per_group) % rows
    pn = (pid % per_group) // rows
    # Rows and columns past the edge read a valid row (modulo) and are masked at the store: only K is
    # masked in the loop.
    rm = (pm * BM + tl.arange(0, BM)) % M
    rn = (pn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    xs = x + rm[:, None] * sxm + rk[None, :] * sxk
    ys = y + rk[:, None] * syk + rn[None, :] * syn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        left = K - k0 * BK
        a = tl.load(xs, mask=rk[None, :] < left, other=0.0)
        b = tl.load(ys, mask=rk[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        xs += BK * sxk
        ys += BK * syk
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    tl.store(z + om[:, None] * szm + on[None, :] * szn, acc.to(z.dtype.element_ty),
             mask=(om[:, None] < M) & (on[None, :] < N))


def matmul(x, y, out, precision="ieee"):
    """out (M x N) = x (M x K) @ y (K x N). precision: "tf32" or "ieee" (fp32 inputs; ignored for 16-bit)."""
    M, K = x.shape
    N = y.shape[1]

    def grid(meta):
        return (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
    _matmul[grid](x, y, out, M, N, K, x.stride(0), x.stride(1), y.stride(0), y.stride(1), out.stride(0),
                  out.stride(1), PRECISION=precision)
    return out
