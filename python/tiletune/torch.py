"""Routes a PyTorch program's GEMMs and convolutions to tiletune, without changing the model.

    import tiletune.torch
    tiletune.torch.enable(db="ship.db")      # matmuls and 2-d convolutions, forward and backward
    ... train ...
    print(tiletune.torch.stats())            # what was routed, what was handed back and why

How: enable() overrides aten's kernels of mm, addmm, bmm, baddbmm (what linear and matmul become,
in both passes) and convolution / convolution_backward for the CUDA and CPU dispatch keys, through
torch.library. Those keys sit below autograd and autocast, so the calls that arrive are the ones
that run, with autocast's casts applied, from any thread; every other op runs untouched, at no
cost. A call tiletune cannot take (another dtype, strides no BLAS call can describe, a transposed
or non-2-d convolution, mixed layouts), one the runtime refuses, and by default one tiletune has
nothing better for than the vendor library, goes to PyTorch's own kernel: the op's out= overload
for the GEMMs, its composite kernel for the convolutions. The stats count each reason.

The overrides are C++ (_route.cpp, built just in time by _route.py) wherever a compiler allows,
else the Python kernels below (TILETUNE_TORCH_ROUTE). This module's handlers take every decision in
either case. The C++ ones remember each decision by the call's tensor metadata: a call declined for
good goes straight to PyTorch's kernel, and a call served before is served again from C++ through
the C API (the "plan" a handler leaves in _call.plan), without entering Python. Not while recording
or tuning online: the runtime must see those calls here (both add state this module keeps).

CUDA tensors go to the CUDA backend (HIP on a ROCm build of PyTorch), CPU tensors to the host
backend. The outputs are new tensors in PyTorch's layout (row-major, channels_last convolutions
stay channels_last), written on the tensor's current stream.

Under torch.compile, dynamo traces through (no graph break); compiled code that calls these ops is
routed when it runs, code that calls the out= overloads or its own kernels is not (python/README.md,
tests/test_torch_compile.py).
"""
import atexit
import ctypes
import os
import re
import threading
from collections import Counter

import torch

import tiletune as _tt
from tiletune import _capi, _route

__all__ = ["enable", "disable", "enabled", "paused", "stats", "record", "runtime"]

aten = torch.ops.aten
_DT = {torch.float32: _capi.R_32F, torch.float16: _capi.R_16F, torch.bfloat16: _capi.R_16BF}
_DECLINE_STATUSES = (_capi.INVALID_VALUE, _capi.NOT_SUPPORTED)


class _Declined(Exception):
    """This op goes to PyTorch's own kernel; the message is the reason the stats count. `lasting`:
    the reason holds for every call with the same tensor metadata (the C++ route remembers it);
    False for one that depends on a setting read per call, or on what the runtime did this time."""

    def __init__(self, why, lasting=True):
        super().__init__(why)
        self.lasting = lasting


# A GEMM with a bias PyTorch would fuse into cuBLASLt's epilogue costs tiletune an extra pass over
# the output (the bias copied in, read back as beta * C): it goes to tiletune only where the winner
# led the vendor by this much. Measured on GPT-2's projections (H200, 2026-12-02): winners 1.00-1.05x
# the vendor lost to PyTorch's fused addmm by the copy (benchmarks/results/training/2026-12-02_h200_torch_gpt2.md).
BIAS_MARGIN = 1.3
_MAX_DECISIONS = 100000


def _policy(rung, kernel, ratio, bias_pass):
    """True when tiletune serves the problem better than PyTorch's own call of the vendor would;
    else why not. `ratio`: the choice's lead over the vendor's default (0: unmeasured)."""
    if rung in ("vendor", "default"):
        return f"untuned ({rung} rung): PyTorch's own kernel"
    if ratio and ratio <= 1.0:
        return "tuned to the vendor's default: PyTorch's own call of it"
    if bias_pass and ratio and ratio < BIAS_MARGIN:
        return f"bias PyTorch fuses; the winner led the vendor {ratio:.2f}x (< {BIAS_MARGIN}x)"
    return True


