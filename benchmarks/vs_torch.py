#!/usr/bin/env python3
"""tiletune's C API against PyTorch, the way a trainer would call it.

--set untuned: GEMMs and convolutions of common models that no shipped config names; --set shipped:
the shapes the shipped configs tune (configs/shapes/gemm.json, configs/shapes/conv_resnet50.json in all
three directions). --dtype bf16 / fp16 / tf32 / fp32: the GEMMs' type (tf32: fp32 tensors on tf32
tensor cores, PyTorch with allow_tf32; fp32: exact fp32 on both sides). Every 16- and 32-bit GEMM is
also timed through a Triton matmul autotuned over 12 tile configurations (benchmarks/triton_matmul.py),
and the table gives the ratio against the faster of PyTorch and Triton. --dtype fp8 / int8: the GEMMs of configs/h200/h200_gemm_fp8_int8.json
(gemm.json's shapes as TN, 16-byte aligned) in that type, against torch._scaled_mm (e4m3 in, bf16
out, per-tensor scales; cuBLASLt; the config's problems with "b_type": "e5m2" as e4m3 A x e5m2 B, a
kind of their own, through tiletune_gemm_strided_batched_mixed) and torch._int_mm (int8 in, int32 out; cuBLASLt); tiletune gets
the product of the two scales as alpha. Each problem runs on the same PyTorch tensors, in one process, through
tiletune_gemm / tiletune_conv_* on PyTorch's current stream, and through PyTorch itself
(torch.matmul on cuBLAS; convolutions in cuDNN benchmark mode). Both are timed with
triton.testing.do_bench (median, L2 cleared between runs; --rounds rounds, odd ones in reverse
order, the median of each side's round medians). tiletune's output is checked against PyTorch's in
fp32 after poisoning it with NaN, again after online tuning. --online tunes every problem online
first (TILETUNE_ONLINE_* set the budget) and reports the seconds each took. Prints a markdown table
with the rung that served each problem (tiletune_explain) and the geometric mean per kind.

usage: vs_torch.py --lib build/libtiletune_runtime.so [--db FILE] [--user-db FILE] [--set untuned|shipped]
                   [--dtype bf16|fp16|tf32|fp32|fp8|int8] [--online] [--kernels] [--clocks S] [--out FILE.md] [--label TEXT]
"""
import argparse
import ctypes as C
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
import triton.testing

import triton_matmul

R_32F, R_16F, R_16BF, R_8F_E4M3, R_8I, R_32I, R_8F_E5M2 = 0, 1, 2, 3, 4, 5, 6
DT = {torch.float32: R_32F, torch.float16: R_16F, torch.bfloat16: R_16BF}
# The GEMM types by name: (torch dtype, tiletune compute type, Triton's dot precision).
GEMM_TYPES = {"bf16": (torch.bfloat16, 0, "ieee"), "fp16": (torch.float16, 0, "ieee"),
              "tf32": (torch.float32, 1, "tf32"), "fp32": (torch.float32, 0, "ieee")}


class Stats(C.Structure):
    _fields_ = [(n, C.c_uint64) for n in ("calls", "tuned", "nearest", "fallbacks", "jit_compiles", "vendor",
                                          "user_tuned", "online", "online_tuned")]


class Choice(C.Structure):
    _fields_ = [("rung", C.c_int), ("kernel", C.c_int), ("vendor_ratio", C.c_double)]


class ConvDesc(C.Structure):
    _fields_ = [(n, C.c_int64) for n in ("n", "c", "h", "w", "k", "r", "s", "stride_h", "stride_w", "pad_h", "pad_w",
                                          "dilation_h", "dilation_w", "groups")] + \
               [("layout", C.c_int), ("in_type", C.c_int), ("out_type", C.c_int)]


