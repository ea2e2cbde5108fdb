"""The floor of the memory-bound 1x1 convolutions under do_bench (median, L2 cleared): for each layer and
direction, what a plain write of its output and a plain read of its inputs cost, beside PyTorch's convolution
(cuDNN, benchmark mode) on the same tensors. A 1x1 input gradient of few output channels (MobileNet's 144 <- 24)
writes six bytes per byte it reads, so its floor is the write; the numbers say how far cuDNN and the tuned kernels
(benchmarks/vs_torch.py) sit above it. a.sum() is a reduction kernel (about 1.6 TB/s on an H100), not the read
floor; the last column prices the layer's bytes at the rate of a 256 MB device copy instead. Usage:
python3 benchmarks/probes/write_bound.py"""
import torch
import torch.nn.functional as F
import triton

# name, N, C, H, W, K (1x1, stride 1): benchmarks/vs_torch.py's untuned layers and ResNet-50's l1_1x1_64
LAYERS = [("mbnet_1x1_144_24", 64, 144, 56, 56, 24), ("effnet_1x1_240_40", 64, 240, 28, 28, 40),
          ("incep_1x1_96_160", 32, 96, 35, 35, 160), ("l1_1x1_64", 128, 64, 56, 56, 64)]


def bench(f):
    return triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median") * 1000.0  # us


def main():
    torch.backends.cudnn.benchmark = True
    dt = torch.bfloat16
    print(f"{torch.cuda.get_device_name()}; PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    big_in = torch.empty(128 * 2**20, device="cuda", dtype=dt)
    big_out = torch.empty_like(big_in)
    copy_rate = 2 * big_in.numel() * 2 / 1e6 / bench(lambda: big_out.copy_(big_in))  # MB/us = TB/s, read + write
    print(f"device copy of 256 MB: {copy_rate:.2f} TB/s (read + write)")
    print("| layer | direction | MB read | MB written | write alone us | read alone us | cuDNN us | cuDNN / (write + read) "
          "| bytes at the copy rate us |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, n, c, h, w, k in LAYERS:
        x = torch.randn(n, c, h, w, device="cuda", dtype=dt).to(memory_format=torch.channels_last)
        wt = torch.randn(k, c, 1, 1, device="cuda", dtype=dt).to(memory_format=torch.channels_last)
        dy = torch.randn(n, k, h, w, device="cuda", dtype=dt).to(memory_format=torch.channels_last)
        for direction, src, dst, f in [
                ("fwd", x, dy, lambda: F.conv2d(x, wt)),
                ("dgrad", dy, x, lambda: torch.ops.aten.convolution_backward(
                    dy, x, wt, None, (1, 1), (0, 0), (1, 1), False, (0, 0), 1, (True, False, False)))]:
            out = torch.empty_like(dst)
            t_write = bench(lambda: out.fill_(1.0))
            t_read = bench(lambda: src.sum())
            t_conv = bench(f)
            mb_in, mb_out = src.numel() * 2 / 1e6, dst.numel() * 2 / 1e6
            print(f"| {name} | {direction} | {mb_in:.1f} | {mb_out:.1f} | {t_write:.1f} ({mb_out / t_write:.2f} TB/s) | "
                  f"{t_read:.1f} ({mb_in / t_read:.2f} TB/s) | {t_conv:.1f} | {t_conv / (t_write + t_read):.2f} | "
                  f"{(mb_in + mb_out) / copy_rate:.1f} |")


if __name__ == "__main__":
    main()
