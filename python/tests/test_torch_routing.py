"""tiletune.torch on CPU tensors: which ops are routed, that they compute what PyTorch computes
(outputs poisoned first), that gradients match, and what is handed back to PyTorch."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tiletune.torch as ttt

TOL = {torch.float32: 1e-4, torch.bfloat16: 2e-2}


pytestmark = pytest.mark.usefixtures("route")  # every test on both routes (conftest.py)


def close(got, ref, dtype=torch.float32):
    assert not torch.isnan(got).any(), "an element was never written"
    err = ((got.double() - ref.double()).norm() / max(ref.double().norm(), 1e-30)).item()
    assert err < TOL[dtype], err


def rel(a, b):
    return ((a.double() - b.double()).norm() / max(b.double().norm(), 1e-30)).item()


def as_close_as_pytorch(got, theirs, exact):
    """Under bf16 autocast: tiletune's error against the fp64 result at most twice PyTorch's own
    (or 1%), since two bf16 computations need not agree with each other more closely than that."""
    assert not torch.isnan(got).any(), "an element was never written"
    assert rel(got, exact) <= max(2 * rel(theirs, exact), 1e-2), (rel(got, exact), rel(theirs, exact))


def check_step(got, ref, exact=None):
    """A training step's (loss, gradients) against PyTorch's: closely in fp32; under autocast, each
    against the fp64 step `exact()` no worse than PyTorch's own (as_close_as_pytorch)."""
    (loss, grads_), (ref_loss, ref_grads) = got, ref
    if exact:
        exact_loss, exact_grads = exact()
        as_close_as_pytorch(loss, ref_loss, exact_loss)
        for g, r, e in zip(grads_, ref_grads, exact_grads):
            as_close_as_pytorch(g, r, e)
    else:
        close(loss, ref_loss)
        for g, r in zip(grads_, ref_grads):
            close(g, r)


def plain(fn, *args):
    """`fn` on PyTorch's own kernels (routing off for the call)."""
    with ttt.paused():
        return fn(*args)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_matmuls_in_every_layout_are_routed_and_right(routed, dtype):
    torch.manual_seed(1)
    a, b = torch.randn(33, 47, dtype=dtype), torch.randn(47, 21, dtype=dtype)
    cases = {
        "mm": lambda: a @ b,
        "mm t": lambda: a.T.contiguous().T @ b.T.contiguous().T,  # column-major operands
        "mm slice": lambda: torch.randn(33, 60, dtype=dtype)[:, 5:52] @ b,  # leading dimension 60
        "addmm": lambda: torch.addmm(torch.randn(21, dtype=dtype), a, b, beta=0.5, alpha=2.0),
        "bmm": lambda: torch.bmm(a.expand(3, 33, 47).contiguous(), torch.randn(3, 47, 21, dtype=dtype)),
        "baddbmm": lambda: torch.baddbmm(torch.randn(3, 33, 21, dtype=dtype), torch.randn(3, 33, 47, dtype=dtype),
                                         torch.randn(3, 47, 21, dtype=dtype), beta=1.0, alpha=0.5),
        "linear 3d": lambda: F.linear(torch.randn(2, 5, 47, dtype=dtype), torch.randn(21, 47, dtype=dtype),
                                      torch.randn(21, dtype=dtype)),
    }
    for name, make in cases.items():
        torch.manual_seed(2)
        got = make()
        torch.manual_seed(2)
        ref = plain(make)
        close(got, ref, dtype)
    s = ttt.stats()
    assert sum(s["routed"].values()) >= len(cases), s
    assert not s["declined"], s
    assert s["runtime"]["cpu:0"]["calls"] == sum(s["routed"].values())


def test_what_tiletune_cannot_take_goes_to_pytorch_and_is_counted(routed):
    x = torch.randn(8, 8, dtype=torch.float64)
    assert torch.equal(x @ x, plain(torch.mm, x, x))
    i = torch.randint(0, 5, (4, 4))
    assert torch.equal(i @ i, plain(torch.mm, i, i))
    strided = torch.randn(8, 16)[:, ::2]  # no unit stride in either dimension
    close(strided @ torch.eye(8), strided)
    declined = ttt.stats()["declined"]
    assert declined.get("mm: dtype float64") == 1 and declined.get("mm: dtype int64") == 1, declined
    assert declined.get("mm: operand strides") == 1, declined


def mlp():
    torch.manual_seed(3)
    return nn.Sequential(nn.Linear(64, 96), nn.GELU(), nn.Linear(96, 96), nn.GELU(), nn.Linear(96, 10))


def grads(model, x, y, autocast=None):
    model.zero_grad()
    if autocast == torch.float64:
        model, x, autocast = model.double(), x.double(), None
    with torch.autocast("cpu", dtype=autocast, enabled=autocast is not None):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("autocast", [None, torch.bfloat16])
