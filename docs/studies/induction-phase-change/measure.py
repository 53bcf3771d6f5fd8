#!/usr/bin/env python3
"""Measures the runs of the phase-change recipe over training: curves.csv and runs.csv.

  docs/studies/induction-phase-change/measure.py RUNS [--headlab build/release/apps/headlab]

For each RUNS/runs/<cell>-seed<k> (as `headlab study run` trains them) and each of its evaluations
(every 25 steps; every 5 for 2-layer-fine): the repeated-half loss and accuracy from metrics.jsonl, and from `headlab heads` on
the checkpoint kept at that step (checkpoints/step-<S>.safetensors; 64 probe sequences
<s> r_1..r_16 r_1..r_16, seed 1) the best previous-token score of layer 0 and the best induction
score of the last layer. curves.csv holds them all; runs.csv one row a run with the events the
recipe declares (loss drop, induction jump, previous-token formation, sharpness), its final
numbers, the CPU, thread count and commit (RUNS/commit.txt). Stdlib only; from the repository root.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, tool_command, write_runs_csv  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CELLS = {"2-layer": 2, "1-layer": 1, "2-layer-fine": 2}  # cell -> layers
FORMED = 0.4  # a head "is one" above this score (docs/head-lab.md)


def head_scores(headlab, checkpoint, out, layers):
    """(best previous-token score of layer 0, best induction score of the last layer)."""
    env = dict(os.environ, HEADLAB_THREADS="1")
    subprocess.run(tool_command(headlab, "heads", "--checkpoint", checkpoint, "--out", out, "--overwrite"), check=True,
                   capture_output=True, env=env)
    with open(os.path.join(out, "heads.csv")) as f:
        heads = list(csv.DictReader(f))
    first = [float(h["previous_token"]) for h in heads if int(h["layer"]) == 0]
    last = [float(h["induction"]) for h in heads if int(h["layer"]) == layers - 1]
    return max(first), max(last)


def events(curve):
    """The recipe's events of one run's curve [(step, loss, accuracy, prev, ind)]."""
    steps = [c[0] for c in curve]
    loss = [c[1] for c in curve]
    ind = [c[4] for c in curve]
    falls = [loss[i - 1] - loss[i] for i in range(1, len(curve))]
    rises = [ind[i] - ind[i - 1] for i in range(1, len(curve))]
    drop = 1 + max(range(len(falls)), key=lambda i: falls[i])
    jump = 1 + max(range(len(rises)), key=lambda i: rises[i])
    prev = next((c[0] for c in curve if c[3] >= FORMED), None)
    formed = next((c[0] for c in curve if c[4] >= FORMED), None)
    total = loss[0] - loss[-1]
    near = loss[max(0, drop - 3)] - loss[min(len(loss) - 1, drop + 2)]  # two intervals either side
    return {"loss_drop_step": steps[drop], "loss_drop": round(falls[drop - 1], 6),
            "induction_jump_step": steps[jump], "induction_jump": round(rises[jump - 1], 6),
            "previous_token_step": prev if prev is not None else "", "induction_formed_step": formed if formed else "",
            "drop_minus_jump": steps[drop] - steps[jump],
            "sharpness": round(near / total, 6) if total > 0 else ""}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    commit = open(os.path.join(a.runs, "commit.txt")).read().strip()
    curves, rows = [], []
    for cell, layers in CELLS.items():
        for seed in range(1, 6):
            d = os.path.join(a.runs, "runs", f"{cell}-seed{seed}")
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            evaluations = {}
            with open(os.path.join(d, "metrics.jsonl")) as f:
                for line in f:
                    m = json.loads(line)
                    if "repeated_loss" in m:
                        evaluations[int(m["step"])] = (m["repeated_loss"], m["repeated_accuracy"])
            steps = sorted(evaluations)
            interval = steps[0]  # the run's --eval-every (25, or 5 for 2-layer-fine)
            assert steps == list(range(interval, steps[-1] + 1, interval)), f"{d}: evaluations not every {interval}"
            with ThreadPoolExecutor(a.jobs) as pool:
                scores = list(pool.map(lambda step: head_scores(
                    a.headlab, os.path.join(d, "checkpoints", f"step-{step:06d}.safetensors"),
                    os.path.join(d, "heads", f"step-{step:06d}"), layers), steps))
            curve = [(step, evaluations[step][0], evaluations[step][1], p, i) for step, (p, i) in zip(steps, scores)]
            for step, loss, accuracy, p, i in curve:
                curves.append({"cell": cell, "seed": seed, "step": step, "repeated_loss": round(loss, 6),
                               "repeated_accuracy": round(accuracy, 6), "best_previous_token_l0": round(p, 6),
                               "best_induction_last": round(i, 6)})
            row = {"cell": cell, "layers": layers, "seed": seed, "steps": s["steps"], "eval_every": interval,
                   "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
                   "repeated_accuracy": round(s["valid_accuracy"], 6), "repeated_loss": round(s["repeated_loss"], 6)}
            row.update(events(curve))
            rows.append(row)
            print(cell, seed, row["loss_drop_step"], row["induction_jump_step"], row["previous_token_step"],
                  row["sharpness"], file=sys.stderr)
    write_runs_csv(curves, os.path.join(HERE, "curves.csv"))
    write_runs_csv(rows, os.path.join(HERE, "runs.csv"))


if __name__ == "__main__":
    main()