class _State:
    def __init__(self, db, user_db, record, online, devices, serve):
        if serve not in ("tuned", "all"):
            raise ValueError(f"serve must be 'tuned' or 'all', got {serve!r}")
        self.db, self.user_db, self.record_path, self.online = db, user_db, record, online
        # "tuned": only what tiletune serves better than the vendor library goes to it; "all":
        # everything it can take (also whenever recording or tuning online, which must see calls).
        self.route_all = serve == "all" or bool(record) or bool(online)
        self.plans = not (record or online)  # served calls repeated from C++ (_route.cpp)
        self.decisions = {}  # problem -> True, or why it goes back to PyTorch
        self.fast = {}  # the same, by the tensors' metadata: a repeated call skips building the problem
        # Tests set TILETUNE_POISON=1: every output is filled with NaN before tiletune writes it,
        # so that an element the kernel skipped cannot pass for a result.
        self.poison = os.environ.get("TILETUNE_POISON", "0") not in ("", "0")
        self.devices = set(devices)
        self.lock = threading.Lock()
        self.runtimes = {}  # (device type, index) -> Runtime, or the reason it could not be made
        self.routed, self.declined = Counter(), Counter()
        self.reasons, self.reason_ids = [], {}  # "op: why" by the index the C++ route counts it under

    def runtime(self, dev):
        key = (dev.type, dev.index if dev.index is not None else (torch.cuda.current_device() if dev.type == "cuda" else 0))
        rt = self.runtimes.get(key)
        if rt is None:
            with self.lock:
                rt = self.runtimes.get(key)
                if rt is None:
                    rt = self.runtimes[key] = self._make(key)
        if isinstance(rt, str):
            raise _Declined(rt)
        return rt

    def _make(self, key):
        kind, index = key
        if kind not in self.devices:
            return f"{kind} not routed"
        backend = {"cuda": "hip" if torch.version.hip else "cuda", "cpu": "host"}.get(kind)
        if backend is None:
            return f"no tiletune backend for {kind} tensors"
        try:
            rt = _tt.Runtime(db=self.db, user_db=self.user_db, backend=backend, device=index)
            if self.online:
                rt.set_online(True)
            return rt
        except Exception as e:  # a broken install, a missing library: PyTorch goes on serving
            import warnings
            warnings.warn(f"tiletune.torch: {kind}:{index} stays on PyTorch: {e}")
            return f"no runtime for {kind}:{index}"

    def early(self, fast):
        """A decision made before for the same tensor metadata (`fast`): raises _Declined for one
        handed back, before any descriptor is built or any setting is read (the cost of a call
        handed back is mostly this); True for one routed; None when not yet seen. For the latter
        two, the call's settings and device are checked next (_admit)."""
        if self.route_all:
            d = True
        else:
            d = self.fast.get(fast)
            if d is not None and d is not True:
                raise _Declined(d)
        _admit()
        return d

    def decide(self, key, ask, bias_pass=False, fast=None):
        """Raises _Declined unless tiletune should serve this problem (decided once per problem)."""
        if self.route_all:
            return
        d = self.decisions.get(key)
        if d is None:
            try:
                d = _policy(*ask(), bias_pass)
            except _tt.Error as e:
                d = f"refused by the runtime ({str(e)[:120]})"
            if len(self.decisions) >= _MAX_DECISIONS:
                self.decisions.clear()
                self.fast.clear()
            self.decisions[key] = d
        if fast is not None:
            self.fast[fast] = d
        if d is not True:
            raise _Declined(d)

    def empty(self, shape, dtype, device, memory_format=torch.contiguous_format):
        t = torch.empty(shape, dtype=dtype, device=device, memory_format=memory_format)
        return t.fill_(float("nan")) if self.poison else t

    def count(self, counter, what):
        with self.lock:
            counter[what] += 1

    def reason_id(self, what):
        with self.lock:
            i = self.reason_ids.get(what)
            if i is None:
                i = self.reason_ids[what] = len(self.reasons)
                self.reasons.append(what)
            return i


if hasattr(torch._C, "_cuda_getCurrentRawStream"):
    def _stream(t):
        return torch._C._cuda_getCurrentRawStream(t.device.index) if t.is_cuda else None
else:  # pragma: no cover - older PyTorch
    def _stream(t):
        return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else None


