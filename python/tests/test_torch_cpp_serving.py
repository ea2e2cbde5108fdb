"""The C++ route serving a call by itself (a plan, python/tiletune/_route.cpp) once torch.py served a
call with the same tensor metadata: taken on repeat calls, with torch.py's result and PyTorch's,
gradients included; not while a setting declines the call, nor while recording; falling back to
torch.py when the C API fails; forgotten at disable(). On the Python route nothing is served so."""
import ctypes
import threading

import pytest
import torch
import torch.nn.functional as F

import tiletune.torch as ttt
from tiletune import _capi
from test_torch_routing import Block, close, grads, mlp, plain

pytestmark = pytest.mark.usefixtures("route")


def served_from_cpp(op=None):
    s = ttt.stats()["routed_cpp"]
    return s if op is None else s.get(op, 0)


def gemm_and_conv_cases():
    torch.manual_seed(7)
    a, b, bias = torch.randn(33, 47), torch.randn(47, 21), torch.randn(21)
    A, B, C = torch.randn(3, 33, 47), torch.randn(3, 47, 21), torch.randn(3, 33, 21)
    x, w, wb = torch.randn(2, 8, 10, 10), torch.randn(6, 8, 3, 3), torch.randn(6)
    xc, wc = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
    dy = torch.randn(2, 6, 5, 5).to(memory_format=torch.channels_last)
    back = lambda: torch.ops.aten.convolution_backward(dy, xc, wc, [6], [2, 2], [1, 1], [1, 1], False, [0, 0], 1,
                                                       [True, True, True])
    return [
        ("mm", lambda: a @ b),
        ("mm", lambda: a.T.contiguous().T @ b),  # a column-major operand: another key, another plan
        ("addmm", lambda: torch.addmm(bias, a, b, beta=0.5, alpha=2.0)),
        ("addmm", lambda: torch.addmm(bias, a, b, beta=0, alpha=3.0)),  # the bias not read
        ("bmm", lambda: torch.bmm(A, B)),
        ("baddbmm", lambda: torch.baddbmm(C, A, B, beta=1.0, alpha=0.5)),
        ("convolution", lambda: F.conv2d(x, w, wb, padding=1)),
        ("convolution", lambda: F.conv2d(xc, wc, stride=2, padding=1)),
        ("convolution_backward", back),
    ]


def outputs(r):
    return [t for t in (r if isinstance(r, tuple) else (r,)) if t is not None]


