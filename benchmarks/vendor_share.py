#!/usr/bin/env python3
"""Who won each problem of a tuned database: a generated kernel, the vendor library's default call,
or one of its other algorithms (cuBLASLt's heuristic's next few, rocBLAS's solutions, OpenBLAS on
fewer threads), with the best of each side's median time (ms) and their ratio.

usage: vendor_share.py DB [--arch sm_90a] [--out FILE.md]
Reads the database with Python's sqlite3 only (no tiletune build needed).
"""
import argparse
import sqlite3
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--arch", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    con = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT p.key, m.arch, s.template, s.params, s.kernel_name, m.median_ms FROM measurements m "
        "JOIN problems p ON p.id = m.problem_id JOIN solutions s ON s.id = m.solution_id "
        "WHERE m.status = 'ok' AND m.median_ms > 0 AND (? = '' OR m.arch = ?)", (a.arch, a.arch)).fetchall()
    best = {}  # (arch, key) -> {"kernel": (ms, name), "default": ms, "alt": (ms, name)}
    for key, arch, tmpl, params, name, ms in rows:
        b = best.setdefault((arch, key), {})
        side = "kernel" if tmpl != "vendor" else ("default" if params in ("{}", "") else "alt")
        if side not in b or ms < b[side][0]:
            b[side] = (ms, name)
    lines = ["| arch | problem | winner | kernel ms | vendor default ms | best other vendor algorithm ms | "
             "vendor default / best kernel |", "|---|---|---|---|---|---|---|"]
    count = {"kernel": 0, "default": 0, "alt": 0}
    for (arch, key), b in sorted(best.items()):
        side = min(b, key=lambda s: b[s][0])
        count[side] += 1
        def ms(s):
            return f"{b[s][0]:.4f}" if s in b else "-"
        ratio = f"{b['default'][0] / b['kernel'][0]:.3f}" if "kernel" in b and "default" in b else "-"
        lines.append(f"| {arch} | {key.replace('|', ' ')} | {b[side][1]} | {ms('kernel')} | {ms('default')} | "
                     f"{ms('alt')}{' (' + b['alt'][1] + ')' if 'alt' in b else ''} | {ratio} |")
    total = sum(count.values())
    lines += ["", f"{total} problems: a generated kernel fastest on {count['kernel']}, the vendor's default on "
              f"{count['default']}, another vendor algorithm on {count['alt']}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        open(a.out, "w").write(text)
    return 0 if total else 1


if __name__ == "__main__":
    sys.exit(main())