def _dtype(*ts):
    dt = ts[0].dtype
    if dt not in _DT or any(t.dtype != dt for t in ts):
        names = sorted({str(t.dtype).replace("torch.", "") for t in ts})
        raise _Declined(("dtype " if len(names) == 1 else "dtypes ") + "/".join(names))
    if any(t.device != ts[0].device for t in ts):
        raise _Declined("tensors on several devices")
    return dt


def _operand(t):
    """How the last two dims of `t` (rows x cols) lie as a column-major matrix: (op, ld) where op is
    OP_N when the storage is t^T (t row-major) and OP_T when it is t itself (t column-major)."""
    rows, cols = t.shape[-2], t.shape[-1]
    s0, s1 = t.stride(-2), t.stride(-1)
    if cols == 1 or s1 == 1:
        ld = s0 if rows > 1 else cols
        if ld >= max(1, cols):
            return _capi.OP_N, ld
    if rows == 1 or s0 == 1:
        ld = s1 if cols > 1 else rows
        if ld >= max(1, rows):
            return _capi.OP_T, ld
    raise _Declined("operand strides")


def _gemm_shapes(a, b, bias, batched):
    """What PyTorch's own kernel checks first: a shape it would refuse goes to it, to raise there."""
    dims = 3 if batched else 2
    if a.dim() != dims or b.dim() != dims or a.shape[-1] != b.shape[-2] or (batched and a.shape[0] != b.shape[0]):
        raise _Declined("shapes")
    if bias is not None:
        out = (a.shape[0], a.shape[1], b.shape[2]) if batched else (a.shape[0], b.shape[1])
        try:
            torch.broadcast_shapes(bias.shape, out)
        except RuntimeError:
            raise _Declined("shapes") from None


def _gemm(state, a, b, bias=None, alpha=1.0, beta=0.0, batched=False):
    """out = alpha * a @ b + beta * bias, for a (..., M, K) and b (..., K, N) with at most one batch
    dim. Row-major out is column-major out^T = b^T a^T: tiletune's A is `b`, its B is `a`."""
    fused = bias is not None and beta != 0
    fast = (a.shape, a.stride(), b.shape, b.stride(), a.dtype, b.dtype, a.device, fused,
            (bias.shape, bias.stride(), bias.dtype) if fused else None, torch.backends.cuda.matmul.allow_tf32)
    state.early(fast)
    _gemm_shapes(a, b, bias if fused else None, batched)
    dt = _dtype(a, b) if bias is None or beta == 0 else _dtype(a, b, bias)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = a.shape[0] if batched else 1
    if m == 0 or n == 0 or k == 0 or batch == 0:
        raise _Declined("empty")
    rt = state.runtime(a.device)
    op_b, ld_b = _operand(a)
    op_a, ld_a = _operand(b)
    shape = (batch, m, n) if batched else (m, n)
    sa = a.stride(0) if batched and batch > 1 else 0
    sb = b.stride(0) if batched and batch > 1 else 0
    if batch > 1 and (sa == 0 or sb == 0):
        raise _Declined("a broadcast operand (batch stride 0)")
    compute = _capi.COMPUTE_32F
    if dt == torch.float32 and a.is_cuda and torch.backends.cuda.matmul.allow_tf32:
        compute = _capi.COMPUTE_32F_FAST_TF32
    key = (dt, a.device, op_a, op_b, n, m, k, ld_a, ld_b, batch, sa, sb, fused, compute)
    bias_pass = fused and a.is_cuda and bias.dim() == 1
    state.decide(key + (bias_pass,),
                 lambda: rt.gemm_choice(op_a, op_b, n, m, k, _DT[dt], ld_a, ld_b, _DT[dt], n, batch, not fused,
                                        compute, stride_a=sb, stride_b=sa, stride_c=m * n if batch > 1 else 0),
                 bias_pass=bias_pass, fast=fast)
    if fused:
        out = torch.empty(shape, dtype=dt, device=a.device)
        out.copy_(bias.expand(shape))
    else:
        out, beta = state.empty(shape, dt, a.device), 0.0
    stride_c = m * n if batch > 1 else 0
    rt.gemm(op_a, op_b, n, m, k, b.data_ptr(), _DT[dt], ld_a, a.data_ptr(), ld_b, out.data_ptr(), _DT[dt], n,
            alpha=float(alpha), beta=float(beta), batch=batch, stride_a=sb, stride_b=sa, stride_c=stride_c,
            compute=compute, stream=_stream(a))
    _plan(state, rt, _GEMM_PLAN, op_a, op_b, n, m, k, _DT[dt], ld_a, sb, ld_b, sa, n, stride_c, batch, compute, fused)
    return out