class Tiletune:
    def __init__(self, lib, db, user_db):
        self.lib = C.CDLL(lib)
        L = self.lib
        L.tiletune_last_error.restype = C.c_char_p
        L.tiletune_create_ex.argtypes = [C.POINTER(C.c_void_p), C.c_char_p, C.c_char_p, C.c_char_p, C.c_int]
        L.tiletune_gemm.argtypes = [C.c_void_p, C.c_int, C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_float,
                                    C.c_void_p, C.c_int, C.c_int64, C.c_void_p, C.c_int64, C.c_float,
                                    C.c_void_p, C.c_int, C.c_int64, C.c_void_p]
        L.tiletune_gemm_strided_batched_ex.argtypes = [
            C.c_void_p, C.c_int, C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_float, C.c_void_p, C.c_int, C.c_int64,
            C.c_int64, C.c_void_p, C.c_int64, C.c_int64, C.c_float, C.c_void_p, C.c_int, C.c_int64, C.c_int64, C.c_int64,
            C.c_int, C.c_void_p]
        L.tiletune_gemm_strided_batched_mixed.argtypes = [
            C.c_void_p, C.c_int, C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_float, C.c_void_p, C.c_int, C.c_int64,
            C.c_int64, C.c_void_p, C.c_int, C.c_int64, C.c_int64, C.c_float, C.c_void_p, C.c_int, C.c_int64, C.c_int64,
            C.c_int64, C.c_int, C.c_void_p]
        L.tiletune_gemm_choice_mixed.argtypes = [
            C.c_void_p, C.c_int, C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_int, C.c_int, C.c_int64, C.c_int64,
            C.c_int64, C.c_int64, C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_int, C.c_int, C.POINTER(Choice)]
        L.tiletune_explain.argtypes = [C.c_void_p, C.c_int, C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_int,
                                       C.c_int64, C.c_int64, C.c_int, C.c_int64, C.c_int64, C.c_int, C.c_int,
                                       C.c_char_p, C.c_size_t]
        L.tiletune_explain_conv.argtypes = [C.c_void_p, C.POINTER(ConvDesc), C.c_int, C.c_char_p, C.c_size_t]
        for f in ("tiletune_conv_forward", "tiletune_conv_backward_data", "tiletune_conv_backward_filter"):
            getattr(L, f).argtypes = [C.c_void_p, C.POINTER(ConvDesc), C.c_void_p, C.c_void_p, C.c_void_p, C.c_void_p]
        L.tiletune_get_stats.argtypes = [C.c_void_p, C.POINTER(Stats)]
        L.tiletune_set_online.argtypes = [C.c_void_p, C.c_int]
        L.tiletune_online_wait.argtypes = [C.c_void_p, C.c_double, C.POINTER(C.c_int)]
        self.h = C.c_void_p()
        self.check(L.tiletune_create_ex(C.byref(self.h), db.encode() if db else None,
                                        user_db.encode() if user_db else None, b"cuda", 0))

    def check(self, status):
        if status != 0:
            raise RuntimeError("tiletune: " + self.lib.tiletune_last_error().decode())

    def stats(self):
        s = Stats()
        self.check(self.lib.tiletune_get_stats(self.h, C.byref(s)))
        return s


def rel_err(out, ref):
    return ((out.float() - ref.float()).norm() / ref.float().norm()).item()


def gemm_case(tt, name, ta, tb, m, n, k, dtype):
    """Column-major C[m,n] = op(A) op(B) with packed leading dimensions, on row-major torch storage:
    C^T (n x m) = op(B)^T @ op(A)^T. dtype: a key of GEMM_TYPES."""
    tdt, compute, precision = GEMM_TYPES[dtype]
    a = torch.randn((m, k) if ta == "T" else (k, m), device="cuda", dtype=tdt)
    b = torch.randn((k, n) if tb == "T" else (n, k), device="cuda", dtype=tdt)
    at = a.t() if ta == "T" else a   # op(A)^T, k x m
    bt = b.t() if tb == "T" else b   # op(B)^T, n x k
    lda, ldb, ldc = (k if ta == "T" else m), (n if tb == "T" else k), m
    c = torch.empty((n, m), device="cuda", dtype=tdt)
    c_triton = torch.empty_like(c)
    opa, opb = int(ta == "T"), int(tb == "T")
    why = C.create_string_buffer(1024)

    # The arguments are made once: what is timed is the C call, not Python building it (a trainer's
    # extension passes them from C++).
    args = (tt.h, opa, opb, m, n, k, 1.0, a.data_ptr(), DT[tdt], lda, 0, b.data_ptr(), ldb, 0, 0.0, c.data_ptr(),
            DT[tdt], ldc, 0, 1, compute, torch.cuda.current_stream().cuda_stream)
    fn = tt.lib.tiletune_gemm_strided_batched_ex

    def ours():
        if fn(*args):
            tt.check(1)

    def theirs():
        return torch.matmul(bt, at)

    def triton_mm():
        return triton_matmul.matmul(bt, at, c_triton, precision)

    def check():
        c.fill_(float("nan"))
        ours()
        return rel_err(c, theirs())

    def check_triton():
        c_triton.fill_(float("nan"))
        return rel_err(triton_mm(), theirs())

    def explain():
        tt.check(tt.lib.tiletune_explain(tt.h, opa, opb, m, n, k, DT[tdt], lda, ldb, DT[tdt], ldc, 1, 1, compute, why,
                                         1024))
        return why.value.decode()

    return dict(kind="gemm " + dtype, name=name, shape=f"{ta}{tb} {m}x{n}x{k}", flops=2.0 * m * n * k, ours=ours,
                theirs=theirs, triton=triton_mm, check_triton=check_triton, check=check, explain=explain)


