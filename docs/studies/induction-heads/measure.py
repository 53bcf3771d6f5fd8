#!/usr/bin/env python3
"""Measures every finished run of the induction-heads recipe into runs.csv (one row a run).

  docs/studies/induction-heads/measure.py RUNS [--headlab build/release/apps/headlab]

For each RUNS/runs/<cell>-seed<k> (as `headlab study run` trains them): from its summary.json (the trainer's evaluation on 256 held-out
sequences) the repeated half's accuracy and loss and the first half's loss; from `headlab heads`
on checkpoint.safetensors (64 probe sequences <s> r_1..r_16 r_1..r_16, seed 1) the best
previous-token score of layer 0, the best induction score of the last layer, how many heads pass
0.4 on each, the largest sink mass and the uniform baseline; plus the CPU, the thread count and
the commit of the binary that trained (RUNS/commit.txt). From the repository root; stdlib only.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, tool_command, write_runs_csv  # noqa: E402

CELLS = {"2-layer": (2, 16), "1-layer": (1, 16), "1-layer-wide": (1, 32)}  # cell -> (layers, head size)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--out", default="docs/studies/induction-heads/runs.csv")
    a = ap.parse_args()
    commit = open(os.path.join(a.runs, "commit.txt")).read().strip()
    env = dict(os.environ, HEADLAB_THREADS="1")
    rows = []
    for cell, (layers, head_size) in CELLS.items():
        for seed in range(1, 6):
            d = os.path.join(a.runs, "runs", f"{cell}-seed{seed}")
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            subprocess.run(tool_command(a.headlab, "heads", "--checkpoint", os.path.join(d, "checkpoint.safetensors"),
                                        "--out", os.path.join(d, "heads"), "--overwrite"),
                           check=True, capture_output=True, env=env)
            with open(os.path.join(d, "heads", "heads.csv")) as f:
                heads = list(csv.DictReader(f))
            first = [h for h in heads if int(h["layer"]) == 0]
            last = [h for h in heads if int(h["layer"]) == layers - 1]
            rows.append({
                "cell": cell, "layers": layers, "head_size": head_size, "seed": seed, "steps": s["steps"],
                "parameters": s["parameters"], "train_seconds": round(s["train_seconds"], 2), "threads": 1,
                "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
                "repeated_accuracy": round(s["valid_accuracy"], 6), "repeated_loss": round(s["repeated_loss"], 6),
                "first_half_loss": round(s["first_half_loss"], 6),
                "best_previous_token_l0": max(float(h["previous_token"]) for h in first),
                "previous_token_heads_l0": sum(float(h["previous_token"]) > 0.4 for h in first),
                "best_induction_last": max(float(h["induction"]) for h in last),
                "induction_heads_last": sum(float(h["induction"]) > 0.4 for h in last),
                "max_sink_mass": max(float(h["sink_mass"]) for h in heads),
                "sink_uniform": float(heads[0]["sink_uniform"]),
            })
    write_runs_csv(rows, a.out)


if __name__ == "__main__":
    main()
