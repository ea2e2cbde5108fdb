#!/usr/bin/env python3
"""What a call tiletune.torch hands back to PyTorch costs on the host: per call, plain PyTorch against
tiletune.torch enabled with no database (every call handed back) on each route (TILETUNE_TORCH_ROUTE:
the C++ one, python/tiletune/_route.cpp, and the Python one). Timed as a loop of calls and one
synchronize, so on a GPU the time is the host's wherever it exceeds the kernel's (small problems).
--served: what a call tiletune *serves* costs instead: serve="all" (tiletune's vendor rung, or on
the host backend its own kernels) on problems so small that the kernels are negligible next to the
route, whose cost is then the difference to plain PyTorch; on the C++ route every call after the
first of a problem is served from C++ (stats' routed_cpp).
--profile adds cProfile over the Python route's loops: where its time goes.

Run on a GPU with PYTHONPATH=python and TILETUNE_LIBRARY set (scripts/h200_torch.sh sets them):
    python3 benchmarks/torch_handback_probe.py [--device cuda] [--calls 2000] [--served] [--profile]
"""
import argparse
import os
import time

import torch

import tiletune.torch as ttt
from tiletune import _route


def cases(device, served):
    # Served: tiny problems (the host backend's kernels are fp32's fastest; the GPU's bf16 as trained).
    dtype = torch.float32 if served and device == "cpu" else torch.bfloat16
    t = dict(device=device, dtype=dtype)
    mn, n, c, hw = (16, 1, 8, 6) if served else (256, 8, 64, 14)
    a, b = torch.randn(mn, mn, **t), torch.randn(mn, mn, **t)
    cl = torch.channels_last
    x = torch.randn(n, c, hw, hw, **t).to(memory_format=cl)
    w = torch.randn(c, c, 3, 3, **t).to(memory_format=cl)
    dy = torch.randn(n, c, hw, hw, **t).to(memory_format=cl)
    conv_bwd = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                           [True, True, False])
    name = str(dtype).replace("torch.", "")
    return {
        f"torch.mm {mn}x{mn}x{mn} {name}": lambda: torch.mm(a, b),
        f"conv2d {n}x{c}x{hw}x{hw}, 3x3, {name} channels_last": lambda: torch.nn.functional.conv2d(x, w, padding=1),
        "convolution_backward of it (both gradients)": conv_bwd,
    }


def per_call_us(fn, calls, device):
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for _ in range(50):
        fn()
    sync()
    best = float("inf")
    for _ in range(3):  # the best of three: a loaded host only ever adds time
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--served", action="store_true", help="calls tiletune serves (see above)")
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    fns = cases(args.device, args.served)
    kind = args.device.split(":")[0]
    times = {name: {"plain": per_call_us(fn, args.calls, args.device)} for name, fn in fns.items()}
    for route in ("python", "cpp"):
        os.environ["TILETUNE_TORCH_ROUTE"] = route
        t0 = time.perf_counter()
        ttt.enable(devices=(kind,), serve="all" if args.served else "tuned")
        enable_s = time.perf_counter() - t0
        try:
            for name, fn in fns.items():
                times[name][route] = per_call_us(fn, args.calls, args.device)
            if args.profile and route == "python":
                import cProfile
                import pstats
                pr = cProfile.Profile()
                pr.enable()
                for fn in fns.values():
                    for _ in range(args.calls):
                        fn()
                pr.disable()
                pstats.Stats(pr).sort_stats("tottime").print_stats(18)
        finally:
            s = ttt.disable()
        assert s["route"] == route, s
        if args.served:
            assert not s["declined"], s["declined"]
            calls, from_cpp = sum(s["routed"].values()), sum(s["routed_cpp"].values())
            print(f"{route} route: {calls} calls served, {from_cpp} of them from C++")
        else:
            assert not s["routed"], s
        if route == "cpp":
            print(f"C++ route: first enable() {enable_s:.1f} s (build or load of the extension: "
                  f"{_route.build_seconds:.1f} s)")
    what = "served by tiletune" if args.served else "handed back"
    print(f"\n| call ({args.device}, {what}) | plain PyTorch us | Python route us | C++ route us | C++ route / plain |")
    print("|---|---|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {t['plain']:.1f} | {t['python']:.1f} | {t['cpp']:.1f} | {t['cpp'] / t['plain']:.3f} |")


if __name__ == "__main__":
    main()
