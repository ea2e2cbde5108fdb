"""A training step's device time split by who ran it, from a torch.profiler run: tiletune's
generated kernels (named for their templates, kernel_templates/*.json), the vendor libraries PyTorch
and tiletune's vendor rung call (cuBLAS, cuBLASLt, cuDNN and the CUTLASS kernels they ship), and the
rest of aten (elementwise, normalization, the optimizer). A few lines for stdout; the profiler's full
table is in the --profile file."""
import glob
import json
import os

_TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernel_templates")
_VENDOR_MARKS = ("cublas", "cudnn", "cutlass", "xmma", "nvjet", "gemm", "gemv", "sm90_", "sm80_", "sm75_",
                 "implicit_convolve", "wgrad", "dgrad", "conv2d", "convolve")


def tiletune_names():
    names = set()
    for path in glob.glob(os.path.join(_TEMPLATES, "*.json")):
        with open(path) as f:
            name = json.load(f).get("name")
        if name:
            names.add(name)
    return names


def kind(kernel, ours=None):
    """'tiletune', 'vendor' or 'aten' for a device kernel's (demangled) name."""
    ours = tiletune_names() if ours is None else ours
    bare = kernel[5:] if kernel.startswith("void ") else kernel
    if bare.split("<")[0].split("(")[0] in ours:
        return "tiletune"
    low = kernel.lower()
    return "vendor" if any(m in low for m in _VENDOR_MARKS) else "aten"


def device_kernels(prof):
    """(name, device us, calls) of each device kernel the profiler saw; [] without device events."""
    from torch.autograd import DeviceType
    out = []
    for e in prof.key_averages():
        if getattr(e, "device_type", None) not in (DeviceType.CUDA, getattr(DeviceType, "PrivateUse1", None)):
            continue
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = e.self_cuda_time_total
        if us > 0:
            out.append((e.key, float(us), int(e.count)))
    return out


def summary(kernels, top=10):
    ours = tiletune_names()
    totals = {"tiletune": 0.0, "vendor": 0.0, "aten": 0.0}
    for name, us, _ in kernels:
        totals[kind(name, ours)] += us
    whole = sum(totals.values()) or 1.0
    lines = ["          device time of one step: " + ", ".join(
        f"{k} {v / 1e3:.2f} ms ({100 * v / whole:.0f}%)" for k, v in totals.items())]
    for name, us, calls in sorted(kernels, key=lambda k: -k[1])[:top]:
        lines.append(f"          {us / 1e3:8.3f} ms {calls:5d}x  {kind(name, ours):8s} {name[:90]}")
    return "\n".join(lines)
