"""tiletune from Python: the runtime (tuned GEMMs and convolutions from a solution database) on raw
device pointers, and `tiletune.torch`, which routes a PyTorch model's matmuls and convolutions to it.

    import tiletune
    rt = tiletune.Runtime(db="ship.db", backend="cuda", device=0)
    rt.gemm(...)            # column-major BLAS convention, as the C API (runtime/tiletune.h)
    rt.stats()

The C API is reached through ctypes: the package ships libtiletune_runtime and the tiletune program
and compiles nothing against Python or PyTorch.
"""
import ctypes as C
import os
import threading

from . import _capi
from ._capi import (COMPUTE_32F, COMPUTE_32F_FAST_TF32, CONV_BACKWARD_DATA, CONV_BACKWARD_FILTER, CONV_FORWARD,
                    LAYOUT_NCHW, LAYOUT_NHWC, OP_N, OP_T, R_16BF, R_16F, R_32F, R_8F_E4M3, R_8F_E5M2, R_8I, R_32I,
                    ConvDesc, exe_path, library_path)

__version__ = "0.1.0"
__all__ = ["Runtime", "Error", "ConvDesc", "version", "library_path", "exe_path"]


class Error(RuntimeError):
    """A failed C API call: `status` is the tiletune_status_t, the message tiletune_last_error()."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def version():
    """The loaded runtime library's version ("MAJOR.MINOR.PATCH")."""
    return _capi.lib().tiletune_version().decode()


def _check(status):
    if status != _capi.SUCCESS:
        L = _capi.lib()
        msg = (L.tiletune_last_error() or b"").decode(errors="replace")
        name = (L.tiletune_status_string(status) or b"").decode()
        raise Error(status, f"tiletune: {name}: {msg}" if msg else f"tiletune: {name}")


def _path(p):
    return os.fsencode(p) if p else None