def eightbit_case(tt, name, m, n, k, dtype, b_type=None):
    """TN, as tiletune's 8-bit kernels and cuBLASLt take it: A stored k x m and B k x n column-major,
    i.e. row-major a (m x k) and b (n x k), both K-contiguous; C column-major m x n is row-major
    (n x m) = b @ a^T, which is what torch._scaled_mm / torch._int_mm compute (mat1 row-major,
    mat2 column-major). b_type "e5m2": B in e5m2 (the backward pass's e4m3 x e5m2 products)."""
    e5m2_b = b_type == "e5m2"
    if dtype == "fp8":
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e5m2 if e5m2_b else torch.float8_e4m3fn)
        scale_a = torch.tensor(0.5, device="cuda")
        scale_b = torch.tensor(0.25, device="cuda")
        c = torch.empty((n, m), device="cuda", dtype=torch.bfloat16)
        ab, ct, alpha = R_8F_E4M3, R_16BF, 0.5 * 0.25  # alpha: the product of the per-tensor scales
        # mat1 is b, mat2 a^T: their scales in that order.
        theirs = lambda: torch._scaled_mm(b, a.t(), scale_a=scale_b, scale_b=scale_a, out_dtype=torch.bfloat16)
    else:
        a = torch.randint(-127, 128, (m, k), device="cuda", dtype=torch.int8)
        b = torch.randint(-127, 128, (n, k), device="cuda", dtype=torch.int8)
        c = torch.empty((n, m), device="cuda", dtype=torch.int32)
        ab, ct, alpha = R_8I, R_32I, 1.0
        theirs = lambda: torch._int_mm(b, a.t())
        try:
            theirs()
        except RuntimeError:  # it wants more than 16 rows in its first operand (skinny16): the transposed product
            theirs = lambda: torch._int_mm(a, b.t()).t()
    why = C.create_string_buffer(1024)
    stream = torch.cuda.current_stream().cuda_stream
    if e5m2_b:
        args = (tt.h, 1, 0, m, n, k, alpha, a.data_ptr(), ab, k, 0, b.data_ptr(), R_8F_E5M2, k, 0, 0.0, c.data_ptr(),
                ct, m, 0, 1, 0, stream)
        fn = tt.lib.tiletune_gemm_strided_batched_mixed
    else:
        args = (tt.h, 1, 0, m, n, k, alpha, a.data_ptr(), ab, k, b.data_ptr(), k, 0.0, c.data_ptr(), ct, m, stream)
        fn = tt.lib.tiletune_gemm

    def ours():
        if fn(*args):
            tt.check(1)

    def check():
        c.fill_(-1 if dtype == "int8" else float("nan"))
        ours()
        return rel_err(c, theirs())

    def explain():
        if e5m2_b:  # tiletune_explain takes one input type; the choice names the rung
            choice = Choice()
            tt.check(tt.lib.tiletune_gemm_choice_mixed(tt.h, 1, 0, m, n, k, ab, R_8F_E5M2, k, 0, k, 0, ct, m, 0, 1, 1,
                                                       0, C.byref(choice)))
            rung = ("tuned", "pool", "vendor", "default")[choice.rung]
            return rung + (": a kernel" if choice.kernel else ": the vendor library")
        tt.check(tt.lib.tiletune_explain(tt.h, 1, 0, m, n, k, ab, k, k, ct, m, 1, 1, 0, why, 1024))
        return why.value.decode()

    kind = "gemm " + dtype + (" e4m3 x e5m2" if e5m2_b else "")
    return dict(kind=kind, name=name, shape=f"TN {m}x{n}x{k}", flops=2.0 * m * n * k, ours=ours,
                theirs=theirs, check=check, explain=explain)


