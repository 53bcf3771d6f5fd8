#!/usr/bin/env python3
"""Measures every finished run of the recall-averaging recipe into runs.csv (one row a run), heads.csv
(one row a head of a run) and share.csv (the single heads' p_a / (p_a + p_b) histograms).

  docs/studies/recall-averaging/measure.py RUNS [--headlab build/release/apps/headlab] [--out DIR]

For each RUNS/runs/<form>-h<h>-v<V>-seed<k>: answer accuracy, value accuracy and the validation loss
of summary.json (512 held-out sequences), and `headlab heads --probe-sequences 256` on its checkpoint
(the run's held-out sequences, 2048 queries): per head mass_a and mass_b, the weight on the query's
first and second key (recall_keys.csv), and the histogram of p_a / (p_a + p_b) (recall_share.csv).
Per run: key_split = 1 when one head has mass_a >= 0.8 and another mass_b >= 0.8; share_mid = the
share of queries in [0.4, 0.6) of the h = 1 head (for h > 1 pooled over the heads' queries: the
recipe defines it for h = 1, and every run needs a value for `study report`). Stdlib only.
"""
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, measure_args, run_seeds, tool_command, write_runs_csv  # noqa: E402

FORMS = ("ordered", "unordered")
HEADS = (1, 2, 4)
VALUES = (8, 16)
READS = 0.8  # a head "reads" a key when this much of its weight is on it


def recall_keys(headlab, run_dir):
    """`headlab heads` on the run's checkpoint: (recall_keys.csv rows, recall_share.csv rows)."""
    out = os.path.join(run_dir, "heads")
    subprocess.run(tool_command(headlab, "heads", "--checkpoint", os.path.join(run_dir, "checkpoint.safetensors"),
                                "--out", out, "--overwrite", "--probe-sequences", "256"),
                   check=True, capture_output=True, env=dict(os.environ, HEADLAB_THREADS="1"))
    with open(os.path.join(out, "recall_keys.csv")) as f:
        keys = list(csv.DictReader(f))
    with open(os.path.join(out, "recall_share.csv")) as f:
        share = list(csv.DictReader(f))
    return keys, share


def key_split(keys):
    """1 when two different heads read key a and key b (each >= READS of its weight), else 0."""
    a = {k["head"] for k in keys if float(k["mass_key1"]) >= READS}
    b = {k["head"] for k in keys if float(k["mass_key2"]) >= READS}
    return int(any(x != y for x in a for y in b))


def main():
    a, commit = measure_args("docs/studies/recall-averaging")
    runs, heads, shares = [], [], []
    for values in VALUES:
        for form in FORMS:
            for h in HEADS:
                cell = f"{form}-h{h}-v{values}"
                for seed in run_seeds(a.runs):
                    d = os.path.join(a.runs, "runs", f"{cell}-seed{seed}")
                    with open(os.path.join(d, "summary.json")) as f:
                        s = json.load(f)
                    keys, share = recall_keys(a.headlab, d)
                    total = sum(int(r["queries"]) for r in share)
                    inside = sum(int(r["queries"]) for r in share if 0.4 <= float(r["bin_low"]) < 0.6 - 1e-9)
                    mid = round(inside / total, 6)
                    if h == 1:
                        for r in share:
                            shares.append({"cell": cell, "seed": seed, "bin_low": r["bin_low"],
                                           "bin_high": r["bin_high"], "queries": r["queries"]})
                    for k in keys:
                        heads.append({"cell": cell, "seed": seed, "head": k["head"], "mass_a": k["mass_key1"],
                                      "mass_b": k["mass_key2"], "named": k["named"], "focus": k["focus"]})
                    runs.append({"cell": cell, "form": form, "heads": h, "values": values, "seed": seed,
                                 "steps": s["steps"], "parameters": s["parameters"],
                                 "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""),
                                 "commit": commit, "answer_accuracy": round(s["valid_accuracy"], 6),
                                 "value_accuracy": round(s["slot_accuracy"], 6),
                                 "valid_loss": round(s["valid_loss"], 6), "key_split": key_split(keys),
                                 "share_mid": mid})
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))
    write_runs_csv(heads, os.path.join(a.out, "heads.csv"))
    write_runs_csv(shares, os.path.join(a.out, "share.csv"))


if __name__ == "__main__":
    main()
