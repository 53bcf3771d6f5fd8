#!/usr/bin/env python3
"""Collects every finished run of the head-count-recall recipe into runs.csv (one row a run).

  docs/studies/head-count-recall/measure.py RUNS [--out DIR]   (DIR/runs.csv; default: this folder)

From each RUNS/runs/<cell>-seed<k>/summary.json (the trainer's evaluation on 512 held-out sequences,
4 096 answers): answer accuracy (valid_accuracy), value accuracy (slot_accuracy), validation loss,
parameters, FLOPs per token, steps and training seconds; plus the cell's heads and head size, the
CPU, the thread count and the commit of the binary that trained (RUNS/commit.txt). Stdlib only.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, measure_args, run_seeds, write_runs_csv  # noqa: E402

CELLS = {"compute-h1": ("fixed compute", 1, 16), "compute-h2": ("fixed compute", 2, 8),
         "compute-h4": ("fixed compute", 4, 4), "compute-h8": ("fixed compute", 8, 2),
         "compute-h16": ("fixed compute", 16, 1), "headsize-h1": ("fixed head size", 1, 4),
         "headsize-h2": ("fixed head size", 2, 4), "headsize-h8": ("fixed head size", 8, 4),
         "headsize-h16": ("fixed head size", 16, 4)}


def main():
    a, commit = measure_args("docs/studies/head-count-recall")  # --headlab: taken, not needed (summary.json only)
    rows = []
    for cell, (family, heads, head_size) in CELLS.items():
        for seed in run_seeds(a.runs):
            with open(os.path.join(a.runs, "runs", f"{cell}-seed{seed}", "summary.json")) as f:
                s = json.load(f)
            rows.append({"cell": cell, "family": family, "heads": heads, "head_size": head_size, "seed": seed,
                         "steps": s["steps"], "parameters": s["parameters"], "flops_per_token": int(s["flops_per_token"]),
                         "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
                         "answer_accuracy": round(s["valid_accuracy"], 6), "value_accuracy": round(s["slot_accuracy"], 6),
                         "valid_loss": round(s["valid_loss"], 6)})
    write_runs_csv(rows, os.path.join(a.out, "runs.csv"))


if __name__ == "__main__":
    main()
