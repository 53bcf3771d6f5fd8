"""What the two pruning studies share (studies 4 and 7): measuring each run with `headlab prune` and
reading its curves (stdlib only), and the per-run numbers their report.py tests.

A pruning curve is `headlab prune`'s prune.csv: one row per step of each order (`importance`, or
`random-1` .. `random-K`), with the heads pruned so far, the fraction, the validation loss and the
metric (greedy BLEU for translation). Per run and order this module reads:
  kept       heads pruned at the last step of the first run of steps whose BLEU stays within
             1 point of the full model's (prune's own rule: a step that falls below ends the run)
  loss_half  the validation loss at the first step with at least half the heads pruned
  bleu_half  the BLEU at that step
"""
import csv
import json
import os
import subprocess

from study_runs import cpu_model, measure_args, tool_command, write_runs_csv

TOLERANCE = 1.0  # BLEU points


def prune_run(headlab, run_dir, orders, seed=1):
    """`headlab prune` on RUN_DIR/checkpoint.safetensors, one thread, into RUN_DIR/prune; its rows."""
    out = os.path.join(run_dir, "prune")
    if not os.path.exists(os.path.join(out, "prune.csv")):
        subprocess.run(tool_command(headlab, "prune", "--checkpoint", os.path.join(run_dir, "checkpoint.safetensors"),
                                    "--out", out, "--random-orders", orders, "--seed", seed, "--overwrite"),
                       check=True, capture_output=True, env=dict(os.environ, HEADLAB_THREADS="1"))
    with open(os.path.join(out, "prune.csv")) as f:
        return list(csv.DictReader(f))


def curves(rows):
    """{order: [(pruned, fraction, loss, bleu)]} in step order."""
    out = {}
    for r in rows:
        out.setdefault(r["order"], []).append((int(r["pruned"]), float(r["fraction"]), float(r["loss"]),
                                               float(r["metric"])))
    return out


def order_numbers(curve):
    """kept, loss_half and bleu_half of one order's curve (see the module's docstring)."""
    full = curve[0][3]
    kept = 0
    for pruned, _, _, bleu in curve:
        if bleu < full - TOLERANCE:
            break
        kept = pruned
    half = next(step for step in curve if step[1] >= 0.5)
    return kept, half[2], half[3]


def measure(headlab, runs, cells, orders, commit):
    """One row per run (cell, seed) and one per (run, order, step) for the curves file."""
    rows, steps = [], []
    seeds = sorted({int(n.rsplit("-seed", 1)[1]) for n in os.listdir(os.path.join(runs, "runs"))})
    for cell in cells:
        for seed in seeds:
            d = os.path.join(runs, "runs", f"{cell}-seed{seed}")
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            c = curves(prune_run(headlab, d, orders))
            imp = order_numbers(c["importance"])
            rnd = [order_numbers(c[o]) for o in c if o.startswith("random")]
            n = len(rnd)
            row = {"cell": cell, "seed": seed, "steps": s["steps"], "parameters": s["parameters"],
                   "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
                   "valid_loss": round(s["valid_loss"], 6), "valid_bleu": round(s["valid_bleu"], 6),
                   "full_bleu": c["importance"][0][3],
                   "test_bleu": s.get("test_bleu_greedy") if s.get("test_bleu_greedy") is not None else "",
                   "heads": c["importance"][-1][0], "random_orders": n,
                   "kept_importance": imp[0], "kept_random": round(sum(r[0] for r in rnd) / n, 6),
                   "loss_half_importance": imp[1], "loss_half_random": round(sum(r[1] for r in rnd) / n, 6),
                   "bleu_half_importance": imp[2], "bleu_half_random": round(sum(r[2] for r in rnd) / n, 6),
                   # how many random orders do at least as well as importance (lower loss, more heads kept)
                   "random_loss_at_or_below": sum(r[1] <= imp[1] for r in rnd),
                   "random_kept_at_or_above": sum(r[0] >= imp[0] for r in rnd)}
            rows.append(row)
            for order, curve in c.items():
                for pruned, fraction, loss, bleu in curve:
                    steps.append({"cell": cell, "seed": seed, "order": order, "pruned": pruned,
                                  "fraction": fraction, "loss": loss, "bleu": bleu})
    return rows, steps


def measure_main(out):
    """measure.py of a pruning study: prune every run of RUNS (one cell, "model"), write runs.csv and
    curves.csv into OUT."""
    a, commit = measure_args(out)
    rows, steps = measure(a.headlab, a.runs, ["model"], 20, commit)
    write_runs_csv(rows, os.path.join(a.out, "runs.csv"))
    write_runs_csv(steps, os.path.join(a.out, "curves.csv"))
