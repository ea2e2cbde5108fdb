"""The C API of libtiletune_runtime (runtime/tiletune.h) as ctypes declarations, and where the
library and the program are: inside this package after `pip install .`, else from the environment
(TILETUNE_LIBRARY, TILETUNE_EXE) for a build tree."""
import ctypes as C
import glob
import os
import site
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
SONAME = "libtiletune_runtime.so.0"

# tiletune_status_t
SUCCESS, INVALID_VALUE, DATABASE, DEVICE, NOT_SUPPORTED, LAUNCH, INTERNAL = range(7)
# tiletune_datatype_t, tiletune_operation_t, tiletune_conv_layout_t, tiletune_conv_direction_t
R_32F, R_16F, R_16BF = 0, 1, 2
R_8F_E4M3, R_8I, R_32I = 3, 4, 5  # fp8 e4m3 in (bf16 / fp16 / fp32 out), int8 in with int32 out
R_8F_E5M2 = 6  # fp8 e5m2 in, as e4m3 (tiletune_gemm_strided_batched_mixed for A and B of two fp8 types)
OP_N, OP_T = 0, 1
LAYOUT_NHWC, LAYOUT_NCHW = 0, 1
CONV_FORWARD, CONV_BACKWARD_DATA, CONV_BACKWARD_FILTER = 0, 1, 2
COMPUTE_32F, COMPUTE_32F_FAST_TF32 = 0, 1
# tiletune_rung_t
RUNG_TUNED, RUNG_POOL, RUNG_VENDOR, RUNG_DEFAULT = range(4)
RUNGS = ("tuned", "pool", "vendor", "default")


class Stats(C.Structure):
    _fields_ = [(n, C.c_uint64) for n in ("calls", "tuned", "nearest", "fallbacks", "jit_compiles", "vendor",
                                          "user_tuned", "online", "online_tuned")]

    def as_dict(self):
        return {n: int(getattr(self, n)) for n, _ in self._fields_}


class ConvDesc(C.Structure):
    _fields_ = [(n, C.c_int64) for n in ("n", "c", "h", "w", "k", "r", "s", "stride_h", "stride_w", "pad_h",
                                          "pad_w", "dilation_h", "dilation_w", "groups")] + \
               [("layout", C.c_int), ("in_type", C.c_int), ("out_type", C.c_int)]


class Choice(C.Structure):
    _fields_ = [("rung", C.c_int), ("kernel", C.c_int), ("vendor_ratio", C.c_double)]


def library_path():
    """The runtime library this package loads."""
    env = os.environ.get("TILETUNE_LIBRARY")
    if env:
        return env
    return os.path.join(_HERE, SONAME)


def exe_path():
    """The tiletune program (tuning, online tuning's worker): TILETUNE_EXE, else the packaged one."""
    env = os.environ.get("TILETUNE_EXE")
    if env:
        return env
    return os.path.join(_HERE, "bin", "tiletune")


def _preload_nvrtc():
    """The runtime opens NVRTC by its soname when it first compiles (gpu/cuda/cuda_backend.cpp), which
    finds one already loaded. PyTorch's wheels carry NVRTC outside the loader's path: load theirs
    first, so that a pip-installed PyTorch is enough to compile kernels."""
    dirs = []
    for d in site.getsitepackages() + [site.getusersitepackages()] + sys.path:
        for sub in ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"):
            dirs.append(os.path.join(d, sub))
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(d, "libnvrtc.so.*"))):
            name = os.path.basename(f)
            if "builtins" in name or "alt" in name:
                continue
            try:
                C.CDLL(f, mode=C.RTLD_GLOBAL)
                return True
            except OSError:
                pass
    return False


def _declare(L):
    P, I, I64, F, D, VP, CP, SZ = C.POINTER, C.c_int, C.c_int64, C.c_float, C.c_double, C.c_void_p, C.c_char_p, C.c_size_t
    sigs = {
        "tiletune_version": ([], CP),
        "tiletune_last_error": ([], CP),
        "tiletune_status_string": ([I], CP),
        "tiletune_create_ex": ([P(VP), CP, CP, CP, I], I),
        "tiletune_destroy": ([VP], I),
        "tiletune_gemm_strided_batched_ex": ([VP, I, I, I64, I64, I64, F, VP, I, I64, I64, VP, I64, I64, F, VP, I, I64,
                                              I64, I64, I, VP], I),
        "tiletune_explain": ([VP, I, I, I64, I64, I64, I, I64, I64, I, I64, I64, I, I, CP, SZ], I),
        "tiletune_explain_conv": ([VP, P(ConvDesc), I, CP, SZ], I),
        "tiletune_gemm_choice": ([VP, I, I, I64, I64, I64, I, I64, I64, I64, I64, I, I64, I64, I64, I, I, P(Choice)], I),
        "tiletune_conv_choice": ([VP, P(ConvDesc), I, P(Choice)], I),
        "tiletune_conv_forward": ([VP, P(ConvDesc), VP, VP, VP, VP], I),
        "tiletune_conv_backward_data": ([VP, P(ConvDesc), VP, VP, VP, VP], I),
        "tiletune_conv_backward_filter": ([VP, P(ConvDesc), VP, VP, VP, VP], I),
        "tiletune_get_stats": ([VP, P(Stats)], I),
        "tiletune_set_online": ([VP, I], I),
        "tiletune_online_wait": ([VP, D, P(I)], I),
        "tiletune_get_arch": ([VP, CP, SZ, P(SZ)], I),
        "tiletune_record": ([VP, CP], I),
        "tiletune_synchronize": ([VP], I),
    }
    for name, (args, res) in sigs.items():
        f = getattr(L, name)
        f.argtypes, f.restype = args, res
    return L


_lib = None


def lib():
    """The loaded runtime library (loaded once, on first use)."""
    global _lib
    if _lib is None:
        path = library_path()
        if not os.path.exists(path):
            raise ImportError(f"tiletune: the runtime library is not at {path}: install the package with "
                              "`pip install .` from the repository, or set TILETUNE_LIBRARY to a built one")
        if not os.environ.get("TILETUNE_NVRTC_LIB"):
            _preload_nvrtc()
        try:
            loaded = C.CDLL(path)
        except OSError as e:
            raise ImportError(f"tiletune: cannot load {path}: {e}") from e
        _lib = _declare(loaded)
    return _lib
