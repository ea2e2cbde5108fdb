"""Record -> tune -> ship, the three commands of the README's PyTorch section, on the host backend."""
import json
import os
import subprocess

import torch
import torch.nn as nn
import torch.nn.functional as F

import tiletune
import tiletune.torch as ttt


def step(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(16, 24, generator=g), torch.randint(0, 8, (16,), generator=g)
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()


def small_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(24, 40), nn.ReLU(), nn.Linear(40, 8))


def tune(config, db):
    """`tiletune tune` with a small budget, as a user would run it (the packaged program)."""
    r = subprocess.run([tiletune.exe_path(), "tune", str(config), "--db", str(db), "--backend", "host", "--search",
                        "model", "--budget", "2", "--jobs", "2"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_record_tune_and_replay_the_shipped_database(workdir):
    recording, tuned, shipped = workdir / "step.json", workdir / "tuned.db", workdir / "ship.db"
    model = small_model()
    ttt.enable(record=str(recording), devices=("cpu",))
    step(model)
    step(model)
    first = ttt.disable()
    problems = json.loads(recording.read_text())["problems"]
    # forward: two addmm; backward: the second layer's input gradient and both weight gradients
    assert len(problems) == 5, problems
    assert sum(p["calls"] for p in problems) == 2 * 5 == sum(first["routed"].values())

    tune(recording, tuned)
    subprocess.run([tiletune.exe_path(), "db", "pack", str(tuned), str(shipped)], check=True, capture_output=True)

    ttt.enable(db=str(shipped), devices=("cpu",), serve="all")
    step(model)
    replay = ttt.disable()
    rt = replay["runtime"]["cpu:0"]
    assert rt["calls"] == 5 and rt["tuned"] == 5, replay

    # By default a tuned problem goes to tiletune only where its winner beat the vendor's default.
    ttt.enable(db=str(shipped), devices=("cpu",))
    choices = {}
    step(model)
    for key, decision in ttt._active[0].decisions.items():
        choices[key] = decision
    default = ttt.disable()
    routed = sum(default["routed"].values())
    assert routed == default["runtime"]["cpu:0"]["tuned"], default
    assert routed + sum(default["declined"].values()) == 5, default
    assert routed == sum(d is True for d in choices.values()), (choices, default)


def test_recording_is_merged_not_overwritten(workdir):
    recording = workdir / "merged.json"
    for rows in (16, 16, 32):  # the same problem twice, then a new one
        ttt.enable(record=str(recording), devices=("cpu",))
        torch.randn(rows, 8) @ torch.randn(8, 8)
        ttt.disable()
    problems = json.loads(recording.read_text())["problems"]
    assert sorted(p["calls"] for p in problems) == [1, 2], problems


def test_a_recording_that_is_not_a_config_is_refused_and_kept(workdir, recwarn):
    recording = workdir / "notes.json"
    recording.write_text("my notes\n")
    ttt.enable(record=str(recording), devices=("cpu",))
    torch.randn(4, 4) @ torch.randn(4, 4)
    ttt.disable()
    assert recording.read_text() == "my notes\n"
    assert any("recording into" in str(w.message) for w in recwarn.list)