def eightbit_gemms(root, dtype):
    spec = json.load(open(os.path.join(root, "configs/h200/h200_gemm_fp8_int8.json")))
    return [(g["name"], g["m"], g["n"], g["k"], dtype, g.get("b_type")) for g in spec["problems"] if g["dtype"] == dtype]


def conv_case(tt, direction, name, n, c, h, w, k, r, s, stride, pad, dtype=torch.bfloat16):
    x = torch.randn(n, c, h, w, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
    wt = (torch.randn(k, c, r, s, device="cuda", dtype=dtype) * 0.1).to(memory_format=torch.channels_last)
    y = F.conv2d(x, wt, stride=stride, padding=pad)
    p, q = y.shape[2], y.shape[3]
    dy = torch.randn_like(y)
    d = ConvDesc(n, c, h, w, k, r, s, stride, stride, pad, pad, 1, 1, 1, 0, DT[dtype], DT[dtype])
    back = lambda mask: torch.ops.aten.convolution_backward(dy, x, wt, None, [stride] * 2, [pad] * 2, [1, 1], False,
                                                            [0, 0], 1, mask)
    if direction == "fwd":
        out, fn, args = torch.empty_like(y), tt.lib.tiletune_conv_forward, (x, wt)
        theirs = lambda: F.conv2d(x, wt, stride=stride, padding=pad)
    elif direction == "dgrad":
        out, fn, args = torch.empty_like(x), tt.lib.tiletune_conv_backward_data, (dy, wt)
        theirs = lambda: back([True, False, False])[0]
    else:
        out, fn, args = torch.empty_like(wt), tt.lib.tiletune_conv_backward_filter, (x, dy)
        theirs = lambda: back([False, True, False])[1]
    call = (tt.h, C.byref(d), args[0].data_ptr(), args[1].data_ptr(), out.data_ptr(), torch.cuda.current_stream().cuda_stream)

    def ours():
        if fn(*call):
            tt.check(1)
    why = C.create_string_buffer(1024)

    def check():
        out.fill_(float("nan"))
        ours()
        return rel_err(out, theirs())

    def explain():
        tt.check(tt.lib.tiletune_explain_conv(tt.h, C.byref(d), ("fwd", "dgrad", "wgrad").index(direction), why, 1024))
        return why.value.decode()

    return dict(kind="conv " + direction, name=name, shape=f"n{n} c{c} {h}x{w} k{k} {r}x{s}/{stride}",
                flops=2.0 * n * p * q * k * c * r * s, ours=ours, theirs=theirs, check=check, explain=explain)


def untuned_gemms(dtype="bf16"):
    """The untuned set in dtype (a key of GEMM_TYPES); fp16_1536 stays fp16 in the bf16 set."""
    bf = dtype
    out = []
    for tokens in (16, 512, 4096):
        for model, (inp, outp) in {"bert_qkv": (768, 2304), "bert_ffn1": (768, 3072), "vit_l_qkv": (1024, 3072),
                                    "llama8b_qkv": (4096, 6144), "gptj_ffn": (4096, 16384)}.items():
            out.append((f"{model}_fwd_t{tokens}", "T", "N", outp, tokens, inp, bf))
        out.append((f"bert_ffn1_dgrad_t{tokens}", "N", "N", 768, tokens, 3072, bf))
        out.append((f"bert_ffn1_wgrad_t{tokens}", "N", "T", 768, 3072, tokens, bf))
    out += [("misaligned_777", "N", "N", 777, 1333, 2049, bf), ("oddk_4095", "N", "N", 4096, 4096, 4095, bf),
            ("small_96", "N", "N", 96, 96, 96, bf), ("skinny_8", "T", "N", 4096, 8, 4096, bf),
            ("gpt2_lmhead_t2048", "T", "N", 50257, 2048, 768, bf),
            ("fp16_1536", "N", "T", 1536, 1536, 1536, "fp16" if dtype == "bf16" else dtype)]
    return out


def untuned_convs():
    layers = [("vgg_3x3_256", 32, 256, 56, 56, 256, 3, 3, 1, 1), ("unet_3x3_64", 8, 64, 128, 128, 64, 3, 3, 1, 1),
              ("stride2_3x3_128", 32, 128, 56, 56, 128, 3, 3, 2, 1), ("incep_1x1_96_160", 32, 96, 35, 35, 160, 1, 1, 1, 0),
              ("5x5_48", 32, 48, 35, 35, 64, 5, 5, 1, 2), ("mbnet_1x1_144_24", 64, 144, 56, 56, 24, 1, 1, 1, 0),
              ("effnet_1x1_240_40", 64, 240, 28, 28, 40, 1, 1, 1, 0)]
    return [(d,) + l for d in ("fwd", "dgrad", "wgrad") for l in layers]


def shipped_gemms(root, dtype="bf16"):
    spec = json.load(open(os.path.join(root, "configs/shapes/gemm.json")))
    return [(g["name"], g["transA"], g["transB"], g["m"], g["n"], g["k"], dtype) for g in spec["shapes"]]


def shipped_convs(root):
    spec = json.load(open(os.path.join(root, "configs/shapes/conv_resnet50.json")))
    return [(d, l["name"], spec["n"], l["c"], l["h"], l["w"], l["k"], l["r"], l["s"], l["stride"], l["pad"])
            for d in ("fwd", "dgrad", "wgrad") for l in spec["layers"]]


def versions():
    """The libraries both sides ran on, for the table's header (cuBLASLt as this process loaded it)."""
    try:
        lt = C.CDLL("libcublasLt.so.13").cublasLtGetVersion()
    except (OSError, AttributeError):
        lt = "?"
    return (f"{torch.cuda.get_device_name()}; PyTorch {torch.__version__}, CUDA {torch.version.cuda}, "
            f"cuDNN {torch.backends.cudnn.version()}, cuBLASLt {lt}, Triton {triton.__version__}")


def under_load(f, seconds, flops):
    """f run back to back for `seconds` while nvidia-smi samples every 50 ms: (median SM MHz, median W,
    TFLOP/s over the run)."""
    f()
    torch.cuda.synchronize()
    try:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                "-lms", "50", "-i", str(torch.cuda.current_device())],
                               stdout=subprocess.PIPE, text=True)
    except OSError:
        smi = None
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            f()
        calls += 20
        torch.cuda.synchronize()
    took = time.perf_counter() - start
    rows = []
    if smi:
        smi.terminate()
        rows = [line.split(",") for line in smi.communicate()[0].splitlines() if line.count(",") == 1]
    samples = [(float(m), float(w)) for m, w in rows if m.strip().replace(".", "").isdigit()]
    if not samples:
        return float("nan"), float("nan"), flops * calls / took / 1e12
    return (statistics.median(m for m, _ in samples), statistics.median(w for _, w in samples),
            flops * calls / took / 1e12)