def _pair(v):
    v = list(v)
    return v * 2 if len(v) == 1 else v


def _conv_layout(*ts):
    """NHWC when the tensors are channels_last, NCHW when contiguous (the first tensor that tells
    the two apart decides); the output is made in the same layout."""
    cl = torch.channels_last
    for t in ts:
        is_cl, is_c = t.is_contiguous(memory_format=cl), t.is_contiguous()
        if is_cl != is_c:
            layout = _capi.LAYOUT_NHWC if is_cl else _capi.LAYOUT_NCHW
            break
    else:
        layout = _capi.LAYOUT_NCHW
    fmt = cl if layout == _capi.LAYOUT_NHWC else torch.contiguous_format
    if not all(t.is_contiguous(memory_format=fmt) for t in ts):
        raise _Declined("convolution layouts")
    return layout, fmt


def _conv_desc(x, w, stride, padding, dilation, transposed, output_padding, groups, dt, layout):
    if transposed:
        raise _Declined("transposed convolution")
    if x.dim() != 4 or w.dim() != 4:
        raise _Declined(f"{x.dim() - 2}-d convolution")
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    if min(n, c, h, wd, k) == 0:
        raise _Declined("empty")
    p = (h + 2 * ph - dh * (r - 1) - 1) // sh + 1
    q = (wd + 2 * pw - dw * (s - 1) - 1) // sw + 1
    if groups < 1 or w.shape[1] * groups != c or k % groups or p < 1 or q < 1:
        raise _Declined("shapes")  # PyTorch's own kernel raises its error
    d = _capi.ConvDesc(n, c, h, wd, k, r, s, sh, sw, ph, pw, dh, dw, groups, layout, _DT[dt], _DT[dt])
    return d, p, q


_DIRECTIONS = ("forward", "input gradient", "weight gradient")
# The kinds of plan _route.cpp runs; the values after them are laid out as it reads them.
_GEMM_PLAN, _CONV_FORWARD_PLAN, _CONV_BACKWARD_PLAN = range(3)


def _plan(state, rt, kind, *values):
    """Leaves the C API call this handler just made, as _route.cpp repeats it for the next call with
    the same tensor metadata: every value here must follow from that metadata alone."""
    if state.plans:
        _call.plan = [kind, rt.handle, int(state.poison)] + [int(v) for v in values]


def _conv_plan(state, rt, kind, d, fmt, p, q, *values):
    desc = [getattr(d, f) for f, _ in d._fields_]
    _plan(state, rt, kind, *desc, fmt == torch.channels_last, p, q, *values)


def _conv_fast(tensors, stride, padding, dilation, transposed, groups):
    return tuple((t.shape, t.stride(), t.dtype) for t in tensors) + (
        tensors[0].device, tuple(stride), tuple(padding), tuple(dilation), transposed, groups)


def _decide_conv(state, rt, d, direction, device, fast):
    key = (device, direction) + tuple(getattr(d, f) for f, _ in d._fields_)
    state.decide(key, lambda: rt.conv_choice(d, direction), fast=fast + (direction,))


