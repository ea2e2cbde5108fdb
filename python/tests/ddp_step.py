"""One rank of a data-parallel run under torchrun (gloo, CPU), for test_data_parallel.py:
trains two steps through tiletune.torch and writes its stats to OUT/rank<R>.json.
usage: torchrun --nproc-per-node N ddp_step.py OUT record|online"""
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import tiletune.torch as ttt

out, mode = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DistributedDataParallel(nn.Sequential(nn.Linear(24, 40), nn.ReLU(), nn.Linear(40, 8)))
if mode == "record":
    ttt.enable(record=os.path.join(out, "recording.json"), devices=("cpu",))
else:
    ttt.enable(online=True, user_db=os.path.join(out, "user.db"), devices=("cpu",))


def step():
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(16, 24, generator=g), torch.randint(0, 8, (16,), generator=g)
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()


step()
first = ttt.stats()  # a rank's first step may already meet a winner another rank's sweep wrote
if mode == "online":
    assert ttt.runtime("cpu").online_wait(300), "online tuning did not finish in 300 s"
    dist.barrier()
    step()
stats = ttt.disable()
stats["after_first_step"] = first
with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
    json.dump(stats, f)
dist.destroy_process_group()