def kernels_of(f, runs=20):
    """The GPU work of one call of f as do_bench meets it: f run `runs` times, each behind the same 256 MB L2
    clear, under the profiler (CUPTI sees the C API's launches too). Each kernel (and memset or copy) of a call
    as "name: median us", then the median span of a call (its first start to its last end: the gaps between its
    kernels included): where a side's time goes, and whether it is in kernels. A call is what follows a clear
    (told by the clear's kernel names); calls that launch different work from run to run are reported, not
    pooled."""
    cuda = torch.autograd.DeviceType.CUDA
    cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")
    f()  # the first call's one-time work (plans, handles) stays out of the trace
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        cache.zero_()
        torch.cuda.synchronize()
    clear = {e.name for e in prof.events() if e.device_type == cuda}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            cache.zero_()
            f()
        torch.cuda.synchronize()
    calls = []
    for e in sorted((e for e in prof.events() if e.device_type == cuda), key=lambda e: e.time_range.start):
        if e.name in clear:
            calls.append([])
        elif calls:
            calls[-1].append(e)
    calls = [c for c in calls if c]
    if not calls:
        return "none"
    names = [e.name for e in calls[0]]
    if any([e.name for e in c] != names for c in calls):
        return f"calls launch different work from run to run ({sorted({len(c) for c in calls})} kernels)"
    work = [f"{names[i][:90]}: {statistics.median(c[i].time_range.end - c[i].time_range.start for c in calls):.1f} us"
            for i in range(len(names))]
    span = statistics.median(max(e.time_range.end for e in c) - c[0].time_range.start for c in calls)
    return f"{'; '.join(work)}; span {span:.1f} us"