def _convolution(state, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    fast = _conv_fast((x, w), stride, padding, dilation, transposed, groups)
    state.early(fast + (_capi.CONV_FORWARD,))
    dt = _dtype(x, w)
    layout, fmt = _conv_layout(x, w)
    d, p, q = _conv_desc(x, w, stride, padding, dilation, transposed, output_padding, groups, dt, layout)
    if bias is not None and (bias.shape != (w.shape[0],) or bias.dtype != dt or bias.device != x.device):
        raise _Declined("bias")
    rt = state.runtime(x.device)
    _decide_conv(state, rt, d, _capi.CONV_FORWARD, x.device, fast)
    y = state.empty((x.shape[0], w.shape[0], p, q), dt, x.device, fmt)
    rt.conv(_capi.CONV_FORWARD, d, x.data_ptr(), w.data_ptr(), y.data_ptr(), _stream(x))
    if bias is not None:
        y.add_(bias.view(1, -1, 1, 1))
    _conv_plan(state, rt, _CONV_FORWARD_PLAN, d, fmt, p, q, bias is not None)
    return y


def _convolution_backward(state, dy, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding,
                          groups, output_mask):
    if not (output_mask[0] or output_mask[1]):  # the bias's gradient alone: a sum, PyTorch's
        raise _Declined("no gradient asked")
    fast = _conv_fast((dy, x, w), stride, padding, dilation, transposed, groups)
    known = []
    for i, direction in ((0, _capi.CONV_BACKWARD_DATA), (1, _capi.CONV_BACKWARD_FILTER)):
        if output_mask[i]:
            try:
                known.append(state.early(fast + (direction,)))
            except _Declined as e:
                known.append(e)
    if known and all(isinstance(k, _Declined) for k in known):
        if all(k.lasting for k in known):
            raise known[0]
        raise _Declined(str(known[0]), lasting=False)  # one gradient's decline was this call's setting
    dt = _dtype(dy, x, w)
    layout, fmt = _conv_layout(dy, x, w)
    d, p, q = _conv_desc(x, w, stride, padding, dilation, transposed, output_padding, groups, dt, layout)
    if tuple(dy.shape) != (x.shape[0], w.shape[0], p, q):
        raise _Declined("shapes")
    rt = state.runtime(x.device)
    stream = _stream(x)
    # Each gradient goes to tiletune or to PyTorch on its own: one may be tuned, the other not.
    ours, why = [False, False], None
    for i, direction in ((0, _capi.CONV_BACKWARD_DATA), (1, _capi.CONV_BACKWARD_FILTER)):
        if output_mask[i]:
            try:
                _decide_conv(state, rt, d, direction, x.device, fast)
                ours[i] = True
            except _Declined as e:
                why = e
    if not any(ours):
        raise why or _Declined("no gradient asked")
    partial = f"convolution_backward: {why} (one gradient)" if why is not None else None
    if partial:
        state.count(state.declined, partial)
    theirs = [output_mask[0] and not ours[0], output_mask[1] and not ours[1], False]
    dx = dw = db = None
    if any(theirs):
        dx, dw, _ = _OPS["convolution_backward"][1](dy, x, w, bias_sizes, stride, padding, dilation, transposed,
                                                    output_padding, groups, theirs)
    if ours[0]:
        dx = state.empty(x.shape, dt, x.device, fmt)
        rt.conv(_capi.CONV_BACKWARD_DATA, d, dy.data_ptr(), w.data_ptr(), dx.data_ptr(), stream)
    if ours[1]:
        dw = state.empty(w.shape, dt, w.device, fmt)
        rt.conv(_capi.CONV_BACKWARD_FILTER, d, x.data_ptr(), dy.data_ptr(), dw.data_ptr(), stream)
    if output_mask[2]:
        db = dy.sum(dim=(0, 2, 3))
    _conv_plan(state, rt, _CONV_BACKWARD_PLAN, d, fmt, p, q, *ours, *theirs[:2],
               state.reason_id(partial) if partial else -1, output_mask[2])
    return dx, dw, db


def _mm(state, a, b):
    return _gemm(state, a, b)


def _addmm(state, bias, a, b, *, beta=1, alpha=1):
    return _gemm(state, a, b, bias, alpha, beta)


def _bmm(state, a, b):
    return _gemm(state, a, b, batched=True)


def _baddbmm(state, bias, a, b, *, beta=1, alpha=1):
    return _gemm(state, a, b, bias, alpha, beta, batched=True)


def _out_variant(op):
    """PyTorch's own kernel for a GEMM op whose kernel this module overrides: its out= overload,
    a registration of its own that the override leaves alone."""
    def run(*args, **kwargs):
        return op(*args, **kwargs, out=args[0].new_empty(0))
    return run


def _composite(op):
    """PyTorch's own kernel for a convolution op: its CompositeExplicitAutograd kernel, which picks
    cuDNN, MIOpen or the CPU implementation as PyTorch would."""
    key = torch._C.DispatchKey.CompositeExplicitAutograd

    def run(*args, **kwargs):
        return op._op_dk(key, *args, **kwargs)
    return run


# op name -> (its handler, PyTorch's own kernel for what the handler hands back)
_OPS = {
    "mm": (_mm, _out_variant(aten.mm.out)),
    "addmm": (_addmm, _out_variant(aten.addmm.out)),
    "bmm": (_bmm, _out_variant(aten.bmm.out)),
    "baddbmm": (_baddbmm, _out_variant(aten.baddbmm.out)),
    "convolution": (_convolution, _composite(aten.convolution.default)),
    "convolution_backward": (_convolution_backward, _composite(aten.convolution_backward.default)),
}
_paused = threading.local()
_paused_all = False  # in a forked child (a DataLoader worker): the parent's handles are not ours


def _after_fork():
    global _paused_all
    _paused_all = True


os.register_at_fork(after_in_child=_after_fork)


def _settings(name, first):
    """What PyTorch's settings ask of this call that tiletune does not promise; raises _Declined."""
    if torch.are_deterministic_algorithms_enabled():
        raise _Declined("deterministic algorithms asked (split-K kernels add with atomics)", lasting=False)
    if first.is_cuda:
        if torch.cuda.is_current_stream_capturing():
            raise _Declined("CUDA graph capture (a first call may compile and synchronize)", lasting=False)
        if name.startswith("conv") and first.dtype == torch.float32 and torch.backends.cudnn.allow_tf32:
            raise _Declined("fp32 convolution with cuDNN's TF32 allowed (tuned in full fp32)", lasting=False)


class _OtherDevice(Exception):
    """The call's tensors are on another GPU than the current one: run the handler again under it."""


_call = threading.local()  # the call in a handler: its op's name, first tensor, what was checked


def _admit():
    """The checks a call that may be routed needs (PyTorch's settings, the tensor's device), made
    once per call from State.early, after the decisions of calls handed back were looked up."""
    c = _call
    if c.checked:
        if c.refused is not None:  # a second early() of the call (convolution_backward's two gradients)
            raise c.refused
        return
    c.checked = True
    try:
        _settings(c.name, c.first)
    except _Declined as e:
        c.refused = e
        raise
    if c.first.is_cuda and not c.switched and c.first.device.index != torch.cuda.current_device():
        raise _OtherDevice()


_PAUSED = _Declined("paused", lasting=False)  # not counted


def _serve(state, name, handler, args, kwargs):
    """One call of an overridden op through tiletune: (its output, None), or (None, why) when PyTorch's
    own kernel is to compute it (counted in the stats, unless routing is paused)."""
    if _paused_all or getattr(_paused, "on", False):
        return None, _PAUSED
    first = args[1] if name in ("addmm", "baddbmm") else args[0]
    c = _call
    c.name, c.first, c.checked, c.switched, c.refused, c.plan = name, first, False, False, None, None
    try:
        try:
            out = handler(state, *args, **kwargs)
        except _OtherDevice:  # nothing was done yet: the handler starts over on the tensor's device
            c.checked, c.switched = False, True
            with torch.cuda.device(first.device):  # the stream, the context: those of the tensor's device
                out = handler(state, *args, **kwargs)
        state.count(state.routed, name)
        return out, None
    except _Declined as why:
        state.count(state.declined, f"{name}: {why}")
        return None, why
    except _tt.Error as e:
        # Refused, or failed: the output is a fresh tensor nobody saw, and PyTorch computes it.
        why = _Declined(f"refused by the runtime ({str(e)[:120]})", lasting=False)
        state.count(state.declined, f"{name}: {why}")
        if e.status not in _DECLINE_STATUSES:
            _warn_once(f"tiletune.torch: {name} failed in tiletune and ran on PyTorch's kernel: {e}")
        return None, why
    finally:
        c.first = c.refused = None  # no tensor kept alive past the call


def _kernel(state, name, handler, theirs):
    """The Python route's kernel for an op: PyTorch's own kernel called back from Python."""
    def kernel(*args, **kwargs):
        out, why = _serve(state, name, handler, args, kwargs)
        return out if why is None else theirs(*args, **kwargs)
    return kernel


# What the C++ route's handlers answer besides the outputs (_route.cpp): routed, or handed back for
# this call only; an index >= 0 is the reason of a decline the C++ route remembers and counts.
_ROUTED, _THIS_CALL = -1, -2


def _answer(state, name, handler):
    """torch.py's handler as the C++ route calls it (tiletune_route::<op>): outputs and a code."""
    outputs = 3 if name == "convolution_backward" else 1

    def kernel(*args, **kwargs):
        out, why = _serve(state, name, handler, args, kwargs)
        if why is None:
            plan = _call.plan or []
            return (*out, _ROUTED, plan) if outputs > 1 else (out, _ROUTED, plan)
        code = state.reason_id(f"{name}: {why}") if why.lasting else _THIS_CALL
        return (None,) * outputs + (code, [])
    return kernel


def _address(f):
    return ctypes.cast(f, ctypes.c_void_p).value or 0


def _capture_check():
    """cudaStreamIsCapturing of the CUDA runtime PyTorch loaded, for _route.cpp to see graph capture
    as _settings does; 0 when there is none (then served CUDA calls always come to this module)."""
    if not torch.version.cuda:
        return 0
    try:
        with open("/proc/self/maps") as f:
            paths = sorted(set(re.findall(r"(/\S*/libcudart\.so[.\d]*)$", f.read(), re.M)))
    except OSError:
        return 0
    for path in paths:
        try:
            return _address(ctypes.CDLL(path).cudaStreamIsCapturing)
        except (OSError, AttributeError):
            pass
    return 0


def _c_api():
    """The entry points _route.cpp runs plans through, as addresses: the runtime library's GEMM and
    convolutions (the one this package loads), then _capture_check(). 0s where missing."""
    try:
        L = _capi.lib()
    except ImportError:
        return [0] * 5
    fns = (L.tiletune_gemm_strided_batched_ex, L.tiletune_conv_forward, L.tiletune_conv_backward_data,
           L.tiletune_conv_backward_filter)
    return [_address(f) for f in fns] + [_capture_check()]


_warned = set()


def _warn_once(message):
    if message not in _warned:
        import warnings
        _warned.add(message)
        warnings.warn(message)


class _Overrides:
    """aten's kernels of the ops overridden for the devices' dispatch keys, by the C++ route when it
    can be built (_route.py), else by the Python one; close() gives aten its own kernels back."""

    def __init__(self, state, devices):
        import warnings
        keys = [{"cuda": "CUDA", "cpu": "CPU"}[d] for d in devices if d in ("cuda", "cpu")]
        self.cpp = _route.load()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Oo]verrid.*")  # replacing aten's kernel is the point
            if self.cpp:
                if not _route.with_cuda():
                    keys = [k for k in keys if k != "CUDA"]  # a CPU-only PyTorch: no CUDA tensor can come
                self.lib = torch.library.Library("tiletune_route", "IMPL")
                for name, (handler, _) in _OPS.items():
                    for key in keys:
                        self.lib.impl(name, _answer(state, name, handler), key)
                torch.ops.tiletune_route.enable(keys, _c_api())
            else:
                self.lib = torch.library.Library("aten", "IMPL")
                for name, (handler, theirs) in _OPS.items():
                    for key in keys:
                        self.lib.impl(name, _kernel(state, name, handler, theirs), key)

    def declined(self, state):
        """The calls the C++ route handed back without asking torch.py, by reason."""
        if not self.cpp:
            return {}
        c = torch.ops.tiletune_route.counts()
        return {state.reasons[c[i]]: c[i + 1] for i in range(0, len(c), 2)}

    def served(self):
        """The calls the C++ route served from a plan, by op; and the plans whose C API call failed
        (those calls came to torch.py, which served or handed them back, and counted them)."""
        if not self.cpp:
            return {}, {}
        c, names = list(torch.ops.tiletune_route.served()), list(_OPS)  # in _route.cpp's Op order
        by_op = lambda counts: {n: v for n, v in zip(names, counts) if v}
        return by_op(c[:len(names)]), by_op(c[len(names):])

    def close(self):
        if self.cpp:
            torch.ops.tiletune_route.disable()
        self.lib._destroy()


