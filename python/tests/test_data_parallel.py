"""Several processes of one data-parallel job (torchrun, gloo on the CPU) share one recording and
one user database: nothing is tuned twice, nothing is overwritten, every rank sees every winner."""
import json
import os
import socket
import subprocess
import sys

import tiletune

RANKS = 2
HERE = os.path.dirname(os.path.abspath(__file__))


def torchrun(workdir, mode, env=None):
    with socket.socket() as s:  # a free port on the loopback interface for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(RANKS), "--master-addr",
           "127.0.0.1", "--master-port", str(port), os.path.join(HERE, "ddp_step.py"), str(workdir), mode]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return [json.loads((workdir / f"rank{i}.json").read_text()) for i in range(RANKS)]


def test_ranks_record_into_one_config(workdir):
    stats = torchrun(workdir, "record")
    problems = json.loads((workdir / "recording.json").read_text())["problems"]
    assert len(problems) == 5, problems  # each problem once
    assert sum(p["calls"] for p in problems) == sum(sum(s["routed"].values()) for s in stats) == RANKS * 5


def test_ranks_tune_each_problem_once_and_all_serve_the_winners(workdir):
    runs = workdir / "tune-runs.txt"
    wrapper = workdir / "tiletune-counting"
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = tune ] && echo "$*" >> "{runs}"\nexec "{tiletune.exe_path()}" "$@"\n')
    wrapper.chmod(0o755)
    stats = torchrun(workdir, "online", {"TILETUNE_EXE": str(wrapper), "TILETUNE_ONLINE_AFTER": "1",
                                         "TILETUNE_ONLINE_BUDGET": "1", "TILETUNE_ONLINE_SECONDS": "2"})
    assert len(runs.read_text().splitlines()) == 5  # not once per rank
    for s in stats:
        rt, first = s["runtime"]["cpu:0"], s["after_first_step"]["runtime"]["cpu:0"]
        # The second step ran on the winners (the first may have met some another rank's sweep wrote).
        assert rt["calls"] == 10 and rt["user_tuned"] - first["user_tuned"] == 5, s
