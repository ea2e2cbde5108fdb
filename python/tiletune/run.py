"""Runs a training script with tiletune.torch enabled, without editing the script.

    python -m tiletune.run --record steps.json train.py --steps 3      # record its GEMMs and convolutions
    tiletune tune steps.json --db tuned.db && tiletune db pack tuned.db ship.db
    python -m tiletune.run --db ship.db train.py                        # train on the tuned kernels

Under torchrun: `torchrun --nproc-per-node 8 -m tiletune.run --record steps.json train.py`
(every rank adds to the one recording; online tuning tunes each problem once on the node).
At the end it prints what was routed and what was handed back to PyTorch, on stderr.
"""
import argparse
import json
import os
import runpy
import sys

import tiletune.torch as ttt


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tiletune.run", description=__doc__.split("\n")[0])
    p.add_argument("--db", help="the shipped (packed) solution database")
    p.add_argument("--user-db", help="a database whose winners come first (online tuning writes there)")
    p.add_argument("--record", help="add the problems served untuned to this tuning config")
    p.add_argument("--online", action="store_true", help="tune problems served untuned in the background")
    p.add_argument("--devices", default="cuda,cpu", help="which tensors to route (cuda, cpu)")
    p.add_argument("--serve", default="tuned", choices=("tuned", "all"),
                   help="only what tiletune serves better than the vendor (default), or all it can take")
    p.add_argument("--quiet", action="store_true", help="no stats at the end")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    ttt.enable(db=a.db, user_db=a.user_db, record=a.record, online=a.online, devices=a.devices.split(","),
               serve=a.serve)
    sys.argv = [a.script] + a.args
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.script)))  # as `python SCRIPT` would
    try:
        runpy.run_path(a.script, run_name="__main__")
    finally:
        stats = ttt.disable()
        if stats is not None and not a.quiet:
            sys.stderr.write("tiletune: " + json.dumps(stats) + "\n")


if __name__ == "__main__":
    main()
