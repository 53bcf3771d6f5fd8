#!/usr/bin/env python3
"""Measures study 17 (docs/studies/circuits-trained.md): the causal tools against the role probes.

  docs/studies/circuits-trained/measure.py RUNS RECALL_RUNS [--headlab build/release/apps/headlab] [--out DIR]

RUNS: `headlab study run docs/studies/circuits-trained/recipe.ini --runs RUNS` (the induction models,
RUNS/runs/2-layer-seed<k>). RECALL_RUNS: study 5's runs (`headlab study run
docs/studies/head-count-recall/recipe.ini --runs RECALL_RUNS`), of which cell compute-h4 is read.
Writes into --out (default: this folder) runs.csv (one row per induction run: the recipe's metrics
from its summary.json), heads.csv (one row per induction model and head: probes and tools) and
recall.csv (one row per recall model and head). One thread; from the repository root; stdlib only.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, heads_rows, measure_args, run_seeds, tool_command, write_runs_csv  # noqa: E402

ENV = dict(os.environ, HEADLAB_THREADS="1")


def tool_csv(headlab, command, checkpoint, out, name, flags=()):
    """`headlab COMMAND --checkpoint CHECKPOINT --out OUT --overwrite FLAGS...`, every other option as
    PINNED_TOOL_OPTIONS (../study_runs.py) pins it; the rows of OUT/NAME."""
    subprocess.run(tool_command(headlab, command, "--checkpoint", checkpoint, "--out", out, "--overwrite", *flags),
                   check=True, capture_output=True, env=ENV)
    with open(os.path.join(out, name)) as f:
        return list(csv.DictReader(f))


def main():
    recall_runs = ("recall_runs", {"help": "study 5's runs (head-count-recall/recipe.ini); cell compute-h4 is read"})
    a, commit = measure_args(os.path.dirname(os.path.abspath(__file__)), [recall_runs])
    cpu = cpu_model()
    scratch = tempfile.mkdtemp(prefix="study17-")
    runs, rows = [], []
    for seed in run_seeds(a.runs):
        d = os.path.join(a.runs, "runs", f"2-layer-seed{seed}")
        ckpt = os.path.join(d, "checkpoint.safetensors")
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        accuracy = round(s["valid_accuracy"], 6)  # the repeated half's accuracy (256 held-out sequences)
        runs.append({"cell": "2-layer", "seed": seed, "steps": s["steps"], "train_seconds": round(s["train_seconds"], 2),
                     "threads": 1, "cpu": cpu, "arithmetic": s.get("arithmetic", ""), "commit": commit, "repeated_accuracy": accuracy,
                     "repeated_loss": round(s["repeated_loss"], 6), "first_half_loss": round(s["first_half_loss"], 6)})
        roles = {(int(r["layer"]), int(r["head"])): r for r in heads_rows(a.headlab, ckpt, os.path.join(scratch, "heads"))}
        patch = {(r["module"], int(r["head"])): float(r["recovered"])
                 for r in tool_csv(a.headlab, "patch", ckpt, os.path.join(scratch, "patch"), "patch_heads.csv")}
        attribution = tool_csv(a.headlab, "attribute", ckpt, os.path.join(scratch, "attribute"), "attribution.csv")
        terms = {r["component"]: float(r["mean"]) for r in attribution}
        composition = tool_csv(a.headlab, "composition", ckpt, os.path.join(scratch, "composition"), "composition.csv")
        for (layer, head), r in sorted(roles.items()):
            row = {"seed": seed, "layer": layer, "head": head, "previous_token": r["previous_token"],
                   "induction": r["induction"], "patch_share": patch[(f"blocks.{layer}.attn", head)],
                   "dla_term": terms[f"blocks.{layer}.attn.head{head}"], "answer_logit": terms["logit"],
                   "constant_term": terms["constant"], "k_writer": "", "k_score": "", "k_baseline": ""}
            if layer == 1:
                writers = [c for c in composition if int(c["reader_layer"]) == 1 and int(c["reader_head"]) == head]
                top = max(writers, key=lambda c: float(c["k"]))
                row.update(k_writer=top["writer_head"], k_score=top["k"], k_baseline=top["baseline_k"])
            row.update(repeated_accuracy=accuracy, cpu=cpu, threads=1, commit=commit)
            rows.append(row)
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))
    write_runs_csv(rows, os.path.join(a.out, "heads.csv"))

    recall = []
    recall_commit = open(os.path.join(a.recall_runs, "commit.txt")).read().strip()
    # study 5's runs as `study run` makes them (RUNS/runs/<cell>-seed<k>), or as its page's command made
    # them before `study run` had runs/ (RUNS/<cell>-seed<k>); the seeds of cell compute-h4 that were trained
    base = os.path.join(a.recall_runs, "runs")
    base = base if os.path.isdir(base) else a.recall_runs
    for seed in sorted(int(n.rsplit("-seed", 1)[1]) for n in os.listdir(base) if n.startswith("compute-h4-seed")):
        run = os.path.join(base, f"compute-h4-seed{seed}")
        ckpt = os.path.join(run, "checkpoint.safetensors")
        shares = []
        for slot in (0, 1):
            rows_slot = tool_csv(a.headlab, "patch", ckpt, os.path.join(scratch, f"recall{slot}"), "patch_heads.csv",
                                 ("--slot", str(slot)))
            shares.append({int(r["head"]): float(r["recovered"]) for r in rows_slot})
        for head in sorted(shares[0]):
            recall.append({"seed": seed, "head": head, "slot0_share": shares[0][head], "slot1_share": shares[1][head],
                           "cpu": cpu, "threads": 1, "commit": recall_commit})
    write_runs_csv(recall, os.path.join(a.out, "recall.csv"))


if __name__ == "__main__":
    main()