class Runtime:
    """One handle of the C API: a device, the shipped database (read-only; None: none) and a user
    database whose winners take precedence (None: $TILETUNE_USER_DB). Any number of threads may
    call it at once. Pointers are integers (tensor.data_ptr()); `stream` a CUDA/HIP stream handle
    as an integer, or None for the default stream (and on the host backend)."""

    def __init__(self, db=None, user_db=None, backend="auto", device=0):
        L = _capi.lib()
        # Online tuning's worker is the packaged program unless the environment names another.
        if os.path.exists(exe_path()):
            os.environ.setdefault("TILETUNE_EXE", exe_path())
        self._h = C.c_void_p()
        _check(L.tiletune_create_ex(C.byref(self._h), _path(db), _path(user_db), backend.encode(), int(device)))
        self._L = L
        self._idle = threading.Condition()
        self._calls = 0  # C calls in flight: close() waits for them
        self.backend, self.device = backend, device

    @property
    def handle(self):
        """The C API's tiletune_handle_t as an integer (0 once closed): for C code that calls the
        library directly (tiletune.torch's C++ route) while this Runtime is open."""
        return self._h.value or 0 if self._h else 0

    def close(self):
        """Destroys the handle (TILETUNE_RECORD_UNTUNED is written then), once the calls that other
        threads have in flight on it return. Idempotent."""
        with self._idle:
            h, self._h = self._h, None
            self._idle.wait_for(lambda: self._calls == 0)
        if h:
            _check(self._L.tiletune_destroy(h))

    def _call(self, f, *args):
        with self._idle:
            if not self._h:
                raise Error(_capi.INVALID_VALUE, "tiletune: the runtime was closed")
            self._calls += 1
            h = self._h
        try:
            _check(f(h, *args))
        finally:
            with self._idle:
                self._calls -= 1
                if self._calls == 0:
                    self._idle.notify_all()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def gemm(self, op_a, op_b, m, n, k, a, ab_type, lda, b, ldb, c, c_type, ldc, alpha=1.0, beta=0.0,
             batch=1, stride_a=0, stride_b=0, stride_c=0, compute=COMPUTE_32F, stream=None):
        """C = alpha * op(A) op(B) + beta * C, column-major (BLAS), batch i at a + i * stride_a elements."""
        self._call(self._L.tiletune_gemm_strided_batched_ex, op_a, op_b, m, n, k, alpha, a, ab_type, lda, stride_a,
                   b, ldb, stride_b, beta, c, c_type, ldc, stride_c, batch, compute, stream)

    def conv(self, direction, desc, first, second, out, stream=None):
        """One direction of a convolution: forward (x, w -> y), backward data (dy, w -> dx) or
        backward filter (x, dy -> dw); `desc` a ConvDesc (forward shapes, layout, types)."""
        f = (self._L.tiletune_conv_forward, self._L.tiletune_conv_backward_data,
             self._L.tiletune_conv_backward_filter)[direction]
        self._call(f, C.byref(desc), first, second, out, stream)

    def explain(self, op_a, op_b, m, n, k, ab_type, lda, ldb, c_type, ldc, batch=1, beta_zero=True,
                compute=COMPUTE_32F):
        """Which rung of the dispatch ladder serves this GEMM, and why."""
        buf = C.create_string_buffer(2048)
        self._call(self._L.tiletune_explain, op_a, op_b, m, n, k, ab_type, lda, ldb, c_type, ldc, batch,
                                        int(bool(beta_zero)), compute, buf, len(buf))
        return buf.value.decode(errors="replace")

    def gemm_choice(self, op_a, op_b, m, n, k, ab_type, lda, ldb, c_type, ldc, batch=1, beta_zero=True,
                    compute=COMPUTE_32F, stride_a=0, stride_b=0, stride_c=0):
        """How this GEMM would be served, as data: (rung name, a generated kernel runs, its measured
        speed over the vendor's default on the problem it was tuned on; 1 for the vendor's default,
        0 unmeasured). Runs nothing."""
        c = _capi.Choice()
        self._call(self._L.tiletune_gemm_choice, op_a, op_b, m, n, k, ab_type, lda, stride_a, ldb, stride_b,
                                            c_type, ldc, stride_c, batch, int(bool(beta_zero)), compute, C.byref(c))
        return _capi.RUNGS[c.rung], bool(c.kernel), c.vendor_ratio

    def conv_choice(self, desc, direction):
        """As gemm_choice, for one direction of a convolution."""
        c = _capi.Choice()
        self._call(self._L.tiletune_conv_choice, C.byref(desc), direction, C.byref(c))
        return _capi.RUNGS[c.rung], bool(c.kernel), c.vendor_ratio

    def explain_conv(self, desc, direction):
        buf = C.create_string_buffer(2048)
        self._call(self._L.tiletune_explain_conv, C.byref(desc), direction, buf, len(buf))
        return buf.value.decode(errors="replace")

    def stats(self):
        """Calls per rung of the dispatch ladder (tiletune_stats_t) as a dict."""
        s = _capi.Stats()
        self._call(self._L.tiletune_get_stats, C.byref(s))
        return s.as_dict()

    def arch(self):
        """(arch, tuned problems loaded for it), e.g. ("sm_90a", 42)."""
        buf, n = C.create_string_buffer(64), C.c_size_t()
        self._call(self._L.tiletune_get_arch, buf, len(buf), C.byref(n))
        return buf.value.decode(), int(n.value)

    def set_online(self, enable=True):
        """Online tuning of problems served untuned (tiletune_set_online)."""
        self._call(self._L.tiletune_set_online, int(bool(enable)))

    def online_wait(self, seconds):
        """Waits at most `seconds` for online tuning to finish what it has; True when it did."""
        idle = C.c_int()
        self._call(self._L.tiletune_online_wait, float(seconds), C.byref(idle))
        return bool(idle.value)

    def record(self, path):
        """Adds the problems served untuned to the tuning config at `path` (merged with what other
        processes recorded there; `tiletune tune PATH` tunes it)."""
        self._call(self._L.tiletune_record, _path(path))

    def synchronize(self):
        self._call(self._L.tiletune_synchronize)
