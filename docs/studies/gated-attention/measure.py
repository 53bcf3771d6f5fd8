#!/usr/bin/env python3
"""Measures every finished run of study 3's recipe into runs.csv (one row a run).

  docs/studies/gated-attention/measure.py RUNS [--headlab build/release/apps/headlab]

For each RUNS/runs/<gate>-seed<k> (as `headlab study run` trains them): the trainer's validation
loss and greedy BLEU (summary.json), and `headlab heads` on checkpoint.safetensors with the probe
PINNED_TOOL_OPTIONS pins (../study_runs.py: 64 sequences <s> r_1..r_16 r_1..r_16, seed 1, the tool's
default) for the decoder's self-attention modules: the
largest head's mass on <s> (sink_max) and the mean over heads (sink_mean), uniform causal
attention's mass on the same queries (sink_uniform, the mean of 1/(i+1)), the mean gate over those
queries (NaN ungated), the largest attention logit and the largest residual activation of any module.
The CPU, thread count and the commit of the binary that trained (RUNS/commit.txt). Stdlib only.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, heads_rows, measure_args, number, run_seeds, write_runs_csv  # noqa: E402

GATES = ("none", "headwise", "elementwise")


def main():
    a, commit = measure_args("docs/studies/gated-attention")
    rows = []
    for gate in GATES:
        for seed in run_seeds(a.runs):
            d = os.path.join(a.runs, "runs", f"{gate}-seed{seed}")
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            heads = heads_rows(a.headlab, os.path.join(d, "checkpoint.safetensors"), os.path.join(d, "heads"))
            dec_self = [h for h in heads if h["kind"] == "decoder self"]
            gates = [number(h["gate_queries"]) for h in dec_self]
            rows.append({"cell": gate, "seed": seed, "steps": s["steps"], "parameters": s["parameters"],
                         "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""),
                         "commit": commit, "valid_loss": round(s["valid_loss"], 6),
                         "valid_bleu": round(s["valid_bleu"], 4),
                         "sink_max": max(float(h["sink_mass"]) for h in dec_self),
                         "sink_mean": round(sum(float(h["sink_mass"]) for h in dec_self) / len(dec_self), 6),
                         "sink_uniform": float(dec_self[0]["sink_uniform"]),
                         "gate_mean": "" if any(math.isnan(g) for g in gates) else round(sum(gates) / len(gates), 6),
                         "max_logit": max(float(h["max_logit"]) for h in heads),
                         "max_residual": max(float(h["max_residual"]) for h in heads)})
    write_runs_csv(rows, os.path.join(a.out, "runs.csv"))


if __name__ == "__main__":
    main()
