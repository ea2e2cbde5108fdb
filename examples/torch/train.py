"""Trains a model for a number of steps, with PyTorch's own kernels and through tiletune.torch, and
reports the loss of every step and the steps per second of each side (after warm-up steps, timed
with the device synchronized). Used by gpt2.py and resnet50.py.

The two sides start from the same weights and see the same batches, so their losses can be
compared step by step; each side runs in this one process, one after the other.
"""
import argparse
import json
import statistics
import time

import torch

import profile_split

def arguments(description, defaults):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--steps", type=int, default=defaults.get("steps", 30), help="timed steps per side")
    p.add_argument("--warmup", type=int, default=defaults.get("warmup", 5), help="untimed steps per side first")
    p.add_argument("--batch", type=int, default=defaults["batch"])
    p.add_argument("--sides", default="plain,tiletune",
                   help="comma-separated: plain (PyTorch's kernels), tiletune, and plain-perturbed: PyTorch's "
                        "kernels from weights moved by half a bf16 rounding step (2^-9 relative, random signs), "
                        "whose losses show how far bf16 rounding alone moves this training from plain's")
    p.add_argument("--db", help="tiletune: the shipped solution database")
    p.add_argument("--user-db", help="tiletune: a user database over it (online tuning writes there)")
    p.add_argument("--online", action="store_true", help="tiletune: tune untuned problems in the background")
    p.add_argument("--online-wait", type=float, default=0,
                   help="tiletune: after the warm-up, wait this many seconds for online tuning")
    p.add_argument("--record", help="tiletune: add the problems served untuned to this tuning config")
    p.add_argument("--serve", default="tuned", choices=("tuned", "all"),
                   help="tiletune: only what it serves better than the vendor (tuned), or everything it can take")
    p.add_argument("--profile", help="write a PyTorch profiler table of one step per side here")
    p.add_argument("--json", help="write the losses, times and tiletune's stats here")
    p.add_argument("--no-autocast", action="store_true", help="fp32 instead of bf16 autocast")
    return p


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_sides(args, make_model, make_optimizer, batches, loss_fn, memory_format=None):
    """Times every side of --sides, then (with --profile) profiles one step of each. The profiles come
    last because a profiler session leaves the process slower for the rest of its life (on the H200
    the sides timed after one ran 5-20% slower, plain PyTorch included), which would favour the first
    side timed."""
    sides = args.sides.split(",")
    results = {s: run_side(s, args, make_model, make_optimizer, batches, loss_fn, memory_format) for s in sides}
    if args.profile:
        for s in sides:
            results[s]["profile_summary"] = run_side(s, args, make_model, make_optimizer, batches, loss_fn,
                                                     memory_format, profile=True)["profile_summary"]
    return results


def run_side(side, args, make_model, make_optimizer, batches, loss_fn, memory_format=None, profile=False):
    """Trains a fresh model (same seed) for warm-up + timed steps; returns losses, step times, stats.
    profile: two warm-up steps and one profiled step instead (nothing recorded, no online tuning)."""
    import tiletune.torch as ttt
    torch.manual_seed(0)
    model = make_model().to(args.device)
    if side == "plain-perturbed":
        g = torch.Generator().manual_seed(7)
        with torch.no_grad():
            for p in model.parameters():
                sign = torch.randint(0, 2, p.shape, generator=g).to(p.device) * 2 - 1
                p.mul_(1 + sign * 2.0 ** -9)
    if memory_format is not None:
        model = model.to(memory_format=memory_format)
    opt = make_optimizer(model)
    dtype = None if args.no_autocast else torch.bfloat16
    if side == "tiletune":
        ttt.enable(db=args.db, user_db=args.user_db, record=None if profile else args.record,
                   online=args.online and not profile, devices=(args.device.split(":")[0],), serve=args.serve)
    losses, times, summary = [], [], None

    def step(i):
        x, y = batches(i)
        with torch.autocast(args.device.split(":")[0], dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    warmup, steps = (2, 0) if profile else (args.warmup, args.steps)
    try:
        for i in range(warmup):
            losses.append(step(i).item())
        if side == "tiletune" and args.online and args.online_wait > 0 and not profile:
            ttt.runtime(args.device).online_wait(args.online_wait)
        sync(args.device)
        for i in range(warmup, warmup + steps):
            t0 = time.perf_counter()
            loss = step(i)
            sync(args.device)
            times.append(time.perf_counter() - t0)
            losses.append(loss.item())
        if profile:
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device.startswith("cuda") else [])
            with profile(activities=acts) as prof:
                step(0)
                sync(args.device)
            key = "self_cuda_time_total" if args.device.startswith("cuda") else "self_cpu_time_total"
            with open(args.profile, "a") as f:
                f.write(f"## {side}\n\n{prof.key_averages().table(sort_by=key, row_limit=25)}\n\n")
            kernels = profile_split.device_kernels(prof)
            if kernels:
                summary = profile_split.summary(kernels)
    finally:
        stats = ttt.disable() if side == "tiletune" else None
    return {"losses": losses, "step_s": times, "stats": stats, "profile_summary": summary}


def report(args, results):
    sides = list(results)
    for side, r in results.items():
        med = statistics.median(r["step_s"]) if r["step_s"] else float("nan")
        r["steps_per_s"] = 1.0 / med
        print(f"{side:9s} {r['steps_per_s']:8.2f} steps/s (median of {len(r['step_s'])} steps)  "
              f"loss {r['losses'][0]:.4f} -> {r['losses'][-1]:.4f}")
        if r["stats"]:
            print(f"          routed {r['stats']['routed']} (from C++: {r['stats'].get('routed_cpp')})\n"
                  f"          declined {r['stats']['declined']}\n          runtime {r['stats']['runtime']}")
        if r.get("profile_summary"):
            print(r["profile_summary"])
    for other in sides[1:]:
        a, b = results[sides[0]], results[other]
        diff = max(abs(x - y) for x, y in zip(a["losses"], b["losses"]))
        last = sum(abs(x - y) for x, y in zip(a["losses"][-20:], b["losses"][-20:])) / len(a["losses"][-20:])
        print(f"{other} / {sides[0]}: {b['steps_per_s'] / a['steps_per_s']:.3f}x steps/s; loss difference over "
              f"{len(a['losses'])} steps: largest {diff:.4f}, mean of the last 20 {last:.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)
    return results
