#!/usr/bin/env python3
"""cuDNN through PyTorch on the ResNet-50 layers of configs/shapes/conv_resnet50.json: a cross-check of
benchmarks/conv_vs_cudnn's baseline (which calls cuDNN's legacy cudnnFind*AlgorithmEx). PyTorch uses
cuDNN's v8 graph API with torch.backends.cudnn.benchmark, so it may pick engines the legacy find
does not offer. bf16, channels_last (NHWC), batch from the file or --batch.

Method: CUDA events around `--iters` back-to-back calls after a warm-up (the benchmark search happens
there), median of `--rounds`; the same input buffers every call (no L2 rotation, unlike
conv_vs_cudnn), so small layers may read from L2 here.
Usage: python3 benchmarks/torch_conv_crosscheck.py SHAPES_JSON [--out FILE.md]"""
import argparse, json, statistics, sys

import torch
import torch.nn.functional as F


def time_ms(fn, iters, rounds):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / iters)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shapes")
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    spec = json.load(open(a.shapes))
    n = a.batch or spec["n"]
    dev = torch.device("cuda")
    lines = [f"# cuDNN {torch.backends.cudnn.version()} through PyTorch {torch.__version__} (cudnn.benchmark), "
             f"{torch.cuda.get_device_name()}, batch {n}, bf16, channels_last",
             "", "| layer | fwd TFLOP/s | dgrad TFLOP/s | wgrad TFLOP/s |", "|---|---|---|---|"]
    for L in spec["layers"]:
        c, k, h, w, r, s = L["c"], L["k"], L["h"], L["w"], L["r"], L["s"]
        st, pd = L.get("stride", 1), L.get("pad", 0)
        x = torch.randn(n, c, h, w, device=dev, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
        wt = torch.randn(k, c, r, s, device=dev, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
        y = F.conv2d(x, wt, stride=st, padding=pd)
        dy = torch.randn_like(y)
        p, q = y.shape[2], y.shape[3]
        flops = 2.0 * n * p * q * k * c * r * s

        def bwd(mask):
            return lambda: torch.ops.aten.convolution_backward(dy, x, wt, None, [st, st], [pd, pd], [1, 1], False,
                                                               [0, 0], 1, mask)

        res = []
        for fn in (lambda: F.conv2d(x, wt, stride=st, padding=pd), bwd([True, False, False]), bwd([False, True, False])):
            res.append(flops / time_ms(fn, a.iters, a.rounds) / 1e9)
        lines.append(f"| {L['name']} c{c} k{k} {h}x{w} {r}x{s} u{st} | {res[0]:.1f} | {res[1]:.1f} | {res[2]:.1f} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if a.out:
        open(a.out, "w").write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
