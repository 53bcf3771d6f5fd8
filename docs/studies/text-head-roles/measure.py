#!/usr/bin/env python3
"""Measures every finished run of the text-head-roles recipe into runs.csv (one row a run) and
heads.csv (one row a head of a run).

  docs/studies/text-head-roles/measure.py RUNS [--headlab build/release/apps/headlab]

Writes RUNS/valid.txt, the held-out tenth of datasets/kjv/kjv.txt exactly as the trainer cuts it
(the last floor(0.1 x characters) characters), and runs `headlab heads --text RUNS/valid.txt
--probe-sequences 256 --seed 1` on each RUNS/runs/default-seed<k>/checkpoint.safetensors: per head
the previous-token, delimiter and sink scores with their uniform baselines, and the entropy. Per
run: the trainer's validation loss (summary.json), a count bigram's loss on the same split
(add-0.1 smoothing over the training text's characters), the CPU, the thread count and the commit
of the binary that trained (RUNS/commit.txt). From the repository root; stdlib only.
"""
import csv
import json
import math
import os
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import (cpu_model, measure_args, run_seeds, split_held_out, tool_command, write_held_out,  # noqa: E402
                        write_runs_csv)

TEXT = "datasets/kjv/kjv.txt"


def bigram_loss(train, valid, alpha=0.1):
    """Mean -ln p(c_t | c_{t-1}) over valid, p from train's bigram counts with add-alpha smoothing
    over train's characters (a character train lacks counts as one more symbol)."""
    symbols = sorted(set(train)) + ["<unk>"]
    known = set(train)
    pairs = Counter(zip(train, train[1:]))
    firsts = Counter(train[:-1])
    v = len(symbols)
    total = 0.0
    for a, b in zip(valid, valid[1:]):
        a, b = (a if a in known else "<unk>"), (b if b in known else "<unk>")
        total -= math.log((pairs[(a, b)] + alpha) / (firsts[a] + alpha * v))
    return total / (len(valid) - 1)


def main():
    a, commit = measure_args("docs/studies/text-head-roles")
    with open(TEXT, encoding="utf-8") as f:
        train, valid = split_held_out(f.read())
    valid_path = write_held_out(a.runs, TEXT)
    bigram = bigram_loss(train, valid)
    env = dict(os.environ, HEADLAB_THREADS="1")
    runs, heads = [], []
    for seed in run_seeds(a.runs):
        d = os.path.join(a.runs, "runs", f"default-seed{seed}")
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        out = os.path.join(d, "heads-text")
        subprocess.run(tool_command(a.headlab, "heads", "--checkpoint", os.path.join(d, "checkpoint.safetensors"),
                                    "--text", valid_path, "--probe-sequences", "256", "--seed", "1", "--out", out,
                                    "--overwrite"),
                       check=True, capture_output=True, env=env)
        with open(os.path.join(out, "heads.csv")) as f:
            rows = list(csv.DictReader(f))
        prev = [float(h["previous_token"]) for h in rows]
        delim = [float(h["delimiter"]) for h in rows]
        runs.append({"cell": "default", "seed": seed, "steps": s["steps"], "parameters": s["parameters"],
                     "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
                     "valid_loss": round(s["valid_loss"], 6), "valid_bits_per_char": round(s["valid_bits_per_char"], 6),
                     "sink_mass": round(s["sink_mass"], 6), "bigram_loss": round(bigram, 6),
                     "previous_token_heads": sum(p > 0.4 for p in prev), "best_previous_token": max(prev),
                     "delimiter_heads": sum(x > 0.4 for x in delim), "best_delimiter": max(delim),
                     "uniform_previous_token": float(rows[0]["sink_uniform"]),
                     "uniform_delimiter": float(rows[0]["delimiter_uniform"])})
        for h in rows:
            heads.append({"seed": seed, "layer": int(h["layer"]), "head": int(h["head"]),
                          "previous_token": float(h["previous_token"]), "delimiter": float(h["delimiter"]),
                          "entropy": float(h["entropy"]), "sink_mass": float(h["sink_mass"]),
                          "uniform": float(h["sink_uniform"]), "delimiter_uniform": float(h["delimiter_uniform"])})
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))
    write_runs_csv(heads, os.path.join(a.out, "heads.csv"))


if __name__ == "__main__":
    main()
