#!/usr/bin/env python3
"""Measures every finished run of the induction-sink recipe into runs.csv (one row a run) and
heads.csv (one row a head of a run).

  docs/studies/induction-sink/measure.py RUNS [--headlab build/release/apps/headlab]

For each RUNS/runs/2-layer-seed<k> (as `headlab study run` trains them), on checkpoint.safetensors:
  - `headlab heads --sink-queries first-half` and `--sink-queries all` (64 probe sequences
    <s> r_1..r_16 r_1..r_16, seed 1): per head the sink mass, its uniform baseline, the largest
    attention logit and the largest residual activation;
  - `headlab eval --sequences 1000 --json` under the trained attention (full), `--window 17` (w17)
    and `--window 17 --sinks 1` (w17+1): repeated-half accuracy and loss.
Plus the recipe's metrics from summary.json (the trainer's evaluation), the CPU, the thread count and the commit of the binary that trained (RUNS/commit.txt).
From the repository root; stdlib only.
"""
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, measure_args, run_seeds, tool_command, write_runs_csv  # noqa: E402

CONDITIONS = {"full": [], "w17": ["--window", "17"], "w17s1": ["--window", "17", "--sinks", "1"]}


def heads_rows(headlab, checkpoint, out, queries, env):
    subprocess.run(tool_command(headlab, "heads", "--checkpoint", checkpoint, "--out", out, "--overwrite",
                                "--sink-queries", queries), check=True, capture_output=True, env=env)
    with open(os.path.join(out, "heads.csv")) as f:
        return list(csv.DictReader(f))


def main():
    a, commit = measure_args("docs/studies/induction-sink")
    env = dict(os.environ, HEADLAB_THREADS="1")
    runs, heads = [], []
    for seed in run_seeds(a.runs):
        d = os.path.join(a.runs, "runs", f"2-layer-seed{seed}")
        checkpoint = os.path.join(d, "checkpoint.safetensors")
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        first = heads_rows(a.headlab, checkpoint, os.path.join(d, "heads-first-half"), "first-half", env)
        every = heads_rows(a.headlab, checkpoint, os.path.join(d, "heads-all"), "all", env)
        row = {"cell": "2-layer", "seed": seed, "steps": s["steps"], "train_seconds": round(s["train_seconds"], 2),
               "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
               # the recipe's metrics: the trainer's own evaluation (256 held-out sequences, summary.json)
               "repeated_accuracy": round(s["valid_accuracy"], 6), "repeated_loss": round(s["repeated_loss"], 6),
               "first_half_loss": round(s["first_half_loss"], 6)}
        for name, flags in CONDITIONS.items():
            out = subprocess.run(tool_command(a.headlab, "eval", "--checkpoint", checkpoint, "--sequences", "1000",
                                              "--json", *flags, task="induction"),
                                 check=True, capture_output=True, text=True, env=env).stdout
            e = json.loads(out)
            row[f"accuracy_{name}"] = round(e["repeated_accuracy"], 6)
            row[f"loss_{name}"] = round(e["repeated_loss"], 6)
        for layer in (0, 1):
            mine = [h for h in first if int(h["layer"]) == layer]
            top = max(mine, key=lambda h: float(h["sink_mass"]))
            row[f"sink_first_half_max_l{layer}"] = float(top["sink_mass"])
            row[f"sink_head_l{layer}"] = int(top["head"])
            row[f"max_logit_l{layer}"] = max(float(h["max_logit"]) for h in mine)
            row[f"max_residual_l{layer}"] = float(mine[0]["max_residual"])
        row["sink_uniform_first_half"] = float(first[0]["sink_uniform"])
        row["sink_all_max"] = max(float(h["sink_mass"]) for h in every)
        row["sink_uniform_all"] = float(every[0]["sink_uniform"])
        runs.append(row)
        for f_row, a_row in zip(first, every):
            heads.append({"seed": seed, "layer": int(f_row["layer"]), "head": int(f_row["head"]),
                          "sink_first_half": float(f_row["sink_mass"]), "uniform_first_half": float(f_row["sink_uniform"]),
                          "sink_all": float(a_row["sink_mass"]), "uniform_all": float(a_row["sink_uniform"]),
                          "previous_token": float(f_row["previous_token"]), "induction": float(f_row["induction"]),
                          "max_logit": float(f_row["max_logit"])})
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))
    write_runs_csv(heads, os.path.join(a.out, "heads.csv"))


if __name__ == "__main__":
    main()