def test_a_training_step_gives_pytorchs_gradients(workdir, autocast):
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    ref_loss, ref = grads(mlp(), x, y, autocast)
    ttt.enable(devices=("cpu",), serve="all")
    try:
        loss, got = grads(mlp(), x, y, autocast)
        s = ttt.stats()
    finally:
        ttt.disable()
    check_step((loss, got), (ref_loss, ref), autocast and (lambda: grads(mlp(), x, y, torch.float64)))
    # forward addmm x3, backward: input gradients (mm x2: the first layer's input needs none) and weight gradients (mm x3)
    assert s["routed"].get("addmm", 0) == 3 and s["routed"].get("mm", 0) == 5, s


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.c3 = nn.Conv2d(16, 12, 1)
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        x = F.relu(self.bn(self.c1(x)))
        x = F.relu(self.c3(F.relu(self.c2(x))))
        return self.fc(x.mean((2, 3)))


@pytest.mark.parametrize("channels_last,autocast", [(False, None), (True, None), (True, torch.bfloat16)])
def test_convolutions_forward_and_backward_match_pytorch(workdir, channels_last, autocast):
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    torch.manual_seed(4)
    x = torch.randn(4, 8, 12, 12).to(memory_format=fmt).requires_grad_()
    y = torch.randint(0, 5, (4,))

    def run(autocast=autocast):
        torch.manual_seed(5)
        model, inp = Block().to(memory_format=fmt), x
        if autocast == torch.float64:
            model, inp, autocast = model.double(), x.double(), None
        x.grad = None
        with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            loss = F.cross_entropy(model(inp), y)
        loss.backward()
        return loss.detach(), [x.grad.clone()] + [p.grad.clone() for p in model.parameters()]

    ref_loss, ref = run()
    ttt.enable(devices=("cpu",), serve="all")
    try:
        loss, got = run()
        s = ttt.stats()
    finally:
        ttt.disable()
    check_step((loss, got), (ref_loss, ref), autocast and (lambda: run(torch.float64)))
    assert s["routed"].get("convolution", 0) == 3 and s["routed"].get("convolution_backward", 0) == 3, s
    assert not s["declined"], s


def test_by_default_only_what_tiletune_serves_better_goes_to_it(workdir):
    a, b = torch.randn(40, 24), torch.randn(24, 16)
    ttt.enable(devices=("cpu",))  # no database: every problem is untuned
    try:
        close(a @ b, plain(torch.mm, a, b))
        close(a @ b, plain(torch.mm, a, b))
        s = ttt.stats()
    finally:
        ttt.disable()
    assert s["routed"] == {} and s["runtime"]["cpu:0"]["calls"] == 0, s
    assert s["declined"] == {"mm: untuned (vendor rung): PyTorch's own kernel": 2}, s


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_mixed_precision_with_a_grad_scaler_steps_like_pytorch(workdir, dtype):
    """autocast + GradScaler, as the ROCm training guides run it: the scaled gradients are routed
    (their GEMMs run in the autocast dtype) and the optimizer step lands where PyTorch's does."""
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    init = [p.detach().clone() for p in mlp().parameters()]

    def step():
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10)
        with torch.autocast("cpu", dtype=dtype):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return [p.detach().clone() for p in model.parameters()]

    ref = step()
    ttt.enable(devices=("cpu",), serve="all")
    try:
        got = step()
        s = ttt.stats()
    finally:
        ttt.disable()
    assert s["routed"].get("mm", 0) == 5 and s["routed"].get("addmm", 0) == 3, s
    for g, r, i in zip(got, ref, init):
        close(g - i, r - i, torch.bfloat16)  # the step itself (a skipped one would be all zeros)


def test_shapes_pytorch_refuses_are_refused_by_pytorch(routed):
    with pytest.raises(RuntimeError):
        torch.ops.aten.mm(torch.randn(4, 5), torch.randn(6, 3))
    with pytest.raises(RuntimeError):
        torch.ops.aten.bmm(torch.randn(2, 4, 5), torch.randn(3, 5, 3))
    with pytest.raises(RuntimeError):
        F.conv2d(torch.randn(1, 6, 8, 8), torch.randn(4, 4, 3, 3))  # 6 input channels, filters for 4
    assert ttt.stats()["declined"] == {"mm: shapes": 1, "bmm: shapes": 1, "convolution: shapes": 1}


def test_a_batched_problem_is_asked_about_with_its_strides(workdir):
    ttt.enable(devices=("cpu",))  # the default policy asks the runtime for every new problem
    try:
        torch.bmm(torch.randn(3, 8, 5), torch.randn(3, 5, 4))
        declined = ttt.stats()["declined"]
    finally:
        ttt.disable()
    assert declined == {"bmm: untuned (vendor rung): PyTorch's own kernel": 1}, declined


