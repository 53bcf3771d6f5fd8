#!/usr/bin/env python3
"""Measures every finished run of the lm-sink recipe: curves.csv (the sink of every head at every
kept checkpoint), runs.csv (one row a run: the final sink and StreamingLLM's window table) and
control.csv (the same window table on study 14's models, which read no <s>).

  docs/studies/lm-sink/measure.py RUNS [--control runs/text-head-roles] [--headlab build/release/apps/headlab]

Writes RUNS/valid.txt, the held-out tenth of datasets/kjv/kjv.txt as the trainer cuts it. For each
RUNS/runs/bos-seed<k>: `headlab heads --text RUNS/valid.txt --probe-sequences 256 --seed 1` on
checkpoints/step-<S>.safetensors for every kept S (the attention on <s> from every query, per
head, beside uniform's), and `headlab eval --data RUNS/valid.txt --json` on checkpoint.safetensors
with full attention, --window 16 and --window 16 --sinks 1..4. From the repository root; stdlib only.
"""
import csv
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, measure_args, run_seeds, tool_command, write_held_out, write_runs_csv  # noqa: E402

WINDOW = 16
CONDITIONS = [("full", [])] + [(f"w{WINDOW}s{k}", ["--window", str(WINDOW), "--sinks", str(k)]) for k in range(5)]


def sinks_of(headlab, checkpoint, text, out, env):
    subprocess.run(tool_command(headlab, "heads", "--checkpoint", checkpoint, "--text", text, "--probe-sequences", "256",
                                "--seed", "1", "--out", out, "--overwrite"), check=True, capture_output=True, env=env)
    with open(os.path.join(out, "heads.csv")) as f:
        return list(csv.DictReader(f))


def window_table(headlab, checkpoint, text, env):
    losses = {}
    for name, flags in CONDITIONS:
        out = subprocess.run(tool_command(headlab, "eval", "--checkpoint", checkpoint, "--data", text, "--json", *flags,
                                          task="lm"),
                             check=True, capture_output=True, text=True, env=env).stdout
        losses[f"loss_{name}"] = round(json.loads(out)["loss"], 6)
    return losses


def main():
    control = ("--control", {"default": "runs/text-head-roles", "help": "study 14's runs (text-head-roles/recipe.ini)"})
    a, commit = measure_args("docs/studies/lm-sink", [control])
    valid = write_held_out(a.runs)
    env = dict(os.environ, HEADLAB_THREADS="1")
    runs, curves, control = [], [], []
    for seed in run_seeds(a.runs):
        d = os.path.join(a.runs, "runs", f"bos-seed{seed}")
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        kept = sorted(glob.glob(os.path.join(d, "checkpoints", "step-*.safetensors")))
        for path in kept:
            step = int(re.search(r"step-(\d+)", path).group(1))
            rows = sinks_of(a.headlab, path, valid, os.path.join(d, "heads", f"step-{step:06d}"), env)
            for h in rows:
                curves.append({"seed": seed, "step": step, "layer": int(h["layer"]), "head": int(h["head"]),
                               "sink_mass": float(h["sink_mass"]), "uniform": float(h["sink_uniform"])})
        last = [c for c in curves if c["seed"] == seed and c["step"] == s["steps"]]
        top = max(last, key=lambda c: c["sink_mass"])
        appears = [c["step"] for c in curves if c["seed"] == seed and c["sink_mass"] >= 0.3]
        row = {"cell": "bos", "seed": seed, "steps": s["steps"], "parameters": s["parameters"],
               "train_seconds": round(s["train_seconds"], 2), "threads": 1, "cpu": cpu_model(), "arithmetic": s.get("arithmetic", ""), "commit": commit,
               "valid_loss": round(s["valid_loss"], 6), "valid_bits_per_char": round(s["valid_bits_per_char"], 6),
               "sink_mass": round(s["sink_mass"], 6), "max_head_sink": top["sink_mass"],
               "max_head": f'{top["layer"]}.{top["head"]}', "uniform": top["uniform"],
               "sink_appears_step": min(appears) if appears else ""}
        row.update(window_table(a.headlab, os.path.join(d, "checkpoint.safetensors"), valid, env))
        runs.append(row)
        c = os.path.join(a.control, "runs", f"default-seed{seed}", "checkpoint.safetensors")
        control.append({"seed": seed, **window_table(a.headlab, c, valid, env)})
    write_runs_csv(runs, os.path.join(a.out, "runs.csv"))
    write_runs_csv(curves, os.path.join(a.out, "curves.csv"))
    write_runs_csv(control, os.path.join(a.out, "control.csv"))


if __name__ == "__main__":
    main()
