#!/usr/bin/env python3
"""Rank the MFMA GEMM space (kernel_templates/mfma_gemm.json) with tiletune's AMD analytical model
and with hipBLASLt's analytical model (origami) on a shape set, per arch, and report how far the
two rankings agree (Kendall tau, top-1, top-5 overlap) and where they part.

No GPU is needed. Set-up, once (origami is built from its PyPI sdist, which is MIT; nothing of it
is kept in this repository):

    bash benchmarks/install_origami.sh            # venv in build-origami/venv with rocm-origami 0.0.3
    cmake -S . -B build -G Ninja -DTILETUNE_BENCHMARKS=ON -DTILETUNE_CUDA=OFF -DTILETUNE_HIP=OFF
    ninja -C build amd_model_rank
    build-origami/venv/bin/python benchmarks/amd_model_vs_origami.py --out report.md

Both models see the same tile configs. tiletune's candidates (all that pass the template's
constraints for the arch) are grouped by what origami's config can express: the macro tile
MT0 x MT1, the depth DU and the MFMA instruction MI x MI x INST_K. Each group is represented by its
best member under tiletune's model (the wave tiling WM x WN, vector width, padding and LDS double
buffering, which origami does not take, are what the tuner would pick within the group). Origami
gets each config with data-parallel grid selection (the template launches one work-group per
output tile) and tiletune's estimate of work-groups per CU as its occupancy.
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile

import origami
from scipy.stats import kendalltau

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Shapes added to configs/shapes/gemm.json: a 70B-class model's projections and a decode-sized batch.
EXTRA_SHAPES = [
    {"name": "llm70b_qkv_fwd", "transA": "T", "transB": "N", "m": 10240, "n": 8192, "k": 8192},
    {"name": "llm70b_down_fwd", "transA": "T", "transB": "N", "m": 8192, "n": 8192, "k": 28672},
    {"name": "llm_o_decode", "transA": "T", "transB": "N", "m": 4096, "n": 256, "k": 4096},
]

# origami's hardware: the arch, its CUs and clock as in gpu/hip/arch_table.h, LDS per work-group,
# and L2 per XCD (gfx90a: per GCD).
ARCHES = {
    "gfx90a": dict(enum=origami.architecture_t.gfx90a, cus=110, lds=65536, l2=8 << 20, clock_mhz=1700),
    "gfx942": dict(enum=origami.architecture_t.gfx942, cus=304, lds=65536, l2=4 << 20, clock_mhz=2100),
    "gfx950": dict(enum=origami.architecture_t.gfx950, cus=256, lds=163840, l2=4 << 20, clock_mhz=2400),
}
DTYPES = {"bf16": origami.data_type_t.BFloat16, "f16": origami.data_type_t.Half}


def our_candidates(exe, arch, shapes_file, dtype):
    out = subprocess.run([exe, "--arch", arch, "--shapes", shapes_file, "--dtype", dtype],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def group_key(p, dtype):
    kpl = 4 if dtype in ("bf16", "f16") else 1
    return (p["MT0"], p["MT1"], p["DU"], p["MI"], (64 // p["MI"]) * kpl)


def order(c):
    """tiletune's model order (solutions/model.h: model_before; mfma_gemm has no prefer list)."""
    q = lambda s: round(math.log2(s) * 1e9) if s > 0 else -math.inf
    return (q(c["seconds"]), q(c["schedule_seconds"]), c["traffic_seconds"])


def best_per_group(cands, dtype):
    best = {}
    for c in cands:
        key = group_key(c["params"], dtype)
        if key not in best or order(c) < order(best[key]):
            best[key] = c
    return best


