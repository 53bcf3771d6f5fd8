#!/usr/bin/env python3
"""Measures every finished run of the gate-sink-lr-rate recipe into runs.csv (one row a run).

  docs/studies/gate-sink-lr-rate/measure.py RUNS [--headlab build/release/apps/headlab]

For each RUNS/runs/<gate>-lr<rate>-seed<k>: from summary.json the repeated-half accuracy and loss
after the last step (the trainer's evaluation, 256 held-out sequences), loss spikes, the largest
loss jump and whether the run diverged; from metrics.jsonl the training loss of step 1 (L0 of the
learning-rate sensitivity); for gated runs `headlab heads --sink-queries second-half` on the final
checkpoint: the mean gate of the layer-1 heads on second-half queries (is the gate open where the
induction head must copy?) and that of the layer-1 head with the largest induction score.
From the repository root; stdlib only.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, heads_rows, run_seeds, write_runs_csv  # noqa: E402

GATES = ("none", "headwise", "elementwise")
RATES = ("0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256")


def rounded(v, digits=6):
    return "" if v is None else round(v, digits)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--out", default="docs/studies/gate-sink-lr-rate")
    a = ap.parse_args()
    commit = open(os.path.join(a.runs, "commit.txt")).read().strip()
    seeds = run_seeds(a.runs)
    runs = []
    for gate in GATES:
        for rate in RATES:
            for seed in seeds:
                d = os.path.join(a.runs, "runs", f"{gate}-lr{rate}-seed{seed}")
                with open(os.path.join(d, "summary.json")) as f:
                    s = json.load(f)
                with open(os.path.join(d, "metrics.jsonl")) as f:
                    first_loss = json.loads(f.readline())["loss"]
                row = {"cell": f"{gate}-lr{rate}", "gate": gate, "lr": float(rate), "seed": seed, "steps": s["steps"],
                       "parameters": s["parameters"], "train_seconds": round(s["train_seconds"], 2), "threads": 1,
                       "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
                       "repeated_accuracy": rounded(s.get("valid_accuracy")),
                       "repeated_loss": rounded(s.get("repeated_loss")),
                       "loss_spikes": s["loss_spikes"], "max_loss_jump": rounded(s["max_loss_jump"]),
                       "diverged": s["diverged"], "first_step_loss": round(first_loss, 6),
                       "gate_second_half_l1": "", "induction_gate_second_half": ""}
                checkpoint = os.path.join(d, "checkpoint.safetensors")
                if gate != "none" and not s["diverged"]:
                    rows = heads_rows(a.headlab, checkpoint, os.path.join(d, "heads-second-half"),
                                      ["--sink-queries", "second-half"])
                    layer1 = [h for h in rows if h["layer"] == "1"]
                    row["gate_second_half_l1"] = round(sum(float(h["gate_queries"]) for h in layer1) / len(layer1), 6)
                    top = max(layer1, key=lambda h: float(h["induction"]))
                    row["induction_gate_second_half"] = round(float(top["gate_queries"]), 6)
                runs.append(row)
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))


if __name__ == "__main__":
    main()