def test_a_repeated_call_is_served_from_cpp_with_torch_pys_result(routed, route):
    cases = gemm_and_conv_cases()
    for op, make in cases:
        first = outputs(make())  # through torch.py: decided, served, and (C++ route) its plan kept
        refs = outputs(plain(make))
        for _ in range(2):
            again = outputs(make())
            for got, want, ref in zip(again, first, refs):
                assert torch.equal(got, want), op  # the same kernel on the same inputs
                close(got, ref)
                assert got.stride() == ref.stride(), op  # channels_last stays channels_last
    s = ttt.stats()
    calls = {}
    for op, _ in cases:
        calls[op] = calls.get(op, 0) + 3
    assert s["routed"] == calls and not s["declined"], s
    assert s["runtime"]["cpu:0"]["calls"] == sum(calls.values()) + 3, s  # each backward: two directions
    if route == "cpp":
        assert s["routed_cpp"] == {op: n * 2 // 3 for op, n in calls.items()}, s
    else:
        assert s["routed_cpp"] == {}, s


@pytest.mark.parametrize("channels_last,autocast", [(False, None), (True, None), (True, torch.bfloat16)])
def test_training_steps_served_from_cpp_give_pytorchs_gradients(workdir, route, channels_last, autocast):
    """Steps 2 and 3 (served from C++ on the C++ route) give exactly step 1's gradients (torch.py's
    path, which test_torch_routing compares with PyTorch's under autocast); in fp32, PyTorch's too."""
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    torch.manual_seed(4)
    x, y = torch.randn(4, 8, 12, 12).to(memory_format=fmt), torch.randint(0, 5, (4,))
    torch.manual_seed(5)
    model = Block().to(memory_format=fmt)
    ref_loss, ref = plain(grads, model, x, y, autocast)
    ttt.enable(devices=("cpu",), serve="all")
    try:
        first = grads(model, x, y, autocast)
        for _ in range(2):
            loss, got = grads(model, x, y, autocast)
            assert torch.equal(loss, first[0]) and all(torch.equal(g, f) for g, f in zip(got, first[1]))
            if autocast is None:
                close(loss, ref_loss)
                for g, r in zip(got, ref):
                    close(g, r)
        mlp_model, mx, my = mlp(), torch.randn(16, 64), torch.randint(0, 10, (16,))
        mlp_ref = plain(grads, mlp_model, mx, my, autocast)[1]
        mlp_first = grads(mlp_model, mx, my, autocast)[1]
        for g, f, r in zip(grads(mlp_model, mx, my, autocast)[1], mlp_first, mlp_ref):
            assert torch.equal(g, f)
            close(g, r, autocast or torch.float32)
        s = ttt.stats()
    finally:
        ttt.disable()
    assert s["routed"]["convolution"] == 9 and s["routed"]["convolution_backward"] == 9, s
    if route == "cpp":  # every step after the first, whole: Block's (steps 2-3), then the MLP's (step 2)
        assert s["routed_cpp"] == {"convolution": 2 * 3, "convolution_backward": 2 * 3, "addmm": 2 * 1 + 3,
                                   "mm": 2 * 2 + 5}, s
    else:
        assert s["routed_cpp"] == {}, s


def test_a_setting_that_declines_a_call_stops_its_plan_until_it_is_back(routed, route):
    a, b = torch.randn(24, 40), torch.randn(40, 8)
    ref = plain(torch.mm, a, b)
    close(a @ b, ref), close(a @ b, ref)
    assert served_from_cpp("mm") == (1 if route == "cpp" else 0)
    torch.use_deterministic_algorithms(True)
    try:
        close(a @ b, ref)  # handed back by torch.py, which reads the setting
    finally:
        torch.use_deterministic_algorithms(False)
    s = ttt.stats()
    assert s["declined"] == {"mm: deterministic algorithms asked (split-K kernels add with atomics)": 1}, s
    assert s["routed"] == {"mm": 2}, s
    close(a @ b, ref)  # the plan is kept and runs again
    assert served_from_cpp("mm") == (2 if route == "cpp" else 0)
    # TF32 for matmuls is part of the key: a call under the other setting is decided anew in torch.py.
    was = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = not was
    try:
        close(a @ b, ref)
        assert served_from_cpp("mm") == (2 if route == "cpp" else 0)
        close(a @ b, ref)
        assert served_from_cpp("mm") == (3 if route == "cpp" else 0)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = was
    with ttt.paused():  # PyTorch's own kernel, not counted
        close(a @ b, ref)
    assert ttt.stats()["routed"] == {"mm": 5}


def failing(fn):
    """A stand-in for a C API entry point that fails as a launch would (INTERNAL), and its calls."""
    calls = []
    cb = ctypes.CFUNCTYPE(ctypes.c_int, *fn.argtypes)(lambda *args: calls.append(1) or _capi.INTERNAL)
    return cb, calls


def test_a_failing_c_api_call_falls_back_to_torch_py(workdir, route, monkeypatch):
    """The plan's C API call fails: the plan is dropped and torch.py takes the call (its own C API
    call, through the real library, serves it). Counted as a fallback, never a wrong result."""
    L = _capi.lib()
    gemm, gemm_calls = failing(L.tiletune_gemm_strided_batched_ex)
    dgrad, dgrad_calls = failing(L.tiletune_conv_backward_data)
    real = ttt._c_api
    monkeypatch.setattr(ttt, "_c_api", lambda: [ttt._address(gemm)] + real()[1:2] + [ttt._address(dgrad)] +
                        real()[3:])
    a, b = torch.randn(16, 24), torch.randn(24, 8)
    x, w, dy = torch.randn(2, 4, 6, 6), torch.randn(4, 4, 3, 3), torch.randn(2, 4, 6, 6)
    back = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                       [True, True, False])
    ttt.enable(devices=("cpu",), serve="all")
    try:
        for _ in range(3):
            close(a @ b, plain(torch.mm, a, b))
            (dx, dw, _), (rdx, rdw, _) = back(), plain(back)
            close(dx, rdx), close(dw, rdw)
        s = ttt.stats()
    finally:
        ttt.disable()
    assert s["routed"] == {"mm": 3, "convolution_backward": 3} and not s["declined"], s
    assert s["routed_cpp"] == {}, s
    if route == "cpp":  # each later call tried its plan once, then went to torch.py
        assert len(gemm_calls) == 2 and len(dgrad_calls) == 2, (gemm_calls, dgrad_calls)
        assert s["cpp_fallbacks"] == {"mm": 2, "convolution_backward": 2}, s
    else:
        assert not gemm_calls and not dgrad_calls and s["cpp_fallbacks"] == {}, s


