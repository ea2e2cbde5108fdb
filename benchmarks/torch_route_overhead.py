#!/usr/bin/env python3
"""What routing through tiletune.torch costs per call: torch.matmul on the same tensors with
PyTorch's kernel, and with tiletune.torch enabled, no database:
- serve="all": through tiletune's vendor rung (the same library, so the difference is the route),
  timed with triton.testing.do_bench (median, L2 cleared) on a GPU, and per call on the host;
- serve="tuned" (the default): an untuned problem is handed back to PyTorch's own kernel; what is
  left is the dispatch mode's and the decision's cost, per call on the host.

usage: torch_route_overhead.py [--sizes 256,1024,4096] [--dtype bf16] [--device cuda]
"""
import argparse
import time

import torch

import tiletune.torch as ttt


def host_us(fn, n=2000):
    """Host time per call (what a trainer's Python thread spends), after a warm-up."""
    for _ in range(50):
        fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="256,1024,4096")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[args.dtype]
    gpu = args.device.startswith("cuda")
    if gpu:
        from triton.testing import do_bench
    print("| size | PyTorch us (device) | routed us (device) | ratio | PyTorch us (host) | routed us (host) | "
          "handed back us (host) |")
    print("|---|---|---|---|---|---|---|")
    for n in map(int, args.sizes.split(",")):
        a = torch.randn(n, n, device=args.device, dtype=dtype)
        b = torch.randn(n, n, device=args.device, dtype=dtype)
        f = lambda: torch.matmul(a, b)
        ref = f()
        if gpu:
            plain_dev = do_bench(f, return_mode="median") * 1e3
        plain_host = host_us(f)
        ttt.enable(devices=(args.device.split(":")[0],), serve="all")
        try:
            out = f()
            err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
            assert err < 2e-2, err
            if gpu:
                routed_dev = do_bench(f, return_mode="median") * 1e3
            routed_host = host_us(f)
            s = ttt.stats()
        finally:
            ttt.disable()
        assert s["routed"].get("mm", 0) > 0, s
        ttt.enable(devices=(args.device.split(":")[0],))
        try:
            back_host = host_us(f)
            s = ttt.stats()
        finally:
            ttt.disable()
        assert not s["routed"], s
        if gpu:
            torch.cuda.synchronize()
        dev = f"{plain_dev:.1f} | {routed_dev:.1f} | {plain_dev / routed_dev:.3f}" if gpu else "- | - | -"
        print(f"| {n}^3 | {dev} | {plain_host:.1f} | {routed_host:.1f} | {back_host:.1f} |")


if __name__ == "__main__":
    main()
