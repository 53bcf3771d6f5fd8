#!/usr/bin/env python3
"""Measures every finished run of the gate-sink-lr-lm-loss recipe into runs.csv (one row a run).

  docs/studies/gate-sink-lr-lm-loss/measure.py RUNS [--headlab build/release/apps/headlab]

For each RUNS/runs/<gate>-seed<k>: from summary.json the held-out loss after the last step (the
trainer's evaluation: 256 windows of the held-out tenth of datasets/kjv/kjv.txt), loss spikes and
the largest jump; for gated runs `headlab heads --text RUNS/valid.txt --probe-sequences 256 --seed 1`
on the final checkpoint: the mean gate over every head and query (is the gate open?).
From the repository root; stdlib only.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, heads_rows, run_seeds, write_held_out, write_runs_csv  # noqa: E402

GATES = ("none", "headwise", "elementwise")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--out", default="docs/studies/gate-sink-lr-lm-loss")
    a = ap.parse_args()
    commit = open(os.path.join(a.runs, "commit.txt")).read().strip()
    valid = write_held_out(a.runs)
    seeds = run_seeds(a.runs)
    runs = []
    for gate in GATES:
        for seed in seeds:
            d = os.path.join(a.runs, "runs", f"{gate}-seed{seed}")
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            with open(os.path.join(d, "config.ini")) as f:
                lr = [line.split("=", 1)[1].strip() for line in f if line.startswith("lr=")][0]
            gate_mean = ""
            if gate != "none":
                rows = heads_rows(a.headlab, os.path.join(d, "checkpoint.safetensors"), os.path.join(d, "heads-text"),
                                  ["--text", valid, "--probe-sequences", "256", "--seed", "1"])
                gate_mean = round(sum(float(h["gate_mean"]) for h in rows) / len(rows), 6)
            runs.append({"cell": gate, "seed": seed, "lr": float(lr), "steps": s["steps"], "parameters": s["parameters"],
                         "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""),
                         "commit": commit, "valid_loss": round(s["valid_loss"], 6),
                         "valid_bits_per_char": round(s["valid_bits_per_char"], 6),
                         "loss_spikes": s["loss_spikes"], "max_loss_jump": "" if s["max_loss_jump"] is None else round(s["max_loss_jump"], 6),
                         "gate_mean": gate_mean})
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))


if __name__ == "__main__":
    main()
