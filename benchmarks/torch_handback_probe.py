# Where a call handed back to PyTorch spends its time: plain PyTorch against tiletune.torch enabled with
# no database (every call handed back), then cProfile over the same loops. Run on a GPU with
# PYTHONPATH=python and TILETUNE_LIBRARY set (scripts/h200_torch.sh sets them).
import cProfile, pstats, time, torch, tiletune.torch as tt
a = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
x = torch.randn(8, 64, 14, 14, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
w = torch.randn(64, 64, 3, 3, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
def loop(n):
    for _ in range(n):
        torch.mm(a, b)
def cloop(n):
    for _ in range(n):
        torch.nn.functional.conv2d(x, w, padding=1)
for f in (loop, cloop):
    f(50); torch.cuda.synchronize(); t = time.perf_counter(); f(2000); torch.cuda.synchronize()
    print(f.__name__, "plain", (time.perf_counter() - t) / 2000 * 1e6, "us")
tt.enable()
for f in (loop, cloop):
    f(50); torch.cuda.synchronize(); t = time.perf_counter(); f(2000); torch.cuda.synchronize()
    print(f.__name__, "handed back", (time.perf_counter() - t) / 2000 * 1e6, "us")
pr = cProfile.Profile(); pr.enable(); loop(2000); cloop(2000); pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(18)
print(tt.stats())
