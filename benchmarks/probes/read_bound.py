"""What a plain read of a skinny GEMM's A costs under do_bench (median, L2 cleared), beside the GEMM itself
through torch.matmul: the floor a skinny GEMM (N of 8-16, bound by reading A) can reach measured as the
headline tables measure. Usage: python3 benchmarks/probes/read_bound.py [M K N]  (default skinny16: 4096 4096 16)."""
import sys

import torch
import triton


def main():
    m, k, n = (int(x) for x in sys.argv[1:4]) if len(sys.argv) >= 4 else (4096, 4096, 16)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    nbytes = a.numel() * a.element_size()
    print(f"{torch.cuda.get_device_name()}; A {m} x {k} bf16 ({nbytes / 2**20:.0f} MiB), N {n}")
    for name, f in [("a.sum() (one read of A)", lambda: a.sum()), ("a.sum(dim=1)", lambda: a.sum(dim=1)),
                    (f"torch.matmul (TN {m}x{n}x{k})", lambda: torch.matmul(b, a.t())),
                    ("a.clone() (read and write)", lambda: a.clone())]:
        ms = triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")
        print(f"{name}: {ms * 1000:.1f} us under do_bench, {nbytes / ms / 1e9:.2f} TB/s of A")


if __name__ == "__main__":
    main()