class paused:
    """`with tiletune.torch.paused():` runs the block (on this thread) on PyTorch's own kernels."""

    def __enter__(self):
        self.was = getattr(_paused, "on", False)
        _paused.on = True
        if _route.loaded():
            torch.ops.tiletune_route.pause(True)

    def __exit__(self, *exc):
        _paused.on = self.was
        if _route.loaded():
            torch.ops.tiletune_route.pause(self.was)


_active = None  # (state, library)
_guard = threading.Lock()


def enable(db=None, user_db=None, record=None, online=False, devices=("cuda", "cpu"), serve="tuned"):
    """Routes matmuls and convolutions (and their backward passes) to tiletune, in every thread.

    db:      the shipped (packed) solution database, opened read-only; None: none.
    user_db: a database whose winners come first (online tuning writes there); None: $TILETUNE_USER_DB.
    record:  a tuning config path: the problems served untuned are added to it at disable() or exit
             (several processes may record into one path; their problems are merged).
    online:  tune problems served untuned in the background (one tune per problem on the node).
    devices: which tensors to route: "cuda" (GPU tensors of any index), "cpu" (the host backend).
    serve:   "tuned" (default): only problems tiletune serves better than the vendor library go to
             it (a tuned or pooled winner that beat the vendor's default); the rest run PyTorch's
             own kernels, so an untuned model runs as fast as without tiletune. "all": every problem
             tiletune can take (the vendor rung through tiletune too). Recording and online tuning
             route everything: the runtime has to see the calls.
    """
    global _active
    with _guard:
        if _active is not None:
            raise RuntimeError("tiletune.torch is already enabled; call disable() first")
        unknown = set(devices) - {"cuda", "cpu"}
        if unknown:
            raise ValueError(f"devices: {sorted(unknown)} (expected 'cuda' and/or 'cpu')")
        state = _State(db, user_db, record, online, devices, serve)
        _active = (state, _Overrides(state, devices))
    return state