def origami_latencies(arch, prob, groups, dtype):
    a = ARCHES[arch]
    hw = origami.get_hardware_for_arch(a["enum"], a["cus"], a["lds"], a["l2"], a["clock_mhz"] * 1000)
    p = origami.problem_t()
    p.size = origami.dim3_t(prob["m"], prob["n"], prob["k"])
    p.batch = 1
    p.a_transpose = origami.transpose_t.T if prob["trans_a"] else origami.transpose_t.N
    p.b_transpose = origami.transpose_t.T if prob["trans_b"] else origami.transpose_t.N
    for f in ("a_dtype", "b_dtype", "c_dtype", "d_dtype", "mi_dtype"):
        setattr(p, f, DTYPES[dtype])
    lat = {}
    for key, c in groups.items():
        mt0, mt1, du, mi, ik = key
        cfg = origami.config_t()
        cfg.mt = origami.dim3_t(mt0, mt1, du)
        cfg.mi = origami.dim3_t(mi, mi, ik)
        cfg.occupancy = int(c["workgroups_per_cu"])
        cfg.grid_selection = origami.grid_selection_t.data_parallel
        lat[key] = origami.compute_total_latency(p, hw, cfg, a["cus"])
        # origami refuses (latency = DBL_MAX) a config for a skinny problem unless it streams the
        # big operand with non-temporal loads (cache hint 4); the template has no such hint, so
        # each config is priced with the hint origami insists on.
        for hint in ("cache_hints_a", "cache_hints_b"):
            if lat[key] >= sys.float_info.max:
                setattr(cfg, hint, 4)
                lat[key] = origami.compute_total_latency(p, hw, cfg, a["cus"])
                setattr(cfg, hint, 0)
    return lat


def bound_of(c):
    terms = {"math": c["math_seconds"], "LDS": c["operand_seconds"], "L2 loads": c["load_seconds"],
             "latency": c["latency_seconds"]}
    name = max(terms, key=terms.get)
    return "DRAM" if c["dram_seconds"] >= c["schedule_seconds"] else name


def geomean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def fmt_key(k):
    return f"{k[0]}x{k[1]}x{k[2]} MI{k[3]}x{k[3]}x{k[4]}"


def compare(arch, doc, dtype):
    rows, details = [], []
    for prob in doc["problems"]:
        groups = best_per_group(prob["candidates"], dtype)
        if len(groups) < 2:
            continue
        lat = origami_latencies(arch, prob, groups, dtype)
        keys = sorted(groups)
        ours = sorted(keys, key=lambda k: order(groups[k]))
        theirs = sorted(keys, key=lambda k: lat[k])
        # tau over tiletune's order (its tie-breakers included: the order a model search measures in).
        tau = kendalltau([ours.index(k) for k in keys], [lat[k] for k in keys]).statistic
        top5 = len(set(ours[:5]) & set(theirs[:5]))
        # What each model thinks of the other's pick: its own estimate over its best.
        ours_of_theirs = groups[theirs[0]]["seconds"] / groups[ours[0]]["seconds"]
        theirs_of_ours = lat[ours[0]] / lat[theirs[0]]
        rows.append(dict(name=prob["name"], shape=f'{prob["m"]}x{prob["n"]}x{prob["k"]}', n=len(keys), tau=tau,
                         top1=ours[0] == theirs[0], top5=top5, ours=ours[0], theirs=theirs[0],
                         rank_of_ours=theirs.index(ours[0]) + 1, rank_of_theirs=ours.index(theirs[0]) + 1,
                         ours_of_theirs=ours_of_theirs, theirs_of_ours=theirs_of_ours))
        d = [f"**{prob['name']}** ({prob['m']}x{prob['n']}x{prob['k']}, {len(keys)} configs)", "",
             "| rank | tiletune's pick | bound | WG/CU | tiles | waves | origami's pick | origami latency |",
             "|---|---|---|---|---|---|---|---|"]
        for i in range(3):
            c = groups[ours[i]]
            d.append(f"| {i + 1} | {fmt_key(ours[i])} | {bound_of(c)} | {c['workgroups_per_cu']} | {c['tiles']} | "
                     f"{c['wave_factor']:.2f} | {fmt_key(theirs[i])} | {lat[theirs[i]]:.4g} |")
        details.append("\n".join(d))
    return rows, details