def rung_of(text):
    if "tuned online in " in text:
        return "online (vendor)" if "the vendor library" in text else "online"
    r = text.split(":")[0]
    if r == "tuned" and "the vendor library" in text:
        # A tuned algorithm the runtime would not run (timed under another library version): the
        # library's default served instead, which the table must not pass off as the tuned choice.
        return "tuned (vendor default)" if "the library's default serves" in text else "tuned (vendor)"
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--db", default="")
    ap.add_argument("--user-db", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--label", default="")
    ap.add_argument("--only", default="", help="gemm or conv")
    ap.add_argument("--conv-dtype", default="bf16", choices=("bf16", "fp16"), help="the convolutions' data type")
    ap.add_argument("--names", default="", help="comma-separated problem names (default: all of the set)")
    ap.add_argument("--directions", default="fwd,dgrad,wgrad", help="the convolutions' directions, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--set", default="untuned", choices=("untuned", "shipped"))
    ap.add_argument("--dtype", default="bf16", choices=tuple(GEMM_TYPES) + ("fp8", "int8"),
                    help="the GEMMs' type; fp8 / int8: the 8-bit GEMMs of configs/h200/h200_gemm_fp8_int8.json; "
                         "convolutions run with bf16 only (--conv-dtype)")
    ap.add_argument("--kernels", action="store_true",
                    help="print the GPU kernels each side launches for one call behind an L2 clear, as do_bench runs it, with "
                         "their median microseconds and a call's span (torch.profiler): whether a problem "
                         "tiletune hands to the vendor runs the kernel torch.matmul runs")
    ap.add_argument("--clocks", type=float, default=0, metavar="SECONDS",
                    help="also run each side back to back for SECONDS, nvidia-smi sampling the SM clock and the "
                         "power meanwhile: whether a side loses at do_bench's boost clocks to the power limit")
    ap.add_argument("--online", action="store_true")
    ap.add_argument("--online-wait", type=float, default=1200)
    a = ap.parse_args()
    directions = a.directions.split(",")
    if set(directions) - {"fwd", "dgrad", "wgrad"}:
        ap.error(f"--directions {a.directions}: expected some of fwd, dgrad, wgrad")
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = a.dtype == "tf32"
    tt = Tiletune(a.lib, a.db, a.user_db)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cases = []
    if a.dtype in ("fp8", "int8"):
        cases += [eightbit_case(tt, *g) for g in eightbit_gemms(root, a.dtype)]
    elif a.only in ("", "gemm"):
        cases += [gemm_case(tt, *g) for g in (untuned_gemms(a.dtype) if a.set == "untuned"
                                              else shipped_gemms(root, a.dtype))]
    if a.only in ("", "conv") and a.dtype == "bf16":
        cdt = torch.float16 if a.conv_dtype == "fp16" else torch.bfloat16
        cases += [conv_case(tt, *c, dtype=cdt) for c in (untuned_convs() if a.set == "untuned" else shipped_convs(root))
                  if c[0] in directions]
    if a.names:
        wanted = set(a.names.split(","))
        cases = [cs for cs in cases if cs["name"] in wanted]
    for cs in cases:
        cs["err"] = cs["check"]()
    if a.online:
        tt.check(tt.lib.tiletune_set_online(tt.h, 1))
        start = time.time()
        for cs in cases:
            for _ in range(4):  # past TILETUNE_ONLINE_AFTER (3): handed to the tuner, which works in order
                cs["ours"]()
        torch.cuda.synchronize()
        idle = C.c_int(0)
        tt.check(tt.lib.tiletune_online_wait(tt.h, a.online_wait, C.byref(idle)))
        print(f"online tuning of {len(cases)} problems: {time.time() - start:.0f} s, finished: {bool(idle.value)}",
              flush=True)
        for cs in cases:
            cs["err"] = max(cs["err"], cs["check"]())  # the online winner's output too
    for cs in cases:
        if "triton" in cs:
            try:
                cs["err_triton"] = cs["check_triton"]()  # autotunes the shape here, not inside the timing
            except Exception as e:  # a Triton failure leaves its column empty, not the table
                print(f"triton failed on {cs['name']}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                del cs["triton"]
    if a.clocks > 0:
        for cs in cases:
            for side in ("ours", "theirs"):
                mhz, watts, tflops = under_load(cs[side], a.clocks, cs["flops"])
                print(f"clocks {cs['name']} {'tiletune' if side == 'ours' else 'PyTorch'}: {tflops:.1f} TFLOP/s "
                      f"back to back, SM {mhz:.0f} MHz, {watts:.0f} W (medians of nvidia-smi's samples)", flush=True)
    if a.kernels:
        for cs in cases:
            print(f"kernels {cs['name']}: tiletune {kernels_of(cs['ours'])}; PyTorch {kernels_of(cs['theirs'])}",
                  flush=True)
    lines = [f"# {a.label}", "", versions(), "",
             "| kind | problem | shape | rung | tiletune TFLOP/s | PyTorch TFLOP/s | Triton TFLOP/s | vs PyTorch | "
             "vs best | rel err |" + (" online s |" if a.online else ""),
             "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if a.online else "")]
    ratios = {}
    bench = lambda f: triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")
    for cs in cases:
        sides = ["ours", "theirs"] + (["triton"] if "triton" in cs else [])
        # Odd rounds run the sides in reverse, so that no side is always timed first after the previous
        # problem (the clocks a side meets depend on what ran before it).
        rounds = []
        for r in range(a.rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            ms = {side: bench(cs[side]) for side in order}
            rounds.append([ms[side] for side in sides])
        t = [statistics.median(r[i] for r in rounds) for i in range(len(sides))]
        ratio, best = t[1] / t[0], min(t[1:]) / t[0]
        ok = cs["err"] < 2e-2
        text = cs["explain"]()
        ratios.setdefault(cs["kind"], []).append((ratio, best))  # per direction for convolutions
        triton_col = "-"
        if len(t) > 2:
            triton_col = f"{cs['flops'] / t[2] / 1e9:.1f}" + ("" if cs["err_triton"] < 2e-2 else " WRONG")
        row = (f"| {cs['kind']} | {cs['name']} | {cs['shape']} | {rung_of(text)} | {cs['flops'] / t[0] / 1e9:.1f} | "
               f"{cs['flops'] / t[1] / 1e9:.1f} | {triton_col} | {ratio:.3f} | {best:.3f} | "
               f"{cs['err']:.1e}{'' if ok else ' WRONG'} |")
        if a.online:
            row += (f" {float(text.split('tuned online in ')[1].split()[0]):.1f} |" if "tuned online in " in text else " - |")
        lines.append(row)
        print(row, flush=True)
    lines.append("")
    geo = lambda rs: math.exp(sum(math.log(r) for r in rs) / len(rs))
    for kind, rs in ratios.items():
        vs_torch, vs_best = [r[0] for r in rs], [r[1] for r in rs]
        peers = "PyTorch and Triton" if any("triton" in cs for cs in cases if cs["kind"] == kind) else "PyTorch"
        lines.append(f"{kind}: {len(rs)} problems, geometric mean {geo(vs_torch):.3f}x PyTorch (min {min(vs_torch):.3f}x), "
                     f"{geo(vs_best):.3f}x the faster of {peers} (min {min(vs_best):.3f}x)")
    s = tt.stats()
    lines.append(f"stats: calls {s.calls}, tuned {s.tuned} (user {s.user_tuned}, online {s.online}), pool {s.nearest}, "
                 f"vendor {s.vendor}, default {s.fallbacks}, jit compiles {s.jit_compiles}, tuned online {s.online_tuned}")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        open(a.out, "w").write(text)
    return 0 if all(c["err"] < 2e-2 for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