def _finish(state):
    for rt in list(state.runtimes.values()):
        if isinstance(rt, str):
            continue
        if state.record_path:
            try:
                rt.record(state.record_path)
            except _tt.Error as e:
                import warnings
                warnings.warn(f"tiletune.torch: recording into {state.record_path} failed: {e}")
        rt.close()


def disable():
    """Stops routing, writes the recording (if any) and closes the runtimes. Returns the final stats."""
    global _active
    with _guard:
        if _active is None:
            return None
        state, overrides = _active
        _active = None
        overrides.close()  # aten's own kernels are back
    result = _stats(state, overrides)
    _finish(state)
    return result


def enabled():
    return _active is not None


def runtime(device):
    """The tiletune Runtime serving tensors on `device` (made on first use)."""
    if _active is None:
        raise RuntimeError("tiletune.torch is not enabled")
    return _active[0].runtime(torch.device(device))


def record(path=None):
    """Adds the problems served untuned so far to the tuning config at `path` (default: enable's)."""
    if _active is None:
        raise RuntimeError("tiletune.torch is not enabled")
    state = _active[0]
    path = path or state.record_path
    if not path:
        raise ValueError("no path to record into")
    for rt in list(state.runtimes.values()):
        if not isinstance(rt, str):
            rt.record(path)


def _stats(state, overrides):
    fast = overrides.declined(state)
    served, failed = overrides.served()
    with state.lock:
        out = {"routed": dict(state.routed + Counter(served)), "declined": dict(state.declined + Counter(fast)),
               "route": "cpp" if overrides.cpp else "python", "routed_cpp": served, "cpp_fallbacks": failed}
        runtimes = list(state.runtimes.items())
    out["runtime"] = {f"{k[0]}:{k[1]}": rt.stats() for k, rt in runtimes if not isinstance(rt, str)}
    return out


def stats():
    """{"routed": {op: calls}, "declined": {"op: reason": calls}, "route": "cpp" or "python" (which
    overrides aten's kernels), "routed_cpp": {op: calls} (of the routed calls, those served from C++
    without entering Python), "cpp_fallbacks": {op: calls} (served from C++ but the C API failed: then
    this module took the call and counted it again), "runtime": {"cuda:0": tiletune stats}}."""
    return None if _active is None else _stats(*_active)


atexit.register(disable)
