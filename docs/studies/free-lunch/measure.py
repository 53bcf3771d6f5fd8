#!/usr/bin/env python3
"""Runs the free-lunch grid of bench-recipe.ini: runs.csv (one row a process) and stats.csv.

  docs/studies/free-lunch/measure.py [--bench build/release/bench/bench_attention_step]
                                     [--headlab build/release/apps/headlab] [--quick --out DIR]

Every (T, h) cell of [bench] runs `repeats` times, each in its own process, cells in a shuffled
order from a fixed seed (so that a slow minute of the machine does not fall on one cell);
runs.csv gets the median ms/step of each process, the CPU, the thread count and the commit
(`git rev-parse --short HEAD`). stats.csv: `headlab stats` per h and T (parameters and forward
FLOPs, and the formulas it prints beside them). --quick runs the quick_* form into --out (the test
suite). Stdlib only; from the repository root.
"""
import argparse
import configparser
import json
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_runs import cpu_model, tool_command, write_runs_csv  # noqa: E402


def read_recipe(quick):
    ini = configparser.ConfigParser()
    ini.read(os.path.join(HERE, "bench-recipe.ini"))
    b = ini["bench"]
    ints = lambda key: [int(v) for v in b[key].split()]
    pick = lambda key: ("quick_" + key) if quick and ("quick_" + key) in b else key
    return {"d_model": int(b["d_model"]), "heads": ints(pick("heads")), "seq": ints(pick("seq")),
            "tokens": int(b["tokens"]), "steps": int(b[pick("steps")]), "warmup": int(b["warmup"]),
            "threads": int(b["threads"]), "repeats": int(b[pick("repeats")])}


def stats_row(headlab, d, h, t):
    out = subprocess.run(tool_command(headlab, "stats", "--d-model", d, "--heads", h, "--seq-len", t),
                         capture_output=True, text=True, check=True).stdout
    number = lambda label: int(re.search(label + r"\s+(\d+)", out).group(1))
    return {"heads": h, "seq": t, "head_dim": d // h, "parameters": number(r"\n  parameters"),
            "parameters_formula": number(r"formula 4 D\^2 \+ 4 D"), "forward_flops": number(r"forward FLOPs \(T = \d+\)"),
            "forward_flops_formula": number(r"formula 8 T D\^2 \+ 4 T\^2 D")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/release/bench/bench_attention_step")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=HERE)
    a = ap.parse_args()
    r = read_recipe(a.quick)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    jobs = [(t, h, k) for t in r["seq"] for h in r["heads"] for k in range(1, r["repeats"] + 1)]
    random.Random(1).shuffle(jobs)
    rows = []
    for t, h, k in jobs:
        out = subprocess.run([a.bench, str(r["d_model"]), str(h), str(t), f"tokens={r['tokens']}", f"steps={r['steps']}",
                              f"warmup={r['warmup']}", f"threads={r['threads']}"],
                             capture_output=True, text=True, check=True).stdout
        m = json.loads(out)
        rows.append({"seq": t, "heads": h, "repeat": k, "head_dim": r["d_model"] // h, "batch": m["batch"],
                     "ms": round(m["ms"], 4), "ms_min": round(m["ms_min"], 4), "ms_max": round(m["ms_max"], 4),
                     "forward_flops": int(m["forward_flops"]), "steps": r["steps"], "threads": m["threads"],
                     "cpu": cpu_model(), "commit": commit or "unknown"})
        print(t, h, k, m["ms"], file=sys.stderr)
    rows.sort(key=lambda row: (row["seq"], row["heads"], row["repeat"]))
    os.makedirs(a.out, exist_ok=True)
    write_runs_csv(rows, os.path.join(a.out, "runs.csv"))
    write_runs_csv([stats_row(a.headlab, r["d_model"], h, t) for t in r["seq"] for h in r["heads"]],
                   os.path.join(a.out, "stats.csv"))


if __name__ == "__main__":
    main()
