#!/usr/bin/env python3
"""Does a kernel template still compile to the same machine code as at an earlier revision?

For a refactor made without a GPU: the template's sources at REV (every file of kernel_templates/,
renamed NAME_old, their #includes and the kernel function renamed with them) are put beside
today's through TILETUNE_TEMPLATE_PATH, a config's variants of the template are compiled both
ways (tiletune tune --compile-only), and the .text section of each pair of code objects (the
machine code; symbol names differ) is compared. Variants pair on the problem and the parameters
both revisions have: a parameter added since REV must be at its default (the old behaviour), one removed
since REV at its default there.
Today's side is the build's templates as embedded at its last build, not the working tree's files:
rebuild tiletune after editing kernel_templates/, or the comparison is of a stale binary.

Usage: scripts/same_machine_code.py --rev REV --template NAME --config CONFIG.json
           [--build build-h200] [--arch sm_90a] [--backend cuda] [--opcodes]
Exit 0 when every pair is byte-identical, 1 when one differs, 2 on a usage or tool error.
Needs readelf (binutils) and a build with the backend's compiler (NVRTC / hipRTC). --opcodes: of the
pairs that differ, how many have the same count of every instruction, and for the first that has not,
the instructions whose counts differ (CUDA: cuobjdump and nvdisasm on
PATH, e.g. from PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm), to tell a change of loads,
stores or math from one of address arithmetic and scheduling.
"""
import argparse
import collections
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile


def old_tree(rev, template, out):
    """kernel_templates/ at rev, every file renamed X_old, the template's JSON renamed."""
    files = subprocess.run(["git", "ls-tree", "--name-only", rev, "kernel_templates/"], capture_output=True,
                           text=True, check=True).stdout.split()
    names = [os.path.basename(f) for f in files]
    renamed = {n: re.sub(r"(\.[^.]+)$", r"_old\1", n) for n in names}
    spec = None
    for f, n in zip(files, names):
        text = subprocess.run(["git", "show", f"{rev}:{f}"], capture_output=True, text=True, check=True).stdout
        if n.endswith(".json"):
            if n == template + ".json":
                spec = json.loads(text)
            continue
        text = re.sub(r'#include "([^"]+)"', lambda m: f'#include "{renamed.get(m.group(1), m.group(1))}"', text)
        with open(os.path.join(out, renamed[n]), "w") as fh:
            fh.write(text)
    if spec is None:
        sys.exit(f"same_machine_code: no kernel_templates/{template}.json at {rev}")
    if "extends" in spec:
        sys.exit(f"same_machine_code: {template} extends {spec['extends']}: compare the template it extends")
    source = os.path.join(out, renamed[spec["source"]])
    with open(source) as fh:
        text = fh.read()
    text, n = re.subn(r"\b" + re.escape(template) + r"(\s*\()", template + r"_old\1", text)
    if n == 0:
        sys.exit(f"same_machine_code: no kernel function {template}( in {spec['source']} at {rev}")
    with open(source, "w") as fh:
        fh.write(text)
    spec["name"] = template + "_old"
    spec["source"] = renamed[spec["source"]]
    spec["instance"] = spec["instance"].replace(template + "<", template + "_old<", 1)
    with open(os.path.join(out, template + "_old.json"), "w") as fh:
        json.dump(spec, fh, indent=1)
    return spec


def text_section(blob, scratch):
    """The bytes of the code object's .text.<kernel> section (ELF, as readelf lists it)."""
    with open(scratch, "wb") as fh:
        fh.write(blob)
    listing = subprocess.run(["readelf", "-S", "-W", scratch], capture_output=True, text=True).stdout
    for line in listing.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+.*?\s([0-9a-f]{16})\s+([0-9a-f]+)\s+([0-9a-f]+)\s", line)
        if m and m.group(1).startswith(".text."):
            off, size = int(m.group(3), 16), int(m.group(4), 16)
            return blob[off:off + size]
    return None