def test_one_gradient_served_the_other_handed_back_from_cpp(workdir, route, monkeypatch):
    """A backward whose weight gradient tiletune declines: the input gradient is served and the
    weight gradient computed by PyTorch, from C++ as in torch.py, the decline counted each time."""
    real = ttt._decide_conv

    def decide(state, rt, d, direction, device, fast):
        if direction == _capi.CONV_BACKWARD_FILTER:
            raise ttt._Declined("weight gradient not tuned (test)")
        return real(state, rt, d, direction, device, fast)

    monkeypatch.setattr(ttt, "_decide_conv", decide)
    x, w, dy = torch.randn(2, 4, 6, 6), torch.randn(5, 4, 3, 3), torch.randn(2, 5, 6, 6)
    back = lambda: torch.ops.aten.convolution_backward(dy, x, w, [5], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                       [True, True, True])
    ttt.enable(devices=("cpu",), serve="all")
    try:
        for _ in range(3):
            got, ref = back(), plain(back)
            for g, r in zip(got, ref):
                close(g, r)
        s = ttt.stats()
    finally:
        ttt.disable()
    assert s["routed"] == {"convolution_backward": 3}, s
    assert s["declined"] == {"convolution_backward: weight gradient not tuned (test) (one gradient)": 3}, s
    assert s["runtime"]["cpu:0"]["calls"] == 3, s  # the input gradients only
    assert s["routed_cpp"] == ({"convolution_backward": 2} if route == "cpp" else {}), s


def test_nothing_is_served_from_cpp_while_recording(workdir, route):
    a, b = torch.randn(16, 24), torch.randn(24, 8)
    ttt.enable(devices=("cpu",), record=str(workdir / "recorded.json"))
    try:
        for _ in range(3):
            close(a @ b, plain(torch.mm, a, b))
        s = ttt.stats()
    finally:
        ttt.disable()
    assert s["routed"] == {"mm": 3} and s["routed_cpp"] == {}, s


def test_plans_end_with_disable(workdir, route):
    a, b = torch.randn(16, 24), torch.randn(24, 8)
    for expected in ((1, 1), (1, 1)):  # two enable()s: the second starts with nothing remembered
        ttt.enable(devices=("cpu",), serve="all")
        try:
            close(a @ b, plain(torch.mm, a, b)), close(a @ b, plain(torch.mm, a, b))
            s = ttt.stats()
        finally:
            ttt.disable()
        assert s["routed"] == {"mm": 2}, s
        assert s["routed_cpp"] == ({"mm": expected[1]} if route == "cpp" else {}), s


def test_threads_share_plans(routed, route):
    torch.manual_seed(9)
    pairs = [(torch.randn(8 + i, 16), torch.randn(16, 4 + i)) for i in range(4)]
    refs = [plain(torch.mm, a, b) for a, b in pairs]
    errors = []

    def work(i):
        try:
            for _ in range(20):
                for (a, b), ref in zip(pairs[i:] + pairs[:i], refs[i:] + refs[:i]):
                    close(a @ b, ref)
        except AssertionError as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    s = ttt.stats()
    assert s["routed"] == {"mm": 320}, s
    if route == "cpp":
        assert s["routed_cpp"]["mm"] >= 320 - 16, s  # at most each thread's first call of each problem
