"""tiletune.torch under torch.compile, as it behaves: dynamo traces through (the overrides sit below
it, on the CPU and CUDA dispatch keys, so it sees plain aten ops: no graph break, no error), and the
compiled code's calls of the overridden ops are routed when they run, forward and backward, served
from C++ on repeat on the C++ route. Which calls the compiled code makes is the backend's choice:
aot_eager calls every aten op; inductor on the CPU calls aten's convolutions (its extern kernels) and
generates its own matmul code, which tiletune never sees."""
import pytest
import torch
import torch.nn.functional as F

import tiletune.torch as ttt
from test_torch_routing import close, plain

pytestmark = pytest.mark.usefixtures("route")


def step(a, b, x, w):
    return torch.relu(a @ b).square().sum() + F.conv2d(x, w, padding=1).square().sum()


def inputs():
    torch.manual_seed(11)
    return (torch.randn(32, 24, requires_grad=True), torch.randn(24, 16),
            torch.randn(2, 4, 9, 9, requires_grad=True), torch.randn(6, 4, 3, 3, requires_grad=True))


def run(fn, args):
    for t in args:
        t.grad = None
    loss = fn(*args)
    loss.backward()
    return [loss.detach()] + [t.grad.clone() for t in args if t.requires_grad]


def test_dynamo_sees_no_graph_break(routed):
    import torch._dynamo as dynamo
    dynamo.reset()
    explained = dynamo.explain(step)(*inputs())
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained.break_reasons


def test_aot_eager_graphs_are_routed_forward_and_backward(routed, route):
    import torch._dynamo as dynamo
    dynamo.reset()
    args = inputs()
    ref = plain(run, step, args)
    compiled = torch.compile(step, backend="aot_eager")
    for _ in range(3):
        for got, want in zip(run(compiled, args), ref):
            close(got, want)
    s = ttt.stats()
    assert s["routed"]["mm"] == 3 * 2 and s["routed"]["convolution"] == 3, s  # forward, a's gradient
    assert s["routed"]["convolution_backward"] == 3 and not s["declined"], s
    if route == "cpp":
        assert sum(s["routed_cpp"].values()) >= 2 * 4, s  # the later steps' calls, at least
    else:
        assert s["routed_cpp"] == {}, s


def test_inductor_on_the_cpu_routes_its_convolutions_not_its_matmuls(routed, route):
    if route == "python":
        pytest.skip("the same overrides; one compile (seconds) is enough")
    import torch._dynamo as dynamo
    dynamo.reset()
    args = inputs()
    ref = plain(run, step, args)
    compiled = torch.compile(step, backend="inductor")
    for _ in range(2):
        for got, want in zip(run(compiled, args), ref):
            close(got, want)
    s = ttt.stats()
    assert s["routed"] == {"convolution": 2, "convolution_backward": 2} and not s["declined"], s
    assert s["routed_cpp"] == {"convolution": 1, "convolution_backward": 1}, s