def opcode_counts(blob, scratch):
    """Instruction mnemonics (with their modifiers, predicates dropped) of a CUDA code object, counted."""
    with open(scratch, "wb") as fh:
        fh.write(blob)
    try:
        r = subprocess.run(["cuobjdump", "-sass", scratch], capture_output=True, text=True)
    except FileNotFoundError:
        r = subprocess.CompletedProcess([], 127, "", "cuobjdump not found")
    if r.returncode != 0:
        sys.stderr.write("same_machine_code: cuobjdump -sass failed (cuobjdump and nvdisasm on PATH?): " +
                         r.stderr[-500:] + "\n")
        sys.exit(2)
    counts = collections.Counter()
    for line in r.stdout.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m:
            counts[m.group(1)] += 1
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", required=True)
    ap.add_argument("--template", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--build", default="build-h200")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--opcodes", action="store_true", help="count the differing instructions of the first pair")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tpl = os.path.join(tmp, "templates")
        os.mkdir(tpl)
        spec = old_tree(a.rev, a.template, tpl)
        old_params = set(spec.get("parameters", {})) | set(spec.get("default", {}))
        cfg = json.load(open(a.config))
        if a.template not in cfg.get("templates", {}):
            sys.exit(f"same_machine_code: {a.config} does not name {a.template}")
        mine = cfg["templates"][a.template]
        theirs = dict(mine, parameters={k: v for k, v in mine.get("parameters", {}).items() if k in old_params})
        cfg["templates"] = {a.template: mine, a.template + "_old": theirs}
        cfg["search"] = {"strategy": "exhaustive"}
        config = os.path.join(tmp, "config.json")
        json.dump(cfg, open(config, "w"))
        db = os.path.join(tmp, "code.db")
        env = dict(os.environ, TILETUNE_TEMPLATE_PATH=tpl)
        r = subprocess.run([os.path.join(a.build, "tiletune"), "tune", config, "--backend", a.backend, "--compile-only",
                            "--arch", a.arch, "--db", db], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
            sys.exit(2)
        rows = sqlite3.connect(db).execute(
            "select s.template, s.params, co.bytes, c.problem_id from code_objects co join solutions s on "
            "s.id = co.solution_id join compiled c on c.code_object_id = co.id where co.ok = 1").fetchall()
        today = json.load(open(os.path.join("kernel_templates", a.template + ".json")))
        default = today.get("default", {})
        new_params = set(today.get("parameters", {})) | set(default)
        old_default = spec.get("default", {})
        pairs = collections.defaultdict(dict)
        for template, params, blob, problem in rows:
            p = json.loads(params)
            if template == a.template and any(default.get(k) != v for k, v in p.items() if k not in old_params):
                continue  # a parameter added since rev, off its default: nothing to compare with
            if template != a.template and any(old_default.get(k) != v for k, v in p.items() if k not in new_params):
                continue  # a parameter removed since rev, off its default there: nothing today does that
            key = (problem, json.dumps({k: v for k, v in p.items() if k in old_params and k in new_params}, sort_keys=True))
            pairs[key][template] = blob
        if not pairs:
            sys.exit(f"same_machine_code: nothing compiled: the config's variants are all pruned (try tiletune tune "
                     f"{a.config} --backend {a.backend} --compile-only --arch {a.arch} --list-pruned)")
        same, differ, unpaired = 0, [], 0
        same_counts, first_diff = 0, None  # --opcodes: differing pairs of the same instruction counts
        for key, d in sorted(pairs.items()):
            if len(d) != 2:
                unpaired += 1
                continue
            new, old = (text_section(d[t], os.path.join(tmp, "x.cubin")) for t in (a.template, a.template + "_old"))
            if new is None or old is None:
                sys.exit("same_machine_code: no .text section found (readelf?)")
            if new == old:
                same += 1
            else:
                if a.opcodes:
                    scratch = os.path.join(tmp, "x.cubin")
                    was, now = (opcode_counts(d[t], scratch) for t in (a.template + "_old", a.template))
                    counts_differ = [f"{op} {was[op]} -> {now[op]}" for op in sorted(set(was) | set(now))
                                     if was[op] != now[op]]
                    if counts_differ and first_diff is None:
                        first_diff = counts_differ
                    same_counts += not counts_differ
                differ.append(key)
        print(f"{a.template} against {a.rev} ({a.arch}): {same} variants the same machine code, {len(differ)} not, "
              f"{unpaired} unpaired")
        for problem, params in differ[:20]:
            print(f"  differs: problem {problem} {params}")
        if a.opcodes and differ:
            print(f"  of those, {same_counts} with the same count of every instruction (scheduled or addressed "
                  "differently)" + (f"; the first whose counts differ (old -> new): {', '.join(first_diff)}"
                                    if first_diff else ""))
        sys.exit(1 if differ or same == 0 else 0)


if __name__ == "__main__":
    main()
