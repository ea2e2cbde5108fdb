#!/usr/bin/env python3
"""Why the vendor rung can time apart from torch.matmul on one shape: the kernels each side runs
(torch.profiler), and each side timed with do_bench (L2 cleared) and back to back (no clearing).
usage: vendor_gemm_probe.py --lib LIB [--db DB] NAME:TA:TB:M:N:K ..."""
import argparse
import os
import sys

import torch
import triton.testing

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import vs_torch  # noqa: E402


def loop_ms(fn, n=200):
    for _ in range(10):
        fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--db", default="")
    ap.add_argument("shapes", nargs="+")
    a = ap.parse_args()
    tt = vs_torch.Tiletune(a.lib, a.db, "")
    for spec in a.shapes:
        name, ta, tb, m, n, k = spec.split(":")
        cs = vs_torch.gemm_case(tt, name, ta, tb, int(m), int(n), int(k), torch.bfloat16)
        print(f"== {name} {ta}{tb} {m}x{n}x{k}: {cs['explain']()}  err {cs['check']():.1e}")
        for side in ("ours", "theirs"):
            fn = cs[side]
            bench = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
            print(f"  {side:6s} do_bench {bench * 1e3:8.2f} us   back-to-back {loop_ms(fn) * 1e3:8.2f} us")
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    fn()
                torch.cuda.synchronize()
            for ev in prof.key_averages():
                if ev.device_type == torch.autograd.DeviceType.CUDA:
                    print(f"    kernel {ev.key[:150]}  {ev.device_time_total / max(ev.count, 1):.2f} us x{ev.count}")


if __name__ == "__main__":
    main()
