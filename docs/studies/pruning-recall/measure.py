#!/usr/bin/env python3
"""Measures the runs of the pruning-recall recipe (study 22) into runs.csv (one row a run),
curves.csv (every step of every order of every run) and roles.csv (every head of every run).

  docs/studies/pruning-recall/measure.py RUNS [--headlab build/release/apps/headlab] [--out DIR]

For each RUNS/runs/<cell>-seed<k>: `headlab prune --importance-split --step 0.01 --random-orders 20
--sequences 512` (one head a step; importance from a second draw of held-out sequences, every step
scored on the run's own 512) and `headlab heads --probe-sequences 256` (recall_keys.csv: each head's
weight on the query's two named keys). The per-run numbers are those the recipe defines: heads_within,
two_head_accuracy, above_band and below_band (the band: the 2nd and 19th of the 20 random orders'
accuracies at a step, their 5th-95th percentile), survivors_retrieve and retrieval_heads (a head
retrieves when named >= 0.5). Stdlib only.
"""
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, measure_args, run_seeds, tool_command, write_runs_csv  # noqa: E402

CELLS = (("prune-h16", 16), ("scratch-h2", 2))
TOLERANCE = 0.01  # heads_within: accuracy may fall this much below the full model's
RETRIEVES = 0.5   # a head retrieves when this much of its weight is on the query's two named keys


def run(headlab, tool, *args):
    """`headlab TOOL ARGS...` (every other option as PINNED_TOOL_OPTIONS pins it) on one thread."""
    subprocess.run(tool_command(headlab, tool, *args), check=True, capture_output=True,
                   env=dict(os.environ, HEADLAB_THREADS="1"))


def measure(headlab, run_dir):
    """(prune.csv rows, recall_keys.csv rows) of one run."""
    ckpt = os.path.join(run_dir, "checkpoint.safetensors")
    run(headlab, "prune", "--checkpoint", ckpt, "--out", os.path.join(run_dir, "prune"), "--overwrite",
        "--importance-split", "--step", "0.01", "--random-orders", "20", "--sequences", "512")
    run(headlab, "heads", "--checkpoint", ckpt, "--out", os.path.join(run_dir, "heads"), "--overwrite",
        "--probe-sequences", "256")
    with open(os.path.join(run_dir, "prune", "prune.csv")) as f:
        curve = list(csv.DictReader(f))
    with open(os.path.join(run_dir, "heads", "recall_keys.csv")) as f:
        roles = list(csv.DictReader(f))
    return curve, roles


def main():
    a, commit = measure_args("docs/studies/pruning-recall")
    runs, curves, heads = [], [], []
    for cell, h in CELLS:
        for seed in run_seeds(a.runs):
            d = os.path.join(a.runs, "runs", f"{cell}-seed{seed}")
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            curve, roles = measure(a.headlab, d)
            for r in curve:
                curves.append({"cell": cell, "seed": seed, "order": r["order"], "pruned": r["pruned"],
                               "accuracy": r["metric"], "loss": r["loss"], "removed": r["removed"]})
            ranked = [r for r in curve if r["order"] == "importance"]
            acc = [float(r["metric"]) for r in ranked]  # acc[k]: k heads pruned, k = 0..h
            within = 0
            while within + 1 < len(acc) and acc[within + 1] >= acc[0] - TOLERANCE:
                within += 1
            above = below = 0
            for k in range(1, h):
                rand = sorted(float(r["metric"]) for r in curve if r["order"].startswith("random-")
                              and int(r["pruned"]) == k)
                low, high = rand[1], rand[-2]  # the 2nd and 19th of 20
                above += acc[k] > high
                below += acc[k] < low
            removed = [name for r in ranked[1:] for name in r["removed"].split()]
            survivors = removed[-2:]  # the last two heads the importance order removes
            retrieves = {f"{r['site']}#{r['head']}" for r in roles if float(r["named"]) >= RETRIEVES}
            for r in roles:
                name = f"{r['site']}#{r['head']}"
                heads.append({"cell": cell, "seed": seed, "head": r["head"], "mass_a": r["mass_key1"],
                              "mass_b": r["mass_key2"], "named": r["named"], "focus": r["focus"],
                              "retrieves": int(name in retrieves),
                              "removal_rank": removed.index(name) + 1 if name in removed else ""})
            two = acc[h - 2] if h > 2 else float(s["valid_accuracy"])
            runs.append({"cell": cell, "heads": h, "seed": seed, "steps": s["steps"],
                         "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""),
                         "commit": commit, "answer_accuracy": round(s["valid_accuracy"], 6),
                         "two_head_accuracy": round(two, 6), "heads_within": within, "above_band": above,
                         "below_band": below, "survivors_retrieve": sum(n in retrieves for n in survivors),
                         "retrieval_heads": len(retrieves)})
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))
    write_runs_csv(curves, os.path.join(a.out, "curves.csv"))
    write_runs_csv(heads, os.path.join(a.out, "roles.csv"))


if __name__ == "__main__":
    main()
