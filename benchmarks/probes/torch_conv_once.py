"""One convolution direction through PyTorch's cuDNN (benchmark mode, channels_last bf16), run 20 times
to settle the engine choice, then once more between cudaProfilerStart / Stop: for
`ncu --profile-from-start off` to profile exactly the kernels cuDNN runs for it
(scripts/h200_ncu.sh). Usage: torch_conv_once.py fwd|dgrad|wgrad N C H W K R S STRIDE PAD"""
import sys

import torch

direction = sys.argv[1]
n, c, h, w, k, r, s, stride, pad = (int(v) for v in sys.argv[2:11])
torch.backends.cudnn.benchmark = True
cl = torch.channels_last
x = torch.randn(n, c, h, w, device="cuda", dtype=torch.bfloat16).to(memory_format=cl)
wt = torch.randn(k, c, r, s, device="cuda", dtype=torch.bfloat16).to(memory_format=cl)
dy = torch.randn_like(torch.nn.functional.conv2d(x, wt, stride=stride, padding=pad)).to(memory_format=cl)
mask = {"dgrad": (True, False, False), "wgrad": (False, True, False)}


def run():
    if direction == "fwd":
        return torch.nn.functional.conv2d(x, wt, stride=stride, padding=pad)
    return torch.ops.aten.convolution_backward(dy, x, wt, None, (stride, stride), (pad, pad), (1, 1), False,
                                               (0, 0), 1, mask[direction])


for _ in range(20):
    run()
torch.cuda.synchronize()
torch.cuda.profiler.start()
run()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
