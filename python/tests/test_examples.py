"""The PyTorch examples, small, on the CPU: both sides train, the routed side serves every matmul
and convolution through tiletune, and the two start from the same loss."""
import json
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "torch")


def run_example(workdir, script, *args):
    out = workdir / "result.json"
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), "--device", "cpu", "--json", str(out), "--serve", "all", *args],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(out.read_text())["results"]


def check(results, ops):
    plain, routed = results["plain"], results["tiletune"]
    assert abs(plain["losses"][0] - routed["losses"][0]) < 1e-2 * abs(plain["losses"][0])
    assert all(l == l for l in routed["losses"])  # no NaN
    stats = routed["stats"]
    for op in ops:
        assert stats["routed"].get(op, 0) > 0, stats
    assert not stats["declined"], stats


def test_gpt2_small(workdir):
    results = run_example(workdir, "gpt2.py", "--layers", "2", "--width", "64", "--heads", "2", "--seq", "32",
                          "--batch", "2", "--steps", "2", "--warmup", "1")
    check(results, ["addmm", "mm"])


def test_resnet_small(workdir):
    pytest.importorskip("torchvision")
    results = run_example(workdir, "resnet50.py", "--model", "resnet18", "--batch", "2", "--image", "32",
                          "--classes", "10", "--steps", "1", "--warmup", "1",
                          # fp32: in bf16, batch norm over 2 images of 1x1 pixels in the last stage turns
                          # rounding differences into sign flips, and the two sides' losses part at once
                          "--no-autocast", "--profile", str(workdir / "profile.txt"))
    check(results, ["convolution", "convolution_backward", "addmm"])
    assert "## tiletune" in (workdir / "profile.txt").read_text()


def test_profile_split_tells_tiletune_vendor_and_aten_kernels_apart():
    sys.path.insert(0, EXAMPLES)
    try:
        import profile_split
    finally:
        sys.path.remove(EXAMPLES)
    kind = profile_split.kind
    assert kind("void mma_gemm<__nv_bfloat16, float, 0, 1, 128>(TtGemmParams)") == "tiletune"
    assert kind("wgmma_conv") == "tiletune" and kind("void narrow_wgrad<4>(TtConvParams)") == "tiletune"
    assert kind("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == "vendor"
    assert kind("void cudnn::engines_precompiled::nchwToNhwcKernel<float>(...)") == "vendor"
    assert kind("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >") == "aten"
    text = profile_split.summary([("void mma_gemm<1>(TtGemmParams)", 3000.0, 2), ("nvjet_tst_128x256", 1000.0, 1),
                                  ("void at::native::reduce_kernel<512>", 1000.0, 4)])
    assert "tiletune 3.00 ms (60%)" in text and "vendor 1.00 ms (20%)" in text, text
