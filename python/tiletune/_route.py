"""The C++ half of tiletune.torch's route (_route.cpp): compiled on the first enable() with PyTorch's
C++ extension machinery (torch.utils.cpp_extension.load: a C++ compiler and ninja, as Triton needs
a compiler), cached in PyTorch's extensions folder ($TORCH_EXTENSIONS_DIR, by default under
~/.cache/torch_extensions) and loaded from there by later processes. The package itself stays a
py3-none wheel that compiles nothing at install time.

TILETUNE_TORCH_ROUTE picks the route: "auto" (default) the C++ one, or the Python one with a warning
when it cannot be built; "cpp" the C++ one or an error; "python" the Python one, nothing built.
"""
import os
import re
import sys
import threading
import time
import warnings

MODES = ("auto", "cpp", "python")
_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_route.cpp")

_lock = threading.Lock()
_loaded = None  # None: not tried yet; True: torch.ops.tiletune_route is there; else why it is not
build_seconds = None  # how long the first load in this process took (a build, or a cache hit)


def mode():
    m = os.environ.get("TILETUNE_TORCH_ROUTE", "").strip().lower() or "auto"
    if m not in MODES:
        raise ValueError(f"TILETUNE_TORCH_ROUTE={m!r}: expected one of {', '.join(MODES)}")
    return m


def with_cuda():
    """Whether the C++ route overrides the CUDA key too (a CUDA or ROCm build of PyTorch)."""
    import torch
    return bool(torch.version.cuda or torch.version.hip)


def load():
    """True when the C++ route is loaded (built first if needed), False for the Python route."""
    global _loaded
    m = mode()
    if m == "python":
        return False
    with _lock:
        if _loaded is None:
            _loaded = _build()
    if _loaded is True:
        return True
    if m == "cpp":
        raise RuntimeError(f"tiletune.torch: TILETUNE_TORCH_ROUTE=cpp, but the C++ route cannot be built: {_loaded}")
    if not getattr(load, "warned", False):
        load.warned = True
        warnings.warn(f"tiletune.torch: the C++ route cannot be built, calls go through the Python route "
                      f"(slower per call; TILETUNE_TORCH_ROUTE=python silences this): {_loaded}")
    return False


def _cuda_headers():
    """A folder with the CUDA runtime's headers (the toolkit's, else those of PyTorch's NVIDIA wheels),
    for the build that runs plans on CUDA tensors (it asks PyTorch for the current stream); None if
    there is none."""
    import site
    from torch.utils import cpp_extension
    dirs = [os.path.join(cpp_extension.CUDA_HOME, "include")] if cpp_extension.CUDA_HOME else []
    for d in site.getsitepackages() + [site.getusersitepackages()] + sys.path:
        dirs += [os.path.join(d, "nvidia", sub, "include") for sub in ("cu13", "cuda_runtime")]
    return next((d for d in dirs if os.path.exists(os.path.join(d, "cuda_runtime_api.h"))), None)


def _build():
    global build_seconds
    import torch
    t0 = time.perf_counter()
    # Named for the Python and PyTorch it is built against: the build cache keys on the source and
    # flags only, and a library built against another PyTorch would not load (or worse, would).
    tag = re.sub(r"\W", "_", f"py{sys.version_info[0]}{sys.version_info[1]}_torch{torch.__version__}")
    variants = [(f"tiletune_route_{tag}", ["-O2"], [], [])]
    if with_cuda():
        # at::cuda:: calls PyTorch's own CUDA kernels by name, past the dispatcher.
        lib = "-ltorch_hip" if torch.version.hip else "-ltorch_cuda"
        variants = [(f"tiletune_route_{tag}", ["-O2", "-DTILETUNE_ROUTE_CUDA"], [lib], [])]
        headers = _cuda_headers() if torch.version.cuda else None
        if headers:  # served CUDA calls run in C++ too; without the headers they go through torch.py
            variants.insert(0, (f"tiletune_route_plans_{tag}", ["-O2", "-DTILETUNE_ROUTE_CUDA",
                                                                "-DTILETUNE_ROUTE_CUDA_PLANS"],
                                [lib, "-lc10_cuda"], [headers]))
    why = None
    for name, cflags, ldflags, includes in variants:
        try:
            from torch.utils import cpp_extension
            cpp_extension.load(name=name, sources=[_SOURCE], extra_cflags=cflags, extra_ldflags=ldflags,
                               extra_include_paths=includes, is_python_module=False)
            build_seconds = time.perf_counter() - t0
            return True
        except Exception as e:  # no compiler, no ninja, headers that do not match: the Python route serves
            lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [""]
            errors = [line for line in lines if "error" in line.lower() and not line.startswith("Error building")]
            why = why or f"{type(e).__name__}: {(errors or lines)[0][:300]}"
    return why


def loaded():
    return _loaded is True
