#!/usr/bin/env python3
"""Measures the runs of study 21 (ensemble-robustness-drop or ensemble-robustness-gap) into runs.csv (one row a run) and
single_heads.csv (one row a head of a run).

  docs/studies/ensemble-robustness-drop/measure.py RUNS [--headlab build/release/apps/headlab] [--out DIR]

For each RUNS/runs/<cell>-seed<k> (cells drop-h<h> or gap-h<h>): answer accuracy (and, for the gap
cells, train_accuracy) from summary.json, then `headlab prune --single-heads --sequences 512` on
its checkpoint: each head alone zeroed, answer accuracy on the run's 512 held-out sequences.
Per run: worst_drop = the largest drop from the full model over its h heads, median_drop = their
median (for part B's h = 1 both are the drop without any attention), gap = train_accuracy -
answer_accuracy (gap cells), worst_head = the head of worst_drop. Stdlib only.
"""
import csv
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, measure_args, tool_command, write_runs_csv  # noqa: E402


def single_heads(headlab, run_dir):
    """`headlab prune --single-heads` on the run's checkpoint (one thread): single_heads.csv rows."""
    out = os.path.join(run_dir, "prune_single")
    subprocess.run(tool_command(headlab, "prune", "--checkpoint", os.path.join(run_dir, "checkpoint.safetensors"),
                                "--out", out, "--overwrite", "--single-heads", "--sequences", "512",
                                "--random-orders", "1"),
                   check=True, capture_output=True, env=dict(os.environ, HEADLAB_THREADS="1"))
    with open(os.path.join(out, "single_heads.csv")) as f:
        return list(csv.DictReader(f))


def main():
    a, commit = measure_args("docs/studies/ensemble-robustness-drop")
    names = sorted(os.listdir(os.path.join(a.runs, "runs")),
                   key=lambda n: (n.split("-h")[0], int(n.split("-h")[1].split("-")[0]), int(n.rsplit("-seed", 1)[1])))
    runs, heads = [], []
    for name in names:
        d = os.path.join(a.runs, "runs", name)
        cell, seed = name.rsplit("-seed", 1)
        h = int(cell.split("-h")[1])
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        singles = single_heads(a.headlab, d)
        drops = [float(r["metric_drop"]) for r in singles]
        worst = max(range(len(drops)), key=lambda i: drops[i])
        for r in singles:
            heads.append({"cell": cell, "seed": seed, "head": r["head"], "accuracy": r["metric"],
                          "metric_drop": r["metric_drop"], "loss_rise": r["loss_rise"]})
        row = {"cell": cell, "heads": h, "seed": seed, "steps": s["steps"],
               "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
               "answer_accuracy": round(s["valid_accuracy"], 6)}
        if cell.startswith("gap-"):
            row["train_accuracy"] = round(s["train_accuracy"], 6)
            row["gap"] = round(s["train_accuracy"] - s["valid_accuracy"], 6)
        row.update({"worst_drop": round(drops[worst], 6), "median_drop": round(statistics.median(drops), 6),
                    "worst_head": singles[worst]["head"]})
        runs.append(row)
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))
    write_runs_csv(heads, os.path.join(a.out, "single_heads.csv"))


if __name__ == "__main__":
    main()