def commit():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exe", default=os.path.join(ROOT, "build", "benchmarks", "amd_model_rank"))
    ap.add_argument("--shapes", default=os.path.join(ROOT, "configs", "shapes", "gemm.json"))
    ap.add_argument("--arch", action="append", help="gfx90a, gfx942, gfx950 (default: all three)")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--out", help="write the markdown report here (default: stdout)")
    args = ap.parse_args()
    if not os.access(args.exe, os.X_OK):
        sys.exit(f"{args.exe}: not built (ninja -C build amd_model_rank, with -DTILETUNE_BENCHMARKS=ON)")
    with open(args.shapes) as f:
        shapes = json.load(f)
    shapes["shapes"] = shapes["shapes"] + EXTRA_SHAPES
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
        json.dump(shapes, tmp)
    try:
        lines = [f"# tiletune's AMD model vs origami, {args.dtype}, {datetime.date.today().isoformat()}", "",
                 f"Command: `{' '.join(['benchmarks/amd_model_vs_origami.py'] + sys.argv[1:])}` "
                 f"(tiletune commit {commit()}).", "",
                 f"origami {origami.__version__} (PyPI rocm-origami, built from its sdist); "
                 f"tiletune's model: solutions/model_amd.h. Template: mfma_gemm. "
                 f"Shapes: configs/shapes/gemm.json + {', '.join(s['name'] for s in EXTRA_SHAPES)}.", "",
                 "tau: Kendall's tau-b between tiletune's order of the shape's configs (its tie-breakers included) and origami's latencies. "
                 "top-5: configs in both top fives. 'their rank of ours': where origami ranks tiletune's "
                 "pick; 'o(ours)/o(best)': origami's latency of tiletune's pick over origami's best; "
                 "'t(theirs)/t(best)' likewise for tiletune's model of origami's pick.", ""]
        all_details = []
        for arch in args.arch or list(ARCHES):
            doc = our_candidates(args.exe, arch, tmp.name, args.dtype)
            rows, details = compare(arch, doc, args.dtype)
            taus = [r["tau"] for r in rows]
            lines += [f"## {arch} ({ARCHES[arch]['cus']} CUs)", "",
                      f"mean tau {sum(taus) / len(taus):.2f}; top-1 agree {sum(r['top1'] for r in rows)}/{len(rows)}; "
                      f"mean top-5 overlap {sum(r['top5'] for r in rows) / len(rows):.1f}/5; "
                      f"geometric mean o(ours)/o(best) {geomean(r['theirs_of_ours'] for r in rows):.2f}, "
                      f"t(theirs)/t(best) {geomean(r['ours_of_theirs'] for r in rows):.2f}", "",
                      "| shape | MxNxK | configs | tau | top-1 | top-5 | tiletune's pick | origami's pick | "
                      "their rank of ours | our rank of theirs | o(ours)/o(best) | t(theirs)/t(best) |",
                      "|---|---|---|---|---|---|---|---|---|---|---|---|"]
            for r in rows:
                lines.append(f"| {r['name']} | {r['shape']} | {r['n']} | {r['tau']:.2f} | {'yes' if r['top1'] else 'no'} | "
                             f"{r['top5']} | {fmt_key(r['ours'])} | {fmt_key(r['theirs'])} | {r['rank_of_ours']} | "
                             f"{r['rank_of_theirs']} | {r['theirs_of_ours']:.2f} | {r['ours_of_theirs']:.2f} |")
            lines.append("")
            all_details.append((arch, details))
        lines += ["## Top three of each model, per shape", ""]
        for arch, details in all_details:
            lines += [f"### {arch}", ""] + [d + "\n" for d in details]
        text = "\n".join(lines) + "\n"
    finally:
        os.unlink(tmp.name)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
