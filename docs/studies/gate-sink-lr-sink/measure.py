#!/usr/bin/env python3
"""Measures every finished run of the gate-sink-lr-sink recipe into runs.csv (one row a run) and heads.csv
(one row a head of a run).

  docs/studies/gate-sink-lr-sink/measure.py RUNS [--headlab build/release/apps/headlab]

For each RUNS/runs/<gate>-seed<k> (as `headlab study run` trains them), on checkpoint.safetensors:
`headlab heads --sink-queries first-half` and `--sink-queries second-half` (64 probe sequences
<s> r_1..r_16 r_1..r_16, seed 1): per head the sink mass and its uniform baseline, the mean gate
over those queries (gate_queries), the induction score, the largest attention logit and the
largest residual activation; `headlab eval --sequences 1000 --json`: repeated-half accuracy.
Plus the recipe's metrics from summary.json (the trainer's evaluation), the CPU, the thread count
and the commit of the binary that trained (RUNS/commit.txt). From the repository root; stdlib only.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, heads_rows, run_seeds, tool_command, write_runs_csv  # noqa: E402

GATES = ("none", "headwise", "elementwise")


def number(text):
    return float(text) if text not in ("", "nan") else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--out", default="docs/studies/gate-sink-lr-sink")
    a = ap.parse_args()
    commit = open(os.path.join(a.runs, "commit.txt")).read().strip()
    env = dict(os.environ, HEADLAB_THREADS="1")
    runs, heads = [], []
    for gate in GATES:
        for seed in run_seeds(a.runs):
            d = os.path.join(a.runs, "runs", f"{gate}-seed{seed}")
            checkpoint = os.path.join(d, "checkpoint.safetensors")
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            first = heads_rows(a.headlab, checkpoint, os.path.join(d, "heads-first-half"), ["--sink-queries", "first-half"])
            second = heads_rows(a.headlab, checkpoint, os.path.join(d, "heads-second-half"), ["--sink-queries", "second-half"])
            e = json.loads(subprocess.run(tool_command(a.headlab, "eval", "--checkpoint", checkpoint, "--sequences", "1000",
                                                       "--json", task="induction"),
                                          check=True, capture_output=True, text=True, env=env).stdout)
            row = {"cell": gate, "seed": seed, "steps": s["steps"], "parameters": s["parameters"],
                   "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
                   # the recipe's metrics: the trainer's own evaluation (256 held-out sequences, summary.json)
                   "repeated_accuracy": round(s["valid_accuracy"], 6), "repeated_loss": round(s["repeated_loss"], 6),
                   "first_half_loss": round(s["first_half_loss"], 6),
                   "accuracy_1000": round(e["repeated_accuracy"], 6)}
            for layer in (0, 1):
                mine = [(f, t) for f, t in zip(first, second) if int(f["layer"]) == layer]
                top = max(mine, key=lambda p: float(p[0]["sink_mass"]))[0]
                row[f"sink_first_half_max_l{layer}"] = float(top["sink_mass"])
                row[f"sink_head_l{layer}"] = int(top["head"])
                row[f"max_logit_l{layer}"] = max(float(f["max_logit"]) for f, _ in mine)
                row[f"max_residual_l{layer}"] = float(mine[0][0]["max_residual"])
                # the mean gate of the layer's heads, first-half and second-half queries (NaN ungated)
                row[f"gate_first_half_l{layer}"] = sum(number(f["gate_queries"]) for f, _ in mine) / len(mine)
                row[f"gate_second_half_l{layer}"] = sum(number(t["gate_queries"]) for _, t in mine) / len(mine)
            layer1 = [(f, t) for f, t in zip(first, second) if int(f["layer"]) == 1]
            ind_f, ind_t = max(layer1, key=lambda p: float(p[0]["induction"]))
            row["induction_head_l1"] = int(ind_f["head"])
            row["induction_score_l1"] = float(ind_f["induction"])
            row["induction_gate_second_half"] = number(ind_t["gate_queries"])
            sink_f = [f for f, _ in layer1 if int(f["head"]) == row["sink_head_l1"]][0]
            row["sink_head_gate_first_half"] = number(sink_f["gate_queries"])
            row["sink_uniform_first_half"] = float(first[0]["sink_uniform"])
            runs.append(row)
            for f_row, t_row in zip(first, second):
                heads.append({"cell": gate, "seed": seed, "layer": int(f_row["layer"]), "head": int(f_row["head"]),
                              "sink_first_half": float(f_row["sink_mass"]), "sink_second_half": float(t_row["sink_mass"]),
                              "uniform_first_half": float(f_row["sink_uniform"]),
                              "gate_first_half": number(f_row["gate_queries"]),
                              "gate_second_half": number(t_row["gate_queries"]),
                              "previous_token": float(f_row["previous_token"]), "induction": float(f_row["induction"]),
                              "max_logit": float(f_row["max_logit"])})
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))
    write_runs_csv(heads, os.path.join(a.out, "heads.csv"))


if __name__ == "__main__":
    main()