def test_settings_decline_each_call_and_are_not_remembered(routed):
    """Deterministic mode hands a call back (both gradients of a convolution's backward), and a
    problem routed before is routed again once the setting is back: settings are read per call, a
    decline they cause is not cached with the problem's decision."""
    a, b = torch.randn(32, 24), torch.randn(24, 16)
    x, w = torch.randn(2, 8, 9, 9), torch.randn(8, 8, 3, 3)
    dy = torch.randn(2, 8, 9, 9)
    back = lambda mask: torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                            mask)
    close(a @ b, plain(torch.mm, a, b))
    close(back([True, True, False])[0], plain(back, [True, True, False])[0])
    routed_before = dict(ttt.stats()["routed"])
    torch.use_deterministic_algorithms(True)
    try:
        close(a @ b, plain(torch.mm, a, b))
        dx, dw, _ = back([True, True, False])
        rdx, rdw, _ = plain(back, [True, True, False])
        close(dx, rdx), close(dw, rdw)
    finally:
        torch.use_deterministic_algorithms(False)
    stats = ttt.stats()
    assert stats["routed"] == routed_before, stats
    declined = [k for k in stats["declined"] if "deterministic" in k]
    assert any(k.startswith("mm:") for k in declined) and any(k.startswith("convolution_backward:") for k in declined)
    close(a @ b, plain(torch.mm, a, b))
    assert ttt.stats()["routed"]["mm"] == routed_before["mm"] + 1


def test_the_bias_gradient_alone_goes_to_pytorch(routed):
    x, w, dy = torch.randn(2, 4, 6, 6), torch.randn(4, 4, 3, 3), torch.randn(2, 4, 6, 6)
    _, _, db = torch.ops.aten.convolution_backward(dy, x, w, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                   [False, False, True])
    close(db, dy.sum((0, 2, 3)))
    assert ttt.stats()["declined"].get("convolution_backward: no gradient asked") == 1, ttt.stats()


def test_a_declined_call_is_handed_back_from_cpp_and_counted(workdir, route):
    """After the first call of a problem (decided in torch.py), the C++ route hands the same call
    back to PyTorch's own kernel by itself: the same output, counted under the same reason."""
    a, b = torch.randn(40, 24), torch.randn(24, 16)
    x, w, dy = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3), torch.randn(2, 4, 8, 8)
    conv = lambda: F.conv2d(x, w, padding=1)
    back = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                       [True, True, False])
    ttt.enable(devices=("cpu",))  # no database: every problem is untuned, so handed back
    try:
        for _ in range(3):
            assert torch.equal(a @ b, plain(torch.mm, a, b))
            assert torch.equal(torch.addmm(b[0], a, b), plain(torch.addmm, b[0], a, b))
            assert torch.equal(conv(), plain(conv))
            (dx, dw, db), (rdx, rdw, _) = back(), plain(back)
            assert torch.equal(dx, rdx) and torch.equal(dw, rdw) and db is None
        s = ttt.stats()
        from_cpp = torch.ops.tiletune_route.counts() if route == "cpp" else []
    finally:
        ttt.disable()
    assert s["route"] == route, s
    assert s["declined"] == {"mm: untuned (vendor rung): PyTorch's own kernel": 3,
                             "addmm: untuned (vendor rung): PyTorch's own kernel": 3,
                             "convolution: untuned (default rung): PyTorch's own kernel": 3,
                             "convolution_backward: untuned (default rung): PyTorch's own kernel": 3}, s
    if route == "cpp":  # (reason, calls) pairs: the two later calls of each problem never reached Python
        assert sorted(from_cpp[1::2]) == [2, 2, 2, 2], from_cpp


def test_a_decline_a_setting_caused_is_not_remembered(routed, route):
    """A problem first seen under deterministic algorithms is handed back for that call only: the
    next call, with the setting back, is routed (the C++ route must not remember the decline)."""
    a, b = torch.randn(24, 40), torch.randn(40, 8)
    torch.use_deterministic_algorithms(True)
    try:
        assert torch.equal(a @ b, plain(torch.mm, a, b))
        assert torch.equal(a @ b, plain(torch.mm, a, b))
    finally:
        torch.use_deterministic_algorithms(False)
    s = ttt.stats()
    assert not s["routed"] and s["declined"] == {
        "mm: deterministic algorithms asked (split-K kernels add with atomics)": 2}, s
    close(a @ b, plain(torch.mm, a, b))
    assert ttt.stats()["routed"] == {"mm": 1}
    if route == "cpp":
        assert list(torch.ops.tiletune_route.counts()) == []


def test_the_cpp_route_falls_back_to_python_with_a_warning(workdir, monkeypatch, route):
    from tiletune import _route
    monkeypatch.setattr(_route, "_loaded", "no compiler here")
    monkeypatch.setattr(_route.load, "warned", False, raising=False)
    a, b = torch.randn(8, 8, dtype=torch.float64), torch.randn(8, 8, dtype=torch.float64)
    if route == "cpp":  # asked for by name: an error
        with pytest.raises(RuntimeError, match="no compiler here"):
            ttt.enable(devices=("cpu",))
        return
    monkeypatch.setenv("TILETUNE_TORCH_ROUTE", "auto")
    with pytest.warns(UserWarning, match="no compiler here"):
        ttt.enable(devices=("cpu",))
    try:
        assert torch.equal(a @ b, plain(torch.mm, a, b))
        s = ttt.stats()
    finally:
        ttt.disable()
    assert s["route"] == "python" and s["declined"] == {"mm: dtype float64": 1}, s
