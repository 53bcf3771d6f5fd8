#!/usr/bin/env python3
"""Measures every finished run of the gate-sink-lr-lm-sink recipe into runs.csv (one row a run) and
heads.csv (one row a head of a run).

  docs/studies/gate-sink-lr-lm-sink/measure.py RUNS [--headlab build/release/apps/headlab]

Writes RUNS/valid.txt, the held-out tenth of datasets/kjv/kjv.txt as the trainer cuts it. For each
RUNS/runs/<gate>-seed<k>, on checkpoint.safetensors: `headlab heads --text RUNS/valid.txt
--probe-sequences 256 --seed 1` (per head the attention on <s> from every query beside uniform's,
the mean gate, the largest attention logit and residual activation) and `headlab eval --data
RUNS/valid.txt --json` with full attention, --window 16 and --window 16 --sinks 1 (StreamingLLM).
From the repository root; stdlib only.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, heads_rows, run_seeds, tool_command, write_held_out, write_runs_csv  # noqa: E402

GATES = ("none", "headwise", "elementwise")
CONDITIONS = [("full", []), ("w16s0", ["--window", "16"]), ("w16s1", ["--window", "16", "--sinks", "1"])]


def number(text):
    return float(text) if text not in ("", "nan") else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--out", default="docs/studies/gate-sink-lr-lm-sink")
    a = ap.parse_args()
    commit = open(os.path.join(a.runs, "commit.txt")).read().strip()
    valid = write_held_out(a.runs)
    env = dict(os.environ, HEADLAB_THREADS="1")
    seeds = run_seeds(a.runs)
    runs, heads = [], []
    for gate in GATES:
        for seed in seeds:
            d = os.path.join(a.runs, "runs", f"{gate}-seed{seed}")
            checkpoint = os.path.join(d, "checkpoint.safetensors")
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            rows = heads_rows(a.headlab, checkpoint, os.path.join(d, "heads-text"),
                              ["--text", valid, "--probe-sequences", "256", "--seed", "1"])
            top = max(rows, key=lambda h: float(h["sink_mass"]))
            row = {"cell": gate, "seed": seed, "steps": s["steps"], "parameters": s["parameters"],
                   "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
                   "valid_loss": round(s["valid_loss"], 6), "valid_bits_per_char": round(s["valid_bits_per_char"], 6),
                   "sink_mass": round(s["sink_mass"], 6), "max_head_sink": float(top["sink_mass"]),
                   "max_head": f'{top["layer"]}.{top["head"]}', "uniform": float(top["sink_uniform"]),
                   "max_head_gate": number(top["gate_queries"]),
                   "gate_mean": sum(number(h["gate_queries"]) for h in rows) / len(rows),
                   "max_logit": max(float(h["max_logit"]) for h in rows),
                   "max_residual": max(float(h["max_residual"]) for h in rows)}
            for name, flags in CONDITIONS:
                e = subprocess.run(tool_command(a.headlab, "eval", "--checkpoint", checkpoint, "--data", valid, "--json",
                                                *flags, task="lm"),
                                   check=True, capture_output=True, text=True, env=env).stdout
                row[f"loss_{name}"] = round(json.loads(e)["loss"], 6)
            runs.append(row)
            for h in rows:
                heads.append({"cell": gate, "seed": seed, "layer": int(h["layer"]), "head": int(h["head"]),
                              "sink_mass": float(h["sink_mass"]), "uniform": float(h["sink_uniform"]),
                              "gate": number(h["gate_queries"]), "max_logit": float(h["max_logit"])})
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))
    write_runs_csv(heads, os.path.join(a.out, "heads.csv"))


if __name__ == "__main__":
    main()
